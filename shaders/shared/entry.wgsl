// Entry point for shaders written as `fn run(workgroup: u32, lane: Lane)`.
//
// `lane.index` is the invocation's position in the workgroup, ordered like subgroup lanes
// (subgroup-major), so that scans over lane indices agree with subgroup shuffles. Without
// subgroups it is local_invocation_index and `sg_size` is 1.
#import dispatch

struct Lane {
    index: u32,
    sg_lane: u32,
    sg_size: u32,
}

#ifdef SUBGROUP
@compute @workgroup_size(WG_SIZE)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(subgroup_id) sg_id: u32, @builtin(subgroup_invocation_id) sg_lane: u32,
        @builtin(subgroup_size) sg_size: u32) {
    run(linear_workgroup(wid, nwg), Lane(sg_id * sg_size + sg_lane, sg_lane, sg_size));
}
#else
@compute @workgroup_size(WG_SIZE)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    run(linear_workgroup(wid, nwg), Lane(lid, 0u, 1u));
}
#endif
