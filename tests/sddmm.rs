//! SDDMM `C ← α·(A ⊙ (B1·B2ᵀ)) + β·C` for every algorithm against the f64 CPU twin, for
//! f32 and f64, with and without subgroups, at every width of `common::WIDTHS`; C poisoned
//! with NaN before runs with β = 0.

mod common;

use common::WidthCase;

use wgsparse::generate::Rng;
use wgsparse::ops::{Sddmm, SddmmAlgorithm, SddmmOptions};
use wgsparse::reference::{error_relative_to_terms, relative_error, sddmm_csr};
use wgsparse::{Context, Conversion, CsrMatrix, DenseLayout, DenseMatrix, Error, GpuDense, GpuSparse, Scalar};

/// C's values, read back from its panels in A's entry order.
fn values<T: Scalar>(c: &GpuSparse<T>) -> Vec<T> {
    c.panels()
        .iter()
        .flat_map(|p| match p.storage() {
            wgsparse::matrix::PanelStorage::Csr(m) => m.values().read_blocking().unwrap(),
            _ => unreachable!("SDDMM outputs CSR"),
        })
        .collect()
}

/// A matrix with `a`'s pattern and values `v`, on the device.
fn with_values<T: Scalar>(ctx: &Context, a: &CsrMatrix<T>, v: Vec<T>) -> GpuSparse<T> {
    let m = CsrMatrix::try_from_csr_data(a.rows(), a.cols(), a.row_offsets().to_vec(), a.col_indices().to_vec(), v)
        .unwrap();
    GpuSparse::from_csr(ctx, &m, Conversion::Csr).unwrap()
}

/// Runs the plan twice (β = 0 over NaN-poisoned C, then β ≠ 0 over random C) and returns
/// the worst error against the twin, relative to the terms' magnitudes (`α·a·(B₁B₂ᵀ)` and
/// `β·c₀` can cancel in a matrix of few entries).
fn sddmm_error<T: Scalar>(
    ctx: &Context,
    a: &CsrMatrix<T>,
    k: usize,
    algorithm: SddmmAlgorithm,
    options: &SddmmOptions,
    rng: &mut Rng,
) -> f64 {
    let matrix = GpuSparse::from_csr(ctx, a, Conversion::Csr).unwrap();
    let plan = Sddmm::with_options(ctx, &matrix, k, algorithm, options).unwrap();
    let b1 = common::dense::<T>(a.rows(), k, rng.next_u64());
    let b2 = common::dense::<T>(a.cols(), k, rng.next_u64());
    let (b1_gpu, b2_gpu) = (
        GpuDense::upload(ctx, &b1, DenseLayout::RowMajor).unwrap(),
        GpuDense::upload(ctx, &b2, DenseLayout::RowMajor).unwrap(),
    );
    let magnitudes = a.map_values(|v| T::from_f64(v.to_f64().abs()));
    let mut worst = 0f64;
    for (alpha, beta) in [(0.5 + rng.next_f64(), 0.0), (-1.5, 0.25 + rng.next_f64())] {
        let c0: Vec<T> = if beta == 0.0 {
            vec![T::from_f64(f64::NAN); a.nnz()]
        } else {
            common::dense::<T>(1, a.nnz(), rng.next_u64()).into_data()
        };
        let mut c = with_values(ctx, a, c0.clone());
        plan.run(T::from_f64(alpha), &b1_gpu, &b2_gpu, T::from_f64(beta), &mut c).unwrap();
        let (alpha, beta) = (T::from_f64(alpha).to_f64(), T::from_f64(beta).to_f64());
        let want = sddmm_csr(alpha, a, &b1, &b2, beta, &c0);
        let terms = sddmm_csr(alpha.abs(), &magnitudes, &b1, &b2, beta.abs(), &c0);
        worst = worst.max(error_relative_to_terms(&values(&c), &want, &terms));
    }
    worst
}

fn check_in<T: Scalar>(contexts: &[(&str, &Context)], cases: &[WidthCase<T>], options: &SddmmOptions, seed: u64) {
    common::check_widths(
        contexts,
        cases,
        &SddmmAlgorithm::ALL,
        SddmmAlgorithm::name,
        seed,
        |ctx, a, k, algorithm, rng| sddmm_error(ctx, a, k, algorithm, options, rng),
    )
}

fn check_all<T: Scalar>(cases: &[WidthCase<T>], seed: u64) {
    check_in(&common::contexts_for::<T>(), cases, &SddmmOptions::default(), seed)
}

#[test]
fn sddmm_matches_twin_on_generated_matrices_f32() {
    let seed = common::seed("sddmm generated f32");
    check_all(&common::generated_widths::<f32>(seed), seed);
}

#[test]
fn sddmm_matches_twin_on_generated_matrices_f64() {
    let seed = common::seed("sddmm generated f64");
    check_all(&common::generated_widths::<f64>(seed), seed);
}

#[test]
fn sddmm_matches_twin_on_real_matrices_f32() {
    let seed = common::seed("sddmm real f32");
    check_all(&common::real_widths::<f32>(3), seed);
}

#[test]
fn sddmm_matches_twin_on_real_matrices_f64() {
    let seed = common::seed("sddmm real f64");
    check_all(&common::real_widths::<f64>(3), seed);
}

#[test]
fn sddmm_is_correct_for_every_tuning_and_short_chunks() {
    let seed = common::seed("sddmm tunings");
    let cases: Vec<_> = common::sparse_dense_cases::<f32>(seed)
        .into_iter()
        .filter(|(n, _)| n.starts_with("rmat") || n.starts_with("dense row"))
        .map(|(n, a)| (n, a, vec![3, 32, 33]))
        .collect();
    // (Widths stay small: with one lane per slot the 1,100-entry row takes k loop steps per
    // entry, and lavapipe ends every loop of an invocation after 65,535 steps in all.)
    for (mode, ctx) in common::contexts() {
        let tile = ctx.subgroup_size_range().map_or(64, |r| r.1);
        let smallest = ctx.subgroup_size_range().map_or(32, |r| r.0);
        for lanes in [1, 2, 4, 8, 16, 32].into_iter().filter(|&l| l <= smallest) {
            let options = SddmmOptions::default().lanes(lanes).chunk_len(2 * tile);
            eprintln!("{mode}: lanes {lanes}, chunks of {}", 2 * tile);
            check_in(&[(mode, ctx)], &cases, &options, seed);
        }
    }
}

#[test]
fn sddmm_with_alpha_zero_only_scales_c() {
    let a = CsrMatrix::try_from_csr_data(3, 2, vec![0, 1, 2, 2], vec![0, 1], vec![f32::NAN, 1.0]).unwrap();
    let b1 = DenseMatrix::try_new(3, 2, vec![1.0, f32::NAN, 2.0, 1.0, 1.0, 1.0]).unwrap();
    let b2 = DenseMatrix::try_new(2, 2, vec![f32::INFINITY, 1.0, 1.0, 1.0]).unwrap();
    for (mode, ctx) in common::contexts() {
        let matrix = GpuSparse::from_csr(ctx, &a, Conversion::Csr).unwrap();
        let (b1, b2) = (
            GpuDense::upload(ctx, &b1, DenseLayout::RowMajor).unwrap(),
            GpuDense::upload(ctx, &b2, DenseLayout::RowMajor).unwrap(),
        );
        for algorithm in SddmmAlgorithm::ALL {
            let plan = Sddmm::new(ctx, &matrix, 2, algorithm).unwrap();
            let mut c = with_values(ctx, &a, vec![3.0, 4.0]);
            plan.run(0.0f32, &b1, &b2, 2.0, &mut c).unwrap();
            assert_eq!(values(&c), vec![6.0, 8.0], "{mode} {}", algorithm.name());
            let mut c = with_values(ctx, &a, vec![f32::NAN, f32::NAN]);
            plan.run(0.0f32, &b1, &b2, 0.0, &mut c).unwrap();
            assert_eq!(values(&c), vec![0.0, 0.0], "{mode} {}", algorithm.name());
        }
    }
}

#[test]
fn sddmm_writes_a_zeros_like_copy_and_takes_device_scalars() {
    let seed = common::seed("sddmm zeros_like");
    let a = wgsparse::generate::rmat(8, 6, 0.57, 0.19, 0.19, seed);
    let ctx = common::context();
    let matrix = GpuSparse::from_csr(ctx, &a, Conversion::Csr).unwrap();
    let mut c = matrix.zeros_like(ctx).unwrap();
    assert!(c.has_pattern_of(&matrix));
    let (b1, b2) = (common::dense::<f32>(a.rows(), 6, seed), common::dense::<f32>(a.cols(), 6, seed + 1));
    let scalars = ctx.upload(&[1.25f32, 0.5]).unwrap();
    let plan = Sddmm::new(ctx, &matrix, 6, SddmmAlgorithm::Auto).unwrap();
    assert_eq!(plan.algorithm(), SddmmAlgorithm::Entries);
    plan.run(
        wgsparse::ScalarArg::Device { vector: &scalars, index: 0 },
        &GpuDense::upload(ctx, &b1, DenseLayout::RowMajor).unwrap(),
        &GpuDense::upload(ctx, &b2, DenseLayout::RowMajor).unwrap(),
        wgsparse::ScalarArg::Device { vector: &scalars, index: 1 },
        &mut c,
    )
    .unwrap();
    let error = relative_error(&values(&c), &sddmm_csr(1.25, &a, &b1, &b2, 0.5, &vec![0.0f32; a.nnz()]));
    assert!(error <= 1e-5, "error {error:e}");
    // A itself is untouched: the copy has its own values.
    let a_values = values(&matrix);
    assert_eq!(a_values, a.values());
}

/// k = 0: every dot product is empty, so C ← β·C, for every algorithm.
#[test]
fn sddmm_of_zero_width_scales_c() {
    let a = wgsparse::generate::random(40, 30, 0.2, 5);
    let c0 = common::dense::<f32>(1, a.nnz(), 7).into_data();
    let empty = |rows| DenseMatrix::<f32>::try_new(rows, 0, vec![]).unwrap();
    for (mode, ctx) in common::contexts() {
        let matrix = GpuSparse::from_csr(ctx, &a, Conversion::Csr).unwrap();
        let (b1, b2) = (
            GpuDense::upload(ctx, &empty(40), DenseLayout::RowMajor).unwrap(),
            GpuDense::upload(ctx, &empty(30), DenseLayout::RowMajor).unwrap(),
        );
        for algorithm in SddmmAlgorithm::ALL {
            let mut c = with_values(ctx, &a, c0.clone());
            Sddmm::new(ctx, &matrix, 0, algorithm).unwrap().run(1.5f32, &b1, &b2, 0.5, &mut c).unwrap();
            let want: Vec<f32> = c0.iter().map(|v| 0.5 * v).collect();
            assert_eq!(values(&c), want, "{mode} {}", algorithm.name());
        }
    }
}

/// Auto takes a group per entry except at k ≤ 64 on many rows of about one length (RoDe),
/// and RoDe wherever the caller sets RoDe's chunk length.
#[test]
fn sddmm_auto_takes_entries_except_on_many_regular_rows_at_small_k() {
    let ctx = common::context();
    let plan_for = |a: &CsrMatrix<f32>, k: usize, options: &SddmmOptions| {
        let matrix = GpuSparse::from_csr(ctx, a, Conversion::Csr).unwrap();
        Sddmm::with_options(ctx, &matrix, k, SddmmAlgorithm::Auto, options).unwrap().algorithm()
    };
    let default = SddmmOptions::default();
    let few_rows = wgsparse::generate::random(2_000, 2_000, 0.02, 3);
    assert_eq!(plan_for(&few_rows, 32, &default), SddmmAlgorithm::Entries);
    assert_eq!(plan_for(&few_rows, 32, &SddmmOptions::default().chunk_len(64)), SddmmAlgorithm::Rode);
    let many_regular_rows = wgsparse::generate::laplacian_2d(100);
    assert_eq!(plan_for(&many_regular_rows, 32, &default), SddmmAlgorithm::Rode);
    assert_eq!(plan_for(&many_regular_rows, 64, &default), SddmmAlgorithm::Rode);
    assert_eq!(plan_for(&many_regular_rows, 128, &default), SddmmAlgorithm::Entries);
    let many_irregular_rows = wgsparse::generate::rmat(14, 8, 0.57, 0.19, 0.19, 3);
    assert_eq!(plan_for(&many_irregular_rows, 32, &default), SddmmAlgorithm::Entries);
}

#[test]
fn sddmm_refuses_misuse_before_dispatching() {
    let ctx = common::context();
    let a = wgsparse::generate::random(40, 30, 0.2, 5);
    let matrix = GpuSparse::from_csr(ctx, &a, Conversion::Csr).unwrap();
    let plan = Sddmm::new(ctx, &matrix, 4, SddmmAlgorithm::Auto).unwrap();
    let dense =
        |rows, cols| GpuDense::upload(ctx, &common::dense::<f32>(rows, cols, 1), DenseLayout::RowMajor).unwrap();
    let (b1, b2) = (dense(40, 4), dense(30, 4));
    let mut c = with_values(ctx, &a, vec![f32::NAN; a.nnz()]);
    for (what, x1, x2) in [
        ("B1 rows", dense(41, 4), dense(30, 4)),
        ("B2 rows", dense(40, 4), dense(29, 4)),
        ("B1 columns", dense(40, 5), dense(30, 4)),
        ("B2 columns", dense(40, 4), dense(30, 3)),
    ] {
        let result = plan.run(1.0f32, &x1, &x2, 0.0, &mut c);
        assert!(matches!(result, Err(Error::DimensionMismatch { what: w, .. }) if w == what), "{what}: {result:?}");
    }
    // C of another pattern, and C that is A itself.
    let other = GpuSparse::from_csr(ctx, &wgsparse::generate::random(40, 30, 0.3, 6), Conversion::Csr).unwrap();
    let mut other = other;
    assert!(matches!(plan.run(1.0f32, &b1, &b2, 0.0, &mut other), Err(Error::InvalidArgument(_))));
    let mut same = matrix.clone();
    assert!(matches!(plan.run(1.0f32, &b1, &b2, 0.0, &mut same), Err(Error::Aliasing(_))));
    let col_major = GpuDense::upload(ctx, &common::dense::<f32>(30, 4, 1), DenseLayout::ColMajor).unwrap();
    assert!(matches!(plan.run(1.0f32, &b1, &col_major, 0.0, &mut c), Err(Error::Unsupported(_))));
    assert!(values(&c).iter().all(|v| v.is_nan()), "nothing was dispatched");
    for (algorithm, options) in [
        (SddmmAlgorithm::Rode, SddmmOptions::default().lanes(6)),
        (SddmmAlgorithm::Entries, SddmmOptions::default().lanes(6)),
        (SddmmAlgorithm::Entries, SddmmOptions::default().workgroup_size(48)),
    ] {
        let refused = Sddmm::with_options(ctx, &matrix, 4, algorithm, &options);
        assert!(matches!(refused, Err(Error::InvalidArgument(_))), "{options:?}: {refused:?}");
    }
}
