// HYB SpMV in one dispatch: the first params.interval_workgroups workgroups walk the COO
// tail's intervals (shared/coo_walk.wgsl; they come first so that their longer work starts
// early), and a row with a tail is stored there, its ELL part added by the lane that
// completes it; the workgroups after them take the ELL part one invocation per row and store
// the rows without a tail (the tail's occupancy bits say which).
#import real
#import ell_row_sum
#import coo_walk

struct Params {
    rows: u32,
    width: u32,
    // DIAGONAL_OFFSETS: the global row of row 0 (panels), and halfwords per slot column.
    first_row: u32,
    index_stride: u32,
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
@group(0) @binding(0) var<storage, read> col_indices: array<u32>;
@group(0) @binding(1) var<storage, read> values: array<Real>;
@group(0) @binding(2) var<storage, read> coo_rows: array<u32>;
@group(0) @binding(3) var<storage, read> coo_cols: array<u32>;
@group(0) @binding(4) var<storage, read> coo_values: array<Real>;
@group(0) @binding(5) var<storage, read> x: array<Real>;
@group(0) @binding(6) var<storage, read> bounds: array<vec2<u32>>;
@group(0) @binding(7) var<storage, read> occupied: array<u32>;
@group(0) @binding(8) var<storage, read> alpha_dev: array<Real>;
@group(0) @binding(9) var<storage, read> beta_dev: array<Real>;
@group(0) @binding(10) var<storage, read_write> y: array<Real>;
@group(0) @binding(11) var<storage, read_write> scratch: array<atomic<u32>>;

override WG_SIZE: u32 = 256u;

fn run(workgroup: u32, lane: Lane) {
    if workgroup < params.interval_workgroups {
        interval_tasks(workgroup, lane);
    } else {
        let row = (workgroup - params.interval_workgroups) * WG_SIZE + lane.index;
        if row < params.rows && (occupied[row >> 5u] & (1u << (row & 31u))) == 0u {
            store_y(row, ell_row_sum(row));
        }
    }
}

fn row_total(row: u32, sum: Acc) -> Acc {
    return ell_row_sum(row) + sum;
}
