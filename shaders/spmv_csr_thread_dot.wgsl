// CSR SpMV one invocation per row (spmv_csr_thread) that also leaves the partial sums of
// x·y, one per workgroup, for a solver's next step to add up: CG's p·A·p without a pass
// over p and A·p of its own. A is square (x[row] pairs with y[row]).
#import entry
#import real
#import spmv_csr_rows
#import csr_row_sum
#import workgroup_sum

@group(0) @binding(7) var<storage, read_write> partials: array<vec2<Acc>>;

override WG_SIZE: u32 = 256u;

fn run(workgroup: u32, lane: Lane) {
    // Whole workgroups past the rows (a folded dispatch's last row) have no partial.
    if workgroup * WG_SIZE >= params.rows {
        return;
    }
    let row = workgroup * WG_SIZE + lane.index;
    var dot = Acc(0.0);
    if row < params.rows {
        store_y(row, csr_row_sum(row_offsets[row], row_offsets[row + 1u]));
        dot = Acc(x[row]) * Acc(y[row]);
    }
    let total = workgroup_sum(lane, dot);
    if lane.index == 0u {
        partials[workgroup] = vec2<Acc>(total, 0.0);
    }
}
