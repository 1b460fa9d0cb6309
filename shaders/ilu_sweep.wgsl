// One sweep of the fine-grained incomplete factorization (Chow & Patel, "Fine-grained
// parallel incomplete LU factorization", SIAM J. Sci. Comput. 2015): every entry of the
// factor is recomputed from the previous sweep's factor, all entries in parallel. The factor
// has A's pattern; each sweep reads `previous` and writes `next`, so a sweep's result does not
// depend on the order entries are computed in (the host's twin runs the same sweeps).
//
// With s = a_ij − Σ_{k < min(i,j)} f_ik · f_kj over the k where (i,k) and (k,j) are both
// stored:
// - ILU(0), A ≈ L·U with L unit lower (its strict part below the diagonal) and U upper:
//   below the diagonal f_ij = s / f_jj, on and above it f_ij = s;
// - IC(0), A ≈ L·Lᵀ with Lᵀ kept mirrored above the diagonal (f_kj = f_jk, so the same sum
//   serves both): off the diagonal f_ij = s / f_mm (m = min(i, j)), on it f_ii = √s.
// The first sweep (`initial`) takes s = a_ij and the pivots from A (√a_mm for IC(0)): the
// usual starting guess. The sweeps converge to the exact ILU(0)/IC(0) factors (their fixed
// point, reached after finitely many sweeps); a few give most of the preconditioning.
//
// IC(0) reads A's lower triangle only: an upper entry's a_ij is taken from its mirror a_ji,
// so the factor is symmetric whatever A stores above the diagonal.
//
// `problems[0]`: the first row without a diagonal entry (initial sweep); `problems[1]`, when
// `check` is set (the last sweep): the first row whose pivot is zero or not finite (IC(0):
// not positive) or with an entry that is not finite; `problems[2]` (IC(0), initial sweep):
// the first row with an entry whose mirror is not stored (0xffffffff: none).
#import csr_find
#import finite
#import invocation
#import real

struct Params {
    rows: u32,
    cholesky: u32,
    initial: u32,
    check: u32,
}

var<immediate> params: Params;
@group(0) @binding(0) var<storage, read> row_offsets: array<u32>;
@group(0) @binding(1) var<storage, read> col_indices: array<u32>;
@group(0) @binding(2) var<storage, read> a: array<Real>;
@group(0) @binding(3) var<storage, read> previous: array<Real>;
@group(0) @binding(4) var<storage, read_write> next: array<Real>;
@group(0) @binding(5) var<storage, read_write> problems: array<atomic<u32>>;

override WG_SIZE: u32 = 256u;

// The pivot of row m as the previous sweep (or A, on the first) left it; 0 without one.
fn pivot(m: u32) -> Acc {
    let d = csr_find(m, m);
    if d == CSR_NONE {
        return Acc(0.0);
    }
    if params.initial == 0u {
        return Acc(previous[d]);
    }
    if params.cholesky != 0u {
        return sqrt(Acc(a[d]));
    }
    return Acc(a[d]);
}

fn bad_pivot(p: Real) -> bool {
    // Not finite or zero (IC(0): not positive; √ of a negative is NaN).
    return !finite(p) || p == 0.0 || (params.cholesky != 0u && !(p > 0.0));
}

fn run(i: u32) {
    if i >= params.rows {
        return;
    }
    let first = row_offsets[i];
    let end = row_offsets[i + 1u];
    var has_diagonal = false;
    for (var p = first; p < end; p += 1u) {
        let j = col_indices[p];
        let m = min(i, j);
        var s = Acc(a[p]);
        if params.cholesky != 0u && j > i {
            let mirror = csr_find(j, i);
            if mirror == CSR_NONE {
                atomicMin(&problems[2], i);
            } else {
                s = Acc(a[mirror]);
            }
        }
        if params.initial == 0u {
            // k runs over row i's columns below m (sorted: a prefix of the row).
            for (var q = first; q < end; q += 1u) {
                let k = col_indices[q];
                if k >= m {
                    break;
                }
                let kj = csr_find(k, j);
                if kj != CSR_NONE {
                    s -= Acc(previous[q]) * Acc(previous[kj]);
                }
            }
        }
        var f = s;
        if j == i {
            has_diagonal = true;
            if params.cholesky != 0u {
                // A negative s gives NaN, reported below.
                f = sqrt(s);
            }
            if params.check != 0u && bad_pivot(Real(f)) {
                atomicMin(&problems[1], i);
            }
        } else if j < i || params.cholesky != 0u {
            f = s / pivot(m);
        }
        // An earlier sweep's bad pivot can leave a non-finite entry behind a finite diagonal.
        if params.check != 0u && !finite(Real(f)) {
            atomicMin(&problems[1], i);
        }
        next[p] = Real(f);
    }
    if params.initial != 0u && !has_diagonal {
        atomicMin(&problems[0], i);
    }
}
