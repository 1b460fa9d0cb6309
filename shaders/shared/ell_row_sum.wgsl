// Row sums of an ELL matrix (spmv_ell, spmv_ell_dot, HYB's ELL part in spmv_hyb): storage
// and index encodings as described in spmv_ell.wgsl, load batches in ell_row_sum. Expects
// params.rows, params.width, params.first_row, params.index_stride and the read-only
// bindings col_indices, values and x.
//
// VALUE_TABLE: a word per slot, column-major: the 16-bit diagonal offset (as with
// DIAGONAL_OFFSETS, 0x8000 pads) in the low half and in the high half the index of the
// slot's value in `values`, then a table of the matrix's distinct values (a few KB that
// the caches keep): 4 bytes a slot instead of 6 (f32) or 10 (f64).

// Slots per batch, at most MAX_BATCH; the host picks ceil(width / batches) so that a
// matrix's batches are all (nearly) full: 5 for a width of 5, not 8 with 3 wasted.
override BATCH: u32 = 8u;
const MAX_BATCH: u32 = 8u;

struct Slot {
    col: u32,
    real: bool,
    // Where the slot's value is in `values`.
    value: u32,
}

// A 16-bit diagonal offset's column: the halfword sign-extended; u32 addition wraps, so
// this is row + offset.
fn offset_column(bits: u32, row: u32) -> u32 {
    return params.first_row + row + bitcast<u32>(bitcast<i32>(bits << 16u) >> 16u);
}

fn slot_column(k: u32, row: u32) -> Slot {
    let slot = k * params.rows + row;
#ifdef VALUE_TABLE
    let word = col_indices[slot];
    let bits = word & 0xffffu;
    return Slot(offset_column(bits, row), bits != 0x8000u, word >> 16u);
#else
#ifdef DIAGONAL_OFFSETS
    let half = k * params.index_stride + row;
    let bits = (col_indices[half >> 1u] >> ((half & 1u) * 16u)) & 0xffffu;
    return Slot(offset_column(bits, row), bits != 0x8000u, slot);
#else
    let col = col_indices[slot];
    return Slot(col, col != 0xffffffffu, slot);
#endif
#endif
}

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
