//! SpMV on every format and algorithm against the f64 CPU twin, with and without subgroups.

mod common;

use wgsparse::format::{EllOptions, HybSplit};
use wgsparse::generate::{self, Rng};
use wgsparse::gpu::{Format, GpuMatrix};
use wgsparse::ops::{Spmv, SpmvAlgorithm};
use wgsparse::reference::{relative_error, spmv_csr};
use wgsparse::{Context, CsrMatrix, Error};

const TOLERANCE: f64 = 1e-5;

/// ELL with unbounded padding, so that skewed test matrices still exercise the ELL kernel.
const ELL: EllOptions = EllOptions::with_max_padding_ratio(f64::INFINITY);

/// The format `algorithm` reads (`Auto` lets the rows choose), ELL padding unbounded.
fn format_for(algorithm: SpmvAlgorithm) -> Format {
    match algorithm.default_format().unwrap_or(Format::Auto) {
        Format::Ell(_) => Format::Ell(ELL),
        other => other,
    }
}

fn upload(ctx: &Context, a: &CsrMatrix<f32>, algorithm: SpmvAlgorithm) -> GpuMatrix {
    GpuMatrix::from_csr(ctx, a, format_for(algorithm)).unwrap()
}

/// Every algorithm on the format it reads, plus ELL with 32-bit columns where the default
/// would store 16-bit diagonal offsets: (label, algorithm, format).
fn variants() -> Vec<(&'static str, SpmvAlgorithm, Format)> {
    let mut all: Vec<_> =
        SpmvAlgorithm::ALL.into_iter().chain([SpmvAlgorithm::Auto]).map(|a| (a.name(), a, format_for(a))).collect();
    all.push(("ell (32-bit columns)", SpmvAlgorithm::Ell, Format::Ell(EllOptions { compact_indices: false, ..ELL })));
    all
}

/// Runs `algorithm` twice (β = 0 over a NaN-poisoned y, then β ≠ 0 over random y) and
/// returns the worst relative error against the twin.
fn spmv_error(ctx: &Context, a: &CsrMatrix<f32>, algorithm: SpmvAlgorithm, format: Format, rng: &mut Rng) -> f64 {
    let matrix = GpuMatrix::from_csr(ctx, a, format).unwrap();
    let plan = Spmv::new(ctx, &matrix, algorithm).unwrap();
    // x is positive; A's values carry the signs (and the long-row cases choose positive ones).
    let x: Vec<f32> = generate::random_vector(a.cols(), rng.next_u64()).iter().map(|v| v.abs() + 0.25).collect();
    let x_gpu = ctx.upload(&x).unwrap();
    let mut worst = 0f64;
    for (alpha, beta) in [(0.5 + rng.next_f32().abs(), 0.0), (-1.5, 0.25 + rng.next_f32().abs())] {
        let y0 = if beta == 0.0 { vec![f32::NAN; a.rows()] } else { generate::random_vector(a.rows(), rng.next_u64()) };
        let mut y = ctx.upload(&y0).unwrap();
        plan.run(alpha, &x_gpu, beta, &mut y).unwrap();
        let got = y.read_blocking(ctx).unwrap();
        let want = spmv_csr(alpha as f64, a, &x, beta as f64, &y0);
        worst = worst.max(relative_error(&got, &want));
    }
    worst
}

/// Checks every algorithm on `cases` in every context; reports all failures at once.
fn check_all(cases: &[(String, CsrMatrix<f32>)], seed: u64) {
    let mut rng = Rng::new(seed);
    let mut failures = Vec::new();
    for (mode, ctx) in common::contexts() {
        for (name, a) in cases {
            for (label, algorithm, format) in variants() {
                let error = spmv_error(ctx, a, algorithm, format, &mut rng);
                // NaN must fail too, hence not `error > TOLERANCE`.
                if error.is_nan() || error > TOLERANCE {
                    failures.push(format!(
                        "{mode} {name} ({}x{}, nnz {}) {label}: error {error:e}",
                        a.rows(),
                        a.cols(),
                        a.nnz(),
                    ));
                }
            }
        }
    }
    assert!(failures.is_empty(), "seed {seed}:\n{}", failures.join("\n"));
}

#[test]
fn spmv_matches_twin_on_shared_matrices() {
    check_all(&common::shared_matrices(), common::seed("shared matrices"));
}

#[test]
fn spmv_matches_twin_on_generated_matrices() {
    let seed = common::seed("generated matrices");
    let cases = vec![
        ("laplacian_2d(40)".to_string(), generate::laplacian_2d(40)),
        ("laplacian_3d(12)".to_string(), generate::laplacian_3d(12)),
        ("rmat(11, 8)".to_string(), generate::rmat(11, 8, 0.57, 0.19, 0.19, seed)),
        ("uniform(3000, 16)".to_string(), generate::uniform_random(3000, 3000, 16, seed)),
        ("dense row of 4000 among short rows".to_string(), generate::dense_row_mix(4000, 4000, seed)),
        ("tall 3000x40".to_string(), generate::random(3000, 40, 0.1, seed)),
        ("wide 40x3000".to_string(), generate::random(40, 3000, 0.1, seed)),
    ];
    check_all(&cases, seed);
}

#[test]
fn spmv_handles_degenerate_shapes() {
    let empty_rows =
        CsrMatrix::try_from_csr_data(5, 4, vec![0, 0, 2, 2, 2, 3], vec![1, 3, 0], vec![1.0, 2.0, 3.0]).unwrap();
    let cases = vec![
        ("0x0".to_string(), CsrMatrix::zeros(0, 0).unwrap()),
        ("7x0".to_string(), CsrMatrix::zeros(7, 0).unwrap()),
        ("0x7".to_string(), CsrMatrix::zeros(0, 7).unwrap()),
        ("300x300 no entries".to_string(), CsrMatrix::zeros(300, 300).unwrap()),
        ("empty rows".to_string(), empty_rows),
    ];
    check_all(&cases, common::seed("degenerate shapes"));
}

/// Sizes one below, at and above the boundaries the kernels cut at: the subgroup sizes,
/// the workgroup (256 rows), the merge tile (1536 items) and the COO interval (2048 entries).
#[test]
fn spmv_is_exact_around_workgroup_and_subgroup_boundaries() {
    let seed = common::seed("boundaries");
    let mut cases = Vec::new();
    for n in [7usize, 8, 9, 31, 32, 33, 255, 256, 257] {
        cases.push((format!("random {n}x{n}"), generate::random(n, n, 0.3, seed ^ n as u64)));
    }
    // nnz = 2 * rows: rows + nnz = 1536 exactly at 512 rows.
    for rows in [511usize, 512, 513] {
        let offsets: Vec<u32> = (0..=rows as u32).map(|i| 2 * i).collect();
        let cols: Vec<u32> = (0..rows as u32).flat_map(|i| [i, (i + 1) % rows as u32]).collect();
        let vals = generate::random_vector(2 * rows, seed);
        cases.push((
            format!("2 per row, {rows} rows"),
            CsrMatrix::try_from_csr_data(rows, rows, offsets, cols, vals).unwrap(),
        ));
    }
    // One row of exactly 2047, 2048, 2049 entries: a COO interval and a merge tile boundary.
    // Positive values keep the long sum well conditioned, so f32 rounding stays far below
    // the tolerance whatever the summation order.
    for len in [2047usize, 2048, 2049] {
        let cols: Vec<u32> = (0..len as u32).collect();
        let vals = generate::random_vector(len, seed).iter().map(|v| v.abs() + 0.5).collect();
        let a = CsrMatrix::try_from_csr_data(1, len, vec![0, len as u32], cols, vals).unwrap();
        cases.push((format!("one row of {len}"), a));
    }
    check_all(&cases, seed);
}

#[test]
fn spmv_with_alpha_zero_only_scales_y() {
    let seed = common::seed("alpha zero");
    let mut a = generate::random(50, 60, 0.2, seed);
    a.values_mut()[0] = f32::NAN;
    for (_, ctx) in common::contexts() {
        for algorithm in SpmvAlgorithm::ALL {
            let plan = Spmv::new(ctx, &upload(ctx, &a, algorithm), algorithm).unwrap();
            let x = ctx.upload(&vec![f32::INFINITY; 60]).unwrap();
            let y0 = generate::random_vector(50, seed);
            let mut y = ctx.upload(&y0).unwrap();
            plan.run(0.0, &x, 2.0, &mut y).unwrap();
            let want: Vec<f32> = y0.iter().map(|v| 2.0 * v).collect();
            assert_eq!(y.read_blocking(ctx).unwrap(), want, "{}", algorithm.name());
        }
    }
}

#[test]
fn spmv_refuses_mismatched_dimensions_before_dispatching() {
    let (_, ctx) = &common::contexts()[0];
    let a = generate::random(30, 20, 0.2, 1);
    for algorithm in SpmvAlgorithm::ALL {
        let plan = Spmv::new(ctx, &upload(ctx, &a, algorithm), algorithm).unwrap();
        let y0 = vec![7.0f32; 30];
        let mut y = ctx.upload(&y0).unwrap();
        let bad_x = ctx.upload(&[1.0f32; 21]).unwrap();
        let err = plan.run(1.0, &bad_x, 0.0, &mut y).unwrap_err();
        assert!(matches!(err, Error::DimensionMismatch { what: "x length", expected: 20, found: 21, .. }), "{err}");
        let x = ctx.upload(&[1.0f32; 20]).unwrap();
        let mut bad_y = ctx.upload(&[7.0f32; 29]).unwrap();
        let err = plan.run(1.0, &x, 0.0, &mut bad_y).unwrap_err();
        assert!(matches!(err, Error::DimensionMismatch { what: "y length", expected: 30, found: 29, .. }), "{err}");
        assert_eq!(y.read_blocking(ctx).unwrap(), y0, "nothing was dispatched");
    }
}

#[test]
fn spmv_refuses_an_algorithm_for_another_format() {
    let (_, ctx) = &common::contexts()[0];
    let a = generate::random(10, 10, 0.3, 2);
    let coo = GpuMatrix::from_csr(ctx, &a, Format::Coo).unwrap();
    let err = Spmv::new(ctx, &coo, SpmvAlgorithm::CsrMerge).unwrap_err();
    assert!(matches!(err, Error::InvalidArgument(_)), "{err}");
    let hyb = GpuMatrix::from_csr(ctx, &a, Format::Hyb(HybSplit::Width(1))).unwrap();
    assert_eq!(Spmv::new(ctx, &hyb, SpmvAlgorithm::Auto).unwrap().algorithm(), SpmvAlgorithm::Hyb);
}

/// The tuning knobs change tiling, never results.
#[test]
fn spmv_is_correct_for_every_tuning() {
    use wgsparse::ops::SpmvOptions;
    let seed = common::seed("tunings");
    let mut rng = Rng::new(seed);
    let matrices = [generate::dense_row_mix(3000, 2500, seed), generate::rmat(10, 6, 0.57, 0.19, 0.19, seed)];
    let tunings = [
        (SpmvAlgorithm::CsrMerge, SpmvOptions::default().merge_items(1).workgroup_size(32)),
        (SpmvAlgorithm::CsrMerge, SpmvOptions::default().merge_items(2).workgroup_size(1024)),
        (SpmvAlgorithm::CsrMerge, SpmvOptions::default().merge_items(11).workgroup_size(64)),
        (SpmvAlgorithm::CsrVector, SpmvOptions::default().vector_lanes(1)),
        (SpmvAlgorithm::CsrVector, SpmvOptions::default().vector_lanes(4).workgroup_size(64)),
        (SpmvAlgorithm::CsrSplit, SpmvOptions::default().split_threshold(0).chunk_steps(1)),
        (SpmvAlgorithm::CsrSplit, SpmvOptions::default().split_threshold(3).chunk_steps(5).workgroup_size(64)),
        (SpmvAlgorithm::CsrSplit, SpmvOptions::default().split_threshold(1000).workgroup_size(1024)),
        (SpmvAlgorithm::CooSegmented, SpmvOptions::default().coo_steps(1).workgroup_size(32)),
        (SpmvAlgorithm::CooSegmented, SpmvOptions::default().coo_steps(5).workgroup_size(512)),
        (SpmvAlgorithm::Hyb, SpmvOptions::default().coo_steps(2).workgroup_size(128)),
        (SpmvAlgorithm::CsrThread, SpmvOptions::default().workgroup_size(32)),
    ];
    for (mode, ctx) in common::contexts() {
        for a in &matrices {
            for (algorithm, options) in tunings {
                let matrix = upload(ctx, a, algorithm);
                let plan = Spmv::with_options(ctx, &matrix, algorithm, &options).unwrap();
                let x = generate::random_vector(a.cols(), rng.next_u64());
                let mut y = ctx.upload(&vec![f32::NAN; a.rows()]).unwrap();
                plan.run(1.0, &ctx.upload(&x).unwrap(), 0.0, &mut y).unwrap();
                let error = relative_error(&y.read_blocking(ctx).unwrap(), &spmv_csr(1.0, a, &x, 0.0, &[]));
                assert!(error <= TOLERANCE, "seed {seed} {mode} {algorithm:?} {options:?}: {error:e}");
            }
        }
    }
}

#[test]
fn spmv_refuses_invalid_tunings() {
    use wgsparse::ops::SpmvOptions;
    let (_, ctx) = &common::contexts()[0];
    let a = GpuMatrix::from_csr(ctx, &generate::random(10, 10, 0.3, 3), Format::Csr).unwrap();
    for options in [
        SpmvOptions::default().workgroup_size(100),
        SpmvOptions::default().workgroup_size(16),
        SpmvOptions::default().workgroup_size(1 << 20),
        SpmvOptions::default().merge_items(0),
        SpmvOptions::default().merge_items(1000),
        SpmvOptions::default().vector_lanes(3),
        SpmvOptions::default().vector_lanes(64),
        SpmvOptions::default().coo_steps(0),
        SpmvOptions::default().chunk_steps(0),
    ] {
        let err = Spmv::with_options(ctx, &a, SpmvAlgorithm::CsrMerge, &options).unwrap_err();
        assert!(matches!(err, Error::InvalidArgument(_)), "{options:?}: {err}");
    }
}

/// The documented rules of Format::Auto and SpmvAlgorithm::Auto.
#[test]
fn auto_picks_by_row_lengths() {
    let (_, ctx) = &common::contexts()[0];
    let pick = |a: &CsrMatrix<f32>, format| {
        let m = GpuMatrix::from_csr(ctx, a, format).unwrap();
        (m.format_name(), Spmv::new(ctx, &m, SpmvAlgorithm::Auto).unwrap().algorithm())
    };
    let laplacian = generate::laplacian_2d(30);
    assert_eq!(GpuMatrix::from_csr(ctx, &laplacian, Format::Auto).unwrap().index_bits(), 16);
    let skewed = generate::rmat(10, 8, 0.57, 0.19, 0.19, 5);
    assert_eq!(pick(&laplacian, Format::Auto), ("ell", SpmvAlgorithm::Ell));
    assert_eq!(pick(&laplacian, Format::Csr), ("csr", SpmvAlgorithm::CsrThread));
    assert_eq!(pick(&skewed, Format::Auto), ("csr", SpmvAlgorithm::CsrSplit));
    assert_eq!(pick(&generate::uniform_random(500, 500, 16, 5), Format::Auto), ("ell", SpmvAlgorithm::Ell));
    assert_eq!(pick(&generate::dense_row_mix(500, 400, 5), Format::Auto), ("csr", SpmvAlgorithm::CsrSplit));
}

/// ELL stores 16-bit diagonal offsets exactly when every entry lies within 32767 of the
/// diagonal (HYB's ELL part too), and both encodings give the twin's result, also when
/// the offsets are extreme and the matrix is cut into row panels elsewhere (tests/limits.rs).
#[test]
fn ell_compacts_indices_only_within_the_diagonal_band() {
    let seed = common::seed("diagonal band");
    let mut rng = Rng::new(seed);
    let n = 70_000usize;
    // Row i holds columns i - reach (when >= 0), i, and i + reach (when < n).
    let banded = |reach: usize| {
        let mut offsets = vec![0u32];
        let mut cols = Vec::new();
        for i in 0..n {
            cols.extend([i.checked_sub(reach), Some(i), Some(i + reach).filter(|&c| c < n)].into_iter().flatten());
            offsets.push(cols.len() as u32);
        }
        let vals = generate::random_vector(cols.len(), seed);
        CsrMatrix::try_from_csr_data(n, n, offsets, cols.into_iter().map(|c| c as u32).collect(), vals).unwrap()
    };
    let max = wgsparse::format::MAX_DIAGONAL_OFFSET as usize;
    for (mode, ctx) in common::contexts() {
        for (reach, bits) in [(1, 16), (max, 16), (max + 1, 32)] {
            let a = banded(reach);
            for format in [Format::Ell(ELL), Format::Hyb(HybSplit::Auto)] {
                let matrix = GpuMatrix::from_csr(ctx, &a, format).unwrap();
                assert_eq!(matrix.index_bits(), bits, "reach {reach} {format:?}");
                let algorithm = SpmvAlgorithm::auto_for(&matrix);
                let error = spmv_error(ctx, &a, algorithm, format, &mut rng);
                assert!(error <= TOLERANCE, "seed {seed} {mode} reach {reach} {format:?}: {error:e}");
            }
            let wide = GpuMatrix::from_csr(ctx, &a, Format::Ell(EllOptions { compact_indices: false, ..ELL })).unwrap();
            assert_eq!(wide.index_bits(), 32);
            assert_eq!(GpuMatrix::from_csr(ctx, &a, Format::Csr).unwrap().index_bits(), 32);
        }
    }
}
