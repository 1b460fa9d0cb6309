// ELL SpMV, one invocation per row. Storage is column-major (slot k of row i at
// k * rows + i) so neighbouring invocations read neighbouring words. Padding slots hold
// column 0xffffffff and are skipped, so Inf or NaN in x never meets a padding zero.
#import invocation
#import spmv_store

struct Params {
    rows: u32,
    width: u32,
    alpha: f32,
    beta: f32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> col_indices: array<u32>;
@group(0) @binding(2) var<storage, read> values: array<f32>;
@group(0) @binding(3) var<storage, read> x: array<f32>;
@group(0) @binding(4) var<storage, read_write> y: array<f32>;

override WG_SIZE: u32 = 256u;

const PADDING: u32 = 0xffffffffu;

fn run(row: u32) {
    if row >= params.rows {
        return;
    }
    var sum = 0.0;
    // Branch-free, so the compiler can keep several slots' loads in flight; a padding
    // slot reads x[0] but adds nothing (select, not multiplication by zero: Inf stays out).
    for (var k = 0u; k < params.width; k++) {
        let slot = k * params.rows + row;
        let col = col_indices[slot];
        let real = col != PADDING;
        let term = values[slot] * x[select(0u, col, real)];
        sum = select(sum, sum + term, real);
    }
    store_y(row, sum);
}
