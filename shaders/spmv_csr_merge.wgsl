// CSR SpMV by merge path (Merrill & Garland): the sequence of row ends and nonzeros is cut
// into tiles of equal length, so a workgroup's work is bounded whatever the row lengths
// (a row of a million entries, or a million empty rows). Rows cut by a tile boundary leave
// a carry that spmv_carry_fixup adds in. Deterministic: no atomics. Every row ends in one
// tile, which stores its (unscaled) sum into `sums`; an axpby pass applies alpha and beta.
#import real
#import entry
#import segmented_scan
#import carry

struct Params {
    rows: u32,
    nnz: u32,
    tiles: u32,
}

var<immediate> params: Params;
@group(0) @binding(0) var<storage, read> row_offsets: array<u32>;
@group(0) @binding(1) var<storage, read> col_indices: array<u32>;
@group(0) @binding(2) var<storage, read> values: array<Real>;
@group(0) @binding(3) var<storage, read> x: array<Real>;
@group(0) @binding(4) var<storage, read> tile_rows: array<u32>;
@group(0) @binding(5) var<storage, read_write> sums: array<Acc>;
@group(0) @binding(6) var<storage, read_write> carries: array<Carry>;

override WG_SIZE: u32 = 256u;
// Merge items (row ends + nonzeros) per invocation.
override ITEMS: u32 = 6u;

// The tile's row ends, then its products.
var<workgroup> row_ends: array<u32, WG_SIZE * ITEMS>;
var<workgroup> products: array<Acc, WG_SIZE * ITEMS>;
// Sum of each row the tile completes, by row within the tile.
var<workgroup> partials: array<Acc, WG_SIZE * ITEMS>;

fn run(tile: u32, lane: Lane) {
    if tile >= params.tiles {
        return;
    }
    let tile_len = WG_SIZE * ITEMS;
    let diag0 = tile * tile_len;
    let diag1 = min(diag0 + tile_len, params.rows + params.nnz);
    let r0 = tile_rows[tile];
    let r1 = tile_rows[tile + 1u];
    let n0 = diag0 - r0;
    let nrows = r1 - r0;
    let nnz = diag1 - r1 - n0;

    // Stage row ends, then products. A fixed trip count lets the compiler issue every
    // load of the tile before the first one returns.
    let items = nrows + nnz;
    for (var s = 0u; s < ITEMS; s++) {
        let k = s * WG_SIZE + lane.index;
        if k < nrows {
            row_ends[k] = row_offsets[r0 + 1u + k];
        } else if k < items {
            let n = n0 + k - nrows;
            products[k - nrows] = Acc(values[n]) * Acc(x[col_indices[n]]);
        }
    }
    workgroupBarrier();

    // This invocation's start on the tile's merge path.
    let d = min(lane.index * ITEMS, items);
    var lo = select(0u, d - nnz, d > nnz);
    var hi = min(d, nrows);
    while lo < hi {
        let mid = (lo + hi) >> 1u;
        if row_ends[mid] <= n0 + d - mid - 1u {
            lo = mid + 1u;
        } else {
            hi = mid;
        }
    }
    let first_row = lo;
    var i = lo;
    var j = d - lo;
    var sum = Acc(0.0);
    for (var s = 0u; s < ITEMS && d + s < items; s++) {
        var row_end = 0xffffffffu;
        if i < nrows {
            row_end = row_ends[i];
        }
        if n0 + j < row_end {
            sum += products[j];
            j++;
        } else {
            partials[i] = sum;
            sum = Acc(0.0);
            i++;
        }
    }

    // Sums of rows that began in earlier invocations of this tile.
    segmented_scan(lane, i, sum);
    if lane.index > 0u && first_row < i && scan_keys[lane.index - 1u] == first_row {
        partials[first_row] += scan_vals[lane.index - 1u];
    }
    workgroupBarrier();

    for (var k = lane.index; k < nrows; k += WG_SIZE) {
        sums[r0 + k] = partials[k];
    }
    // The last lane's segment is the row the next tile continues (row r1).
    if lane.index == WG_SIZE - 1u {
        carries[tile] = Carry(r0 + scan_keys[WG_SIZE - 1u], scan_vals[WG_SIZE - 1u]);
    }
}
