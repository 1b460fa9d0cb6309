// COO SpMV, one invocation per nonzero, accumulating with float atomics into a y that was
// scaled by beta first. The order of the additions depends on scheduling: NOT deterministic.
// spmv_coo_segmented is the deterministic alternative.
#import invocation
#import atomic_f32

struct Params {
    nnz: u32,
    alpha: f32,
    _pad0: u32,
    _pad1: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> row_indices: array<u32>;
@group(0) @binding(2) var<storage, read> col_indices: array<u32>;
@group(0) @binding(3) var<storage, read> values: array<f32>;
@group(0) @binding(4) var<storage, read> x: array<f32>;
@group(0) @binding(5) var<storage, read_write> y: array<atomic<u32>>;

override WG_SIZE: u32 = 256u;

fn run(e: u32) {
    if e >= params.nnz {
        return;
    }
    atomic_add_f32(row_indices[e], params.alpha * values[e] * x[col_indices[e]]);
}
