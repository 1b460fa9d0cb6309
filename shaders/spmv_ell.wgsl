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
const BATCH: u32 = 8u;

fn run(row: u32) {
    if row >= params.rows {
        return;
    }
    // Slots go eight at a time with predicated loads, so a batch's loads are in flight
    // together. Slots past the width re-read the last one; padding slots read x[0]. Neither
    // is added (select, not multiplication by zero: an Inf in x stays out).
    var sum = 0.0;
    for (var base = 0u; base < params.width; base += BATCH) {
        var batch: array<f32, BATCH>;
        var real: array<bool, BATCH>;
        for (var k = 0u; k < BATCH; k++) {
            let slot = min(base + k, params.width - 1u) * params.rows + row;
            let col = col_indices[slot];
            real[k] = col != PADDING && base + k < params.width;
            batch[k] = values[slot] * x[select(0u, col, col != PADDING)];
        }
        for (var k = 0u; k < BATCH; k++) {
            sum = select(sum, sum + batch[k], real[k]);
        }
    }
    store_y(row, sum);
}
