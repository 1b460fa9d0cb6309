//! The LU twins: LAPACK's unblocked `getf2` in f64 (partial pivoting, ties to the first row,
//! a zero pivot reported and not divided by), and the backward error of a factorization,
//! `‖P·A − L·U‖_F / ‖A‖_F`, which is what a factorization is checked by (pivot orders may
//! differ where magnitudes tie within rounding).

use crate::format::{DenseMatrix, Scalar};

/// `P·A = L·U` of the n × n matrix `a` in f64: the packed factors (row-major), the pivots
/// (0-based, LAPACK's order of swaps) and info (0, or 1 + the first zero pivot's column).
pub fn lu_factor<T: Scalar>(a: &DenseMatrix<T>, pivoting: bool) -> (Vec<f64>, Vec<u32>, u32) {
    let n = a.rows();
    assert_eq!(a.cols(), n, "lu_factor: a {} x {} matrix is not square", a.rows(), a.cols());
    let mut m: Vec<f64> = a.data().iter().map(|v| v.to_f64()).collect();
    let (mut pivots, mut info) = (Vec::with_capacity(n), 0);
    for k in 0..n {
        let mut p = k;
        if pivoting {
            for i in k + 1..n {
                if m[i * n + k].abs() > m[p * n + k].abs() {
                    p = i;
                }
            }
            for j in 0..n {
                m.swap(k * n + j, p * n + j);
            }
        }
        pivots.push(p as u32);
        let pivot = m[k * n + k];
        if pivot == 0.0 {
            if info == 0 {
                info = k as u32 + 1;
            }
            continue;
        }
        for i in k + 1..n {
            m[i * n + k] /= pivot;
            for j in k + 1..n {
                m[i * n + j] -= m[i * n + k] * m[k * n + j];
            }
        }
    }
    (m, pivots, info)
}

/// `‖P·A − L·U‖_F / ‖A‖_F` for the packed factors `lu` (unit-lower L, U) and `pivots` of
/// the n × n matrix `a`; 0 for a zero A factored to zeros, infinite when A is zero and the
/// factors are not, NaN-safe (any non-finite factor gives infinity).
pub fn lu_backward_error<T: Scalar, F: Scalar>(a: &DenseMatrix<T>, lu: &[F], pivots: &[u32]) -> f64 {
    let n = a.rows();
    assert_eq!(lu.len(), n * n, "lu_backward_error: the factors have {} entries, not {n}²", lu.len());
    assert_eq!(pivots.len(), n, "lu_backward_error: {} pivots for {n} rows", pivots.len());
    // P·A: A's rows swapped in the order of the pivots.
    let mut pa: Vec<f64> = a.data().iter().map(|v| v.to_f64()).collect();
    for (k, &p) in pivots.iter().enumerate() {
        let p = p as usize;
        if p >= n {
            return f64::INFINITY;
        }
        for j in 0..n {
            pa.swap(k * n + j, p * n + j);
        }
    }
    let f = |i: usize, j: usize| lu[i * n + j].to_f64();
    let (mut difference, mut norm) = (0.0f64, 0.0f64);
    for i in 0..n {
        for j in 0..n {
            // (L·U)_ij = Σ_{k ≤ min(i, j)} l_ik·u_kj with l_ii = 1.
            let mut sum = 0.0;
            for k in 0..=i.min(j) {
                let l = if k == i { 1.0 } else { f(i, k) };
                sum += l * f(k, j);
            }
            if !sum.is_finite() {
                return f64::INFINITY;
            }
            difference += (pa[i * n + j] - sum).powi(2);
            norm += pa[i * n + j].powi(2);
        }
    }
    if difference == 0.0 {
        0.0
    } else if norm == 0.0 {
        f64::INFINITY
    } else {
        (difference / norm).sqrt()
    }
}

/// `‖P·A·v − L·(U·v)‖₂ / (‖A‖_F·‖v‖₂)` for a vector `v`: the backward error of the factors
/// seen through one vector, in O(n²) where [`lu_backward_error`] takes O(n³) (a 4096² check
/// would take a minute). A wrong factor shows with probability 1 for a random `v`.
pub fn lu_residual_along<T: Scalar, F: Scalar>(a: &DenseMatrix<T>, lu: &[F], pivots: &[u32], v: &[f64]) -> f64 {
    let n = a.rows();
    assert_eq!(lu.len(), n * n, "lu_residual_along: the factors have {} entries, not {n}²", lu.len());
    assert_eq!(pivots.len(), n, "lu_residual_along: {} pivots for {n} rows", pivots.len());
    assert_eq!(v.len(), n, "lu_residual_along: v has {} entries for {n} columns", v.len());
    // A·v, then its rows swapped in the pivots' order: (P·A)·v.
    let mut pav: Vec<f64> = (0..n).map(|i| a.row(i).iter().zip(v).map(|(x, y)| x.to_f64() * y).sum()).collect();
    for (k, &p) in pivots.iter().enumerate() {
        if p as usize >= n {
            return f64::INFINITY;
        }
        pav.swap(k, p as usize);
    }
    let f = |i: usize, j: usize| lu[i * n + j].to_f64();
    let uv: Vec<f64> = (0..n).map(|i| (i..n).map(|j| f(i, j) * v[j]).sum()).collect();
    let luv: Vec<f64> = (0..n).map(|i| uv[i] + (0..i).map(|j| f(i, j) * uv[j]).sum::<f64>()).collect();
    let difference = pav.iter().zip(&luv).map(|(x, y)| (x - y).powi(2)).sum::<f64>().sqrt();
    let norm_a = a.data().iter().map(|x| x.to_f64().powi(2)).sum::<f64>().sqrt();
    let norm_v = v.iter().map(|x| x * x).sum::<f64>().sqrt();
    if !difference.is_finite() {
        f64::INFINITY
    } else if difference == 0.0 {
        0.0
    } else {
        difference / (norm_a * norm_v)
    }
}
