// sums[row] += sum: the kernels of the accumulating algorithms (COO, HYB's tail, carries)
// add unscaled row sums into a scratch vector, and one axpby pass applies alpha and beta at
// the end, so that alpha multiplies each row's complete sum (as IEEE arithmetic on the
// twin's order does) rather than each piece. Expects a read_write `sums: array<Acc>`.
fn add_sum(row: u32, sum: Acc) {
    sums[row] += sum;
}
