// Blocked right-looking LU with partial pivoting for matrices past workgroup memory (LAPACK
// getrf's algorithm): for each panel of NB columns starting at column j0, four steps, each a
// dispatch (`params.step`), on a batch of n × n matrices stacked by rows in `a`:
//   PANEL  only with LuOptions::staged_panel, where the panel (n × NB) fits in workgroup
//          memory: one workgroup per matrix factors it there, column by column as lu_small
//          does, swapping rows within the panel only; pivots[] as getrf's (0-based rows),
//          info as LAPACK's. By default the panel's rows are in registers and pick their
//          pivot rows in place (lu_tournament.wgsl);
//   SWAP   the panel's row swaps applied to every column outside the panel, or to every
//          column after a panel of lu_tournament.wgsl: their net effect as moves of whole
//          rows (at most 2·nb), every moved entry read, then written (after a cooperative
//          panel lu_tournament.wgsl's SOLVE does this and TRSM);
//   TRSM   U12 ← L11⁻¹·A12: a lane per column of the rows j0..j0+nb, L11 and the columns
//          staged in workgroup memory;
//   GEMM   A22 ← A22 − L21·U12 (shared/lu_gemm_body.wgsl; where n is a multiple of 4,
//          lu_gemm_vec4.wgsl runs it on A's vec4s instead).
// Workgroups index (matrix, tile) as matrix · tiles + tile.
#import entry
#import real
#import lu_factors
#import group_argmax
#import lu_gemm_body
#import lu_moves

const PANEL: u32 = 0u;
const SWAP: u32 = 1u;
const TRSM: u32 = 2u;
const GEMM: u32 = 3u;

// Panel width.
const NB: u32 = 32u;

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
// Columns a TRSM workgroup solves (32, 64 or 128: `LuOptions::trsm_columns`, set by the host).
override TRSM_COLS: u32 = 32u;
// TILE · NB for the SWAP step's pipeline, the most of that and
// NB · NB + NB · TRSM_COLS for the TRSM's, 1 for the panel's (set by the host).
override LEFT: u32 = 5120u;
var<workgroup> left: array<Real, LEFT>;
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

// Entry e of a SWAP workgroup's moves (move e / SWAP_COLS, column e % SWAP_COLS of its
// tile): where in `a` it is read from (its src_row) or, with `to`, written to (its
// dst_row); NONE where nothing moves.
fn swap_entry(m: u32, tile: u32, e: u32, to: bool) -> u32 {
    let row_move = e / SWAP_COLS;
    let c = tile * SWAP_COLS + e % SWAP_COLS;
    let panel = params.whole_rows == 0u && c >= params.j0 && c < params.j0 + params.nb;
    if dst_row[row_move] == NONE || c >= params.n || panel {
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
    swap_moves(m, params.j0, params.nb, lane);
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

// The GEMM's front (shared/lu_gemm_body.wgsl says what each function gives), A an element
// at a time. A lane's four rows of L21's column k are rows r, r + 16, r + 32, r + 48 (r =
// lane / 16); lane lc's columns of C and U12 are lc, lc + 16, lc + 32, lc + 48, so that C's
// loads and stores are coalesced across lc.
fn load_chunk(m: u32, update: TrailingUpdate, row0: u32, col0: u32, kc: u32, lane: Lane) -> Chunk {
    let j0 = update.jk;
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
        if row0 + r + 16u * q < n && kl < update.nb {
            chunk.l[q] = a[at(m, row0 + r + 16u * q, j0 + kl)];
        }
        if col0 + c + 16u * q < n && ku < update.nb {
            chunk.u[q] = a[at(m, j0 + ku, col0 + c + 16u * q)];
        }
    }
    return chunk;
}

fn stage_chunk(chunk: Chunk, lane: Lane) {
    let e = lane.index;
    gemm_stage[(e % K_CHUNK) * 16u + e / K_CHUNK] = chunk.l;
    gemm_stage[16u * K_CHUNK + e] = chunk.u;
}

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
        default: { gemm(m, tile, lane, TrailingUpdate(params.j0, params.nb, params.j0 + params.nb)); }
    }
}
