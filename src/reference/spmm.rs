//! The sparse × dense twins: SpMM `alpha·A·B + beta·C` and SDDMM
//! `alpha·(A ⊙ (B1·B2ᵀ)) + beta·C`, with the BLAS conventions of [`super::spmv_csr`]: when
//! `beta == 0` C is not read (it may be empty), when `alpha == 0` the product is not
//! computed.

use crate::format::{CsrMatrix, DenseMatrix, Scalar};

/// `alpha·A·B + beta·C` for CSR `A` (m × n), row-major `B` (n × k) and `C` (m × k, given as
/// its row-major data), row by row; the result row-major.
pub fn spmm_csr<T: Scalar>(alpha: f64, a: &CsrMatrix<T>, b: &DenseMatrix<T>, beta: f64, c: &[T]) -> Vec<f64> {
    let (m, k) = (a.rows(), b.cols());
    assert_eq!(b.rows(), a.cols(), "spmm_csr: B has {} rows, A has {} columns", b.rows(), a.cols());
    assert!(c.len() == m * k || (beta == 0.0 && c.is_empty()), "spmm_csr: C has {} elements, not {m} x {k}", c.len());
    let mut out = vec![0.0; m * k];
    if alpha != 0.0 {
        for (i, row) in out.chunks_mut(k.max(1)).enumerate().take(m) {
            let (cols, vals) = a.row(i);
            for (&j, v) in cols.iter().zip(vals) {
                for (o, bj) in row.iter_mut().zip(b.row(j as usize)) {
                    *o += v.to_f64() * bj.to_f64();
                }
            }
            row.iter_mut().for_each(|o| *o *= alpha);
        }
    }
    if beta != 0.0 {
        out.iter_mut().zip(c).for_each(|(o, ci)| *o += beta * ci.to_f64());
    }
    out
}

/// `alpha·(A ⊙ (B1·B2ᵀ)) + beta·C` for CSR `A` (m × n), row-major `B1` (m × k) and `B2`
/// (n × k), and `C` with A's pattern (given as its values in A's entry order): entry
/// (i, j) becomes `alpha·(a_ij·dot(B1[i,:], B2[j,:])) + beta·c_ij`.
pub fn sddmm_csr<T: Scalar>(
    alpha: f64,
    a: &CsrMatrix<T>,
    b1: &DenseMatrix<T>,
    b2: &DenseMatrix<T>,
    beta: f64,
    c: &[T],
) -> Vec<f64> {
    assert_eq!(b1.rows(), a.rows(), "sddmm_csr: B1 has {} rows, A has {}", b1.rows(), a.rows());
    assert_eq!(b2.rows(), a.cols(), "sddmm_csr: B2 has {} rows, A has {} columns", b2.rows(), a.cols());
    assert_eq!(b1.cols(), b2.cols(), "sddmm_csr: B1 has {} columns, B2 {}", b1.cols(), b2.cols());
    assert!(c.len() == a.nnz() || (beta == 0.0 && c.is_empty()), "sddmm_csr: C has {} values", c.len());
    let mut out = vec![0.0; a.nnz()];
    if alpha != 0.0 {
        let mut e = 0;
        for i in 0..a.rows() {
            let (cols, vals) = a.row(i);
            for (&j, v) in cols.iter().zip(vals) {
                let dot: f64 = b1.row(i).iter().zip(b2.row(j as usize)).map(|(x, y)| x.to_f64() * y.to_f64()).sum();
                out[e] = alpha * (v.to_f64() * dot);
                e += 1;
            }
        }
    }
    if beta != 0.0 {
        out.iter_mut().zip(c).for_each(|(o, ci)| *o += beta * ci.to_f64());
    }
    out
}
