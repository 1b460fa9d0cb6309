//! Dense GEMV `y ← α·op(A)·x + β·y` against the f64 twins, for f32 and f64, with and without
//! subgroups, both layouts and both transposes, on shapes around the workgroup and subgroup
//! sizes, empty ones, tall-skinny and short-wide ones, with every way of cutting the work;
//! y poisoned with NaN before runs with β = 0. Misuse gets typed errors.

mod common;

use wgsparse::generate::Rng;
use wgsparse::ops::{Gemv, GemvOptions, Transpose};
use wgsparse::reference::{error_relative_to_terms, gemv_dense, gemv_dense_t};
use wgsparse::{Context, DenseLayout, DenseMatrix, Error, GpuDense, Scalar};

/// Values in [0.25, 1.25] like `common::dense`'s: with A's entries positive too, no row sum
/// cancels (the row sums of length 4,100 with random signs cancel enough, now and then, to
/// put f32 rounding past 1e-5), and `|A|·|x|` is `A·x`.
fn vector<T: Scalar>(len: usize, seed: u64) -> Vec<T> {
    common::dense::<T>(1, len, seed).into_data()
}

/// The twin of `op(A)·x`.
fn twin<T: Scalar>(alpha: f64, a: &DenseMatrix<T>, t: Transpose, x: &[T], beta: f64, y: &[T]) -> Vec<f64> {
    match t {
        Transpose::No => gemv_dense(alpha, a, x, beta, y),
        Transpose::Yes => gemv_dense_t(alpha, a, x, beta, y),
    }
}

/// Runs the plan twice (β = 0 over NaN-poisoned y, then β ≠ 0) and returns the worst error
/// against the twin, relative to the terms' magnitudes: with α < 0 < β, `α·A·x` and `β·y₀`
/// can cancel to almost nothing in a short y (CI once drew 1×1 with 2.7e-5 relative to the
/// result). Also checks that a second run gives the same bits.
fn gemv_error<T: Scalar>(
    ctx: &Context,
    a: &DenseMatrix<T>,
    layout: DenseLayout,
    t: Transpose,
    options: &GemvOptions,
    rng: &mut Rng,
) -> f64 {
    let a_gpu = GpuDense::upload(ctx, a, layout).unwrap();
    let plan = Gemv::with_options(ctx, &a_gpu, t, options).unwrap();
    let (out_len, in_len) = match t {
        Transpose::No => (a.rows(), a.cols()),
        Transpose::Yes => (a.cols(), a.rows()),
    };
    let x = vector::<T>(in_len, rng.next_u64());
    let x_gpu = ctx.upload(&x).unwrap();
    let mut worst = 0f64;
    for (alpha, beta) in [(0.5 + rng.next_f64(), 0.0), (-1.5, 0.25 + rng.next_f64())] {
        let y0: Vec<T> =
            if beta == 0.0 { vec![T::from_f64(f64::NAN); out_len] } else { vector::<T>(out_len, rng.next_u64()) };
        let mut y = ctx.upload(&y0).unwrap();
        plan.run(T::from_f64(alpha), &a_gpu, &x_gpu, T::from_f64(beta), &mut y).unwrap();
        let got = y.read_blocking().unwrap();
        let (alpha, beta) = (T::from_f64(alpha).to_f64(), T::from_f64(beta).to_f64());
        let want = twin(alpha, a, t, &x, beta, &y0);
        let terms = twin(alpha.abs(), a, t, &x, beta.abs(), &y0);
        worst = worst.max(error_relative_to_terms(&got, &want, &terms));
        if beta == 0.0 {
            plan.run(T::from_f64(alpha), &a_gpu, &x_gpu, T::from_f64(beta), &mut y).unwrap();
            let again = y.read_blocking().unwrap();
            let same = got.iter().zip(&again).all(|(p, q)| p.to_f64().to_bits() == q.to_f64().to_bits());
            assert!(same, "gemv {t:?} {layout:?} {}x{}: a second run gave other bits", a.rows(), a.cols());
        }
    }
    worst
}

/// Shapes around 1, the vec4 unit, the smallest subgroups (8, 32) and the workgroup (256),
/// empty ones, and rows long and short enough to be cut.
const SHAPES: [(usize, usize); 16] = [
    (0, 5),
    (5, 0),
    (1, 1),
    (7, 3),
    (8, 8),
    (31, 33),
    (32, 32),
    (33, 31),
    (64, 65),
    (100, 4),
    (3, 1000),
    (1000, 3),
    (257, 129),
    (255, 256),
    (9, 4100),
    (4100, 12),
];

/// Every way of cutting the work the plan can choose, forced: the default, no cut, lanes
/// from 1 to the workgroup, narrow column blocks, many splits, rows in batches of 2 to 16.
fn option_grid(ctx: &Context) -> Vec<GemvOptions> {
    let shuffle = ctx.subgroup_size_range().map_or(64, |(min, _)| min);
    vec![
        GemvOptions::default(),
        GemvOptions { splits: Some(1), row_batch: Some(2), ..Default::default() },
        GemvOptions { lanes: Some(1), columns: Some(1), splits: Some(3), row_batch: Some(3), ..Default::default() },
        GemvOptions { lanes: Some(shuffle), columns: Some(8), row_batch: Some(16), ..Default::default() },
        GemvOptions { lanes: Some(256), columns: Some(256), splits: Some(7), row_batch: Some(4), ..Default::default() },
        GemvOptions { workgroup_size: Some(64), lanes: Some(64), splits: Some(1024), ..Default::default() },
    ]
}

/// The shapes the forced cuts run on (the default options run on all).
const CUT_SHAPES: [(usize, usize); 7] = [(0, 5), (5, 0), (33, 31), (3, 1000), (1000, 3), (257, 129), (9, 4100)];

fn check_grid<T: Scalar>(seed: u64) {
    let mut rng = Rng::new(seed);
    for (mode, ctx) in common::contexts_for::<T>() {
        for (i, options) in option_grid(ctx).into_iter().enumerate() {
            let shapes: &[(usize, usize)] = if i == 0 { &SHAPES } else { &CUT_SHAPES };
            for &(rows, cols) in shapes {
                let a = common::dense::<T>(rows, cols, rng.next_u64());
                for layout in [DenseLayout::RowMajor, DenseLayout::ColMajor] {
                    for t in [Transpose::No, Transpose::Yes] {
                        let error = gemv_error(ctx, &a, layout, t, &options, &mut rng);
                        assert!(
                            error <= common::tolerance::<T>(),
                            "{mode} {} {rows}x{cols} {layout:?} {t:?} {options:?}: error {error:e} (seed {seed})",
                            T::KIND.name()
                        );
                    }
                }
            }
        }
    }
}

#[test]
fn gemv_matches_the_twin_on_every_shape_layout_and_cut_f32() {
    check_grid::<f32>(common::seed("gemv f32"));
}

#[test]
fn gemv_matches_the_twin_on_every_shape_layout_and_cut_f64() {
    check_grid::<f64>(common::seed("gemv f64"));
}

#[test]
fn gemv_tall_skinny_and_short_wide() {
    let seed = common::seed("gemv tall and wide");
    let mut rng = Rng::new(seed);
    for (mode, ctx) in common::contexts() {
        for (rows, cols) in [(100_000, 32), (32, 100_000), (20_000, 33)] {
            let a = common::dense::<f32>(rows, cols, rng.next_u64());
            for t in [Transpose::No, Transpose::Yes] {
                let error = gemv_error(ctx, &a, DenseLayout::RowMajor, t, &GemvOptions::default(), &mut rng);
                assert!(error <= 1e-5, "{mode} {rows}x{cols} {t:?}: error {error:e} (seed {seed})");
            }
        }
    }
}

#[test]
fn gemv_takes_device_scalars_and_alpha_zero_skips_the_product() {
    let ctx = common::context();
    let mut rng = Rng::new(common::seed("gemv scalars"));
    let mut a = common::dense::<f32>(40, 24, rng.next_u64());
    let x = vector::<f32>(24, rng.next_u64());
    let y0 = vector::<f32>(40, rng.next_u64());
    let a_gpu = GpuDense::upload(ctx, &a, DenseLayout::RowMajor).unwrap();
    let plan = Gemv::new(ctx, &a_gpu, Transpose::No).unwrap();
    let (alpha, beta) = (ctx.scalar(0.75f32).unwrap(), ctx.scalar(-2.0f32).unwrap());
    let mut y = ctx.upload(&y0).unwrap();
    plan.run(&alpha, &a_gpu, &ctx.upload(&x).unwrap(), &beta, &mut y).unwrap();
    let (want, terms) = (gemv_dense(0.75, &a, &x, -2.0, &y0), gemv_dense(0.75, &a, &x, 2.0, &y0));
    let error = error_relative_to_terms(&y.read_blocking().unwrap(), &want, &terms);
    assert!(error <= 1e-5, "device scalars: error {error:e}");

    // α = 0: y ← β·y, and a NaN in A does not leak.
    a.data_mut()[0] = f32::NAN;
    let a_gpu = GpuDense::upload(ctx, &a, DenseLayout::RowMajor).unwrap();
    let mut y = ctx.upload(&y0).unwrap();
    plan.run(0.0, &a_gpu, &ctx.upload(&x).unwrap(), 0.5, &mut y).unwrap();
    let want: Vec<f32> = y0.iter().map(|v| v * 0.5).collect();
    assert_eq!(y.read_blocking().unwrap(), want);
}

#[test]
fn gemv_misuse_gets_typed_errors_and_changes_nothing() {
    let ctx = common::context();
    let a = common::dense::<f32>(6, 4, 1);
    let a_gpu = GpuDense::upload(ctx, &a, DenseLayout::RowMajor).unwrap();
    let plan = Gemv::new(ctx, &a_gpu, Transpose::No).unwrap();
    let x = ctx.upload(&[1.0f32; 4]).unwrap();
    let y0 = [7.0f32; 6];
    let mut y = ctx.upload(&y0).unwrap();
    let short = ctx.upload(&[1.0f32; 3]).unwrap();
    let dimension = |e: Error| assert!(matches!(e, Error::DimensionMismatch { .. }), "{e:?}");
    dimension(plan.run(1.0, &a_gpu, &short, 0.0, &mut y).unwrap_err());
    dimension(plan.run(1.0, &a_gpu, &x, 0.0, &mut ctx.upload(&[0.0f32; 5]).unwrap()).unwrap_err());
    let other_shape = GpuDense::upload(ctx, &common::dense::<f32>(6, 5, 2), DenseLayout::RowMajor).unwrap();
    dimension(plan.run(1.0, &other_shape, &x, 0.0, &mut y).unwrap_err());
    let col_major = GpuDense::upload(ctx, &a, DenseLayout::ColMajor).unwrap();
    assert!(matches!(plan.run(1.0, &col_major, &x, 0.0, &mut y), Err(Error::InvalidArgument(_))));
    // Operands of another context.
    let other = &common::contexts().last().unwrap().1;
    if !std::ptr::eq(other, ctx) {
        let foreign = other.upload(&[1.0f32; 4]).unwrap();
        assert!(plan.run(1.0, &a_gpu, &foreign, 0.0, &mut y).is_err());
        assert!(Gemv::new(other, &a_gpu, Transpose::No).is_err());
    }
    // Knobs out of range.
    for options in [
        GemvOptions { workgroup_size: Some(100), ..Default::default() },
        GemvOptions { lanes: Some(3), ..Default::default() },
        GemvOptions { columns: Some(512), ..Default::default() },
        GemvOptions { splits: Some(0), ..Default::default() },
        GemvOptions { splits: Some(u32::MAX), ..Default::default() },
        GemvOptions { row_batch: Some(1), ..Default::default() },
        GemvOptions { row_batch: Some(17), ..Default::default() },
    ] {
        let e = Gemv::with_options(ctx, &a_gpu, Transpose::No, &options).unwrap_err();
        assert!(matches!(e, Error::InvalidArgument(_)), "{options:?}: {e:?}");
    }
    assert_eq!(y.read_blocking().unwrap(), y0, "a refused call wrote y");
}

/// `Aᵀ·x` with an infinity in A: each of its columns' outputs is that infinity, never NaN. The
/// columns kernel loads its rows in batches, and a batch past its strip's end reloads the
/// lane's first row for a product it must drop, not multiply by zero (∞·0 is NaN). Rows that
/// leave batches part full, with and without strips.
fn infinity_stays_infinite<T: Scalar>() {
    let ctx = common::context();
    let mut rng = Rng::new(common::seed("gemv infinity"));
    let cuts = [
        GemvOptions::default(),
        GemvOptions { splits: Some(3), ..Default::default() },
        GemvOptions { row_batch: Some(16), ..Default::default() },
    ];
    for (rows, cols) in [(37, 12), (300, 9), (1000, 3)] {
        for options in &cuts {
            let mut a = common::dense::<T>(rows, cols, rng.next_u64());
            // Row 0 (strip 0's first row lane) and the first row of a later strip.
            a.data_mut()[1] = T::from_f64(f64::INFINITY);
            a.data_mut()[(rows / 2) * cols + cols - 1] = T::from_f64(f64::NEG_INFINITY);
            let a_gpu = GpuDense::upload(ctx, &a, DenseLayout::RowMajor).unwrap();
            let plan = Gemv::with_options(ctx, &a_gpu, Transpose::Yes, options).unwrap();
            let x = vector::<T>(rows, rng.next_u64());
            let mut y = ctx.upload(&vec![T::from_f64(f64::NAN); cols]).unwrap();
            plan.run(T::from_f64(1.0), &a_gpu, &ctx.upload(&x).unwrap(), T::from_f64(0.0), &mut y).unwrap();
            let got: Vec<f64> = y.read_blocking().unwrap().iter().map(|v| v.to_f64()).collect();
            let want = gemv_dense_t(1.0, &a, &x, 0.0, &vec![T::from_f64(0.0); cols]);
            for (j, (g, w)) in got.iter().zip(&want).enumerate() {
                let ok = if w.is_infinite() { g == w } else { (g - w).abs() <= 1e-4 * w.abs() };
                assert!(ok, "{} {rows}x{cols} {options:?}: y[{j}] = {g}, want {w}", T::KIND.name());
            }
        }
    }
}

#[test]
fn gemv_t_keeps_infinities_f32() {
    infinity_stays_infinite::<f32>();
}

#[test]
fn gemv_t_keeps_infinities_f64() {
    infinity_stays_infinite::<f64>();
}
