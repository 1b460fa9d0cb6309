// y = beta * y (beta == 0 writes zeros, whatever y held): the first step of kernels that
// accumulate into y.
#import dispatch

struct Params {
    len: u32,
    beta: f32,
    _pad0: u32,
    _pad1: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read_write> y: array<f32>;

override WG_SIZE: u32 = 256u;

@compute @workgroup_size(WG_SIZE)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let i = linear_workgroup(wid, nwg) * WG_SIZE + lid;
    if i >= params.len {
        return;
    }
    if params.beta == 0.0 {
        y[i] = 0.0;
    } else {
        y[i] = params.beta * y[i];
    }
}
