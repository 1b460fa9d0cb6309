// Merge-path partition of a CSR matrix: for every tile boundary b, the row coordinate where
// the diagonal b * tile crosses the merge path of (row ends, nonzero indices). An analysis,
// made once per sparsity pattern and tile size; spmv_csr_merge reads it.
#import invocation

struct Params {
    rows: u32,
    nnz: u32,
    boundaries: u32,
    tile: u32,
}

var<immediate> params: Params;
@group(0) @binding(0) var<storage, read> row_offsets: array<u32>;
@group(0) @binding(1) var<storage, read_write> tile_rows: array<u32>;

override WG_SIZE: u32 = 256u;

fn run(b: u32) {
    if b >= params.boundaries {
        return;
    }
    let diagonal = min(b * params.tile, params.rows + params.nnz);
    // Largest row count i such that rows 0..i all end before nonzero diagonal - i.
    var lo = select(0u, diagonal - params.nnz, diagonal > params.nnz);
    var hi = min(diagonal, params.rows);
    while lo < hi {
        let mid = (lo + hi) >> 1u;
        if row_offsets[mid + 1u] <= diagonal - mid - 1u {
            lo = mid + 1u;
        } else {
            hi = mid;
        }
    }
    tile_rows[b] = lo;
}
