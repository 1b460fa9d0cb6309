// A square matrix's rows, read on either side of the diagonal, for the diagonal form of
// ILU(0)/IC(0) (diagonal_pivots, diagonal_sweep): CSR (flag CSR: `row_offsets`,
// `col_indices`, `values`) or ELL in any of its index encodings (shared/ell_slot.wgsl:
// `col_indices`, `values`, params.rows, params.first_row, params.index_stride, and
// params.width). Columns are sorted within a row, and ELL's padding follows a row's entries.
#import ell_slot
#import csr_find

const NO_ENTRY: u32 = CSR_NONE;

// Entry e of a row (e < row_capacity(row)): its column, where its value is in `values`, and
// whether it is an entry at all (ELL padding is not).
fn row_entry(row: u32, e: u32) -> Slot {
#ifdef CSR
    let p = row_offsets[row] + e;
    return Slot(col_indices[p], true, p);
#else
    return slot_column(e, row);
#endif
}

// The row's entries and (ELL) padding.
fn row_capacity(row: u32) -> u32 {
#ifdef CSR
    return row_offsets[row + 1u] - row_offsets[row];
#else
    return params.width;
#endif
}

// Where (row, col)'s value is in `values`, or NO_ENTRY.
fn find_entry(row: u32, col: u32) -> u32 {
#ifdef CSR
    return csr_find(row, col);
#else
    for (var e = 0u; e < params.width; e++) {
        let slot = slot_column(e, row);
        if !slot.real || slot.col > col {
            break;
        }
        if slot.col == col {
            return slot.value;
        }
    }
    return NO_ENTRY;
#endif
}
