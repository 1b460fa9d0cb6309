// CSR SpMV, one invocation per row: best for short rows of similar length.
#import invocation
#import real
#import spmv_csr_rows
#import csr_row_sum

override WG_SIZE: u32 = 256u;

fn run(row: u32) {
    if row >= params.rows {
        return;
    }
    store_y(row, csr_row_sum(row_offsets[row], row_offsets[row + 1u]));
}
