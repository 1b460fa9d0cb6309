// dst = src, 16 bytes per invocation, for whole vectors of any element type (allocations are
// padded to 16 bytes): BLAS-1 copy, and the benchmark's yardstick for device bandwidth.
#import invocation

struct Params {
    len: u32,
}

var<immediate> params: Params;
@group(0) @binding(0) var<storage, read> src: array<vec4<u32>>;
@group(0) @binding(1) var<storage, read_write> dst: array<vec4<u32>>;

override WG_SIZE: u32 = 256u;

fn run(i: u32) {
    if i < params.len {
        dst[i] = src[i];
    }
}
