// Batched solve with LU factors (LAPACK getrs, no transpose): for each matrix, B ← A⁻¹·B
// given P·A = L·U from lu_small (unit-lower L and U packed, pivots as it wrote them). One
// workgroup per matrix; the factors are copied into workgroup memory, and each lane takes
// columns of B (n rows of nrhs, row-major, the matrices' blocks stacked): the row swaps in
// order, then forward substitution with L and backward with U. A zero U(k, k) (info ≠ 0)
// gives non-finite values, as in LAPACK: callers check info first. With GLOBAL (factors
// past workgroup memory) they are read from global memory instead.
//
// A dispatch may do part of it: the swaps (`swaps`), forward substitution for rows
// [forward_begin, forward_end) and backward substitution for rows [backward_begin,
// backward_end), in that order; a run of dispatches over bands of rows (forward bands
// upwards, then backward bands downwards) gives the same sums. The host cuts the solve so
// where the adapter caps an invocation's loop iterations (llvmpipe: 65,535 in all), else one
// dispatch does everything.
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
}

var<immediate> params: Params;
@group(0) @binding(0) var<storage, read> lu: array<Real>;
@group(0) @binding(1) var<storage, read> pivots: array<u32>;
@group(0) @binding(2) var<storage, read_write> b: array<Real>;

override WG_SIZE: u32 = 256u;
override TILE: u32 = 1024u;

var<workgroup> tile: array<Real, TILE>;

// Entry (i, j) of this workgroup's factors.
fn factor(workgroup: u32, i: u32, j: u32) -> Real {
#ifdef GLOBAL
    return lu[(workgroup * params.n + i) * params.n + j];
#else
    return tile[i * params.n + j];
#endif
}

fn run(workgroup: u32, lane: Lane) {
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
}
