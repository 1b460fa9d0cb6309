// The body of the SpMV kernels that also leave the partial sums of x·y, one per workgroup,
// for a solver's next step to add up (spmv_csr_thread_dot, spmv_ell_dot): one invocation
// per row, y[row] stored, then x[row]·y[row] summed over the workgroup. A is square, and
// x[row] is the operand of the row's own diagonal entry, so its read hits the cache. The
// including shader defines `row_sum(row) -> Acc` and binds `partials`.
#import entry
#import workgroup_sum

fn run(workgroup: u32, lane: Lane) {
    // Whole workgroups past the rows (a folded dispatch's last row) have no partial.
    if workgroup * WG_SIZE >= params.rows {
        return;
    }
    let row = workgroup * WG_SIZE + lane.index;
    var dot = Acc(0.0);
    if row < params.rows {
        dot = Acc(x[row]) * Acc(store_y_value(row, row_sum(row)));
    }
    let total = workgroup_sum(lane, dot);
    if lane.index == 0u {
        partials[workgroup] = vec2<Acc>(total, 0.0);
    }
}
