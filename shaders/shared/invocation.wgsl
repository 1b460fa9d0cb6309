// Entry point for shaders with one invocation per item, written as
// `fn run(item: u32)`: the item index counts across the whole (possibly folded) dispatch,
// and `run` bound-checks it.
#import dispatch

@compute @workgroup_size(WG_SIZE)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    run(linear_workgroup(wid, nwg) * WG_SIZE + lid);
}
