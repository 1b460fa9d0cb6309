// Adds the carries of tiles or intervals into y: y[row] += alpha * (sum of the run of
// consecutive carries with that row). Carries are ordered by row, so the first carry of a
// run sums it alone: no atomics, and the order of additions is fixed.
#import invocation
#import carry
#import spmv_accumulate

struct Params {
    count: u32,
    rows: u32,
    alpha: f32,
    _pad: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> carries: array<Carry>;
@group(0) @binding(2) var<storage, read_write> y: array<f32>;

override WG_SIZE: u32 = 256u;

fn run(t: u32) {
    if t >= params.count {
        return;
    }
    let row = carries[t].row;
    if row >= params.rows || (t > 0u && carries[t - 1u].row == row) {
        return;
    }
    var sum = carries[t].value;
    for (var u = t + 1u; u < params.count && carries[u].row == row; u++) {
        sum += carries[u].value;
    }
    accumulate_y(row, sum);
}
