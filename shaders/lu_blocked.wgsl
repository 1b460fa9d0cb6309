// Blocked right-looking LU with partial pivoting for matrices past workgroup memory (LAPACK
// getrf's algorithm): for each panel of NB columns starting at column j0, four steps, each a
// dispatch (`params.step`), on a batch of n × n matrices stacked by rows in `a`:
//   PANEL  one workgroup per matrix factors the panel (rows j0.., columns j0..j0+nb) in
//          global memory, column by column as lu_small does, swapping rows within the
//          panel only; pivots[] as getrf's (0-based rows), info as LAPACK's;
//   SWAP   the panel's row swaps applied, in order, to every column outside the panel (a
//          lane per column, so each column's swaps keep their order);
//   TRSM   U12 ← L11⁻¹·A12: a lane per column of the rows j0..j0+nb, L11 staged in
//          workgroup memory;
//   GEMM   A22 ← A22 − L21·U12: 64 × 64 tiles, a 4 × 4 block per lane, L21's slice staged
//          in workgroup memory (U12's rows are read from global memory, coalesced: staging
//          both would pass 32 KB of workgroup memory in f64).
// Workgroups index (matrix, tile) as matrix · tiles + tile.
#import entry
#import real

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
}

var<immediate> params: Params;
@group(0) @binding(0) var<storage, read_write> a: array<Real>;
@group(0) @binding(1) var<storage, read_write> pivots: array<u32>;
@group(0) @binding(2) var<storage, read_write> info: array<u32>;

// 256: the GEMM's 16 × 16 lanes of 4 × 4 outputs.
override WG_SIZE: u32 = 256u;

// TILE · NB for the TRSM and GEMM steps' pipeline, 1 for the panel's (set by the host).
override LEFT: u32 = 2048u;
var<workgroup> left: array<Real, LEFT>;
// The panel's pipeline where the first panel (n rows × NB) fits in workgroup memory: n · NB;
// 1 otherwise (the panel is then factored in global memory).
override PANEL_TILE: u32 = 1u;
var<workgroup> panel_tile: array<Real, PANEL_TILE>;
var<workgroup> best_keys: array<f32, WG_SIZE>;
var<workgroup> best_rows: array<u32, WG_SIZE>;
var<workgroup> pivot_row: u32;

fn at(m: u32, i: u32, j: u32) -> u32 {
    return (m * params.n + i) * params.n + j;
}

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
    return workgroup_argmax(key, row, lane);
}

// The argmax of `key` over the workgroup (ties to the lower row): a tree in workgroup memory.
fn workgroup_argmax(key: f32, row: u32, lane: Lane) -> u32 {
    best_keys[lane.index] = key;
    best_rows[lane.index] = row;
    workgroupBarrier();
    for (var offset = WG_SIZE >> 1u; offset > 0u; offset >>= 1u) {
        if lane.index < offset {
            let other_key = best_keys[lane.index + offset];
            let other = best_rows[lane.index + offset];
            if other_key > best_keys[lane.index] || (other_key == best_keys[lane.index] && other < best_rows[lane.index]) {
                best_keys[lane.index] = other_key;
                best_rows[lane.index] = other;
            }
        }
        workgroupBarrier();
    }
    if lane.index == 0u {
        pivot_row = best_rows[0];
    }
    return workgroupUniformLoad(&pivot_row);
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
        let p = workgroup_argmax(key, row, lane);
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

fn swap_columns(m: u32, tile: u32, lane: Lane) {
    let n = params.n;
    let c = tile * WG_SIZE + lane.index;
    let end = params.j0 + params.nb;
    if c >= n || (c >= params.j0 && c < end) {
        return;
    }
    for (var k = params.j0; k < end; k++) {
        let p = pivots[m * n + k];
        if p != k {
            let t = a[at(m, k, c)];
            a[at(m, k, c)] = a[at(m, p, c)];
            a[at(m, p, c)] = t;
        }
    }
}

fn trsm(m: u32, tile: u32, lane: Lane) {
    let j0 = params.j0;
    let nb = params.nb;
    for (var e = lane.index; e < nb * nb; e += WG_SIZE) {
        left[e] = a[at(m, j0 + e / nb, j0 + e % nb)];
    }
    workgroupBarrier();
    let c = j0 + nb + tile * WG_SIZE + lane.index;
    if c >= params.n {
        return;
    }
    for (var i = 1u; i < nb; i++) {
        var sum = Acc(a[at(m, j0 + i, c)]);
        for (var j = 0u; j < i; j++) {
            sum -= Acc(left[i * nb + j]) * Acc(a[at(m, j0 + j, c)]);
        }
        a[at(m, j0 + i, c)] = Real(sum);
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
