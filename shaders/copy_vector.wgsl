// dst = src, 16 bytes per invocation: the bandwidth yardstick of the benchmark.
#import invocation

struct Params {
    len: u32,
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> src: array<vec4<u32>>;
@group(0) @binding(2) var<storage, read_write> dst: array<vec4<u32>>;

override WG_SIZE: u32 = 256u;

fn run(i: u32) {
    if i < params.len {
        dst[i] = src[i];
    }
}
