// Blocked right-looking LU with partial pivoting for matrices past workgroup memory (LAPACK
// getrf's algorithm): for each panel of NB columns starting at column j0, four steps, each a
// dispatch (`params.step`), on a batch of n × n matrices stacked by rows in `a`:
//   PANEL  where the panel (n × NB) fits in workgroup memory: one workgroup per matrix
//          factors it there, column by column as lu_small does, swapping rows within the
//          panel only; pivots[] as getrf's (0-based rows), info as LAPACK's. Taller
//          panels pick their pivot rows in place (lu_tournament.wgsl);
//   SWAP   the panel's row swaps applied to every column outside the panel, or to every
//          column after a panel of lu_tournament.wgsl: their net effect as moves of whole
//          rows (at most 2·nb), every moved entry read, then written;
//   TRSM   U12 ← L11⁻¹·A12: a lane per column of the rows j0..j0+nb, L11 and the columns
//          staged in workgroup memory;
//   GEMM   A22 ← A22 − L21·U12: 64 × 64 tiles, a 4 × 4 block per lane, L21's and U12's
//          slices staged in workgroup memory 16 columns (rows) at a time (8 KB in f32).
// Workgroups index (matrix, tile) as matrix · tiles + tile.
#import entry
#import real
#import lu_factors
#import group_argmax

const PANEL: u32 = 0u;
const SWAP: u32 = 1u;
const TRSM: u32 = 2u;
const GEMM: u32 = 3u;

// Panel width and GEMM tile side.
const NB: u32 = 32u;
const TILE: u32 = 64u;

struct Params {
    step: u32,
    n: u32,
    batch: u32,
    j0: u32,
    // Columns of this panel: min(NB, n − j0).
    nb: u32,
    // Workgroups per matrix.
    tiles: u32,
    // SWAP: 1 where the panel's own columns are swapped too (the tournament's panel picks
    // its rows without moving them).
    whole_rows: u32,
}

var<immediate> params: Params;

// 256: the GEMM's 16 × 16 lanes of 4 × 4 outputs.
override WG_SIZE: u32 = 256u;

// Columns a SWAP workgroup moves (its stage, 2 · NB · SWAP_COLS, fits TILE · NB).
const SWAP_COLS: u32 = 32u;
const NONE: u32 = 0xffffffffu;
// Columns a TRSM workgroup solves (up to WG_SIZE; set by the host from workgroup memory).
override TRSM_COLS: u32 = 128u;
// TILE · NB for the SWAP step's pipeline, the most of that and
// NB · NB + NB · TRSM_COLS for the TRSM's, 1 for the panel's (set by the host).
override LEFT: u32 = 5120u;
var<workgroup> left: array<Real, LEFT>;
// The GEMM's stage (set by the host: 2 · 16 · K_CHUNK vec4s in the GEMM's pipeline, 1 in the
// others).
const K_CHUNK: u32 = 16u;
override GEMM_STAGE: u32 = 1u;
var<workgroup> gemm_stage: array<vec4<Real>, GEMM_STAGE>;
// The panel's pipeline: n · NB (the first panel, n rows × NB); 1 in the others.
override PANEL_TILE: u32 = 1u;
var<workgroup> panel_tile: array<Real, PANEL_TILE>;

// The panel factored in workgroup memory (rows j0.., NB columns a row).
fn panel_staged(m: u32, lane: Lane) {
    let n = params.n;
    let j0 = params.j0;
    let nb = params.nb;
    let rows = n - j0;
    for (var e = lane.index; e < rows * NB; e += WG_SIZE) {
        let c = e % NB;
        if c < nb {
            panel_tile[e] = a[at(m, j0 + e / NB, j0 + c)];
        }
    }
    workgroupBarrier();
    // Lanes as (row, column) of a grid 32 wide: column lane % NB, rows stride WG_SIZE / NB.
    let col = lane.index % NB;
    let row_lane = lane.index / NB;
    let row_lanes = WG_SIZE / NB;
    for (var kk = 0u; kk < nb; kk++) {
        var key = KEY_NONE;
        var row = kk;
        for (var r = kk + lane.index; r < rows; r += WG_SIZE) {
            let v = pivot_key(panel_tile[r * NB + kk]);
            if v > key {
                key = v;
                row = r;
            }
        }
        let p = group_argmax(key, row, lane, kk).slot;
        if p != kk && lane.index < nb {
            let t = panel_tile[kk * NB + lane.index];
            panel_tile[kk * NB + lane.index] = panel_tile[p * NB + lane.index];
            panel_tile[p * NB + lane.index] = t;
        }
        if lane.index == 0u {
            pivots[m * n + j0 + kk] = j0 + p;
        }
        workgroupBarrier();
        let pivot = panel_tile[kk * NB + kk];
        if pivot == 0.0 {
            if lane.index == 0u && info[m] == 0u {
                info[m] = j0 + kk + 1u;
            }
            continue;
        }
        let inverse = 1.0 / pivot;
        for (var r = kk + 1u + lane.index; r < rows; r += WG_SIZE) {
            panel_tile[r * NB + kk] *= inverse;
        }
        workgroupBarrier();
        if col > kk && col < nb {
            let u = panel_tile[kk * NB + col];
            for (var r = kk + 1u + row_lane; r < rows; r += row_lanes) {
                panel_tile[r * NB + col] = fma(-panel_tile[r * NB + kk], u, panel_tile[r * NB + col]);
            }
        }
        workgroupBarrier();
    }
    for (var e = lane.index; e < rows * NB; e += WG_SIZE) {
        let c = e % NB;
        if c < nb {
            a[at(m, j0 + e / NB, j0 + c)] = panel_tile[e];
        }
    }
}

fn panel(m: u32, lane: Lane) {
    // The first panel starts the matrix's info (only lane 0 writes it, in order).
    if params.j0 == 0u && lane.index == 0u {
        info[m] = 0u;
    }
    panel_staged(m, lane);
}

// The panel's interchanges as moves: row dst_row[e] takes what row src_row[e] held before
// them (entries 0..nb: rows j0.., then the rows further down that a pivot named, each once;
// NONE where nothing moves). Found by following the swaps on row numbers: lane k first
// finds the first step naming the same pivot row, so that one lane then plays every step in
// O(1).
var<workgroup> swap_pivot: array<u32, NB>;
var<workgroup> swap_first: array<u32, NB>;
var<workgroup> dst_row: array<u32, 64>;
var<workgroup> src_row: array<u32, 64>;

fn swap_moves(m: u32, lane: Lane) {
    let j0 = params.j0;
    let nb = params.nb;
    let k = lane.index;
    if k < nb {
        swap_pivot[k] = pivots[m * params.n + j0 + k];
        src_row[k] = j0 + k;
    }
    workgroupBarrier();
    if k < nb {
        var first = k;
        for (var s = 0u; s < k; s++) {
            if swap_pivot[s] == swap_pivot[k] {
                first = s;
                break;
            }
        }
        swap_first[k] = first;
        src_row[NB + k] = swap_pivot[k];
    }
    workgroupBarrier();
    if k == 0u {
        // src_row[i]: what row j0 + i holds; src_row[NB + f]: what pivot row swap_pivot[f] holds.
        for (var step = 0u; step < nb; step++) {
            let p = swap_pivot[step];
            var other = NB + swap_first[step];
            if p < j0 + nb {
                other = p - j0;
            }
            let t = src_row[step];
            src_row[step] = src_row[other];
            src_row[other] = t;
        }
    }
    workgroupBarrier();
    if k < nb {
        dst_row[k] = select(NONE, j0 + k, src_row[k] != j0 + k);
        let p = swap_pivot[k];
        dst_row[NB + k] = select(NONE, p, p >= j0 + nb && swap_first[k] == k && src_row[NB + k] != p);
    }
    workgroupBarrier();
}

// Entry e of a SWAP workgroup's moves (move e / SWAP_COLS, column e % SWAP_COLS of its
// tile): where in `a` it is read from (its src_row) or, with `to`, written to (its
// dst_row); NONE where nothing moves.
fn swap_entry(m: u32, tile: u32, e: u32, to: bool) -> u32 {
    let row_move = e / SWAP_COLS;
    let c = tile * SWAP_COLS + e % SWAP_COLS;
    let panel = params.whole_rows == 0u && c >= params.j0 && c < params.j0 + params.nb;
    if row_move % NB >= params.nb || dst_row[row_move] == NONE || c >= params.n || panel {
        return NONE;
    }
    return at(m, select(src_row[row_move], dst_row[row_move], to), c);
}

// Four of `a`'s elements (zeros where an index is NONE), all loads issued before any is
// used: a store of each as it arrives would wait out the loads one by one (in-order issue).
fn load_four(i: vec4<u32>) -> vec4<Real> {
    let v = vec4<Real>(a[select(0u, i.x, i.x != NONE)], a[select(0u, i.y, i.y != NONE)],
                       a[select(0u, i.z, i.z != NONE)], a[select(0u, i.w, i.w != NONE)]);
    return select(v, vec4<Real>(0.0), i == vec4<u32>(NONE));
}

// SWAP_COLS columns of every row the interchanges move: all read (into `left`, four loads a
// lane at a time), then all written, a move's columns by consecutive lanes.
fn swap_columns(m: u32, tile: u32, lane: Lane) {
    swap_moves(m, lane);
    let entries = 2u * NB * SWAP_COLS;
    for (var e = lane.index; e < entries; e += 4u * WG_SIZE) {
        let es = vec4<u32>(e, e + WG_SIZE, e + 2u * WG_SIZE, e + 3u * WG_SIZE);
        var source = vec4<u32>(NONE);
        for (var q = 0u; q < 4u; q++) {
            if es[q] < entries {
                source[q] = swap_entry(m, tile, es[q], false);
            }
        }
        let v = load_four(source);
        for (var q = 0u; q < 4u; q++) {
            if source[q] != NONE {
                left[es[q]] = v[q];
            }
        }
    }
    workgroupBarrier();
    for (var e = lane.index; e < entries; e += WG_SIZE) {
        let to = swap_entry(m, tile, e, true);
        if to != NONE {
            a[to] = left[e];
        }
    }
}

// U12 ← L11⁻¹·A12 on TRSM_COLS columns: L11 and the columns' nb rows staged in `left`, a
// lane per column solving down the rows there.
fn trsm(m: u32, tile: u32, lane: Lane) {
    let j0 = params.j0;
    let nb = params.nb;
    let first = j0 + nb + tile * TRSM_COLS;
    let block = NB * NB;
    // L11 (entries e < nb², at e), then the columns' nb rows (at block + e − nb²), four loads
    // a lane at a time.
    let entries = nb * nb + nb * TRSM_COLS;
    for (var e = lane.index; e < entries; e += 4u * WG_SIZE) {
        let es = vec4<u32>(e, e + WG_SIZE, e + 2u * WG_SIZE, e + 3u * WG_SIZE);
        var source = vec4<u32>(NONE);
        var to = vec4<u32>(0u);
        for (var q = 0u; q < 4u; q++) {
            let x = es[q];
            if x < nb * nb {
                source[q] = at(m, j0 + x / nb, j0 + x % nb);
                to[q] = x;
            } else if x < entries {
                let y = x - nb * nb;
                let c = first + y % TRSM_COLS;
                if c < params.n {
                    source[q] = at(m, j0 + y / TRSM_COLS, c);
                    to[q] = block + y;
                }
            }
        }
        let v = load_four(source);
        for (var q = 0u; q < 4u; q++) {
            if source[q] != NONE {
                left[to[q]] = v[q];
            }
        }
    }
    workgroupBarrier();
    let col = lane.index;
    if col < TRSM_COLS && first + col < params.n {
        for (var i = 1u; i < nb; i++) {
            var sum = Acc(left[block + i * TRSM_COLS + col]);
            for (var j = 0u; j < i; j++) {
                sum -= Acc(left[i * nb + j]) * Acc(left[block + j * TRSM_COLS + col]);
            }
            left[block + i * TRSM_COLS + col] = Real(sum);
        }
    }
    workgroupBarrier();
    for (var e = lane.index; e < nb * TRSM_COLS; e += WG_SIZE) {
        let c = first + e % TRSM_COLS;
        if c < params.n {
            a[at(m, j0 + e / TRSM_COLS, c)] = left[block + e];
        }
    }
}

// A chunk of K_CHUNK columns of L21's tile and K_CHUNK rows of U12's, a vec4 of each a lane
// (16 · K_CHUNK = the GEMM's 256 lanes), loaded into registers so that the next chunk's loads
// are in flight while this one is used (`stage_chunk` then stores them).
struct Chunk {
    l: vec4<Real>,
    u: vec4<Real>,
}

fn load_chunk(m: u32, row0: u32, col0: u32, kc: u32, lane: Lane) -> Chunk {
    let j0 = params.j0;
    let n = params.n;
    let e = lane.index;
    var chunk = Chunk(vec4<Real>(0.0), vec4<Real>(0.0));
    // L21: consecutive lanes take consecutive columns of one row (64 contiguous bytes).
    let r = e / K_CHUNK;
    let kl = kc + e % K_CHUNK;
    // U12: consecutive lanes take consecutive columns of one row.
    let ku = kc + e / 16u;
    let c = e % 16u;
    for (var q = 0u; q < 4u; q++) {
        if row0 + r + 16u * q < n && kl < params.nb {
            chunk.l[q] = a[at(m, row0 + r + 16u * q, j0 + kl)];
        }
        if col0 + c + 16u * q < n && ku < params.nb {
            chunk.u[q] = a[at(m, j0 + ku, col0 + c + 16u * q)];
        }
    }
    return chunk;
}

// The chunk staged: the vec4 at k · 16 + r holds L21's rows r, r + 16, r + 32, r + 48 of
// column k (a lane's four rows), the one at 16 · K_CHUNK + k · 16 + c U12's columns c,
// c + 16, c + 32, c + 48 of row k.
fn stage_chunk(chunk: Chunk, lane: Lane) {
    let e = lane.index;
    gemm_stage[(e % K_CHUNK) * 16u + e / K_CHUNK] = chunk.l;
    gemm_stage[16u * K_CHUNK + e] = chunk.u;
}

// C's entries (i, col0 + lc + 16·c) for c = 0..3 (zeros past n).
fn load_c_row(m: u32, i: u32, col0: u32, lc: u32) -> vec4<Acc> {
    var v = vec4<Acc>(0.0);
    if i < params.n {
        for (var c = 0u; c < 4u; c++) {
            let j = col0 + lc + 16u * c;
            if j < params.n {
                v[c] = Acc(a[at(m, i, j)]);
            }
        }
    }
    return v;
}

fn store_c_row(m: u32, i: u32, col0: u32, lc: u32, v: vec4<Acc>) {
    if i < params.n {
        for (var c = 0u; c < 4u; c++) {
            let j = col0 + lc + 16u * c;
            if j < params.n {
                a[at(m, i, j)] = Real(v[c]);
            }
        }
    }
}

// A lane's 4 × 4 outputs are rows lr + 16·q and columns lc + 16·c of the tile, so that C's
// loads and stores are coalesced across lc; both operands come from the stage as one vec4
// each a step (16 FMAs for two loads). C and the first chunk are loaded together, and each
// later chunk while the one before is used, so that their latencies overlap.
fn gemm(m: u32, tile: u32, lane: Lane) {
    let first = params.j0 + params.nb;
    let side = (params.n - first + TILE - 1u) / TILE;
    let row0 = first + (tile / side) * TILE;
    let col0 = first + (tile % side) * TILE;
    let lr = lane.index / 16u;
    let lc = lane.index % 16u;
    var c0 = load_c_row(m, row0 + lr, col0, lc);
    var c1 = load_c_row(m, row0 + lr + 16u, col0, lc);
    var c2 = load_c_row(m, row0 + lr + 32u, col0, lc);
    var c3 = load_c_row(m, row0 + lr + 48u, col0, lc);
    var next = load_chunk(m, row0, col0, 0u, lane);
    for (var kc = 0u; kc < params.nb; kc += K_CHUNK) {
        stage_chunk(next, lane);
        workgroupBarrier();
        // The next chunk's loads are issued before this chunk's products, which hide them.
        if kc + K_CHUNK < params.nb {
            next = load_chunk(m, row0, col0, kc + K_CHUNK, lane);
        }
        for (var k = 0u; k < K_CHUNK; k++) {
            let l = vec4<Acc>(gemm_stage[k * 16u + lr]);
            let u = vec4<Acc>(gemm_stage[16u * K_CHUNK + k * 16u + lc]);
            c0 = fma(vec4<Acc>(-l.x), u, c0);
            c1 = fma(vec4<Acc>(-l.y), u, c1);
            c2 = fma(vec4<Acc>(-l.z), u, c2);
            c3 = fma(vec4<Acc>(-l.w), u, c3);
        }
        // The next chunk overwrites the stage.
        workgroupBarrier();
    }
    store_c_row(m, row0 + lr, col0, lc, c0);
    store_c_row(m, row0 + lr + 16u, col0, lc, c1);
    store_c_row(m, row0 + lr + 32u, col0, lc, c2);
    store_c_row(m, row0 + lr + 48u, col0, lc, c3);
}

fn run(workgroup: u32, lane: Lane) {
    let m = workgroup / params.tiles;
    if m >= params.batch {
        return;
    }
    let tile = workgroup % params.tiles;
    switch params.step {
        case PANEL: { panel(m, lane); }
        case SWAP: { swap_columns(m, tile, lane); }
        case TRSM: { trsm(m, tile, lane); }
        default: { gemm(m, tile, lane); }
    }
}
