//! Twins of the incomplete factorizations (`solvers::IncompleteLu`): the same fine-grained
//! sweeps in f64, the exact ILU(0)/IC(0) they converge to (the textbook row-by-row
//! elimination), and the factors' application.
//!
//! A factor is a vector of values in A's pattern: for ILU(0), L's strict part below the
//! diagonal and U on and above it; for IC(0), L on and below it and Lᵀ above it.

use crate::element::Scalar;
use crate::format::CsrMatrix;
use crate::solvers::TriangularApply;

fn row<T: Scalar>(a: &CsrMatrix<T>, i: usize) -> std::ops::Range<usize> {
    a.row_offsets()[i] as usize..a.row_offsets()[i + 1] as usize
}

fn find<T: Scalar>(a: &CsrMatrix<T>, i: usize, j: usize) -> Option<usize> {
    let r = row(a, i);
    a.col_indices()[r.clone()].binary_search(&(j as u32)).ok().map(|p| r.start + p)
}

/// `sweeps` fine-grained sweeps (Chow & Patel) of ILU(0) or, with `cholesky`, IC(0), as
/// `shaders/ilu_sweep.wgsl` runs them: each sweep from the previous one's factor, the first
/// from A. Panics on a row without a diagonal entry (test input).
pub fn incomplete_factor<T: Scalar>(a: &CsrMatrix<T>, cholesky: bool, sweeps: u32) -> Vec<f64> {
    let values = factored_values(a, cholesky);
    let diagonal: Vec<usize> =
        (0..a.rows()).map(|i| find(a, i, i).unwrap_or_else(|| panic!("row {i} has no diagonal entry"))).collect();
    let mut old = values.clone();
    for t in 0..sweeps {
        let initial = t == 0;
        let pivot = |m: usize, old: &[f64]| match (initial, cholesky) {
            (false, _) => old[diagonal[m]],
            (true, true) => values[diagonal[m]].sqrt(),
            (true, false) => values[diagonal[m]],
        };
        let mut new = vec![0.0; values.len()];
        for i in 0..a.rows() {
            for p in row(a, i) {
                let j = a.col_indices()[p] as usize;
                let m = i.min(j);
                let mut s = values[p];
                if !initial {
                    for q in row(a, i) {
                        let k = a.col_indices()[q] as usize;
                        if k >= m {
                            break;
                        }
                        if let Some(kj) = find(a, k, j) {
                            s -= old[q] * old[kj];
                        }
                    }
                }
                new[p] = if j == i {
                    if cholesky {
                        s.sqrt()
                    } else {
                        s
                    }
                } else if j < i || cholesky {
                    s / pivot(m, &old)
                } else {
                    s
                };
            }
        }
        old = new;
    }
    old
}

/// Whether ILU(0) (IC(0) with `cholesky`) of `a` has the diagonal form of
/// `solvers::FactorForm`: the elimination fills no entry of the pattern (for no stored
/// (i, k), k < i, is there a stored (k, j), j > k, j ≠ i, with (i, j) stored) and, for IC(0),
/// every strict lower entry has a mirror of the same value. Panics on an IC(0) pattern that is
/// not symmetric (test input).
pub fn has_diagonal_form<T: Scalar>(a: &CsrMatrix<T>, cholesky: bool) -> bool {
    (0..a.rows()).all(|i| {
        row(a, i).all(|q| {
            let k = a.col_indices()[q] as usize;
            if k >= i {
                return true;
            }
            let symmetric = !cholesky || a.values()[find(a, k, i).expect("a symmetric pattern")] == a.values()[q];
            let fills = row(a, k).any(|p| {
                let j = a.col_indices()[p] as usize;
                j > k && j != i && find(a, i, j).is_some()
            });
            symmetric && !fills
        })
    })
}

/// The factor of the diagonal form (layout of [`incomplete_factor`]) after `sweeps` sweeps of
/// its pivots, as `shaders/diagonal_pivots.wgsl` runs them: `d = a_ii`, then each sweep
/// `d_i = a_ii − Σ_{k<i} a_ik·a_ki/d_k` from the previous one's d, each sweep's 1/d rounded
/// to f32 as the device stores it. ILU(0): L = I + L_A·D⁻¹, U = D + U_A; IC(0):
/// L = (D + L_A)·D^-½. Only for a matrix with [`has_diagonal_form`].
pub fn diagonal_incomplete_factor<T: Scalar>(a: &CsrMatrix<T>, cholesky: bool, sweeps: u32) -> Vec<f64> {
    let value = |p: usize| a.values()[p].to_f64();
    let diagonal: Vec<f64> = (0..a.rows())
        .map(|i| value(find(a, i, i).unwrap_or_else(|| panic!("row {i} has no diagonal entry"))))
        .collect();
    let stored = |d: f64| (1.0 / d) as f32;
    let mut inverse: Vec<f32> = diagonal.iter().map(|&d| stored(d)).collect();
    for _ in 1..sweeps {
        inverse = (0..a.rows())
            .map(|i| {
                let lower = row(a, i).filter(|&q| (a.col_indices()[q] as usize) < i);
                let sum: f64 = lower
                    .map(|q| {
                        let k = a.col_indices()[q] as usize;
                        find(a, k, i).map_or(0.0, |m| value(q) * value(m) * inverse[k] as f64)
                    })
                    .sum();
                stored(diagonal[i] - sum)
            })
            .collect();
    }
    diagonal_factor(a, cholesky, &inverse)
}

/// The factor of the diagonal form (layout of [`incomplete_factor`]) with the pivots whose
/// reciprocals are `inverse_pivots` (`IncompleteLu::inverse_pivots`).
pub fn diagonal_factor<T: Scalar>(a: &CsrMatrix<T>, cholesky: bool, inverse_pivots: &[f32]) -> Vec<f64> {
    let d: Vec<f64> = inverse_pivots.iter().map(|&v| 1.0 / v as f64).collect();
    let mut factor = vec![0.0; a.nnz()];
    for i in 0..a.rows() {
        for p in row(a, i) {
            let (j, v) = (a.col_indices()[p] as usize, a.values()[p].to_f64());
            factor[p] = match j.cmp(&i) {
                std::cmp::Ordering::Equal if cholesky => d[i].sqrt(),
                std::cmp::Ordering::Equal => d[i],
                std::cmp::Ordering::Less if cholesky => v / d[j].sqrt(),
                std::cmp::Ordering::Greater if cholesky => v / d[i].sqrt(),
                std::cmp::Ordering::Less => v / d[j],
                std::cmp::Ordering::Greater => v,
            };
        }
    }
    factor
}

/// The values the factorization reads: A's, with IC(0)'s upper entries taken from their
/// mirrors below the diagonal (IC(0) reads the lower triangle only). Panics on a pattern
/// that is not symmetric (IC(0); test input).
fn factored_values<T: Scalar>(a: &CsrMatrix<T>, cholesky: bool) -> Vec<f64> {
    let mut values: Vec<f64> = a.values().iter().map(|v| v.to_f64()).collect();
    if cholesky {
        for i in 0..a.rows() {
            for p in row(a, i) {
                let j = a.col_indices()[p] as usize;
                if j > i {
                    values[p] = a.values()[find(a, j, i).expect("a symmetric pattern")].to_f64();
                }
            }
        }
    }
    values
}

/// The exact ILU(0) (or IC(0)) factor by row-by-row elimination restricted to A's pattern
/// (Saad, "Iterative Methods for Sparse Linear Systems", Algorithm 10.4), in the layout of
/// [`incomplete_factor`]; the fixed point of its sweeps.
pub fn exact_incomplete_factor<T: Scalar>(a: &CsrMatrix<T>, cholesky: bool) -> Vec<f64> {
    let mut f = factored_values(a, cholesky);
    for i in 0..a.rows() {
        for q in row(a, i) {
            let k = a.col_indices()[q] as usize;
            if k >= i {
                break;
            }
            let pivot = f[find(a, k, k).expect("a diagonal entry")];
            f[q] /= pivot;
            for p in row(a, i) {
                let j = a.col_indices()[p] as usize;
                if j > k {
                    if let Some(kj) = find(a, k, j) {
                        f[p] -= f[q] * f[kj];
                    }
                }
            }
        }
    }
    if cholesky {
        // A = L·D·Lᵀ with U = D·Lᵀ: L·D^½ below the diagonal, D^½·U above, √d on it.
        let d: Vec<f64> = (0..a.rows()).map(|i| f[find(a, i, i).expect("a diagonal entry")].sqrt()).collect();
        for i in 0..a.rows() {
            for p in row(a, i) {
                let j = a.col_indices()[p] as usize;
                f[p] = if j < i { f[p] * d[j] } else { f[p] / d[i] };
            }
        }
    }
    f
}

/// `z = M⁻¹·r` for a factor in the layout of [`incomplete_factor`].
pub fn apply_incomplete<T: Scalar>(
    a: &CsrMatrix<T>,
    factor: &[f64],
    cholesky: bool,
    apply: TriangularApply,
    r: &[f64],
) -> Vec<f64> {
    let middle = triangle_solve(a, factor, false, !cholesky, apply, r);
    triangle_solve(a, factor, true, false, apply, &middle)
}

/// `T·y = b` for the lower or upper triangle of the factor.
fn triangle_solve<T: Scalar>(
    a: &CsrMatrix<T>,
    factor: &[f64],
    upper: bool,
    unit_diagonal: bool,
    apply: TriangularApply,
    b: &[f64],
) -> Vec<f64> {
    let n = a.rows();
    let on_side = |i: usize, j: usize| if upper { j > i } else { j < i };
    let diagonal = |i: usize| if unit_diagonal { 1.0 } else { factor[find(a, i, i).expect("a diagonal entry")] };
    let strict_sum = |i: usize, y: &[f64]| -> f64 {
        row(a, i)
            .filter(|&p| on_side(i, a.col_indices()[p] as usize))
            .map(|p| factor[p] * y[a.col_indices()[p] as usize])
            .sum()
    };
    match apply {
        TriangularApply::Exact => {
            let mut y = vec![0.0; n];
            let order: Box<dyn Iterator<Item = usize>> = if upper { Box::new((0..n).rev()) } else { Box::new(0..n) };
            for i in order {
                y[i] = (b[i] - strict_sum(i, &y)) / diagonal(i);
            }
            y
        }
        TriangularApply::Sweeps(sweeps) => {
            let mut y: Vec<f64> = (0..n).map(|i| b[i] / diagonal(i)).collect();
            for _ in 0..sweeps {
                y = (0..n).map(|i| (b[i] - strict_sum(i, &y)) / diagonal(i)).collect();
            }
            y
        }
    }
}
