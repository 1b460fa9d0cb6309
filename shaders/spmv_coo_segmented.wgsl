// COO SpMV by segmented reduction (seed 000). Nonzeros, sorted by row, are cut into equal
// intervals, one per workgroup; the workgroup walks its interval WG_SIZE entries at a time,
// reduces the products by row with a segmented scan, adds each row that ends inside the
// step into y, and carries the last row's partial sum into the next step. The interval's
// final carry goes to `carries`, which spmv_carry_fixup reduces into y. No atomics: a row
// is written directly by at most one interval, the one where it ends before the interval
// does. y must hold beta * y beforehand (scale_vector).
#import entry
#import segmented_scan
#import spmv_accumulate
#import carry

struct Params {
    nnz: u32,
    intervals: u32,
    interval_len: u32,
    alpha: f32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> row_indices: array<u32>;
@group(0) @binding(2) var<storage, read> col_indices: array<u32>;
@group(0) @binding(3) var<storage, read> values: array<f32>;
@group(0) @binding(4) var<storage, read> x: array<f32>;
@group(0) @binding(5) var<storage, read_write> y: array<f32>;
@group(0) @binding(6) var<storage, read_write> carries: array<Carry>;

override WG_SIZE: u32 = 256u;

const NO_ROW: u32 = 0xffffffffu;

fn run(interval: u32, lane: Lane) {
    if interval >= params.intervals {
        return;
    }
    // interval_len is a multiple of WG_SIZE, so only the last interval has a partial step.
    let start = interval * params.interval_len;
    let stop = min(start + params.interval_len, params.nnz);
    var carry_row = NO_ROW;
    var carry_value = 0.0;
    for (var base = start; base < stop; base += WG_SIZE) {
        let e = base + lane.index;
        var row = NO_ROW;
        var value = 0.0;
        if e < stop {
            row = row_indices[e];
            value = values[e] * x[col_indices[e]];
        }
        if lane.index == 0u && carry_row != NO_ROW {
            if row == carry_row {
                value += carry_value;
            } else {
                accumulate_y(carry_row, carry_value);
            }
        }
        let sum = segmented_scan(lane, row, value);
        // A lane whose right neighbour starts another row owns a finished row sum.
        if lane.index + 1u < WG_SIZE && row != NO_ROW && scan_keys[lane.index + 1u] != row {
            accumulate_y(row, sum);
        }
        carry_row = scan_keys[WG_SIZE - 1u];
        carry_value = scan_vals[WG_SIZE - 1u];
        workgroupBarrier();
    }
    if lane.index == 0u {
        carries[interval] = Carry(carry_row, carry_value);
    }
}
