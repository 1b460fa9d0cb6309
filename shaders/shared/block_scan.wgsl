// Exclusive prefix sums of u32 over a block of WG_SIZE * ITEMS values staged in workgroup
// memory: each lane sums ITEMS consecutive values, the lanes' sums are scanned across the
// workgroup (Hillis-Steele with barriers), and each lane writes its values' prefixes back.
// Every lane must call it.
override ITEMS: u32 = 4u;

var<workgroup> block: array<u32, WG_SIZE * ITEMS>;
var<workgroup> lane_sums: array<u32, WG_SIZE>;

// Scans `block` in place (exclusive); returns the block's total (in every lane).
fn scan_block(lane: u32) -> u32 {
    var sum = 0u;
    for (var k = 0u; k < ITEMS; k++) {
        sum += block[lane * ITEMS + k];
    }
    lane_sums[lane] = sum;
    workgroupBarrier();
    for (var d = 1u; d < WG_SIZE; d <<= 1u) {
        var add = 0u;
        if lane >= d {
            add = lane_sums[lane - d];
        }
        workgroupBarrier();
        lane_sums[lane] += add;
        workgroupBarrier();
    }
    var running = lane_sums[lane] - sum;
    for (var k = 0u; k < ITEMS; k++) {
        let v = block[lane * ITEMS + k];
        block[lane * ITEMS + k] = running;
        running += v;
    }
    let total = lane_sums[WG_SIZE - 1u];
    workgroupBarrier();
    return total;
}
