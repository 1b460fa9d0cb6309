// Second pass of a device-wide exclusive scan of u32: each workgroup scans its block of
// WG_SIZE * ITEMS values in place and adds the block's offset (the scanned block sums of
// the first pass; zero for a scan of one block). The last block also writes the grand total.
#import dispatch
#import block_scan

struct Params {
    len: u32,
    // 1 when block_offsets holds the scanned block sums, 0 for a single block.
    has_offsets: u32,
}

var<immediate> params: Params;
@group(0) @binding(0) var<storage, read> block_offsets: array<u32>;
@group(0) @binding(1) var<storage, read_write> data: array<u32>;
@group(0) @binding(2) var<storage, read_write> total: array<u32>;

override WG_SIZE: u32 = 256u;

@compute @workgroup_size(WG_SIZE)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lane: u32) {
    let b = linear_workgroup(wid, nwg);
    let base = b * WG_SIZE * ITEMS;
    if base >= max(params.len, 1u) {
        return;
    }
    for (var k = 0u; k < ITEMS; k++) {
        let i = base + k * WG_SIZE + lane;
        block[k * WG_SIZE + lane] = select(0u, data[min(i, params.len - 1u)], i < params.len);
    }
    workgroupBarrier();
    let block_total = scan_block(lane);
    var offset = 0u;
    if params.has_offsets != 0u {
        offset = block_offsets[b];
    }
    for (var k = 0u; k < ITEMS; k++) {
        let i = base + k * WG_SIZE + lane;
        if i < params.len {
            data[i] = block[k * WG_SIZE + lane] + offset;
        }
    }
    if lane == 0u && base + WG_SIZE * ITEMS >= params.len {
        total[0] = offset + block_total;
    }
}
