// out[i] = values[perm[i]]: a sparse matrix's values in another order of its entries (A's
// values in the order of its transpose's entries, ops/transpose.rs).
#import invocation
#import real

struct Params {
    len: u32,
}

var<immediate> params: Params;
@group(0) @binding(0) var<storage, read> values: array<Real>;
@group(0) @binding(1) var<storage, read> perm: array<u32>;
@group(0) @binding(2) var<storage, read_write> out: array<Real>;

override WG_SIZE: u32 = 256u;

fn run(i: u32) {
    if i < params.len {
        out[i] = values[perm[i]];
    }
}
