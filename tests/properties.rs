//! Property tests: random small matrices — empty rows, duplicate COO entries, unsorted
//! input — give the twin's answer on every format and algorithm, with and without
//! subgroups. Shrunk failures are kept in tests/properties.proptest-regressions.

mod common;

use proptest::prelude::*;
use wgsparse::format::EllOptions;
use wgsparse::ops::{Spmv, SpmvAlgorithm};
use wgsparse::reference::spmv_coo;
use wgsparse::{Conversion, CooMatrix, Format, GpuSparse};

/// The worst error of `got` against the twin's `want`, each row's error relative to the
/// magnitude of its terms, `|α|·|A|·|x| + |β|·|y0|` (`scale`). Random signs make sums cancel,
/// and then no f32 summation can promise an error small relative to the *result*; relative
/// to the terms, any order of n additions is within n·2⁻²⁴ (7.2e-6 for the ≤ 120 entries
/// here), while one missing, doubled or misplaced entry costs about 1/n. A row whose terms
/// are all zero must come out exactly zero. NaN counts as infinitely wrong.
fn error_relative_to_terms(got: &[f32], want: &[f64], scale: &[f64]) -> f64 {
    got.iter().zip(want).zip(scale).fold(0.0, |worst, ((&g, &w), &s)| {
        let error = (g as f64 - w).abs();
        let relative = if s > 0.0 {
            error / s
        } else if error == 0.0 {
            0.0
        } else {
            f64::INFINITY
        };
        if relative.is_nan() {
            f64::INFINITY
        } else {
            worst.max(relative)
        }
    })
}

/// A COO matrix up to 40×40 with up to 120 entries, any order, duplicates allowed.
fn coo_matrix() -> impl Strategy<Value = CooMatrix<f32>> {
    (0usize..40, 0usize..40).prop_flat_map(|(rows, cols)| {
        let entries = if rows == 0 || cols == 0 {
            Just(Vec::new()).boxed()
        } else {
            prop::collection::vec((0..rows as u32, 0..cols as u32, -4.0f32..4.0), 0..120).boxed()
        };
        entries.prop_map(move |e| {
            let (r, c, v) = e.into_iter().fold((vec![], vec![], vec![]), |mut acc, (r, c, v)| {
                acc.0.push(r);
                acc.1.push(c);
                acc.2.push(v);
                acc
            });
            CooMatrix::try_new(rows, cols, r, c, v).unwrap()
        })
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 100, ..ProptestConfig::default() })]

    #[test]
    fn every_format_and_algorithm_matches_the_twin(
        coo in coo_matrix(),
        alpha in -3.0f32..3.0,
        beta in prop_oneof![Just(0.0f32), -2.0f32..2.0],
        seed in any::<u64>(),
    ) {
        let x = wgsparse::generate::random_vector(coo.cols(), seed);
        let y0 = wgsparse::generate::random_vector(coo.rows(), seed ^ 1);
        let want = spmv_coo(alpha as f64, &coo, &x, beta as f64, &y0);
        let abs = |v: &[f32]| v.iter().map(|e| e.abs()).collect::<Vec<f32>>();
        let abs_coo = CooMatrix::try_new(
            coo.rows(), coo.cols(), coo.row_indices().to_vec(), coo.col_indices().to_vec(), abs(coo.values()),
        ).unwrap();
        let scale = spmv_coo(alpha.abs() as f64, &abs_coo, &abs(&x), beta.abs() as f64, &abs(&y0));
        let csr = coo.to_csr();
        for (mode, ctx) in common::contexts() {
            for algorithm in SpmvAlgorithm::ALL {
                let matrix = match algorithm.format().unwrap() {
                    // COO kernels take the entries as given: unsorted, with duplicates.
                    Format::Coo => GpuSparse::from_coo(ctx, &coo).unwrap(),
                    Format::Ell => GpuSparse::from_csr(ctx, &csr, Conversion::Ell(EllOptions::with_max_padding_ratio(f64::INFINITY))).unwrap(),
                    format => GpuSparse::from_csr(ctx, &csr, Conversion::of(format)).unwrap(),
                };
                let plan = Spmv::new(ctx, &matrix, algorithm).unwrap();
                let mut y = ctx.upload(&y0).unwrap();
                plan.run(alpha, &ctx.upload(&x).unwrap(), beta, &mut y).unwrap();
                let error = error_relative_to_terms(&y.read_blocking().unwrap(), &want, &scale);
                prop_assert!(error <= 1e-5, "{} {}: error {:e}", mode, algorithm.name(), error);
            }
        }
    }
}
