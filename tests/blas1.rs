//! BLAS level 1 against the f64 twins, f32 and f64, both subgroup modes, lengths around the
//! workgroup and reduction-chunk boundaries; device scalars chained without readback.

mod common;

use wgsparse::generate::{self, Rng};
use wgsparse::ops::blas1::{self, Reduction};
use wgsparse::reference::{blas1 as twin, error_relative_to_terms, relative_error};
use wgsparse::{Context, Error, GpuVec, Scalar, ScalarArg};

const LENGTHS: [usize; 10] = [0, 1, 7, 255, 256, 257, 4095, 4096, 4097, 70_001];

fn vector<T: Scalar>(len: usize, seed: u64) -> Vec<T> {
    generate::random_vector(len, seed).into_iter().map(|v| T::from_f64(v as f64)).collect()
}

fn poisoned<T: Scalar>(ctx: &Context, len: usize) -> GpuVec<T> {
    ctx.upload(&vec![T::from_f64(f64::NAN); len]).unwrap()
}

fn run(ctx: &Context, record: impl FnOnce(&mut wgsparse::Recorder<'_, '_>) -> wgsparse::Result<()>) {
    let mut batch = ctx.batch();
    record(&mut batch.recorder()).unwrap();
    batch.submit().unwrap();
}

fn elementwise_ops<T: Scalar>(seed: u64) {
    let mut rng = Rng::new(seed);
    for (mode, ctx) in common::contexts_for::<T>() {
        for len in LENGTHS {
            let (x, y0) = (vector::<T>(len, rng.next_u64()), vector::<T>(len, rng.next_u64()));
            let x_gpu = ctx.upload(&x).unwrap();
            let check = |what: &str, got: &GpuVec<T>, want: Vec<f64>| {
                let error = relative_error(&got.read_blocking().unwrap(), &want);
                assert!(
                    error <= common::tolerance::<T>(),
                    "seed {seed} {mode} {} {what} len {len}: {error:e}",
                    T::KIND.name()
                );
            };
            let (a, b) = (T::from_f64(1.5), T::from_f64(-0.75));
            // α·x and β·y can cancel in an entry (a one-entry vector fails relative to its
            // result): the sums are measured against the scale of their terms, |α·x| + |β·y|.
            let check_sum = |what: &str, got: &GpuVec<T>, beta: f64| {
                let terms =
                    twin::axpby(a.to_f64().abs(), &common::magnitudes(&x), beta.abs(), &common::magnitudes(&y0));
                let want = twin::axpby(a.to_f64(), &x, beta, &y0);
                let error = error_relative_to_terms(&got.read_blocking().unwrap(), &want, &terms);
                assert!(
                    error <= common::tolerance::<T>(),
                    "seed {seed} {mode} {} {what} len {len}: {error:e}",
                    T::KIND.name()
                );
            };

            let mut y = ctx.upload(&y0).unwrap();
            run(ctx, |rec| blas1::axpby(rec, a, &x_gpu, b, &mut y));
            check_sum("axpby", &y, b.to_f64());

            let mut y = poisoned::<T>(ctx, len);
            run(ctx, |rec| blas1::axpby(rec, a, &x_gpu, T::default(), &mut y));
            check("axpby with beta 0 over NaN", &y, twin::axpby(a.to_f64(), &x, 0.0, &vec![T::default(); len]));

            let mut y = ctx.upload(&y0).unwrap();
            run(ctx, |rec| blas1::axpy(rec, a, &x_gpu, &mut y));
            check_sum("axpy", &y, 1.0);

            let mut y = ctx.upload(&y0).unwrap();
            run(ctx, |rec| blas1::scal(rec, b, &mut y));
            check("scal", &y, twin::scal(b.to_f64(), &y0));

            let mut y = poisoned::<T>(ctx, len);
            run(ctx, |rec| blas1::fill(rec, b, &mut y));
            check("fill", &y, vec![b.to_f64(); len]);

            // Hashed values are 24-bit: the device's must equal the host's bit for bit, in a
            // different stream for another seed, and scaled by α.
            let stream = rng.next_u64() as u32;
            let mut y = poisoned::<T>(ctx, len);
            run(ctx, |rec| blas1::fill_hashed(rec, a, stream, &mut y));
            let want: Vec<T> =
                (0..len as u32).map(|i| T::from_f64(a.to_f64() * generate::hashed_value(i, stream))).collect();
            let what = format!("seed {seed} stream {stream} {mode} {} fill_hashed len {len}", T::KIND.name());
            assert!(y.read_blocking().unwrap() == want, "{what}");
            if len > 1 {
                let other: Vec<f64> = (0..len as u32).map(|i| generate::hashed_value(i, stream ^ 1)).collect();
                assert!(other.iter().zip(&want).any(|(o, w)| a.to_f64() * o != w.to_f64()), "{what}: streams differ");
            }

            let mut y = poisoned::<T>(ctx, len);
            run(ctx, |rec| blas1::copy(rec, &x_gpu, &mut y));
            check("copy", &y, x.iter().map(|v| v.to_f64()).collect());

            let y_gpu = ctx.upload(&y0).unwrap();
            for divide in [false, true] {
                let mut z = poisoned::<T>(ctx, len);
                run(ctx, |rec| {
                    if divide {
                        blas1::div(rec, &x_gpu, &y_gpu, &mut z)
                    } else {
                        blas1::mul(rec, &x_gpu, &y_gpu, &mut z)
                    }
                });
                check(if divide { "div" } else { "mul" }, &z, twin::elementwise(&x, &y0, divide));
            }
        }
    }
}

/// The hashed stream BiCGSTAB's default shadow residual uses (seed 0x5eed) starts with these
/// values, which the CuPy peer script (`benches/peer_cusparse.py`, `SHADOW_START`) checks too;
/// a long stream stays in [−½, ½) with mean near 0.
#[test]
fn hashed_values_are_pinned() {
    let start: Vec<f64> = (0..4).map(|i| generate::hashed_value(i, 0x5eed)).collect();
    assert_eq!(start, [0.2523842453956604, -0.31249862909317017, -0.04866039752960205, -0.3937928080558777]);
    let values: Vec<f64> = (0..100_000).map(|i| generate::hashed_value(i, 7)).collect();
    assert!(values.iter().all(|v| (-0.5..0.5).contains(v)));
    let mean = values.iter().sum::<f64>() / values.len() as f64;
    assert!(mean.abs() < 0.01, "mean {mean}");
}

#[test]
fn elementwise_ops_match_the_twins_f32() {
    elementwise_ops::<f32>(common::seed("blas1 elementwise f32"));
}

#[test]
fn elementwise_ops_match_the_twins_f64() {
    elementwise_ops::<f64>(common::seed("blas1 elementwise f64"));
}

fn reductions<T: Scalar>(seed: u64) {
    let mut rng = Rng::new(seed);
    for (mode, ctx) in common::contexts_for::<T>() {
        let out = ctx.scalar(T::from_f64(f64::NAN)).unwrap();
        for len in LENGTHS {
            let (x, y) = (vector::<T>(len, rng.next_u64()), vector::<T>(len, rng.next_u64()));
            let (x_gpu, y_gpu) = (ctx.upload(&x).unwrap(), ctx.upload(&y).unwrap());
            let reduction = Reduction::<T>::new(ctx, len).unwrap();
            run(ctx, |rec| reduction.dot(rec, &x_gpu, &y_gpu, &out));
            // Relative to Σ|x·y|: random signs cancel, and no summation order promises an
            // error small relative to a cancelled result.
            let scale: f64 = x.iter().zip(&y).map(|(a, b)| (a.to_f64() * b.to_f64()).abs()).sum();
            let got = out.read_blocking().unwrap().to_f64();
            let error = if scale == 0.0 { got.abs() } else { (got - twin::dot(&x, &y)).abs() / scale };
            assert!(error <= common::tolerance::<T>(), "seed {seed} {mode} dot len {len}: {error:e}");

            run(ctx, |rec| reduction.nrm2(rec, &x_gpu, &out));
            let error = relative_error(&[out.read_blocking().unwrap()], &[twin::nrm2(&x)]);
            assert!(error <= common::tolerance::<T>(), "seed {seed} {mode} nrm2 len {len}: {error:e}");
        }
    }
}

#[test]
fn reductions_match_the_twins_f32() {
    reductions::<f32>(common::seed("blas1 reductions f32"));
}

#[test]
fn reductions_match_the_twins_f64() {
    reductions::<f64>(common::seed("blas1 reductions f64"));
}

/// Squares of 1e30 overflow f32 and squares of 1e-30 underflow it; the norm is still right,
/// infinities give +Inf and a NaN gives NaN.
#[test]
fn nrm2_neither_overflows_nor_underflows_and_propagates_specials() {
    for (mode, ctx) in common::contexts() {
        let out = ctx.scalar(0.0f32).unwrap();
        let norm = |values: &[f32]| {
            let reduction = Reduction::<f32>::new(ctx, values.len()).unwrap();
            let x = ctx.upload(values).unwrap();
            run(ctx, |rec| reduction.nrm2(rec, &x, &out));
            out.read_blocking().unwrap()
        };
        let big: Vec<f32> = (0..5000).map(|i| 1e30 * (1.0 + (i % 7) as f32)).collect();
        let tiny: Vec<f32> = big.iter().map(|v| v * 1e-60).collect();
        for values in [&big, &tiny] {
            let error = relative_error(&[norm(values)], &[twin::nrm2(values)]);
            assert!(error <= 1e-5, "{mode}: {error:e}");
        }
        let mut special = vec![1.0f32; 3000];
        special[17] = f32::INFINITY;
        special[2900] = f32::NEG_INFINITY;
        assert_eq!(norm(&special), f32::INFINITY, "{mode}");
        special[1500] = f32::NAN;
        assert!(norm(&special).is_nan(), "{mode}");
        assert_eq!(norm(&[0.0; 100]), 0.0, "{mode}");
    }
}

/// Reductions are deterministic: the same bits, run after run.
#[test]
fn reductions_repeat_bit_for_bit() {
    let seed = common::seed("blas1 determinism");
    for (mode, ctx) in common::contexts() {
        let x = ctx.upload(&vector::<f32>(300_001, seed)).unwrap();
        let y = ctx.upload(&vector::<f32>(300_001, seed + 1)).unwrap();
        let reduction = Reduction::<f32>::new(ctx, 300_001).unwrap();
        let out = ctx.zeros::<f32>(8).unwrap();
        run(ctx, |rec| (0..8).try_for_each(|i| reduction.dot_into(rec, &x, &y, &out, i)));
        let bits: Vec<u32> = out.read_blocking().unwrap().iter().map(|v| v.to_bits()).collect();
        assert!(bits.iter().all(|&b| b == bits[0]), "{mode}: {bits:?}");
    }
}

/// dot → axpy with the dot's result as α, in one batch, nothing read back between them; and
/// α = 0 from a device scalar does not read x (NaN stays out).
#[test]
fn device_scalars_chain_ops_without_readback() {
    let seed = common::seed("blas1 device scalars");
    for (mode, ctx) in common::contexts() {
        let (x, y0) = (vector::<f32>(5000, seed), vector::<f32>(5000, seed + 1));
        let (x_gpu, mut y) = (ctx.upload(&x).unwrap(), ctx.upload(&y0).unwrap());
        let reduction = Reduction::<f32>::new(ctx, 5000).unwrap();
        let alpha = ctx.scalar(f32::NAN).unwrap();
        let mut batch = ctx.batch();
        reduction.dot(&mut batch.recorder(), &x_gpu, &x_gpu, &alpha).unwrap();
        blas1::axpy(&mut batch.recorder(), &alpha, &x_gpu, &mut y).unwrap();
        batch.submit().unwrap();
        let xx = twin::dot(&x, &x);
        let error = relative_error(&y.read_blocking().unwrap(), &twin::axpby(xx, &x, 1.0, &y0));
        assert!(error <= 1e-5, "seed {seed} {mode}: {error:e}");

        let zero = ctx.scalar(0.0f32).unwrap();
        let nan = ctx.upload(&vec![f32::NAN; 5000]).unwrap();
        let mut y = ctx.upload(&y0).unwrap();
        run(ctx, |rec| blas1::axpby(rec, &zero, &nan, 2.0, &mut y));
        assert_eq!(y.read_blocking().unwrap(), y0.iter().map(|v| 2.0 * v).collect::<Vec<f32>>(), "{mode}");
    }
}

#[test]
fn blas1_refuses_bad_operands_before_recording() {
    let ctx = common::context();
    let other = Context::new_blocking(wgsparse::ContextOptions::from_env().unwrap()).unwrap();
    let x = ctx.upload(&[1.0f32; 10]).unwrap();
    let mut y = ctx.upload(&[2.0f32; 10]).unwrap();
    let mut short = ctx.upload(&[2.0f32; 9]).unwrap();
    let foreign = other.upload(&[1.0f32; 10]).unwrap();
    let mut batch = ctx.batch();
    {
        let mut rec = batch.recorder();
        let err = blas1::axpy(&mut rec, 1.0, &x, &mut short).unwrap_err();
        assert!(matches!(err, Error::DimensionMismatch { .. }), "{err}");
        let err = blas1::axpy(&mut rec, 1.0, &foreign, &mut y).unwrap_err();
        assert!(matches!(err, Error::ContextMismatch(_)), "{err}");
        // A result written into an input: a race, refused. (Through `&mut` outputs, the borrow
        // checker already refuses such calls.)
        let reduction = Reduction::<f32>::new(ctx, 10).unwrap();
        let err = reduction.dot_into(&mut rec, &x, &y, &x, 0).unwrap_err();
        assert!(matches!(err, Error::Aliasing(_)), "{err}");
        let err = blas1::scal(&mut rec, ScalarArg::Device { vector: &x, index: 10 }, &mut y).unwrap_err();
        assert!(matches!(err, Error::InvalidArgument(_)), "{err}");
        let reduction = Reduction::<f32>::new(&other, 10).unwrap();
        let out = ctx.scalar(0.0f32).unwrap();
        let err = reduction.dot(&mut rec, &x, &x, &out).unwrap_err();
        assert!(matches!(err, Error::ContextMismatch(_)), "{err}");
    }
    batch.submit().unwrap();
    assert_eq!(y.read_blocking().unwrap(), vec![2.0; 10], "nothing was recorded");
}
