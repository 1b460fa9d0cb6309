// Blocked right-looking LU with partial pivoting for matrices past workgroup memory (LAPACK
// getrf's algorithm): for each panel of NB columns starting at column j0, four steps, each a
// dispatch (`params.step`), on a batch of n × n matrices stacked by rows in `a`:
//   PANEL  one workgroup per matrix factors the panel (rows j0.., columns j0..j0+nb) in
//          global memory, column by column as lu_small does, swapping rows within the
//          panel only; pivots[] as getrf's (0-based rows), info as LAPACK's;
//   SWAP   the panel's row swaps applied to every column outside the panel, or to every
//          column after a panel of lu_tournament.wgsl: their net effect as moves of whole
//          rows (at most 2·nb), every moved entry read, then written;
//   TRSM   U12 ← L11⁻¹·A12: a lane per column of the rows j0..j0+nb, L11 and the columns
//          staged in workgroup memory;
//   GEMM   A22 ← A22 − L21·U12: 64 × 64 tiles, a 4 × 4 block per lane, L21's slice staged
//          in workgroup memory (U12's rows are read from global memory, coalesced: staging
//          both would pass 32 KB of workgroup memory in f64).
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
// TILE · NB for the SWAP and GEMM steps' pipeline, the most of that and
// NB · NB + NB · TRSM_COLS for the TRSM's, 1 for the panel's (set by the host).
override LEFT: u32 = 5120u;
var<workgroup> left: array<Real, LEFT>;
// The panel's pipeline where the first panel (n rows × NB) fits in workgroup memory: n · NB;
// 1 otherwise (the panel is then factored in global memory).
override PANEL_TILE: u32 = 1u;
var<workgroup> panel_tile: array<Real, PANEL_TILE>;

// The row i ≥ k of the largest |a[i, k]|, the first on ties; k when all are NaN.
fn find_pivot(m: u32, k: u32, lane: Lane) -> u32 {
    let n = params.n;
    var key = -1.0;
    var row = k;
    for (var i = k + lane.index; i < n; i += WG_SIZE) {
        let v = f32(abs(a[at(m, i, k)]));
        if v > key {
            key = v;
            row = i;
        }
    }
    return group_argmax(key, row, lane, k).slot;
}

// The panel factored in workgroup memory (rows j0.., NB columns a row): the same steps as
// `panel`, without a global-memory round trip in them.
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
        var key = -1.0;
        var row = kk;
        for (var r = kk + lane.index; r < rows; r += WG_SIZE) {
            let v = f32(abs(panel_tile[r * NB + kk]));
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
    let n = params.n;
    let end = params.j0 + params.nb;
    // The first panel starts the matrix's info (only lane 0 writes it, in order).
    if params.j0 == 0u && lane.index == 0u {
        info[m] = 0u;
    }
    if PANEL_TILE > 1u {
        panel_staged(m, lane);
        return;
    }
    for (var k = params.j0; k < end; k++) {
        let p = find_pivot(m, k, lane);
        if p != k {
            for (var j = params.j0 + lane.index; j < end; j += WG_SIZE) {
                let t = a[at(m, k, j)];
                a[at(m, k, j)] = a[at(m, p, j)];
                a[at(m, p, j)] = t;
            }
        }
        if lane.index == 0u {
            pivots[m * n + k] = p;
        }
        storageBarrier();
        workgroupBarrier();
        let pivot = a[at(m, k, k)];
        if pivot == 0.0 {
            if lane.index == 0u && info[m] == 0u {
                info[m] = k + 1u;
            }
            continue;
        }
        let inverse = 1.0 / pivot;
        for (var i = k + 1u + lane.index; i < n; i += WG_SIZE) {
            let l = a[at(m, i, k)] * inverse;
            a[at(m, i, k)] = l;
            for (var j = k + 1u; j < end; j++) {
                a[at(m, i, j)] = fma(-l, a[at(m, k, j)], a[at(m, i, j)]);
            }
        }
        storageBarrier();
        workgroupBarrier();
    }
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

// SWAP_COLS columns of every row the interchanges move: all read (into `left`), then all
// written, a move's columns by consecutive lanes.
fn swap_columns(m: u32, tile: u32, lane: Lane) {
    swap_moves(m, lane);
    let end = params.j0 + params.nb;
    for (var phase = 0u; phase < 2u; phase++) {
        for (var e = lane.index; e < 2u * NB * SWAP_COLS; e += WG_SIZE) {
            let row_move = e / SWAP_COLS;
            let c = tile * SWAP_COLS + e % SWAP_COLS;
            let panel = params.whole_rows == 0u && c >= params.j0 && c < end;
            if row_move % NB < params.nb && dst_row[row_move] != NONE && c < params.n && !panel {
                if phase == 0u {
                    left[e] = a[at(m, src_row[row_move], c)];
                } else {
                    a[at(m, dst_row[row_move], c)] = left[e];
                }
            }
        }
        workgroupBarrier();
    }
}

// U12 ← L11⁻¹·A12 on TRSM_COLS columns: L11 and the columns' nb rows staged in `left`, a
// lane per column solving down the rows there.
fn trsm(m: u32, tile: u32, lane: Lane) {
    let j0 = params.j0;
    let nb = params.nb;
    let first = j0 + nb + tile * TRSM_COLS;
    for (var e = lane.index; e < nb * nb; e += WG_SIZE) {
        left[e] = a[at(m, j0 + e / nb, j0 + e % nb)];
    }
    let block = NB * NB;
    for (var e = lane.index; e < nb * TRSM_COLS; e += WG_SIZE) {
        let c = first + e % TRSM_COLS;
        if c < params.n {
            left[block + e] = a[at(m, j0 + e / TRSM_COLS, c)];
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

fn gemm(m: u32, tile: u32, lane: Lane) {
    let j0 = params.j0;
    let nb = params.nb;
    let n = params.n;
    let first = j0 + nb;
    let side = (n - first + TILE - 1u) / TILE;
    let row0 = first + (tile / side) * TILE;
    let col0 = first + (tile % side) * TILE;
    // Stage L21's rows row0.. (zeros past n).
    for (var e = lane.index; e < TILE * NB; e += WG_SIZE) {
        let r = e / NB;
        let k = e % NB;
        var l = Real(0.0);
        if row0 + r < n && k < nb {
            l = a[at(m, row0 + r, j0 + k)];
        }
        left[e] = l;
    }
    workgroupBarrier();
    let lr = lane.index / 16u;
    let lc = lane.index % 16u;
    var sums: array<vec4<Acc>, 4>;
    for (var k = 0u; k < nb; k++) {
        var u = vec4<Acc>(0.0);
        for (var c = 0u; c < 4u; c++) {
            let j = col0 + lc + 16u * c;
            if j < n {
                u[c] = Acc(a[at(m, j0 + k, j)]);
            }
        }
        for (var q = 0u; q < 4u; q++) {
            sums[q] = fma(vec4<Acc>(Acc(left[(lr + 16u * q) * NB + k])), u, sums[q]);
        }
    }
    for (var q = 0u; q < 4u; q++) {
        let i = row0 + lr + 16u * q;
        if i < n {
            for (var c = 0u; c < 4u; c++) {
                let j = col0 + lc + 16u * c;
                if j < n {
                    a[at(m, i, j)] = Real(Acc(a[at(m, i, j)]) - sums[q][c]);
                }
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
        default: { gemm(m, tile, lane); }
    }
}
