// The end of one element query (bitmap_access, csr_access), once the entry was looked for:
// the default variant reads (data[q] = the value or 0, present[q] = 1 or 0); SET writes a
// stored entry, and counts a write to an absent position inside the matrix (status[0]).
// Queries outside the matrix are counted by `refuse(q, 1u)` (status[1]); status[2] keeps the
// first offending query. Expects the bindings values, data, present and status of those
// shaders.

fn refuse(q: u32, counter: u32) {
    atomicAdd(&status[counter], 1u);
    atomicMin(&status[2], q);
}

// `found`: the entry is stored, at `p`; `inside`: the position lies inside the matrix.
fn finish_query(q: u32, inside: bool, found: bool, p: u32) {
#ifdef SET
    if found {
        values[p] = data[q];
    } else if inside {
        refuse(q, 0u);
    }
#else
    var v = Real(0.0);
    if found {
        v = values[p];
    }
    data[q] = v;
    present[q] = u32(found);
#endif
}
