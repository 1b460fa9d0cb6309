// Dot products of CSR entries with x, eight entries per invocation at a time: a batch's
// loads are predicated, not branched on, so all of its column, value and x loads are in
// flight together (two memory round trips per batch instead of two per entry). Entries
// past the end re-read the last one (a cache hit) and are not added. The additions run in
// entry order. Expects `col_indices`, `values` and `x` in the including shader.
const ROW_BATCH: u32 = 8u;

// The sum over entries first, first + stride, first + 2 * stride, … below end: a whole
// row with stride 1, or one lane's share of a chunk shared by `stride` lanes.
fn csr_strided_sum(first: u32, end: u32, stride: u32) -> Acc {
    var sum = Acc(0.0);
    let last = end - 1u;
    for (var base = first; base < end; base += stride * ROW_BATCH) {
        var batch: array<Acc, ROW_BATCH>;
        for (var k = 0u; k < ROW_BATCH; k++) {
            let p = min(base + k * stride, last);
            batch[k] = Acc(values[p]) * Acc(x[col_indices[p]]);
        }
        for (var k = 0u; k < ROW_BATCH; k++) {
            sum = select(sum, sum + batch[k], base + k * stride <= last);
        }
    }
    return sum;
}

fn csr_row_sum(start: u32, end: u32) -> Acc {
    return csr_strided_sum(start, end, 1u);
}
