// A blocked LU panel's interchanges (getrf's: row j0 + k swapped with pivots[j0 + k], k in
// order) as moves of whole rows: row dst_row[e] takes what row src_row[e] held before them
// (entries 0..nb: rows j0.., then the rows further down that a pivot named, each once; NONE
// where nothing moves). Each lane finds its row's source by undoing the swaps on its row
// number, last step first: the lanes' walks are independent (one lane playing every step in
// order made a chain of dependent workgroup-memory accesses, ~1.5 µs a dispatch). Used by
// lu_blocked's SWAP and by lu_tournament's strips; needs `pivots`, `params.n`,
// `NB` and `NONE`.
var<workgroup> swap_pivot: array<u32, NB>;
var<workgroup> dst_row: array<u32, 64>;
var<workgroup> src_row: array<u32, 64>;

// Where the swap of rows `top` and `pivot` takes row `at_row` (a swap is its own inverse).
fn swapped(at_row: u32, top: u32, pivot: u32) -> u32 {
    return select(select(at_row, top, at_row == pivot), pivot, at_row == top);
}

// What row `row` holds after the interchanges of the nb columns at j0: the row it held before.
fn source_of(row: u32, j0: u32, nb: u32) -> u32 {
    var at_row = row;
    for (var step = nb; step > 0u; step--) {
        at_row = swapped(at_row, j0 + step - 1u, swap_pivot[step - 1u]);
    }
    return at_row;
}

// Fills dst_row and src_row for matrix m's panel of nb columns at j0 (every lane calls it).
fn swap_moves(m: u32, j0: u32, nb: u32, lane: Lane) {
    let k = lane.index;
    if k < nb {
        swap_pivot[k] = pivots[m * params.n + j0 + k];
    }
    workgroupBarrier();
    if k < NB {
        var top_source = NONE;
        var source = NONE;
        var p = NONE;
        if k < nb {
            let top = j0 + k;
            top_source = source_of(top, j0, nb);
            // A pivot row below the panel's rows, taken by the first step that names it.
            p = swap_pivot[k];
            var first = true;
            for (var s = 0u; s < k; s++) {
                first = first && swap_pivot[s] != p;
            }
            source = p;
            if p >= j0 + nb && first {
                source = source_of(p, j0, nb);
            }
        }
        src_row[k] = top_source;
        dst_row[k] = select(NONE, j0 + k, k < nb && top_source != j0 + k);
        src_row[NB + k] = source;
        dst_row[NB + k] = select(NONE, p, k < nb && source != p);
    }
    workgroupBarrier();
}
