// CSR SpMM `C ← α·A·B + β·C` on a block of A's rows, by RoDe's row decomposition (seed
// 002). Each slot of LANES lanes (shared/slots.wgsl) takes one task: a segment (a row, or
// a chunk of a long row) and a tile of 4·LANES of C's columns, each lane four columns
// LANES apart, so a load of a B row is LANES consecutive elements. With max_len =
// chunk_len = u32 max there are no chunks: a slot per row, the `row-group` baseline.
//
// First step, one dispatch: the first params.chunk_workgroups workgroups take the chunks of
// the long rows (at most chunk_len entries each; rows longer than max_len), the ones after
// them params.group_rows consecutive rows per task, skipping the long rows, and store C.
// Chunks come first so that their longer work starts early instead of trailing behind the
// short rows. A group of short rows is one run of entries, staged in tiles across row ends
// and gathered BATCH at a time whatever row they are in: the load chain (offsets, entries,
// B rows) is paid once per group, not once per row (the 2-D Laplacian: 14–20% faster on the
// H100). The host groups rows only where no row is long (group_rows = 1 otherwise), so a group's
// entries are all its own. GROUPED compiles the row ends inside a run; without it (every
// run one row or one chunk) the inner loop has no stores.
//
// With SPLIT_ROWS (one-row groups only), PARTS consecutive slots share each row, each taking
// a consecutive PARTS-th of its entries, and their sums are added in workgroup memory before
// the first of them stores: a row's serial chain of loads is PARTS times shorter, for
// matrices whose rows are too few to fill the GPU (a 2,003-row matrix of ~42 entries a row
// makes 2,003 tasks where a large GPU holds ~10⁴ slots).
//
// Tasks are numbered tile-major: all rows' first tile of columns, then all rows' second, so
// that the B rows the workgroups in flight gather are one tile wide (measured on the H100:
// no change with 8 or 16 lanes at k = 128, benches/NOTES.md).
//
// Second step (FINISH): a workgroup per (long row, column tile) adds up the row's chunks,
// its slots taking every slot_count()-th chunk and then summing over slots in a fixed tree, and
// stores C: α multiplies complete row sums, never pieces of them.
//
// The chunks of a long row are combined either deterministically (each chunk's sums to
// `partials`, added in a fixed order) or, with ATOMIC, by float atomics as the paper does:
// each chunk adds into the row's accumulators in `sums` (cleared before; a compare-exchange
// loop on the f32 bits), which needs long rows × k accumulators instead of chunks × k
// partials but is **not deterministic**. ATOMIC is f32 only (WGSL atomics are 32-bit); the
// host never asks for it in f64.
//
// On A's transpose (`op(A) = Aᵀ`, analysis/transpose.rs) the rows are A's columns and
// `col_indices` holds A's rows; `values` is A's values in the transpose's order (kept
// current by transposed_values.wgsl before every run), or with PERMUTED A's own values,
// entry e's being values[perm[e]] (a scattered read, for small matrices: no pass before).
#import real
#import row_split
#import slots
#import scaling
#import unit_scalar
#import gathered_rows
#import atomic_f32

struct Params {
    rows: u32,
    k: u32,
    max_len: u32,
    chunk_len: u32,
    chunks: u32,
    chunk_workgroups: u32,
    col_tiles: u32,
    long_rows: u32,
    gather_panel_rows: u32,
    group_rows: u32,
    scaling: Scaling,
}

var<immediate> params: Params;
@group(0) @binding(0) var<storage, read> row_offsets: array<u32>;
@group(0) @binding(1) var<storage, read> col_indices: array<u32>;
@group(0) @binding(2) var<storage, read> values: array<Real>;
@group(0) @binding(3) var<storage, read> gather0: array<Real>;
@group(0) @binding(4) var<storage, read> gather1: array<Real>;
@group(0) @binding(5) var<storage, read> gather2: array<Real>;
@group(0) @binding(6) var<storage, read> gather3: array<Real>;
@group(0) @binding(7) var<storage, read> chunks: array<Chunk>;
@group(0) @binding(8) var<storage, read> long_rows: array<LongRow>;
@group(0) @binding(9) var<storage, read> alpha_dev: array<Real>;
@group(0) @binding(10) var<storage, read> beta_dev: array<Real>;
@group(0) @binding(11) var<storage, read_write> c: array<Real>;
@group(0) @binding(12) var<storage, read_write> partials: array<Acc>;
@group(0) @binding(13) var<storage, read_write> sums: array<atomic<u32>>;
@group(0) @binding(14) var<storage, read> perm: array<u32>;

override WG_SIZE: u32 = 256u;
// Lanes per slot: a power of two up to the smallest subgroup.
override LANES: u32 = 8u;
// Slots per row with SPLIT_ROWS: a power of two up to the slots of a workgroup.
override PARTS: u32 = 1u;

fn entry_value(at: u32) -> Real {
#ifdef PERMUTED
    return values[perm[at]];
#else
    return values[at];
#endif
}

// The columns of tile `tile` that lane `lane` of a slot owns.
struct Columns {
    cols: vec4<u32>,
    valid: vec4<bool>,
}

fn lane_columns(tile: u32, lane: u32) -> Columns {
    let first = tile * 4u * LANES + lane;
    let cols = vec4<u32>(first, first + LANES, first + 2u * LANES, first + 3u * LANES);
    return Columns(cols, cols < vec4<u32>(params.k));
}

// Where a slot's run of entries is in its rows: the current row, its end, and the last row
// of the run.
struct Cursor {
    row: u32,
    row_end: u32,
    last_row: u32,
}

// Stores the current row's sums and moves to the next row.
fn next_row(cursor: ptr<function, Cursor>, cols: Columns, sum: vec4<Acc>) {
    store_row((*cursor).row, cols, sum);
    (*cursor).row += 1u;
    (*cursor).row_end = row_offsets[(*cursor).row + 1u];
}

// Entry `e` of the slot's current tile: its value, and this lane's columns of its B row
// (zero where not loaded: at or past `count`).
struct Gather {
    value: Real,
    row: vec4<Acc>,
}

// Columns `cols` of B row `j`, when `load`: from `gather0` directly when `direct` (the row
// is in B's first panel), else from the panel holding it.
fn gather_row(j: u32, load: bool, cols: Columns, direct: bool) -> vec4<Acc> {
    var r = vec4<Acc>(0.0);
    if load {
        if direct {
            r = gathered4_first_panel(j, cols.cols, cols.valid);
        } else {
            r = gathered4(j, cols.cols, cols.valid);
        }
    }
    return r;
}

// Adds gathered entry `at` (when `valid`) to the sums, first storing the rows the run has
// passed the end of.
fn accumulate(acc: vec4<Acc>, g: Gather, at: u32, valid: bool, cursor: ptr<function, Cursor>, cols: Columns) -> vec4<Acc> {
    if !valid {
        return acc;
    }
    var sum = acc;
#ifdef GROUPED
    while at >= (*cursor).row_end {
        next_row(cursor, cols, sum);
        sum = vec4<Acc>(0.0);
    }
#endif
    return sum + Acc(g.value) * g.row;
}

// Σ over entries start..end of value · B[col, cols] for this lane's columns, row by row:
// each row's sums are stored as the run passes its end (empty rows included); the sums of
// the cursor's row when the run ends are returned. The gathers of BATCH = 4 entries are
// issued before any is used, so their loads are in flight together; they are spelled out
// rather than looped over an array, which a compiler that does not unroll the loop (its
// body stores rows) would keep in slow local memory.
fn segment_sum(s: Slot, start: u32, end: u32, cols: Columns, cursor: ptr<function, Cursor>) -> vec4<Acc> {
    var acc = vec4<Acc>(0.0);
    let rounds = tile_rounds(start, end);
    var t = tiles_begin(s, start, end);
    for (var round = 0u; round < rounds; round++) {
        tiles_prefetch(&t, s);
        let count = tile_count(t);
        let steps = tile_steps(count);
        for (var e0 = 0u; e0 < steps; e0 += BATCH) {
            // The entries first (shuffles, in uniform control flow), then their B rows.
            let j = vec4<u32>(tile_col(&t, s, e0), tile_col(&t, s, e0 + 1u), tile_col(&t, s, e0 + 2u),
                              tile_col(&t, s, e0 + 3u));
            var g0 = Gather(tile_value(&t, s, e0), vec4<Acc>(0.0));
            var g1 = Gather(tile_value(&t, s, e0 + 1u), vec4<Acc>(0.0));
            var g2 = Gather(tile_value(&t, s, e0 + 2u), vec4<Acc>(0.0));
            var g3 = Gather(tile_value(&t, s, e0 + 3u), vec4<Acc>(0.0));
            let load = vec4<u32>(e0, e0 + 1u, e0 + 2u, e0 + 3u) < vec4<u32>(count);
#ifdef GATHER_PANELS
            // B past one binding is in panels; when the whole batch is in the first (most of
            // the time: the others hold what is left over), the loads skip the choice of a
            // panel per row, which costs half the throughput at k = 128.
            let direct = all(select(vec4<u32>(0u), j, load) < vec4<u32>(params.gather_panel_rows));
#else
            let direct = true;
#endif
            g0.row = gather_row(j.x, load.x, cols, direct);
            g1.row = gather_row(j.y, load.y, cols, direct);
            g2.row = gather_row(j.z, load.z, cols, direct);
            g3.row = gather_row(j.w, load.w, cols, direct);
            let at = t.first + e0;
            acc = accumulate(acc, g0, at, load.x, cursor, cols);
            acc = accumulate(acc, g1, at + 1u, load.y, cursor, cols);
            acc = accumulate(acc, g2, at + 2u, load.z, cursor, cols);
            acc = accumulate(acc, g3, at + 3u, load.w, cursor, cols);
        }
        tiles_advance(&t);
    }
    return acc;
}

// C[row, col] = α·sum + β·C[row, col], C not read when β = 0.
fn store_c(row: u32, col: u32, sum: Acc) {
    let i = row * params.k + col;
    let b = beta();
    var old = Real(0.0);
    if b == 0.0 {
    } else {
        old = c[i];
    }
    c[i] = combine(alpha(), sum, b, old);
}

fn store_row(row: u32, cols: Columns, sum: vec4<Acc>) {
    for (var v = 0u; v < 4u; v++) {
        if cols.valid[v] {
            store_c(row, cols.cols[v], sum[v]);
        }
    }
}

#ifdef ATOMIC
fn emit_chunk(chunk: u32, row: u32, col: u32, sum: Acc) {
    atomic_add_f32(chunks[chunk].long_row * params.k + col, f32(sum));
}

// A long row's pieces to add up: its accumulator.
fn long_row_pieces(r: u32) -> u32 {
    return 1u;
}

fn long_row_piece(r: u32, piece: u32, col: u32) -> Acc {
    return Acc(bitcast<f32>(atomicLoad(&sums[r * params.k + col])));
}
#else
fn emit_chunk(chunk: u32, row: u32, col: u32, sum: Acc) {
    partials[chunk * params.k + col] = sum;
}

// A long row's pieces to add up: its chunks' partial sums.
fn long_row_pieces(r: u32) -> u32 {
    return long_rows[r + 1u].first_chunk - long_rows[r].first_chunk;
}

fn long_row_piece(r: u32, piece: u32, col: u32) -> Acc {
    return partials[(long_rows[r].first_chunk + piece) * params.k + col];
}
#endif

#ifdef FINISH
var<workgroup> slot_sums: array<vec4<Acc>, WG_SIZE>;

fn run(workgroup: u32, lane: Lane) {
    let s = slot_of(lane);
    let r = workgroup / params.col_tiles;
    // Workgroups a grid folded into two dimensions holds past the last long row.
    if r >= params.long_rows {
        return;
    }
    let cols = lane_columns(workgroup % params.col_tiles, s.lane);
    var sum = vec4<Acc>(0.0);
    for (var piece = s.index; piece < long_row_pieces(r); piece += slot_count()) {
        for (var v = 0u; v < 4u; v++) {
            if cols.valid[v] {
                sum[v] += long_row_piece(r, piece, cols.cols[v]);
            }
        }
    }
    // Over the slots, in a fixed tree.
    slot_sums[lane.index] = sum;
    workgroupBarrier();
    for (var d = WG_SIZE >> 1u; d >= LANES; d >>= 1u) {
        if lane.index < d {
            slot_sums[lane.index] += slot_sums[lane.index + d];
        }
        workgroupBarrier();
    }
    if s.index == 0u {
        for (var v = 0u; v < 4u; v++) {
            if cols.valid[v] {
                store_c(long_rows[r].row, cols.cols[v], slot_sums[lane.index][v]);
            }
        }
    }
}
#else
#ifdef SPLIT_ROWS
var<workgroup> part_sums: array<vec4<Acc>, WG_SIZE>;

// The sum of `sum` over the PARTS slots of a row, in its first slot's lanes (a fixed tree
// over the parts in order: deterministic). Every lane of the workgroup must call it.
fn parts_sum(lane: Lane, sum: vec4<Acc>) -> vec4<Acc> {
    let part = lane.index / LANES % PARTS;
    part_sums[lane.index] = sum;
    workgroupBarrier();
    for (var d = PARTS >> 1u; d > 0u; d >>= 1u) {
        if part < d {
            part_sums[lane.index] += part_sums[lane.index + d * LANES];
        }
        workgroupBarrier();
    }
    return part_sums[lane.index];
}
#endif

fn run(workgroup: u32, lane: Lane) {
    let s = slot_of(lane);
    var start = 0u;
    var end = 0u;
    // No rows to store unless a group of short rows says otherwise.
    var cursor = Cursor(0u, 0xffffffffu, 0u);
    var store = false;
    var chunk_index = 0u;
    var tile = 0u;
    if workgroup < params.chunk_workgroups {
        let task = workgroup * slot_count() + s.index;
        if task < params.chunks * params.col_tiles {
            chunk_index = task % params.chunks;
            tile = task / params.chunks;
            let chunk = chunks[chunk_index];
            cursor.row = chunk.row;
            start = chunk.start;
            end = min(chunk.start + params.chunk_len, row_offsets[chunk.row + 1u]);
        }
    } else {
        let slot_task = (workgroup - params.chunk_workgroups) * slot_count() + s.index;
        // The host makes PARTS 1 without SPLIT_ROWS.
        let task = slot_task / PARTS;
        let groups = (params.rows + params.group_rows - 1u) / params.group_rows;
        if task < groups * params.col_tiles {
            let first = task % groups * params.group_rows;
            tile = task / groups;
            cursor = Cursor(first, row_offsets[first + 1u], min(first + params.group_rows, params.rows) - 1u);
            start = row_offsets[first];
            end = row_offsets[cursor.last_row + 1u];
            // Long rows (never grouped) are the chunks' (their segment left empty, the slot
            // idle).
            store = params.group_rows > 1u || end - start <= params.max_len;
            if !store {
                end = start;
            }
#ifdef SPLIT_ROWS
            // This slot's part of the row (slot_count() is a multiple of PARTS: a row's slots
            // are in one workgroup); its first slot stores.
            let part = slot_task % PARTS;
            let piece = (end - start + PARTS - 1u) / PARTS;
            start = min(start + part * piece, end);
            end = min(start + piece, end);
            store = store && part == 0u;
#endif
        }
    }
    let cols = lane_columns(tile, s.lane);
    var sum = segment_sum(s, start, end, cols, &cursor);
#ifdef SPLIT_ROWS
    if workgroup >= params.chunk_workgroups {
        sum = parts_sum(lane, sum);
    }
#endif
    if store {
        // The run's last row with entries, then any empty rows after it.
        store_row(cursor.row, cols, sum);
        for (var row = cursor.row + 1u; row <= cursor.last_row; row++) {
            store_row(row, cols, vec4<Acc>(0.0));
        }
    } else if workgroup < params.chunk_workgroups && end > start {
        for (var v = 0u; v < 4u; v++) {
            if cols.valid[v] {
                emit_chunk(chunk_index, cursor.row, cols.cols[v], sum[v]);
            }
        }
    }
}
#endif

// Columns cols[v] of row j (zero where !valid[v]: those are not loaded).
fn gathered4(j: u32, cols: vec4<u32>, valid: vec4<bool>) -> vec4<Acc> {
    var r = vec4<Acc>(0.0);
    for (var v = 0u; v < 4u; v++) {
        if valid[v] {
            r[v] = Acc(gathered(j, cols[v]));
        }
    }
    return r;
}

// Columns cols[v] of row j of the first panel (`gather0`), for a caller that knows the row
// is there: no choice of panel.
fn gathered4_first_panel(j: u32, cols: vec4<u32>, valid: vec4<bool>) -> vec4<Acc> {
    var r = vec4<Acc>(0.0);
    for (var v = 0u; v < 4u; v++) {
        if valid[v] {
            r[v] = Acc(gather0[j * params.k + cols[v]]);
        }
    }
    return r;
}
