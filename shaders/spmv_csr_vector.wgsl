// CSR SpMV with GROUP lanes per row (a subgroup per row when GROUP is the subgroup size):
// the lanes stride over the row and their partial sums are reduced by shuffles, or through
// workgroup memory without subgroups. For long rows; short rows waste lanes.
#import entry
#import real
#import spmv_csr_rows

override WG_SIZE: u32 = 256u;
// Lanes per row: a power of two dividing WG_SIZE; with subgroups, at most the subgroup size.
override GROUP: u32 = 32u;

#ifndef SUBGROUP
var<workgroup> partial: array<Acc, WG_SIZE>;
#endif

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
#ifdef SUBGROUP
    for (var offset = GROUP >> 1u; offset > 0u; offset >>= 1u) {
        sum += subgroupShuffleXor(sum, offset);
    }
#else
    partial[lane.index] = sum;
    workgroupBarrier();
    for (var offset = GROUP >> 1u; offset > 0u; offset >>= 1u) {
        if member < offset {
            partial[lane.index] += partial[lane.index + offset];
        }
        workgroupBarrier();
    }
    sum = partial[lane.index];
#endif
    if member == 0u && row < params.rows {
        store_y(row, sum);
    }
}
