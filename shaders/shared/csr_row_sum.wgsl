// The dot product of CSR entries start..end with x, eight entries at a time: a batch's loads
// are predicated, not branched on, so all of its column, value and x loads are in flight
// together (two memory round trips per batch instead of two per entry). Entries past the
// end re-read the last one (a cache hit) and are not added. The additions run in entry
// order. Expects `col_indices`, `values` and `x` in the including shader.
const ROW_BATCH: u32 = 8u;

fn csr_row_sum(start: u32, end: u32) -> f32 {
    var sum = 0.0;
    for (var base = start; base < end; base += ROW_BATCH) {
        let last = end - 1u;
        var batch: array<f32, ROW_BATCH>;
        for (var k = 0u; k < ROW_BATCH; k++) {
            let p = min(base + k, last);
            batch[k] = values[p] * x[col_indices[p]];
        }
        for (var k = 0u; k < ROW_BATCH; k++) {
            sum = select(sum, sum + batch[k], base + k <= last);
        }
    }
    return sum;
}
