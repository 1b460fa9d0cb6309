// CSR or row-sorted COO entries into a bitmap, one invocation per row walking its entries in
// order (so repeated COO positions add up in a fixed order, and no two invocations touch one
// flag word). The default variant sets the flags; VALUES (after the structure steps of
// bitmap_rank) adds each entry's value at its position: `out` starts zeroed. With COO a
// row's entries are found by binary searches of the sorted row indices.
#import invocation
#import real
#import bitmap_position

struct Params {
    rows: u32,
    words: u32,
    blocks: u32,
    nnz: u32,
}

var<immediate> params: Params;
@group(0) @binding(0) var<storage, read> row_offsets: array<u32>;
@group(0) @binding(1) var<storage, read> row_indices: array<u32>;
@group(0) @binding(2) var<storage, read> col_indices: array<u32>;
@group(0) @binding(3) var<storage, read> values: array<Real>;
@group(0) @binding(4) var<storage, read_write> flags: array<u32>;
@group(0) @binding(5) var<storage, read> rank: array<u32>;
@group(0) @binding(6) var<storage, read_write> out: array<Real>;

override WG_SIZE: u32 = 256u;

// The first COO entry whose row is not below `row`.
fn first_entry_of(row: u32) -> u32 {
    var lo = 0u;
    var hi = params.nnz;
    while lo < hi {
        let mid = (lo + hi) / 2u;
        if row_indices[mid] < row {
            lo = mid + 1u;
        } else {
            hi = mid;
        }
    }
    return lo;
}

fn run(row: u32) {
    if row >= params.rows {
        return;
    }
#ifdef COO
    let first = first_entry_of(row);
    let end = first_entry_of(row + 1u);
#else
    let first = row_offsets[row];
    let end = row_offsets[row + 1u];
#endif
    for (var e = first; e < end; e++) {
        let col = col_indices[e];
#ifdef VALUES
        let p = entry_position(row, col);
        out[p] += values[e];
#else
        let k = row * params.words + col / 32u;
        flags[k] |= 1u << (col % 32u);
#endif
    }
}
