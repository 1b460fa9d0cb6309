//! The CPU twins agree with each other and follow the BLAS conventions; the error measures
//! never let a NaN pass.

use wgsparse::format::{CooMatrix, DenseMatrix, EllMatrix, EllOptions, HybMatrix, HybSplit};
use wgsparse::generate;
use wgsparse::reference::{
    error_relative_to_terms, gemv_dense, max_relative_error, relative_error, spmv_coo, spmv_csr, spmv_ell, spmv_hyb,
};

#[test]
fn every_format_computes_the_same_product() {
    let matrices = [
        generate::dense_row_mix(120, 100, 1),
        generate::uniform_random(40, 60, 6, 2),
        generate::laplacian_2d(7),
        generate::rmat(7, 4, 0.57, 0.19, 0.19, 3),
    ];
    for (seed, a) in matrices.iter().enumerate() {
        let x = generate::random_vector(a.cols(), seed as u64 + 10);
        let y = generate::random_vector(a.rows(), seed as u64 + 20);
        let (alpha, beta) = (1.5, -0.5);
        let expected = gemv_dense(alpha, &DenseMatrix::from_csr(a).unwrap(), &x, beta, &y);
        let ell = EllMatrix::from_csr(a, &EllOptions::with_max_padding_ratio(f64::INFINITY)).unwrap();
        let hyb = HybMatrix::from_csr(a, HybSplit::Auto).unwrap();
        // The COO twin sees the entries in reverse order: any order must work.
        let (rows, cols, mut r, mut c, mut v) = a.to_coo().into_parts();
        r.reverse();
        c.reverse();
        v.reverse();
        let shuffled = CooMatrix::try_new(rows, cols, r, c, v).unwrap();
        for (name, got) in [
            ("csr", spmv_csr(alpha, a, &x, beta, &y)),
            ("coo", spmv_coo(alpha, &shuffled, &x, beta, &y)),
            ("ell", spmv_ell(alpha, &ell, &x, beta, &y)),
            ("hyb", spmv_hyb(alpha, &hyb, &x, beta, &y)),
        ] {
            // Not f64::max, which passes over NaN.
            let err = got.iter().zip(&expected).map(|(g, e)| (g - e).abs()).fold(0.0, |m, e| {
                if e > m || e.is_nan() {
                    e
                } else {
                    m
                }
            });
            assert!(err < 1e-12, "{name} on matrix {seed}: {err}");
        }
    }
}

#[test]
fn blas_conventions_for_zero_alpha_and_beta() {
    let a = generate::laplacian_2d(3);
    let mut x = generate::random_vector(9, 1);
    let y_nan = vec![f32::NAN; 9];
    // beta == 0: y is not read (NaN does not propagate) and may be empty.
    let ax = spmv_csr(1.0, &a, &x, 0.0, &y_nan);
    assert!(ax.iter().all(|v| v.is_finite()));
    assert_eq!(spmv_csr(1.0, &a, &x, 0.0, &[]), ax);
    // alpha == 0: A·x is not computed, so a NaN in x does not propagate.
    x[4] = f32::NAN;
    let y = generate::random_vector(9, 2);
    let scaled = spmv_csr(0.0, &a, &x, 2.0, &y);
    assert_eq!(scaled, y.iter().map(|&v| 2.0 * v as f64).collect::<Vec<_>>());
    // Otherwise NaN propagates.
    assert!(spmv_csr(1.0, &a, &x, 0.0, &y)[4].is_nan());
    // ELL padding is skipped, so a NaN in x[0] does not leak into rows without column 0.
    let ell = EllMatrix::from_csr(&a, &EllOptions::default()).unwrap();
    let mut x0 = generate::random_vector(9, 3);
    x0[0] = f32::NAN;
    let result = spmv_ell(1.0, &ell, &x0, 0.0, &[]);
    assert_eq!(result.iter().filter(|v| v.is_nan()).count(), 3, "rows 0, 1 and 3 touch x[0]");
}

#[test]
#[should_panic(expected = "x has length")]
fn shape_mismatches_are_reported() {
    spmv_csr(1.0, &generate::laplacian_2d(2), &[1.0f32; 3], 0.0, &[]);
}

#[test]
fn relative_error_never_lets_nan_pass() {
    let reference = [1.0, -2.0, 2.0];
    assert_eq!(relative_error(&[1.0f32, -2.0, 2.0], &reference), 0.0);
    assert!((relative_error(&[1.0f32, -2.0, 2.3], &reference) - 0.1).abs() < 1e-6);
    assert!((max_relative_error(&[1.0f32, -2.0, 2.3], &reference) - 0.15).abs() < 1e-6);
    assert_eq!(relative_error(&[f32::NAN, -2.0, 2.0], &reference), f64::INFINITY);
    assert_eq!(relative_error(&[f32::INFINITY, -2.0, 2.0], &reference), f64::INFINITY);
    assert_eq!(max_relative_error(&[f32::NAN, -2.0, 2.0], &reference), f64::INFINITY);
    // Relative to the terms: a result that cancelled to 1e-6 with terms of 1 is judged by 1.
    assert!((error_relative_to_terms(&[2e-6f32], &[1e-6], &[1.0]) - 1e-6).abs() < 1e-12);
    assert!(relative_error(&[2e-6f32], &[1e-6]) > 0.99);
    assert_eq!(error_relative_to_terms(&[f32::NAN], &[1e-6], &[1.0]), f64::INFINITY);
    assert_eq!(error_relative_to_terms(&[1e-30f32, 0.0], &[0.0, 0.0], &[0.0, 0.0]), f64::INFINITY);
    // Both zero: no error. Zero reference, nonzero result: infinitely wrong.
    assert_eq!(relative_error(&[0.0f32, 0.0], &[0.0, 0.0]), 0.0);
    assert_eq!(relative_error::<f32>(&[], &[]), 0.0);
    assert_eq!(relative_error(&[1e-30f32, 0.0], &[0.0, 0.0]), f64::INFINITY);
    // Non-finite references must be matched exactly.
    assert_eq!(relative_error(&[f32::NAN, 1.0], &[f64::NAN, 1.0]), 0.0);
    assert_eq!(relative_error(&[f32::NEG_INFINITY, 1.0], &[f64::NEG_INFINITY, 1.0]), 0.0);
    assert_eq!(relative_error(&[f32::INFINITY, 1.0], &[f64::NEG_INFINITY, 1.0]), f64::INFINITY);
    assert_eq!(relative_error(&[1.0f32, 1.0], &[f64::NAN, 1.0]), f64::INFINITY);
    // Huge values neither overflow nor underflow the norms.
    let big = [f32::MAX, f32::MAX];
    assert_eq!(relative_error(&big, &[f32::MAX as f64, f32::MAX as f64]), 0.0);
    assert!(relative_error(&[1e-40f32], &[2e-40]).is_finite());
}
