// y = beta * y (beta == 0 writes zeros, whatever y held): the first step of kernels that
// accumulate into y.
#import invocation

struct Params {
    len: u32,
    beta: f32,
    _pad0: u32,
    _pad1: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read_write> y: array<f32>;

override WG_SIZE: u32 = 256u;

fn run(i: u32) {
    if i >= params.len {
        return;
    }
    if params.beta == 0.0 {
        y[i] = 0.0;
    } else {
        y[i] = params.beta * y[i];
    }
}
