// CSR SpMV, one invocation per row: best for short rows of similar length.
#import invocation
#import spmv_csr_rows

override WG_SIZE: u32 = 256u;

fn run(row: u32) {
    if row >= params.rows {
        return;
    }
    let end = row_offsets[row + 1u];
    var sum = 0.0;
    for (var p = row_offsets[row]; p < end; p++) {
        sum = fma(values[p], x[col_indices[p]], sum);
    }
    store_y(row, sum);
}
