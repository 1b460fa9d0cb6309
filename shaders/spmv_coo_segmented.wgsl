// COO SpMV by segmented reduction (seed 000), in one dispatch: the first
// params.interval_workgroups workgroups walk the intervals of entries (shared/coo_walk.wgsl);
// the workgroups after them store the empty rows, one word of the occupancy bits (the
// coo_intervals analysis) per invocation, so that a million empty rows cost no interval a
// million stores.
#import real
#import coo_walk

struct Params {
    rows: u32,
    coo_nnz: u32,
    intervals: u32,
    // Multiples of the largest group size; window <= interval_len (shared/coo_walk.wgsl).
    interval_len: u32,
    window: u32,
    interval_workgroups: u32,
    recompute: u32,
    scaling: Scaling,
}

var<immediate> params: Params;
@group(0) @binding(0) var<storage, read> coo_rows: array<u32>;
@group(0) @binding(1) var<storage, read> coo_cols: array<u32>;
@group(0) @binding(2) var<storage, read> coo_values: array<Real>;
@group(0) @binding(3) var<storage, read> x: array<Real>;
@group(0) @binding(4) var<storage, read> bounds: array<vec2<u32>>;
@group(0) @binding(5) var<storage, read> occupied: array<u32>;
@group(0) @binding(6) var<storage, read> alpha_dev: array<Real>;
@group(0) @binding(7) var<storage, read> beta_dev: array<Real>;
@group(0) @binding(8) var<storage, read_write> y: array<Real>;
@group(0) @binding(9) var<storage, read_write> scratch: array<atomic<u32>>;

override WG_SIZE: u32 = 256u;

fn run(workgroup: u32, lane: Lane) {
    if workgroup < params.interval_workgroups {
        interval_tasks(workgroup, lane);
    } else {
        empty_rows((workgroup - params.interval_workgroups) * WG_SIZE + lane.index);
    }
}

fn empty_rows(word: u32) {
    let first = word * 32u;
    if first >= params.rows {
        return;
    }
    var empty = ~occupied[word];
    if params.rows - first < 32u {
        empty &= (1u << (params.rows - first)) - 1u;
    }
    while empty != 0u {
        store_empty_row(first + countTrailingZeros(empty));
        empty &= empty - 1u;
    }
}

fn row_total(row: u32, sum: Acc) -> Acc {
    return sum;
}
