// The position of (row, col) in a CSR matrix with sorted columns, by binary search over the
// row, or CSR_NONE when it stores no such entry. The importing shader binds `row_offsets`
// and `col_indices`.

const CSR_NONE: u32 = 0xffffffffu;

fn csr_find(row: u32, col: u32) -> u32 {
    var lo = row_offsets[row];
    var hi = row_offsets[row + 1u];
    while lo < hi {
        let mid = (lo + hi) / 2u;
        let c = col_indices[mid];
        if c == col {
            return mid;
        }
        if c < col {
            lo = mid + 1u;
        } else {
            hi = mid;
        }
    }
    return CSR_NONE;
}
