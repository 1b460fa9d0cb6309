//! SpMV on every format and algorithm against the f64 CPU twin, for f32 and f64, with and
//! without subgroups.

mod common;

use wgsparse::format::{EllOptions, HybSplit, MAX_VALUE_TABLE};
use wgsparse::generate::{self, Rng};
use wgsparse::ops::{preferred_conversion, Spmv, SpmvAlgorithm, SpmvOptions, DOT_WORKGROUP_MAX};
use wgsparse::reference::{error_relative_to_terms, relative_error, spmv_csr};
use wgsparse::{Context, Conversion, CsrMatrix, Error, Format, GpuSparse, GpuVec, Scalar};

/// ELL with unbounded padding, so that skewed test matrices still exercise the ELL kernel.
const ELL: EllOptions = EllOptions::with_max_padding_ratio(f64::INFINITY);
/// [`ELL`] with a value table wherever the values fit one.
const CODED: EllOptions = EllOptions { value_table_limit: MAX_VALUE_TABLE, ..ELL };
/// [`ELL`] with its values in place.
const IN_PLACE: EllOptions = EllOptions { value_table_limit: 0, ..ELL };

/// The conversion `algorithm` reads (`Auto` lets the rows choose), ELL padding unbounded.
fn conversion_for<T: Scalar>(algorithm: SpmvAlgorithm, a: &CsrMatrix<T>) -> Conversion {
    match algorithm.format() {
        None => preferred_conversion(a),
        Some(Format::Ell) => Conversion::Ell(ELL),
        Some(format) => Conversion::of(format),
    }
}

/// Every algorithm that exists for `T` on the format it reads, plus ELL with 32-bit columns
/// where the default would store 16-bit diagonal offsets, ELL with its values coded into a
/// table wherever the matrix has at most [`MAX_VALUE_TABLE`] distinct ones (the default
/// codes only up to 256), and ELL with values in place where the default would code them:
/// (label, algorithm, conversion).
fn variants<T: Scalar>(a: &CsrMatrix<T>) -> Vec<(&'static str, SpmvAlgorithm, Conversion)> {
    let mut all: Vec<_> = SpmvAlgorithm::ALL
        .into_iter()
        .chain([SpmvAlgorithm::Auto])
        .filter(|a| a.supports::<T>())
        .map(|algorithm| (algorithm.name(), algorithm, conversion_for(algorithm, a)))
        .collect();
    all.push((
        "ell (32-bit columns)",
        SpmvAlgorithm::Ell,
        Conversion::Ell(EllOptions { compact_indices: false, ..ELL }),
    ));
    all.push(("ell (value table)", SpmvAlgorithm::Ell, Conversion::Ell(CODED)));
    all.push(("ell (values in place)", SpmvAlgorithm::Ell, Conversion::Ell(IN_PLACE)));
    all
}

fn to<T: Scalar>(a: &CsrMatrix<f32>) -> CsrMatrix<T> {
    a.map_values(|v| T::from_f64(v as f64))
}

fn vector<T: Scalar>(len: usize, seed: u64) -> Vec<T> {
    generate::random_vector(len, seed).into_iter().map(|v| T::from_f64(v as f64)).collect()
}

/// Runs `algorithm` twice (β = 0 over a NaN-poisoned y, then β ≠ 0 over random y) and
/// returns the worst error against the twin, relative to the terms' magnitudes (signed rows
/// and `β·y₀` can cancel to almost nothing in a matrix of few rows).
fn spmv_error<T: Scalar>(
    ctx: &Context,
    a: &CsrMatrix<T>,
    algorithm: SpmvAlgorithm,
    conversion: Conversion,
    rng: &mut Rng,
) -> f64 {
    let matrix = GpuSparse::from_csr(ctx, a, conversion).unwrap();
    let plan = Spmv::new(ctx, &matrix, algorithm).unwrap();
    // x is positive; A's values carry the signs (and the long-row cases choose positive ones).
    let x: Vec<T> = vector::<f64>(a.cols(), rng.next_u64()).iter().map(|v| T::from_f64(v.abs() + 0.25)).collect();
    let x_gpu = ctx.upload(&x).unwrap();
    let magnitudes = a.map_values(|v| T::from_f64(v.to_f64().abs()));
    let mut worst = 0f64;
    for (alpha, beta) in [(0.5 + rng.next_f64(), 0.0), (-1.5, 0.25 + rng.next_f64())] {
        let y0 = if beta == 0.0 { vec![T::from_f64(f64::NAN); a.rows()] } else { vector(a.rows(), rng.next_u64()) };
        let mut y = ctx.upload(&y0).unwrap();
        plan.run(T::from_f64(alpha), &x_gpu, T::from_f64(beta), &mut y).unwrap();
        let got = y.read_blocking().unwrap();
        let (alpha, beta) = (T::from_f64(alpha).to_f64(), T::from_f64(beta).to_f64());
        let want = spmv_csr(alpha, a, &x, beta, &y0);
        let y0_magnitudes: Vec<T> = y0.iter().map(|v| T::from_f64(v.to_f64().abs())).collect();
        let terms = spmv_csr(alpha.abs(), &magnitudes, &x, beta.abs(), &y0_magnitudes);
        worst = worst.max(error_relative_to_terms(&got, &want, &terms));
    }
    worst
}

/// Checks every algorithm on `cases` in every context; reports all failures at once.
fn check_all<T: Scalar>(cases: &[(String, CsrMatrix<T>)], seed: u64) {
    let mut rng = Rng::new(seed);
    let mut failures = Vec::new();
    for (mode, ctx) in common::contexts_for::<T>() {
        for (name, a) in cases {
            for (label, algorithm, conversion) in variants(a) {
                let error = spmv_error(ctx, a, algorithm, conversion, &mut rng);
                // NaN must fail too.
                if error.is_nan() || error > common::tolerance::<T>() {
                    failures.push(format!(
                        "{} {mode} {name} ({}x{}, nnz {}) {label}: error {error:e}",
                        T::KIND.name(),
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

fn generated<T: Scalar>(seed: u64) -> Vec<(String, CsrMatrix<T>)> {
    vec![
        ("laplacian_2d(40)".to_string(), to(&generate::laplacian_2d(40))),
        ("laplacian_3d(12)".to_string(), to(&generate::laplacian_3d(12))),
        ("rmat(11, 8)".to_string(), to(&generate::rmat(11, 8, 0.57, 0.19, 0.19, seed))),
        ("uniform(3000, 16)".to_string(), to(&generate::uniform_random(3000, 3000, 16, seed))),
        ("dense row of 4000 among short rows".to_string(), to(&generate::dense_row_mix(4000, 4000, seed))),
        ("tall 3000x40".to_string(), to(&generate::random(3000, 40, 0.1, seed))),
        ("wide 40x3000".to_string(), to(&generate::random(40, 3000, 0.1, seed))),
    ]
}

#[test]
fn spmv_matches_twin_on_real_matrices_f32() {
    check_all(&common::real_matrices::<f32>(), common::seed("real matrices f32"));
}

#[test]
fn spmv_matches_twin_on_real_matrices_f64() {
    check_all(&common::real_matrices::<f64>(), common::seed("real matrices f64"));
}

#[test]
fn spmv_matches_twin_on_generated_matrices_f32() {
    let seed = common::seed("generated matrices f32");
    check_all(&generated::<f32>(seed), seed);
}

#[test]
fn spmv_matches_twin_on_generated_matrices_f64() {
    let seed = common::seed("generated matrices f64");
    check_all(&generated::<f64>(seed), seed);
}

fn degenerate<T: Scalar>() -> Vec<(String, CsrMatrix<T>)> {
    let empty_rows =
        CsrMatrix::try_from_csr_data(5, 4, vec![0, 0, 2, 2, 2, 3], vec![1, 3, 0], vec![1.0f32, 2.0, 3.0]).unwrap();
    vec![
        ("0x0".to_string(), CsrMatrix::zeros(0, 0).unwrap()),
        ("7x0".to_string(), CsrMatrix::zeros(7, 0).unwrap()),
        ("0x7".to_string(), CsrMatrix::zeros(0, 7).unwrap()),
        ("300x300 no entries".to_string(), CsrMatrix::zeros(300, 300).unwrap()),
        ("empty rows".to_string(), to(&empty_rows)),
    ]
}

#[test]
fn spmv_handles_degenerate_shapes() {
    let seed = common::seed("degenerate shapes");
    check_all(&degenerate::<f32>(), seed);
    check_all(&degenerate::<f64>(), seed);
}

/// Sizes one below, at and above the boundaries the kernels cut at: the subgroup sizes,
/// the workgroup (256 rows), the merge tile (1536 items) and the COO interval (2048 entries).
fn boundaries<T: Scalar>(seed: u64) -> Vec<(String, CsrMatrix<T>)> {
    let mut cases = Vec::new();
    for n in [7usize, 8, 9, 31, 32, 33, 255, 256, 257] {
        cases.push((format!("random {n}x{n}"), to(&generate::random(n, n, 0.3, seed ^ n as u64))));
    }
    // nnz = 2 * rows: rows + nnz = 1536 exactly at 512 rows.
    for rows in [511usize, 512, 513] {
        let offsets: Vec<u32> = (0..=rows as u32).map(|i| 2 * i).collect();
        let cols: Vec<u32> = (0..rows as u32).flat_map(|i| [i, (i + 1) % rows as u32]).collect();
        let a = CsrMatrix::try_from_csr_data(rows, rows, offsets, cols, vector(2 * rows, seed)).unwrap();
        cases.push((format!("2 per row, {rows} rows"), a));
    }
    // One row of exactly 2047, 2048, 2049 entries: a COO interval and a merge tile boundary.
    // Positive values keep the long sum well conditioned, so rounding stays far below the
    // tolerance whatever the summation order.
    for len in [2047usize, 2048, 2049] {
        let cols: Vec<u32> = (0..len as u32).collect();
        let vals = vector::<T>(len, seed).iter().map(|v| T::from_f64(v.to_f64().abs() + 0.5)).collect();
        let a = CsrMatrix::try_from_csr_data(1, len, vec![0, len as u32], cols, vals).unwrap();
        cases.push((format!("one row of {len}"), a));
    }
    cases
}

#[test]
fn spmv_is_exact_around_workgroup_and_subgroup_boundaries_f32() {
    let seed = common::seed("boundaries f32");
    check_all(&boundaries::<f32>(seed), seed);
}

#[test]
fn spmv_is_exact_around_workgroup_and_subgroup_boundaries_f64() {
    let seed = common::seed("boundaries f64");
    check_all(&boundaries::<f64>(seed), seed);
}

#[test]
fn spmv_with_alpha_zero_only_scales_y() {
    let seed = common::seed("alpha zero");
    let mut a = generate::random(50, 60, 0.2, seed);
    a.values_mut()[0] = f32::NAN;
    for (_, ctx) in common::contexts() {
        for algorithm in SpmvAlgorithm::ALL {
            let plan = Spmv::new(ctx, &GpuSparse::from_csr(ctx, &a, conversion_for(algorithm, &a)).unwrap(), algorithm)
                .unwrap();
            let x = ctx.upload(&vec![f32::INFINITY; 60]).unwrap();
            let y0 = generate::random_vector(50, seed);
            let mut y = ctx.upload(&y0).unwrap();
            plan.run(0.0, &x, 2.0, &mut y).unwrap();
            let want: Vec<f32> = y0.iter().map(|v| 2.0 * v).collect();
            assert_eq!(y.read_blocking().unwrap(), want, "{}", algorithm.name());
        }
    }
}

/// α and β read from device scalars give what the same host values give; a device α of
/// 0 does not compute A·x (a NaN in A stays out).
#[test]
fn spmv_takes_alpha_and_beta_from_device_scalars() {
    let seed = common::seed("device scalars");
    let mut a = generate::rmat(9, 6, 0.57, 0.19, 0.19, seed);
    let x = generate::random_vector(a.cols(), seed + 1);
    let y0 = generate::random_vector(a.rows(), seed + 2);
    for (mode, ctx) in common::contexts() {
        let coefficients = ctx.upload(&[0.0f32, 1.75, -0.5]).unwrap();
        let x_gpu = ctx.upload(&x).unwrap();
        for algorithm in SpmvAlgorithm::ALL {
            let matrix = GpuSparse::from_csr(ctx, &a, conversion_for(algorithm, &a)).unwrap();
            let plan = Spmv::new(ctx, &matrix, algorithm).unwrap();
            let mut y = ctx.upload(&y0).unwrap();
            let alpha = wgsparse::ScalarArg::Device { vector: &coefficients, index: 1 };
            let beta = wgsparse::ScalarArg::Device { vector: &coefficients, index: 2 };
            plan.run(alpha, &x_gpu, beta, &mut y).unwrap();
            let error = relative_error(&y.read_blocking().unwrap(), &spmv_csr(1.75, &a, &x, -0.5, &y0));
            assert!(error <= 1e-5, "seed {seed} {mode} {}: {error:e}", algorithm.name());
        }
        // Device α = 0 with a NaN in A: y ← β·y exactly.
        a.values_mut()[0] = f32::NAN;
        for algorithm in SpmvAlgorithm::ALL {
            let matrix = GpuSparse::from_csr(ctx, &a, conversion_for(algorithm, &a)).unwrap();
            let plan = Spmv::new(ctx, &matrix, algorithm).unwrap();
            let mut y = ctx.upload(&y0).unwrap();
            let zero = wgsparse::ScalarArg::Device { vector: &coefficients, index: 0 };
            plan.run(zero, &x_gpu, 2.0, &mut y).unwrap();
            let want: Vec<f32> = y0.iter().map(|v| 2.0 * v).collect();
            assert_eq!(y.read_blocking().unwrap(), want, "{mode} {}", algorithm.name());
        }
        a.values_mut()[0] = 0.5;
    }
}

#[test]
fn spmv_refuses_mismatched_dimensions_before_dispatching() {
    let ctx = common::context();
    let a = generate::random(30, 20, 0.2, 1);
    for algorithm in SpmvAlgorithm::ALL {
        let plan =
            Spmv::new(ctx, &GpuSparse::from_csr(ctx, &a, conversion_for(algorithm, &a)).unwrap(), algorithm).unwrap();
        let y0 = vec![7.0f32; 30];
        let mut y = ctx.upload(&y0).unwrap();
        let bad_x = ctx.upload(&[1.0f32; 21]).unwrap();
        let err = plan.run(1.0, &bad_x, 0.0, &mut y).unwrap_err();
        assert!(matches!(err, Error::DimensionMismatch { what: "x length", expected: 20, found: 21, .. }), "{err}");
        let x = ctx.upload(&[1.0f32; 20]).unwrap();
        let mut bad_y = ctx.upload(&[7.0f32; 29]).unwrap();
        let err = plan.run(1.0, &x, 0.0, &mut bad_y).unwrap_err();
        assert!(matches!(err, Error::DimensionMismatch { what: "y length", expected: 30, found: 29, .. }), "{err}");
        assert_eq!(y.read_blocking().unwrap(), y0, "nothing was dispatched");
    }
}

#[test]
fn spmv_refuses_an_algorithm_for_another_format() {
    let ctx = common::context();
    let a = generate::random(10, 10, 0.3, 2);
    let coo = GpuSparse::from_csr(ctx, &a, Conversion::Coo).unwrap();
    let err = Spmv::new(ctx, &coo, SpmvAlgorithm::CsrMerge).unwrap_err();
    assert!(matches!(err, Error::InvalidArgument(_)), "{err}");
    let hyb = GpuSparse::from_csr(ctx, &a, Conversion::Hyb(HybSplit::Width(1))).unwrap();
    assert_eq!(Spmv::new(ctx, &hyb, SpmvAlgorithm::Auto).unwrap().algorithm(), SpmvAlgorithm::Hyb);
}

/// The tuning knobs change tiling, never results.
#[test]
fn spmv_is_correct_for_every_tuning() {
    let seed = common::seed("tunings");
    let mut rng = Rng::new(seed);
    let matrices = [generate::dense_row_mix(3000, 2500, seed), generate::rmat(10, 6, 0.57, 0.19, 0.19, seed)];
    let tunings = [
        (SpmvAlgorithm::CsrMerge, SpmvOptions::default().merge_items(1).workgroup_size(32)),
        (SpmvAlgorithm::CsrMerge, SpmvOptions::default().merge_items(2).workgroup_size(512)),
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
                let matrix = GpuSparse::from_csr(ctx, a, conversion_for(algorithm, a)).unwrap();
                let plan = Spmv::with_options(ctx, &matrix, algorithm, &options).unwrap();
                let x = generate::random_vector(a.cols(), rng.next_u64());
                let mut y = ctx.upload(&vec![f32::NAN; a.rows()]).unwrap();
                plan.run(1.0, &ctx.upload(&x).unwrap(), 0.0, &mut y).unwrap();
                let error = relative_error(&y.read_blocking().unwrap(), &spmv_csr(1.0, a, &x, 0.0, &[]));
                assert!(error <= 1e-5, "seed {seed} {mode} {algorithm:?} {options:?}: {error:e}");
            }
        }
    }
}

/// Past 2¹⁷ entries COO's and HYB's default intervals take several steps (rows published
/// across them, the window walked first): the twin's result with subgroups and without.
#[test]
fn default_intervals_of_several_steps_are_correct() {
    let seed = common::seed("default intervals");
    let mut rng = Rng::new(seed);
    let a = generate::rmat(14, 20, 0.57, 0.19, 0.19, seed);
    for (mode, ctx) in common::contexts() {
        for conversion in [Conversion::Coo, Conversion::Hyb(HybSplit::Width(2))] {
            let matrix = GpuSparse::from_csr(ctx, &a, conversion).unwrap();
            let coo_entries = match conversion {
                Conversion::Coo => a.nnz(),
                _ => a.nnz() - (0..a.rows()).map(|i| a.row(i).0.len().min(2)).sum::<usize>(),
            };
            assert!(SpmvOptions::default().coo_steps_for(coo_entries) >= 2, "{coo_entries} entries");
            let plan = Spmv::new(ctx, &matrix, SpmvAlgorithm::Auto).unwrap();
            let x = generate::random_vector(a.cols(), rng.next_u64());
            let mut y = ctx.upload(&vec![f32::NAN; a.rows()]).unwrap();
            plan.run(1.0, &ctx.upload(&x).unwrap(), 0.0, &mut y).unwrap();
            let error = relative_error(&y.read_blocking().unwrap(), &spmv_csr(1.0, &a, &x, 0.0, &[]));
            assert!(error <= 1e-5, "seed {seed} {mode} {conversion:?}: {error:e}");
        }
    }
}

#[test]
fn spmv_refuses_invalid_tunings() {
    let ctx = common::context();
    let a = generate::random(10, 10, 0.3, 3);
    let csr = GpuSparse::from_csr(ctx, &a, Conversion::Csr).unwrap();
    let coo = GpuSparse::from_csr(ctx, &a, Conversion::Coo).unwrap();
    let cases = [
        (SpmvAlgorithm::CsrMerge, SpmvOptions::default().workgroup_size(100)),
        (SpmvAlgorithm::CsrMerge, SpmvOptions::default().workgroup_size(16)),
        (SpmvAlgorithm::CsrMerge, SpmvOptions::default().workgroup_size(1 << 20)),
        (SpmvAlgorithm::CsrMerge, SpmvOptions::default().workgroup_size(u32::MAX)),
        (SpmvAlgorithm::CsrMerge, SpmvOptions::default().merge_items(0)),
        (SpmvAlgorithm::CsrMerge, SpmvOptions::default().merge_items(1000)),
        (SpmvAlgorithm::CsrMerge, SpmvOptions::default().merge_items(u32::MAX)),
        (SpmvAlgorithm::CsrVector, SpmvOptions::default().vector_lanes(3)),
        (SpmvAlgorithm::CsrVector, SpmvOptions::default().vector_lanes(64)),
        (SpmvAlgorithm::CsrVector, SpmvOptions::default().vector_lanes(u32::MAX)),
        (SpmvAlgorithm::CooSegmented, SpmvOptions::default().coo_steps(0)),
        (SpmvAlgorithm::CooSegmented, SpmvOptions::default().coo_steps(u32::MAX)),
        (SpmvAlgorithm::CsrSplit, SpmvOptions::default().chunk_steps(0)),
        (SpmvAlgorithm::CsrSplit, SpmvOptions::default().chunk_steps(u32::MAX)),
    ];
    for (algorithm, options) in cases {
        let matrix = if algorithm == SpmvAlgorithm::CooSegmented { &coo } else { &csr };
        let err = Spmv::with_options(ctx, matrix, algorithm, &options).unwrap_err();
        assert!(matches!(err, Error::InvalidArgument(_)), "{algorithm:?} {options:?}: {err}");
    }
}

/// The documented rules of `preferred_conversion` and `SpmvAlgorithm::Auto`.
#[test]
fn auto_picks_by_row_lengths() {
    let ctx = common::context();
    let pick = |a: &CsrMatrix<f32>, conversion| {
        let m = GpuSparse::from_csr(ctx, a, conversion).unwrap();
        (m.format(), Spmv::new(ctx, &m, SpmvAlgorithm::Auto).unwrap().algorithm())
    };
    let auto = |a: &CsrMatrix<f32>| pick(a, preferred_conversion(a));
    let laplacian = generate::laplacian_2d(30);
    assert_eq!(GpuSparse::from_csr(ctx, &laplacian, preferred_conversion(&laplacian)).unwrap().index_bits(), 16);
    let skewed = generate::rmat(10, 8, 0.57, 0.19, 0.19, 5);
    assert_eq!(auto(&laplacian), (Format::Ell, SpmvAlgorithm::Ell));
    assert_eq!(pick(&laplacian, Conversion::Csr), (Format::Csr, SpmvAlgorithm::CsrThread));
    assert_eq!(auto(&skewed), (Format::Csr, SpmvAlgorithm::CsrSplit));
    assert_eq!(auto(&generate::uniform_random(500, 500, 16, 5)), (Format::Ell, SpmvAlgorithm::Ell));
    assert_eq!(auto(&generate::dense_row_mix(500, 400, 5)), (Format::Csr, SpmvAlgorithm::CsrSplit));
    // Regular rows past 16 entries: a subgroup a row where the rows are few, one lane a row
    // inside csr-split where they fill the GPU, chunks past 128 entries.
    let medium = |rows, per_row| pick(&generate::uniform_random(rows, 2000, per_row, 5), Conversion::Csr).1;
    assert_eq!(medium(1000, 17), SpmvAlgorithm::CsrVector);
    assert_eq!(medium(32_767, 40), SpmvAlgorithm::CsrVector);
    assert_eq!(medium(1000, 128), SpmvAlgorithm::CsrVector);
    assert_eq!(medium(32_768, 40), SpmvAlgorithm::CsrSplit);
    assert_eq!(medium(1000, 129), SpmvAlgorithm::CsrSplit);
    // Workgroups of 1024 lanes a row only where the rows fill many of them.
    let wide = 1024.min(ctx.limits().max_compute_invocations_per_workgroup);
    let wg = |algorithm, rows| SpmvOptions::default().workgroup_size_for(ctx, algorithm, rows);
    assert_eq!((wg(SpmvAlgorithm::Ell, 65_535), wg(SpmvAlgorithm::Ell, 65_536)), (256, wide));
    assert_eq!((wg(SpmvAlgorithm::CsrSplit, 262_143), wg(SpmvAlgorithm::CsrSplit, 262_144)), (256, wide));
    assert_eq!(SpmvOptions::default().workgroup_size(64).workgroup_size_for(ctx, SpmvAlgorithm::Ell, 1 << 20), 64);
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
            for conversion in [Conversion::Ell(ELL), Conversion::Hyb(HybSplit::Auto)] {
                let matrix = GpuSparse::from_csr(ctx, &a, conversion).unwrap();
                assert_eq!(matrix.index_bits(), bits, "reach {reach} {conversion:?}");
                let algorithm = SpmvAlgorithm::auto_for(&matrix);
                let error = spmv_error(ctx, &a, algorithm, conversion, &mut rng);
                assert!(error <= 1e-5, "seed {seed} {mode} reach {reach} {conversion:?}: {error:e}");
            }
            let wide =
                GpuSparse::from_csr(ctx, &a, Conversion::Ell(EllOptions { compact_indices: false, ..ELL })).unwrap();
            assert_eq!(wide.index_bits(), 32);
            assert_eq!(GpuSparse::from_csr(ctx, &a, Conversion::Csr).unwrap().index_bits(), 32);
        }
    }
}

/// ELL codes its values into a table when the matrix has at most the limit's distinct values
/// (256 by default; −0.0 and 0.0 count as two) and its columns fit 16-bit offsets, and only
/// then; coded, it takes fewer device bytes and gives the twin's result (f32 and f64, with
/// and without subgroups). New values with few enough distinct ones rewrite codes and
/// table; more distinct values than the table has room for are refused (`Unsupported`),
/// the old values staying in place.
fn ell_codes_values_only_where_they_fit<T: Scalar>() {
    let seed = common::seed("value table");
    let mut rng = Rng::new(seed);
    // 70,000 rows of 3 entries: more entries than a table holds, so that all-distinct
    // values overflow it.
    let n = 70_000usize;
    let matrix_of = |reach: usize, values: &dyn Fn(usize) -> f64| {
        let mut offsets = vec![0u32];
        let mut cols = Vec::new();
        for i in 0..n {
            cols.extend([i.checked_sub(reach), Some(i), Some(i + reach).filter(|&c| c < n)].into_iter().flatten());
            offsets.push(cols.len() as u32);
        }
        let vals = (0..cols.len()).map(|e| T::from_f64(values(e))).collect();
        CsrMatrix::try_from_csr_data(n, n, offsets, cols.into_iter().map(|c| c as u32).collect(), vals).unwrap()
    };
    // `distinct` values, exact in f32, 0.0 and −0.0 among them, scattered over the entries.
    let palette = |distinct: usize| {
        move |e: usize| match (e * 7919) % distinct {
            0 => 0.0,
            1 => -0.0,
            j => j as f64 * 0.375 - 40.0,
        }
    };
    let element_bits = 8 * std::mem::size_of::<T>() as u32;
    let tolerance = common::tolerance::<T>();
    let far = wgsparse::format::MAX_DIAGONAL_OFFSET as usize + 1;
    for (mode, ctx) in common::contexts_for::<T>() {
        for (reach, distinct, coded) in [(1, 256, true), (1, 257, false), (far, 2, false)] {
            let what = format!("{mode} reach {reach}, {distinct} values");
            let a = matrix_of(reach, &palette(distinct));
            let matrix = GpuSparse::from_csr(ctx, &a, Conversion::Ell(ELL)).unwrap();
            assert_eq!(matrix.value_bits(), if coded { 16 } else { element_bits }, "{what}");
            assert_eq!(matrix.index_bits(), if reach == 1 { 16 } else { 32 }, "{what}");
            let in_place = GpuSparse::from_csr(ctx, &a, Conversion::Ell(IN_PLACE)).unwrap();
            assert_eq!(in_place.value_bits(), element_bits, "{what}: limit 0");
            if coded {
                assert!(matrix.device_bytes() < in_place.device_bytes(), "{what}: coded takes fewer bytes");
            }
            let error = spmv_error(ctx, &a, SpmvAlgorithm::Ell, Conversion::Ell(ELL), &mut rng);
            assert!(error <= tolerance, "seed {seed} {what}: {error:e}");
        }

        let a = matrix_of(1, &palette(256));
        let mut matrix = GpuSparse::from_csr(ctx, &a, Conversion::Ell(ELL)).unwrap();
        let plan = Spmv::new(ctx, &matrix, SpmvAlgorithm::Ell).unwrap();
        let x = vector::<T>(n, rng.next_u64());
        let x_gpu = ctx.upload(&x).unwrap();
        let mut y = ctx.zeros::<T>(n).unwrap();
        let check = |y: &mut GpuVec<T>, b: &CsrMatrix<T>, what: &str| {
            y.write(&vec![T::from_f64(f64::NAN); n]).unwrap();
            plan.run(T::from_f64(1.0), &x_gpu, T::default(), y).unwrap();
            let error = relative_error(&y.read_blocking().unwrap(), &spmv_csr(1.0, b, &x, 0.0, &[]));
            assert!(error <= tolerance, "seed {seed} {mode} {what}: {error:e}");
        };
        // More distinct values than the default limit, fewer than the table's room.
        let b = matrix_of(1, &palette(5000));
        matrix.update_values(&b).unwrap();
        assert_eq!(matrix.value_bits(), 16, "{mode}: still coded");
        check(&mut y, &b, "5000 values after an update");
        // Every value distinct: more than the table holds; refused, b's values stay.
        let c = matrix_of(1, &|e| e as f64 + 0.5);
        let err = matrix.update_values(&c).unwrap_err();
        assert!(matches!(err, Error::Unsupported(_)), "{mode}: {err}");
        check(&mut y, &b, "after a refused update");
    }
}

#[test]
fn ell_codes_values_only_where_they_fit_f32() {
    ell_codes_values_only_where_they_fit::<f32>();
}

#[test]
fn ell_codes_values_only_where_they_fit_f64() {
    ell_codes_values_only_where_they_fit::<f64>();
}

/// New values reach every plan made for the matrix, the analyses stay (no rebuild), and a
/// different pattern is refused with nothing written.
#[test]
fn update_values_keeps_the_pattern_and_its_analyses() {
    let seed = common::seed("update values");
    let ctx = common::context();
    let a = generate::dense_row_mix(3000, 2500, seed);
    let x = generate::random_vector(a.cols(), seed);
    let x_gpu = ctx.upload(&x).unwrap();
    for (conversion, algorithm) in [
        (Conversion::Csr, SpmvAlgorithm::CsrSplit),
        (Conversion::Csr, SpmvAlgorithm::CsrMerge),
        (Conversion::Coo, SpmvAlgorithm::CooSegmented),
        (Conversion::Ell(ELL), SpmvAlgorithm::Ell),
        (Conversion::Hyb(HybSplit::Auto), SpmvAlgorithm::Hyb),
    ] {
        let mut matrix = GpuSparse::from_csr(ctx, &a, conversion).unwrap();
        let plan = Spmv::new(ctx, &matrix, algorithm).unwrap();
        let analyses = matrix.analyses();
        let mut b = a.clone();
        b.values_mut().iter_mut().for_each(|v| *v = 2.0 * *v - 0.25);
        matrix.update_values(&b).unwrap();
        assert_eq!(matrix.analyses(), analyses, "{algorithm:?}: analyses survive new values");
        let mut y = ctx.upload(&vec![f32::NAN; a.rows()]).unwrap();
        plan.run(1.0, &x_gpu, 0.0, &mut y).unwrap();
        let error = relative_error(&y.read_blocking().unwrap(), &spmv_csr(1.0, &b, &x, 0.0, &[]));
        assert!(error <= 1e-5, "seed {seed} {algorithm:?}: {error:e}");

        // Another pattern: refused, and the old values stay.
        let other = generate::dense_row_mix(3000, 2500, seed + 1);
        let err = matrix.update_values(&other).unwrap_err();
        assert!(matches!(err, Error::InvalidArgument(_)), "{err}");
        plan.run(1.0, &x_gpu, 0.0, &mut y).unwrap();
        let error = relative_error(&y.read_blocking().unwrap(), &spmv_csr(1.0, &b, &x, 0.0, &[]));
        assert!(error <= 1e-5, "{algorithm:?}: values unchanged after a refused update");
    }
}

/// Structure analyses are built once and shared by every plan that needs them; the
/// matrix lists them with their device bytes; dropped, they are rebuilt by the next plan
/// while existing plans keep working.
#[test]
fn analyses_are_shared_listed_and_rebuilt_after_dropping() {
    let seed = common::seed("analyses");
    let ctx = common::context();
    let a = generate::dense_row_mix(5000, 4000, seed);
    let matrix = GpuSparse::from_csr(ctx, &a, Conversion::Csr).unwrap();
    assert!(matrix.analyses().is_empty());
    let first = Spmv::new(ctx, &matrix, SpmvAlgorithm::CsrSplit).unwrap();
    let listed = matrix.analyses();
    assert_eq!(listed.len(), 1, "{listed:?}");
    assert!(listed[0].name.contains("row split") && listed[0].device_bytes > 0, "{listed:?}");
    let _second = Spmv::new(ctx, &matrix, SpmvAlgorithm::CsrSplit).unwrap();
    assert_eq!(matrix.analyses(), listed, "a second plan shares the first one's analysis");
    let _merge = Spmv::new(ctx, &matrix, SpmvAlgorithm::CsrMerge).unwrap();
    assert_eq!(matrix.analyses().len(), 2);

    matrix.drop_analyses();
    assert!(matrix.analyses().is_empty());
    let x = generate::random_vector(a.cols(), seed);
    let mut y = ctx.upload(&vec![f32::NAN; a.rows()]).unwrap();
    first.run(1.0, &ctx.upload(&x).unwrap(), 0.0, &mut y).unwrap();
    let error = relative_error(&y.read_blocking().unwrap(), &spmv_csr(1.0, &a, &x, 0.0, &[]));
    assert!(error <= 1e-5, "a plan keeps its analysis after the matrix dropped it: {error:e}");
    let _third = Spmv::new(ctx, &matrix, SpmvAlgorithm::CsrSplit).unwrap();
    assert_eq!(matrix.analyses().len(), 1, "a new plan rebuilds what it needs");
}

/// `Spmv::record_dot` (CG's `p·A·p` folded into the SpMV): csr-thread and ELL (both index
/// encodings) write y and partials that add up to x·y, at sizes around the workgroup; other
/// algorithms, a non-square matrix or too few partials fall back to y alone (`None`), y
/// still right. y and the partials are poisoned first.
fn spmv_with_dot<T: Scalar>() {
    let seed = common::seed("spmv_with_dot");
    let mut rng = Rng::new(seed);
    let ell_columns = Conversion::Ell(EllOptions { compact_indices: false, ..ELL });
    for (mode, ctx) in common::contexts_for::<T>() {
        for rows in [1, 7, 255, 256, 257, 1000] {
            let a = to::<T>(&generate::random(rows, rows, 0.02, rng.next_u64()));
            let x = vector::<T>(rows, rng.next_u64());
            let want = spmv_csr(1.0, &a, &x, 0.0, &vec![T::default(); rows]);
            let want_dot: f64 = want.iter().zip(&x).map(|(y, x)| y * x.to_f64()).sum();
            // A row's products can cancel (7 × 7 at 0.02 holds about one entry: a row of two
            // that cancel is all of y), so y is measured against the scale of its terms,
            // |A|·|x|, and the dot against Σ|x_i|·(|A|·|x|)_i, which bounds both the sum's
            // terms and the rounding each y_i brings into it.
            let terms =
                spmv_csr(1.0, &common::matrix_magnitudes(&a), &common::magnitudes(&x), 0.0, &vec![T::default(); rows]);
            let bound: f64 = terms.iter().zip(&x).map(|(t, x)| t * x.to_f64().abs()).sum::<f64>();
            // One partial per workgroup of the fused kernel's rows (at most DOT_WORKGROUP_MAX).
            let needed = |algorithm| {
                let wg =
                    SpmvOptions::default().workgroup_size_for(ctx, algorithm, rows).min(DOT_WORKGROUP_MAX) as usize;
                rows.div_ceil(wg)
            };
            let (thread, ell) = (needed(SpmvAlgorithm::CsrThread), needed(SpmvAlgorithm::Ell));
            for (label, algorithm, conversion, capacity, fused) in [
                ("csr-thread", SpmvAlgorithm::CsrThread, Conversion::Csr, thread, true),
                ("csr-thread", SpmvAlgorithm::CsrThread, Conversion::Csr, thread - 1, false),
                ("csr-vector", SpmvAlgorithm::CsrVector, Conversion::Csr, rows, false),
                ("ell, i16", SpmvAlgorithm::Ell, Conversion::Ell(IN_PLACE), ell, true),
                ("ell, i16", SpmvAlgorithm::Ell, Conversion::Ell(IN_PLACE), ell - 1, false),
                ("ell (32-bit columns)", SpmvAlgorithm::Ell, ell_columns, ell, true),
                ("ell, i16, coded", SpmvAlgorithm::Ell, Conversion::Ell(CODED), ell, true),
                ("ell, i16, coded", SpmvAlgorithm::Ell, Conversion::Ell(CODED), ell - 1, false),
            ] {
                if capacity == 0 {
                    continue;
                }
                let what = format!("{mode} rows {rows} {label} capacity {capacity}");
                let matrix = GpuSparse::from_csr(ctx, &a, conversion).unwrap();
                let plan = Spmv::new(ctx, &matrix, algorithm).unwrap();
                let index_bits = if label.starts_with("ell, i16") { 16 } else { 32 };
                assert_eq!(matrix.index_bits(), index_bits, "{what}: index encoding");
                let value_bits = if label == "ell, i16, coded" { 16 } else { 8 * std::mem::size_of::<T>() as u32 };
                assert_eq!(matrix.value_bits(), value_bits, "{what}: value encoding");
                let x_gpu = ctx.upload(&x).unwrap();
                let mut y = ctx.upload(&vec![T::from_f64(f64::NAN); rows]).unwrap();
                let nan = T::from_f64(f64::NAN);
                let partials = ctx.upload(&vec![[nan, nan]; capacity]).unwrap();
                let mut batch = ctx.batch();
                let count = plan.record_dot(&mut batch.recorder(), &x_gpu, &mut y, &partials).unwrap();
                batch.submit().unwrap();
                let got: Vec<f64> = y.read_blocking().unwrap().iter().map(|v| v.to_f64()).collect();
                let error = error_relative_to_terms(&got, &want, &terms);
                assert!(error <= common::tolerance::<T>(), "{what}: y off by {error:e}");
                assert_eq!(count.is_some(), fused, "{what}: fused {count:?}");
                if let Some(count) = count {
                    let host = partials.read_blocking().unwrap();
                    let dot: f64 = host[..count].iter().map(|p| p[0].to_f64()).sum();
                    let tolerance = 8.0 * common::tolerance::<T>() * bound.max(f64::MIN_POSITIVE);
                    assert!((dot - want_dot).abs() <= tolerance, "{what}: x·y {dot} vs {want_dot}");
                }
            }
        }
        // Not square: y only.
        let a = to::<T>(&generate::random(40, 30, 0.1, rng.next_u64()));
        let matrix = GpuSparse::from_csr(ctx, &a, Conversion::of(Format::Csr)).unwrap();
        let plan = Spmv::new(ctx, &matrix, SpmvAlgorithm::CsrThread).unwrap();
        let (x, mut y) = (ctx.upload(&vector::<T>(30, 1)).unwrap(), ctx.zeros::<T>(40).unwrap());
        let partials = ctx.zeros::<[T; 2]>(40).unwrap();
        let mut batch = ctx.batch();
        assert_eq!(plan.record_dot(&mut batch.recorder(), &x, &mut y, &partials).unwrap(), None, "{mode}: 40 × 30");
    }
}

#[test]
fn spmv_with_dot_f32() {
    spmv_with_dot::<f32>();
}

#[test]
fn spmv_with_dot_f64() {
    spmv_with_dot::<f64>();
}
