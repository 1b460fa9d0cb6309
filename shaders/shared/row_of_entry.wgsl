// The row holding entry e of a CSR matrix: the last r < params.rows with
// row_offsets[r] <= e (empty rows before it start at e too), by binary search. The including
// shader binds `row_offsets` and has `params.rows`.
fn row_of(e: u32) -> u32 {
    var lo = 0u;
    var hi = params.rows;
    while lo + 1u < hi {
        let mid = (lo + hi) / 2u;
        if row_offsets[mid] <= e {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    return lo;
}
