// CSR SpMV, one invocation per row: best for short rows of similar length. Rows longer
// than params.max_len are skipped: csr-split sends them to spmv_csr_split_chunks.
#import invocation
#import spmv_csr_rows

override WG_SIZE: u32 = 256u;

fn run(row: u32) {
    if row >= params.rows {
        return;
    }
    let start = row_offsets[row];
    let end = row_offsets[row + 1u];
    if end - start > params.max_len {
        return;
    }
    var sum = 0.0;
    for (var p = start; p < end; p++) {
        sum = fma(values[p], x[col_indices[p]], sum);
    }
    store_y(row, sum);
}
