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
