// First pass of a device-wide exclusive scan of u32: the sum of each block of
// WG_SIZE * ITEMS values, one workgroup per block. The block sums are then scanned (by the
// same two passes, until one block remains) and scan_apply finishes each block.
#import dispatch

struct Params {
    len: u32,
}

var<immediate> params: Params;
@group(0) @binding(0) var<storage, read> data: array<u32>;
@group(0) @binding(1) var<storage, read_write> block_sums: array<u32>;

override WG_SIZE: u32 = 256u;
override ITEMS: u32 = 4u;

var<workgroup> lane_sums: array<u32, WG_SIZE>;

@compute @workgroup_size(WG_SIZE)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lane: u32) {
    let b = linear_workgroup(wid, nwg);
    let base = b * WG_SIZE * ITEMS;
    var sum = 0u;
    for (var k = 0u; k < ITEMS; k++) {
        let i = base + k * WG_SIZE + lane;
        if i < params.len {
            sum += data[i];
        }
    }
    lane_sums[lane] = sum;
    workgroupBarrier();
    for (var half = WG_SIZE >> 1u; half > 0u; half >>= 1u) {
        if lane < half {
            lane_sums[lane] += lane_sums[lane + half];
        }
        workgroupBarrier();
    }
    if lane == 0u {
        block_sums[b] = lane_sums[0];
    }
}
