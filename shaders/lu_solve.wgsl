// Batched solve with LU factors (LAPACK getrs, no transpose): for each matrix, B ← A⁻¹·B
// given P·A = L·U from the factorization (unit-lower L and U packed, pivots as it wrote
// them): the row swaps in order, then forward substitution with L and backward with U. A
// zero U(k, k) (info ≠ 0) gives non-finite values, as in LAPACK: callers check info first.
// Two ways, by the number of right-hand sides:
// - many (default): one workgroup per matrix, a lane per column of B (n rows of nrhs,
//   row-major, the matrices' blocks stacked), the factors copied into workgroup memory (with
//   GLOBAL, past workgroup memory, read from global memory instead);
// - few (COLUMN): one workgroup per column of a matrix, the column in workgroup memory. Its
//   swaps by one lane from a chunk of pivots staged a lane each; each triangle by blocks of
//   BLOCK rows: first the block's rows take their dot products with the part solved (a slot
//   of 32 lanes a row, coalesced along it, the slot's sums added in lane order), then the
//   block's own triangle, staged, a row a step (a barrier a step). A lane walking the whole
//   solve alone was ~n² dependent steps: a 4096² matrix's solve was a ~0.2 s dispatch.
//
// A dispatch may do part of it: the swaps (`swaps`), forward substitution for rows
// [forward_begin, forward_end) and backward substitution for rows [backward_begin,
// backward_end), in that order; a run of dispatches over bands of rows (forward bands
// upwards, then backward bands downwards) gives the same sums. The host cuts the solve so
// where the adapter caps an invocation's loop iterations (llvmpipe: 65,535 in all), else one
// dispatch does everything.
//
// Panels (COLUMN): one workgroup reading a large triangle alone is bound by what one SM
// moves (4096²: ~28 GB/s, 2.5 ms; H200, benches/NOTES.md session 67). So on a GPU the few
// right-hand sides leave idle, bands of rows (panels) alternate with UPDATE dispatches: a
// band's dot products take only the columns from `panel_begin` (forward; up to `panel_end`
// backward), and after it an UPDATE dispatch, a workgroup a block of rows, subtracts the
// band's part, factors(rows, panel)·b(panel), from every row left to solve. Each row's dot
// product is then grouped by panels, the same whatever the timing.
#import entry
#import real

struct Params {
    n: u32,
    batch: u32,
    nrhs: u32,
    swaps: u32,
    forward_begin: u32,
    forward_end: u32,
    backward_begin: u32,
    backward_end: u32,
    // COLUMN: the columns the dot products take (forward from panel_begin, backward up to
    // panel_end; 0 and n without panels). UPDATE: the solved panel's columns.
    panel_begin: u32,
    panel_end: u32,
    // UPDATE: the rows it subtracts the panel's part from.
    update_begin: u32,
    update_end: u32,
}

var<immediate> params: Params;
@group(0) @binding(0) var<storage, read> lu: array<Real>;
@group(0) @binding(1) var<storage, read> pivots: array<u32>;
@group(0) @binding(2) var<storage, read_write> b: array<Real>;

override WG_SIZE: u32 = 256u;
// The staged factors (without COLUMN, GLOBAL).
override TILE: u32 = 1024u;
// COLUMN: the column's length, at least the matrix's order (the host checks it fits).
override COLUMN_LEN: u32 = 1u;

#ifdef COLUMN
// Rows a triangle block; lanes a row's dot product (WG_SIZE a multiple of it).
const BLOCK: u32 = 32u;
const SLOT: u32 = 32u;
var<workgroup> column: array<Real, COLUMN_LEN>;
// The slots' partial dot products of a block's rows, then the block's triangle.
var<workgroup> block: array<Real, BLOCK * BLOCK>;
var<workgroup> pivot_chunk: array<u32, WG_SIZE>;
#else
var<workgroup> tile: array<Real, TILE>;
#endif

#ifndef COLUMN
// Entry (i, j) of this workgroup's factors.
fn factor(workgroup: u32, i: u32, j: u32) -> Real {
#ifdef GLOBAL
    return lu[(workgroup * params.n + i) * params.n + j];
#else
    return tile[i * params.n + j];
#endif
}
#endif

#ifdef COLUMN
// Entry (i, j) of matrix m's factors.
fn factor_at(m: u32, i: u32, j: u32) -> Real {
    return lu[(m * params.n + i) * params.n + j];
}

// column[i] −= Σ_j factor(i, j)·column[j] over j in [first, end), for the rows i of [r0, r1):
// slot s of 32 lanes takes rows r0 + s, r0 + s + slots, …, each lane every 32nd j, eight
// loads in flight (one workgroup reads the whole triangle: its loads in flight are its
// bandwidth); the slot's sums are added in lane order by the row's lane below BLOCK. With
// `stage`, then the block's triangle, factors(rows, columns [r0, r1)), is staged into
// `block`: where a lane takes one row (slots ≥ BLOCK), its entry is loaded beside the dot
// product's loads rather than after them, a round trip less a block. Uniform (barriers).
fn subtract_solved(m: u32, r0: u32, r1: u32, first: u32, end: u32, lane: Lane, stage: bool) {
    let slots = WG_SIZE / SLOT;
    let t = lane.index % SLOT;
    let row_a_lane = slots >= BLOCK;
    var staged = Real(0.0);
    for (var q = lane.index / SLOT; q < BLOCK; q += slots) {
        var low = vec4<Acc>(0.0);
        var high = vec4<Acc>(0.0);
        let i = r0 + q;
        if stage && row_a_lane && i < r1 && r0 + t < r1 {
            staged = factor_at(m, i, r0 + t);
        }
        if i < r1 {
            var j = first + t;
            for (; j + 7u * SLOT < end; j += 8u * SLOT) {
                low += vec4<Acc>(
                    Acc(factor_at(m, i, j)) * Acc(column[j]),
                    Acc(factor_at(m, i, j + SLOT)) * Acc(column[j + SLOT]),
                    Acc(factor_at(m, i, j + 2u * SLOT)) * Acc(column[j + 2u * SLOT]),
                    Acc(factor_at(m, i, j + 3u * SLOT)) * Acc(column[j + 3u * SLOT]),
                );
                high += vec4<Acc>(
                    Acc(factor_at(m, i, j + 4u * SLOT)) * Acc(column[j + 4u * SLOT]),
                    Acc(factor_at(m, i, j + 5u * SLOT)) * Acc(column[j + 5u * SLOT]),
                    Acc(factor_at(m, i, j + 6u * SLOT)) * Acc(column[j + 6u * SLOT]),
                    Acc(factor_at(m, i, j + 7u * SLOT)) * Acc(column[j + 7u * SLOT]),
                );
            }
            for (; j < end; j += SLOT) {
                low.x += Acc(factor_at(m, i, j)) * Acc(column[j]);
            }
        }
        let sums = low + high;
        block[q * SLOT + t] = Real((sums.x + sums.y) + (sums.z + sums.w));
    }
    workgroupBarrier();
    let i = r0 + lane.index;
    if lane.index < BLOCK && i < r1 {
        var sum = Acc(column[i]);
        for (var k = 0u; k < SLOT; k++) {
            sum -= Acc(block[lane.index * SLOT + k]);
        }
        column[i] = Real(sum);
    }
    workgroupBarrier();
    if !stage {
        return;
    }
    if row_a_lane {
        let q = lane.index / SLOT;
        if q < BLOCK && r0 + q < r1 && r0 + t < r1 {
            block[q * BLOCK + t] = staged;
        }
    } else {
        for (var e = lane.index; e < BLOCK * BLOCK; e += WG_SIZE) {
            let row = r0 + e / BLOCK;
            let col = r0 + e % BLOCK;
            if row < r1 && col < r1 {
                block[e] = factor_at(m, row, col);
            }
        }
    }
    workgroupBarrier();
}

fn solve_column(workgroup: u32, lane: Lane) {
    let n = params.n;
    let nrhs = params.nrhs;
    // Past the columns: workgroups a folded grid adds (the whole workgroup alike).
    if workgroup >= params.batch * nrhs {
        return;
    }
    let m = workgroup / nrhs;
    let c = workgroup % nrhs;
    let rows = m * n;
    for (var i = lane.index; i < n; i += WG_SIZE) {
        column[i] = b[(rows + i) * nrhs + c];
    }
    if params.swaps != 0u {
        for (var k0 = 0u; k0 < n; k0 += WG_SIZE) {
            // The column (or the chunk before) is written; its pivots are read.
            workgroupBarrier();
            if k0 + lane.index < n {
                pivot_chunk[lane.index] = pivots[rows + k0 + lane.index];
            }
            workgroupBarrier();
            if lane.index == 0u {
                for (var k = k0; k < min(k0 + WG_SIZE, n); k++) {
                    let p = pivot_chunk[k - k0];
                    let t = column[k];
                    column[k] = column[p];
                    column[p] = t;
                }
            }
        }
    }
    workgroupBarrier();
    // L·y = P·b, unit diagonal: a block's rows less the solved rows above, then its triangle,
    // each step the row's final value taken by the rows below it in the block.
    for (var r0 = params.forward_begin; r0 < params.forward_end; r0 += BLOCK) {
        let r1 = min(r0 + BLOCK, params.forward_end);
        subtract_solved(m, r0, r1, params.panel_begin, r0, lane, true);
        for (var k = r0; k < r1; k++) {
            let y = Acc(column[k]);
            let i = r0 + lane.index;
            if i > k && i < r1 {
                column[i] = Real(Acc(column[i]) - Acc(block[(i - r0) * BLOCK + k - r0]) * y);
            }
            workgroupBarrier();
        }
    }
    // U·x = y, from the bottom: the same by blocks upwards; a row's value is divided by its
    // pivot when taken, and once more (the same division) when the block is done.
    for (var r1 = params.backward_end; r1 > params.backward_begin; ) {
        let r0 = select(params.backward_begin, r1 - BLOCK, r1 >= params.backward_begin + BLOCK);
        subtract_solved(m, r0, r1, r1, params.panel_end, lane, true);
        for (var k = r1; k > r0; k--) {
            let r = k - 1u;
            let x_r = Acc(column[r]) / Acc(block[(r - r0) * BLOCK + r - r0]);
            let i = r0 + lane.index;
            if i < r {
                column[i] = Real(Acc(column[i]) - Acc(block[(i - r0) * BLOCK + r - r0]) * x_r);
            }
            workgroupBarrier();
        }
        let i = r0 + lane.index;
        if lane.index < BLOCK && i < r1 {
            column[i] = Real(Acc(column[i]) / Acc(block[(i - r0) * BLOCK + i - r0]));
        }
        workgroupBarrier();
        r1 = r0;
    }
    for (var i = lane.index; i < n; i += WG_SIZE) {
        b[(rows + i) * nrhs + c] = column[i];
    }
}

#ifdef UPDATE
// Rows [update_begin, update_end) of a right-hand side less factors(rows, panel)·b(panel),
// the panel's rows solved: a workgroup a block of BLOCK rows (at most WG_SIZE), its dot
// products as a band's (subtract_solved).
fn update_rows(workgroup: u32, lane: Lane) {
    let chunks = (params.update_end - params.update_begin + BLOCK - 1u) / BLOCK;
    if workgroup >= params.batch * params.nrhs * chunks {
        return;
    }
    let column_index = workgroup / chunks;
    let m = column_index / params.nrhs;
    let c = column_index % params.nrhs;
    let r0 = params.update_begin + (workgroup % chunks) * BLOCK;
    let r1 = min(r0 + BLOCK, params.update_end);
    let rows = m * params.n;
    for (var j = params.panel_begin + lane.index; j < params.panel_end; j += WG_SIZE) {
        column[j] = b[(rows + j) * params.nrhs + c];
    }
    let i = r0 + lane.index;
    if i < r1 {
        column[i] = b[(rows + i) * params.nrhs + c];
    }
    workgroupBarrier();
    subtract_solved(m, r0, r1, params.panel_begin, params.panel_end, lane, false);
    if i < r1 {
        b[(rows + i) * params.nrhs + c] = column[i];
    }
}
#endif
#endif

fn run(workgroup: u32, lane: Lane) {
#ifdef COLUMN
#ifdef UPDATE
    update_rows(workgroup, lane);
#else
    solve_column(workgroup, lane);
#endif
#else
    if workgroup >= params.batch {
        return;
    }
    let n = params.n;
    let nrhs = params.nrhs;
#ifndef GLOBAL
    for (var e = lane.index; e < n * n; e += WG_SIZE) {
        tile[e] = lu[workgroup * n * n + e];
    }
    workgroupBarrier();
#endif
    let rows = workgroup * n;
    for (var c = lane.index; c < nrhs; c += WG_SIZE) {
        for (var k = 0u; k < select(0u, n, params.swaps != 0u); k++) {
            let p = pivots[rows + k];
            if p != k {
                let t = b[(rows + k) * nrhs + c];
                b[(rows + k) * nrhs + c] = b[(rows + p) * nrhs + c];
                b[(rows + p) * nrhs + c] = t;
            }
        }
        // Row 0 of L·y = b is y_0 = b_0 (unit diagonal).
        for (var i = max(params.forward_begin, 1u); i < params.forward_end; i++) {
            var sum = Acc(b[(rows + i) * nrhs + c]);
            for (var j = 0u; j < i; j++) {
                sum -= Acc(factor(workgroup, i, j)) * Acc(b[(rows + j) * nrhs + c]);
            }
            b[(rows + i) * nrhs + c] = Real(sum);
        }
        for (var i = params.backward_end; i > params.backward_begin; i--) {
            let r = i - 1u;
            var sum = Acc(b[(rows + r) * nrhs + c]);
            for (var j = r + 1u; j < n; j++) {
                sum -= Acc(factor(workgroup, r, j)) * Acc(b[(rows + j) * nrhs + c]);
            }
            b[(rows + r) * nrhs + c] = Real(sum / Acc(factor(workgroup, r, r)));
        }
    }
#endif
}
