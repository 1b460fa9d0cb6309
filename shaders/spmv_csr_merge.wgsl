// CSR SpMV by merge path (Merrill & Garland), in one dispatch: the sequence of row ends and
// nonzeros is cut into tiles of equal length, so a workgroup's work is bounded whatever the
// row lengths (a row of a million entries, or a million empty rows). Deterministic: no
// float atomics, every sum added in an order fixed by the tile and workgroup sizes.
//
// A row whose merge items lie in one tile is stored by that tile. A row that crosses tile
// boundaries spans tiles first..end (its first nonzero's tile to its row end's tile, both
// computed from row_offsets alone): tiles first..end-1 end on it and publish their partial
// sum of it (their carry), tile `end` begins with it and publishes its head, and each
// counts an arrival at tile end's counter (shared/ready_sums.wgsl). The workgroup whose
// arrival completes the row adds the carries and the head in a fixed order and stores y; a
// piece it cannot see yet it recomputes by running that tile again (merge_tile, stores off).
// Most crossing rows are short: a row that spans two tiles with at most WINDOW nonzeros in
// the first is added up by the second alone, which loads those nonzeros with its own tile,
// so nothing is published and nobody arrives.
//
// scratch: a counter per tile, then two sets of 2 × tiles sums (VALUE_WORDS words each):
// tile t's carry in slot t, its head in slot tiles + t.
#import real
#import entry
#import segmented_scan
#import workgroup_sum
#import spmv_store
#import ready_sums

struct Params {
    rows: u32,
    nnz: u32,
    tiles: u32,
    // 1: completing workgroups recompute every piece (tests the path of a sum not visible).
    recompute: u32,
    scaling: Scaling,
}

var<immediate> params: Params;
@group(0) @binding(0) var<storage, read> row_offsets: array<u32>;
@group(0) @binding(1) var<storage, read> col_indices: array<u32>;
@group(0) @binding(2) var<storage, read> values: array<Real>;
@group(0) @binding(3) var<storage, read> x: array<Real>;
@group(0) @binding(4) var<storage, read> tile_rows: array<u32>;
@group(0) @binding(5) var<storage, read> alpha_dev: array<Real>;
@group(0) @binding(6) var<storage, read> beta_dev: array<Real>;
@group(0) @binding(7) var<storage, read_write> y: array<Real>;
@group(0) @binding(8) var<storage, read_write> scratch: array<atomic<u32>>;

override WG_SIZE: u32 = 256u;
// Merge items (row ends + nonzeros) per invocation.
override ITEMS: u32 = 6u;

// Nonzeros of a crossing row before the boundary that the next tile loads itself.
const WINDOW: u32 = 32u;

// The tile's row ends, then its products.
var<workgroup> row_ends: array<u32, WG_SIZE * ITEMS>;
var<workgroup> products: array<Acc, WG_SIZE * ITEMS>;
// Sum of each row the tile completes, by row within the tile.
var<workgroup> partials: array<Acc, WG_SIZE * ITEMS>;
// Lane 0's arrivals, for the whole workgroup.
var<workgroup> completions: array<u32, 2>;
var<workgroup> smallest: atomic<u32>;
var<workgroup> smallest_seen: u32;

// The tiles of row r's first merge item and of its row end.
fn row_tiles(r: u32) -> vec2<u32> {
    let tile_len = WG_SIZE * ITEMS;
    return vec2<u32>((r + row_offsets[r]) / tile_len, (r + row_offsets[r + 1u]) / tile_len);
}

fn run(tile: u32, lane: Lane) {
    if tile >= params.tiles {
        return;
    }
    let tile_len = WG_SIZE * ITEMS;
    let r0 = tile_rows[tile];
    let r1 = tile_rows[tile + 1u];
    // The head: row r0 ends here (r0 < r1) but began in an earlier tile; short when that
    // tile is the previous one and holds at most WINDOW of its nonzeros (before n0).
    var head_first = tile;
    if r0 < r1 {
        head_first = row_tiles(r0).x;
    }
    let has_head = head_first < tile;
    let n0 = tile * tile_len - r0;
    let short_head = has_head && head_first + 1u == tile && row_offsets[r0] + WINDOW >= n0;
    // The carry: row r1 has nonzeros here and ends in a later tile; short as seen from there.
    var carry_tiles = vec2<u32>(tile, tile);
    if r1 < params.rows {
        carry_tiles = row_tiles(r1);
    }
    let has_carry = carry_tiles.x <= tile && tile < carry_tiles.y;
    let n1 = (tile + 1u) * tile_len - r1;
    let short_carry = has_carry && carry_tiles.x == tile && carry_tiles.y == tile + 1u
        && row_offsets[r1] + WINDOW >= n1;
    let publishes_head = has_head && !short_head;
    let publishes_carry = has_carry && !short_carry;
    let parities = piece_parities(lane.index == 0u, tile, publishes_head, carry_tiles.y, publishes_carry);

    var window = vec2<u32>(0u, 0u);
    if short_head {
        window = vec2<u32>(row_offsets[r0], n0 - row_offsets[r0]);
    }
    let ends = merge_tile(tile, lane, true, publishes_head, window);
    if lane.index == 0u {
        completions[0] = 0u;
        completions[1] = 0u;
        if publishes_head {
            let expected = tile - head_first + 1u;
            completions[0] = publish_and_arrive(tile, parities.x, params.tiles + tile, ends.head, expected);
        }
        if publishes_carry {
            let expected = carry_tiles.y - carry_tiles.x + 1u;
            completions[1] = publish_and_arrive(carry_tiles.y, parities.y, tile, ends.carry, expected);
        }
    }
    let head_completes = workgroupUniformLoad(&completions[0]);
    if head_completes != 0u {
        complete_row(lane, RowToComplete(r0, head_first, tile, head_completes));
    }
    let carry_completes = workgroupUniformLoad(&completions[1]);
    if carry_completes != 0u {
        complete_row(lane, RowToComplete(r1, carry_tiles.x, carry_tiles.y, carry_completes));
    }
}

// Adds row r's pieces in a fixed order (lane-strided, then the workgroup's reduction) and
// stores y, running a tile again for a piece not visible yet. A second call site of
// merge_tile, unlike the COO walk's (shared/coo_walk.wgsl): folding both into one loop
// made this kernel 5-10% slower on the H100, the second copy did not.
fn complete_row(lane: Lane, r: RowToComplete) {
    let recompute = params.recompute != 0u;
    var sum = Acc(0.0);
    for (var base = r.first; base <= r.end; base += WG_SIZE) {
        var piece = read_piece(lane.index, r, base, params.tiles, recompute);
        for (var next = workgroup_min(lane, piece.missing); next != NO_PIECE; next = workgroup_min(lane, piece.missing)) {
            let recomputed = merge_tile(next, lane, false, false, vec2<u32>(0u, 0u));
            if piece.q == next {
                piece.value = select(recomputed.carry, recomputed.head, piece.q == r.end);
                piece.missing = NO_PIECE;
            }
        }
        if piece.q <= r.end {
            sum += piece.value;
        }
    }
    let total = workgroup_sum(lane, sum);
    if lane.index == 0u {
        store_y(r.row, total);
        reset_counter(r.end, r.completes);
    }
}

struct TileEnds {
    // The sum of the tile's first row's items here (its head, when that row began earlier).
    head: Acc,
    // The sum of the last row's nonzeros here (its carry, when that row ends later).
    carry: Acc,
}

// Sums tile `tile`'s rows; with `store`, stores y for the rows that end here, but for the
// first one when it is a published head. `window` (first, count): the nonzeros of a short
// head in the previous tile, loaded with this tile's and added to the head before it is
// stored. The same arithmetic whether it stores or not.
fn merge_tile(tile: u32, lane: Lane, store: bool, skip_head: bool, window: vec2<u32>) -> TileEnds {
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
    var window_product = Acc(0.0);
    if lane.index < window.y {
        let n = window.x + lane.index;
        window_product = Acc(values[n]) * Acc(x[col_indices[n]]);
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

    if window.y > 0u {
        let window_sum = workgroup_sum(lane, window_product);
        if lane.index == 0u {
            partials[0] = window_sum + partials[0];
        }
        workgroupBarrier();
    }
    if store {
        for (var k = select(lane.index, lane.index + WG_SIZE, skip_head && lane.index == 0u); k < nrows; k += WG_SIZE) {
            store_y(r0 + k, partials[k]);
        }
    }
    // The last lane's segment is the row the next tile continues (row r1).
    let ends = TileEnds(partials[0], scan_vals[WG_SIZE - 1u]);
    // The next use of this memory (a recomputed tile) must not overwrite it under a reader.
    workgroupBarrier();
    return ends;
}

// The smallest `value` over the workgroup, uniform.
fn workgroup_min(lane: Lane, value: u32) -> u32 {
    if lane.index == 0u {
        atomicStore(&smallest, NO_PIECE);
    }
    workgroupBarrier();
    atomicMin(&smallest, value);
    workgroupBarrier();
    if lane.index == 0u {
        smallest_seen = atomicLoad(&smallest);
    }
    return workgroupUniformLoad(&smallest_seen);
}

// The first of slot's words in the set of `parity`.
fn sum_word(parity: u32, slot: u32) -> u32 {
    return params.tiles + (parity * 2u * params.tiles + slot) * VALUE_WORDS;
}
