//! Device loss, concurrency and IEEE special values: never a panic, a hang or a silent
//! wrong answer.

mod common;

use std::sync::mpsc;
use std::time::Duration;

use wgsparse::format::EllOptions;
use wgsparse::generate::{self, Rng};
use wgsparse::gpu::{Format, GpuMatrix};
use wgsparse::ops::{Spmv, SpmvAlgorithm};
use wgsparse::reference::{relative_error, spmv_csr};
use wgsparse::{Context, ContextOptions, CsrMatrix, Error};

fn fresh_context() -> Context {
    Context::new_blocking(ContextOptions::from_env().unwrap()).unwrap()
}

fn format_for(algorithm: SpmvAlgorithm) -> Format {
    match algorithm.default_format().unwrap_or(Format::Csr) {
        Format::Ell(_) => Format::Ell(EllOptions { max_padding_ratio: f64::INFINITY }),
        f => f,
    }
}

fn is_lost(result: Result<impl Sized, Error>) -> bool {
    matches!(result, Err(Error::DeviceLost(_)))
}

#[test]
fn every_call_after_device_loss_returns_device_lost() {
    let ctx = fresh_context();
    let a = generate::random(300, 300, 0.02, 1);
    let matrix = GpuMatrix::from_csr(&ctx, &a, Format::Csr).unwrap();
    let plan = Spmv::new(&ctx, &matrix, SpmvAlgorithm::CsrMerge).unwrap();
    let x = ctx.upload(&vec![1.0f32; 300]).unwrap();
    let mut y = ctx.zeros::<f32>(300).unwrap();

    ctx.device().destroy();

    assert!(is_lost(ctx.upload(&[1.0f32])));
    assert!(is_lost(ctx.zeros::<f32>(4)));
    assert!(is_lost(GpuMatrix::from_csr(&ctx, &a, Format::Coo)));
    assert!(is_lost(Spmv::new(&ctx, &matrix, SpmvAlgorithm::CooSegmented)));
    assert!(is_lost(plan.run(1.0, &x, 0.0, &mut y)));
    assert!(is_lost(y.read_blocking(&ctx)));
    assert!(is_lost(y.write(&ctx, &[0.0; 300])));
    assert!(is_lost(ctx.synchronize()));
}

#[test]
fn device_loss_while_work_is_in_flight_ends_every_call() {
    let ctx = fresh_context();
    let a = generate::laplacian_2d(300);
    let matrix = GpuMatrix::from_csr(&ctx, &a, Format::Csr).unwrap();
    let plan = Spmv::new(&ctx, &matrix, SpmvAlgorithm::CsrMerge).unwrap();
    let x = ctx.upload(&vec![1.0f32; a.cols()]).unwrap();
    let (done, finished) = mpsc::channel();
    let worker = {
        let ctx = ctx.clone();
        std::thread::spawn(move || {
            let mut y = ctx.zeros::<f32>(a.rows()).unwrap();
            // Submit and read back until the loss surfaces; every call returns.
            let outcome = loop {
                if let Err(e) = plan.run(1.0, &x, 0.0, &mut y).and_then(|_| y.read_blocking(&ctx)) {
                    break e;
                }
            };
            done.send(outcome).unwrap();
        })
    };
    std::thread::sleep(Duration::from_millis(200));
    ctx.device().destroy();
    let outcome = finished.recv_timeout(Duration::from_secs(120)).expect("a call hung after the device was lost");
    worker.join().unwrap();
    assert!(matches!(outcome, Error::DeviceLost(_) | Error::Readback(_)), "{outcome}");
}

#[test]
fn one_context_serves_many_threads_and_compiles_each_pipeline_once() {
    let seed = common::seed("threads");
    let matrices: Vec<CsrMatrix<f32>> =
        (0..4).map(|i| generate::random(700 + 13 * i, 650, 0.01, seed + i as u64)).collect();
    let run_all = |ctx: &Context, threads: usize| {
        std::thread::scope(|s| {
            let handles: Vec<_> = (0..threads)
                .map(|t| {
                    let matrices = &matrices;
                    s.spawn(move || {
                        let mut rng = Rng::new(seed ^ t as u64);
                        for (i, algorithm) in SpmvAlgorithm::ALL.into_iter().enumerate() {
                            let a = &matrices[(t + i) % matrices.len()];
                            let matrix = GpuMatrix::from_csr(ctx, a, format_for(algorithm)).unwrap();
                            let plan = Spmv::new(ctx, &matrix, algorithm).unwrap();
                            let x = generate::random_vector(a.cols(), rng.next_u64());
                            let mut y = ctx.upload(&vec![f32::NAN; a.rows()]).unwrap();
                            plan.run(1.0, &ctx.upload(&x).unwrap(), 0.0, &mut y).unwrap();
                            let error = relative_error(&y.read_blocking(ctx).unwrap(), &spmv_csr(1.0, a, &x, 0.0, &[]));
                            assert!(error <= 1e-5, "seed {seed} thread {t} {}: {error:e}", algorithm.name());
                        }
                    })
                })
                .collect();
            for h in handles {
                h.join().unwrap();
            }
        });
    };
    // Every kernel variant the algorithms use, compiled by one thread…
    let serial = fresh_context();
    run_all(&serial, 1);
    // …is compiled exactly once more when eight threads race for them on a new context.
    let shared = fresh_context();
    run_all(&shared, 8);
    assert_eq!(shared.pipelines_compiled(), serial.pipelines_compiled());
}

#[test]
fn nan_and_infinity_propagate_as_ieee_arithmetic_says() {
    let seed = common::seed("nan and inf");
    let mut rng = Rng::new(seed);
    let mut a = generate::random(600, 500, 0.02, seed);
    let n = a.nnz();
    a.values_mut()[n / 7] = f32::NAN;
    a.values_mut()[n / 3] = f32::INFINITY;
    a.values_mut()[n / 2] = f32::NEG_INFINITY;
    let mut x = generate::random_vector(500, rng.next_u64());
    x[17] = f32::INFINITY;
    x[400] = f32::NAN;
    for (mode, ctx) in common::contexts() {
        for algorithm in SpmvAlgorithm::ALL {
            let matrix = GpuMatrix::from_csr(ctx, &a, format_for(algorithm)).unwrap();
            let plan = Spmv::new(ctx, &matrix, algorithm).unwrap();
            let mut y = ctx.upload(&vec![0.5f32; 600]).unwrap();
            plan.run(2.0, &ctx.upload(&x).unwrap(), 1.0, &mut y).unwrap();
            let got = y.read_blocking(ctx).unwrap();
            let want = spmv_csr(2.0, &a, &x, 1.0, &vec![0.5f32; 600]);
            assert!(want.iter().any(|v| v.is_nan()) && want.iter().any(|v| v.is_infinite()));
            let error = relative_error(&got, &want);
            assert!(error <= 1e-5, "seed {seed} {mode} {}: {error:e}", algorithm.name());
        }
    }
}
