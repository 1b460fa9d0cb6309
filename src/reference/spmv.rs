//! `y ← alpha·A·x + beta·y` for every format.
//!
//! BLAS conventions, which the GPU ops follow: when `beta == 0`, `y` is not read (a NaN in it
//! does not propagate, and it may be empty); when `alpha == 0`, `A·x` is not computed (a NaN
//! or infinity in `A` or `x` does not propagate). A NaN `alpha` or `beta` is not zero.

use crate::format::{CooMatrix, CsrMatrix, DenseMatrix, EllMatrix, HybMatrix, Scalar, ELL_PADDING};

/// `alpha·A·x + beta·y` for CSR, one row at a time.
pub fn spmv_csr<T: Scalar>(alpha: f64, a: &CsrMatrix<T>, x: &[T], beta: f64, y: &[T]) -> Vec<f64> {
    axpby("spmv_csr", (a.rows(), a.cols()), alpha, x, beta, y, |acc| accumulate_csr(a, x, acc))
}

/// `alpha·A·x + beta·y` for COO, one entry at a time in storage order (duplicates add up).
pub fn spmv_coo<T: Scalar>(alpha: f64, a: &CooMatrix<T>, x: &[T], beta: f64, y: &[T]) -> Vec<f64> {
    axpby("spmv_coo", (a.rows(), a.cols()), alpha, x, beta, y, |acc| accumulate_coo(a, x, acc))
}

/// `alpha·A·x + beta·y` for ELL, one row at a time over its slots, skipping padding.
pub fn spmv_ell<T: Scalar>(alpha: f64, a: &EllMatrix<T>, x: &[T], beta: f64, y: &[T]) -> Vec<f64> {
    axpby("spmv_ell", (a.rows(), a.cols()), alpha, x, beta, y, |acc| accumulate_ell(a, x, acc))
}

/// `alpha·A·x + beta·y` for HYB: the ELL part, then the COO part added on top.
pub fn spmv_hyb<T: Scalar>(alpha: f64, a: &HybMatrix<T>, x: &[T], beta: f64, y: &[T]) -> Vec<f64> {
    axpby("spmv_hyb", (a.rows(), a.cols()), alpha, x, beta, y, |acc| {
        accumulate_ell(a.ell(), x, acc);
        accumulate_coo(a.coo(), x, acc);
    })
}

/// `alpha·A·x + beta·y` for a dense row-major matrix.
pub fn gemv_dense<T: Scalar>(alpha: f64, a: &DenseMatrix<T>, x: &[T], beta: f64, y: &[T]) -> Vec<f64> {
    axpby("gemv_dense", (a.rows(), a.cols()), alpha, x, beta, y, |acc| {
        for (i, sum) in acc.iter_mut().enumerate() {
            *sum = a.row(i).iter().zip(x).map(|(v, xj)| v.to_f64() * xj.to_f64()).sum();
        }
    })
}

/// `alpha·Aᵀ·x + beta·y` for a dense row-major matrix (x has A's rows, y its columns),
/// accumulated down A's columns.
pub fn gemv_dense_t<T: Scalar>(alpha: f64, a: &DenseMatrix<T>, x: &[T], beta: f64, y: &[T]) -> Vec<f64> {
    axpby("gemv_dense_t", (a.cols(), a.rows()), alpha, x, beta, y, |acc| {
        for (i, xi) in x.iter().enumerate() {
            for (sum, v) in acc.iter_mut().zip(a.row(i)) {
                *sum += v.to_f64() * xi.to_f64();
            }
        }
    })
}

/// Checks shapes, then combines `alpha · (A·x, accumulated into zeros by `product`)` with
/// `beta · y` under the BLAS conventions of this module.
fn axpby<T: Scalar>(
    op: &str,
    (rows, cols): (usize, usize),
    alpha: f64,
    x: &[T],
    beta: f64,
    y: &[T],
    product: impl FnOnce(&mut [f64]),
) -> Vec<f64> {
    assert_eq!(x.len(), cols, "{op}: x has length {}, the matrix has {cols} columns", x.len());
    assert!(
        y.len() == rows || (beta == 0.0 && y.is_empty()),
        "{op}: y has length {}, the matrix has {rows} rows",
        y.len()
    );
    let mut out = vec![0.0; rows];
    if alpha != 0.0 {
        product(&mut out);
        out.iter_mut().for_each(|v| *v *= alpha);
    }
    if beta != 0.0 {
        out.iter_mut().zip(y).for_each(|(v, yi)| *v += beta * yi.to_f64());
    }
    out
}

fn accumulate_csr<T: Scalar>(a: &CsrMatrix<T>, x: &[T], acc: &mut [f64]) {
    for (i, sum) in acc.iter_mut().enumerate() {
        let (cols, vals) = a.row(i);
        *sum += cols.iter().zip(vals).map(|(&c, v)| v.to_f64() * x[c as usize].to_f64()).sum::<f64>();
    }
}

fn accumulate_coo<T: Scalar>(a: &CooMatrix<T>, x: &[T], acc: &mut [f64]) {
    for ((&r, &c), v) in a.row_indices().iter().zip(a.col_indices()).zip(a.values()) {
        acc[r as usize] += v.to_f64() * x[c as usize].to_f64();
    }
}

fn accumulate_ell<T: Scalar>(a: &EllMatrix<T>, x: &[T], acc: &mut [f64]) {
    let rows = a.rows();
    for (i, sum) in acc.iter_mut().enumerate() {
        for k in 0..a.width() {
            let c = a.col_indices()[k * rows + i];
            if c != ELL_PADDING {
                *sum += a.values()[k * rows + i].to_f64() * x[c as usize].to_f64();
            }
        }
    }
}
