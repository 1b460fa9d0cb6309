// Row sums of an ELL matrix (spmv_ell, spmv_ell_dot, HYB's ELL part in spmv_hyb): storage
// and index encodings as described in spmv_ell.wgsl, load batches in ell_row_sum. Expects
// params.rows, params.width, params.first_row, params.index_stride and the read-only
// bindings col_indices, values and x; the slots are read by shared/ell_slot.wgsl.

#import ell_slot

// Slots per batch, at most MAX_BATCH; the host picks ceil(width / batches) so that a
// matrix's batches are all (nearly) full: 5 for a width of 5, not 8 with 3 wasted.
override BATCH: u32 = 8u;
const MAX_BATCH: u32 = 8u;

// Row `row`'s sum of products (row < params.rows).
fn ell_row_sum(row: u32) -> Acc {
    // Slots go BATCH at a time with predicated loads, so a batch's loads are in flight
    // together. Slots past the width re-read the last one; padding slots read x[0]. Neither
    // is added (select, not multiplication by zero: an Inf in x stays out).
    let size = clamp(BATCH, 1u, MAX_BATCH);
    var sum = Acc(0.0);
    for (var base = 0u; base < params.width; base += size) {
        var batch: array<Acc, MAX_BATCH>;
        var real: array<bool, MAX_BATCH>;
        for (var k = 0u; k < size; k++) {
            let clamped = min(base + k, params.width - 1u);
            let slot = slot_column(clamped, row);
            real[k] = slot.real && base + k < params.width;
            batch[k] = Acc(values[slot.value]) * Acc(x[select(0u, slot.col, slot.real)]);
        }
        for (var k = 0u; k < size; k++) {
            sum = select(sum, sum + batch[k], real[k]);
        }
    }
    return sum;
}
