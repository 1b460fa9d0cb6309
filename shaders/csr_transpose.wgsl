// The steps of a CSR matrix's transpose (its CSC) that are not the sort: IOTA numbers the
// entries (`out[e] = e`, the values sorted along with the columns); COUNT counts the entries
// of each column (`counts`, atomic: the counts, not an order, come out of it) and copies the
// columns to `out` (the sort's keys); the default
// variant writes, for each entry of the transpose (`perm[i]` the original entry), the row
// it came from: a binary search of `row_offsets`. INVERT writes the inverse permutation:
// out[perm[i]] = i, the transpose's entry of each of A's.
#import invocation
#import row_of_entry

struct Params {
    rows: u32,
    nnz: u32,
}

var<immediate> params: Params;
@group(0) @binding(0) var<storage, read> row_offsets: array<u32>;
@group(0) @binding(1) var<storage, read> col_indices: array<u32>;
@group(0) @binding(2) var<storage, read> perm: array<u32>;
@group(0) @binding(3) var<storage, read_write> counts: array<atomic<u32>>;
@group(0) @binding(4) var<storage, read_write> out: array<u32>;

override WG_SIZE: u32 = 256u;

fn run(i: u32) {
    if i >= params.nnz {
        return;
    }
#ifdef IOTA
    out[i] = i;
#else
#ifdef INVERT
    out[perm[i]] = i;
#else
#ifdef COUNT
    let col = col_indices[i];
    atomicAdd(&counts[col], 1u);
    out[i] = col;
#else
    out[i] = row_of(perm[i]);
#endif
#endif
#endif
}
