// An ELL slot's column and value (ell_row_sum, split_rows), for every index encoding of
// spmv_ell.wgsl. Expects params.rows, params.first_row, params.index_stride and the
// read-only binding col_indices.
//
// VALUE_TABLE: a word per slot, column-major: the 16-bit diagonal offset (as with
// DIAGONAL_OFFSETS, 0x8000 pads) in the low half and in the high half the index of the
// slot's value in `values`, then a table of the matrix's distinct values (a few KB that
// the caches keep): 4 bytes a slot instead of 6 (f32) or 10 (f64).

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
