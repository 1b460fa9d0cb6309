// CSR SpMV with GROUP lanes per row (a subgroup per row when GROUP is the subgroup size):
// the lanes stride over the row and their partial sums are reduced by shuffles, or through
// workgroup memory without subgroups. For long rows; short rows waste lanes.
#import entry
#import real
#import lane_group_sum
#import spmv_csr_rows

override WG_SIZE: u32 = 256u;
// Lanes per row: a power of two dividing WG_SIZE; with subgroups, at most the subgroup size.
override GROUP: u32 = 32u;

fn run(workgroup: u32, lane: Lane) {
    let row = workgroup * (WG_SIZE / GROUP) + lane.index / GROUP;
    let member = lane.index % GROUP;
    var sum = Acc(0.0);
    if row < params.rows {
        let end = row_offsets[row + 1u];
        for (var p = row_offsets[row] + member; p < end; p += GROUP) {
            sum = fma(Acc(values[p]), Acc(x[col_indices[p]]), sum);
        }
    }
    sum = lane_group_sum(sum, lane.index);
    if member == 0u && row < params.rows {
        store_y(row, sum);
    }
}
