// ELL SpMV, one invocation per row. Storage is column-major (slot k of row i at
// k * rows + i) so neighbouring invocations read neighbouring words. Padding slots are
// skipped, so Inf or NaN in x never meets a padding zero.
//
// Column indices come in one of three encodings (the host picks, see GpuEll):
// - default: the column of each slot as a u32; padding is 0xffffffff;
// - DIAGONAL_OFFSETS: the column minus the slot's row (the row counted from the first row
//   of the whole matrix, params.first_row + row) as a 16-bit two's-complement offset, two
//   per word: slot k of row i is halfword k * index_stride + i. Padding is 0x8000. Half
//   the index bytes, for matrices whose entries all lie within 32767 of the diagonal.
// - VALUE_TABLE: those offsets with a 16-bit code beside each, one word per slot, and
//   `values` a table of the distinct values that the codes index (shared/ell_row_sum.wgsl).
#import invocation
#import real
#import spmv_ell_rows

override WG_SIZE: u32 = 256u;

fn run(row: u32) {
    if row >= params.rows {
        return;
    }
    store_y(row, ell_row_sum(row));
}
