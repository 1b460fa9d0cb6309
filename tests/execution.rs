//! Running many ops: recorded batches (different α/β per run, nothing allocated per run),
//! readbacks in a batch and pooled, gated sections that a device flag turns into no-ops, the
//! profiler, the caller's own device and pass, and readbacks that never block the thread.
//! Tests that open devices of their own run alone (`common::alone`: NVIDIA's driver).

mod common;

use std::future::Future;
use std::sync::Arc;
use std::task::{Context as TaskContext, Poll, Wake, Waker};
use std::time::{Duration, Instant};

use wgsparse::generate;
use wgsparse::ops::{blas1, Spmv, SpmvAlgorithm};
use wgsparse::record::{Profiler, Recorder};
use wgsparse::reference::{blas1 as twin, relative_error, spmv_csr};
use wgsparse::{Context, ContextOptions, Conversion, Error, GpuSparse};

/// A thousand SpMVs in one batch, each with its own α and β, chained through y: the batch
/// gives what the twin gives applied a thousand times, and after the first run, recording
/// allocates no pipeline and no bind group. On contexts of its own: the shared ones also
/// compile pipelines for the tests running beside this one, which made the counts move.
#[test]
fn a_batch_records_many_runs_with_their_own_scalars_and_allocates_nothing_per_run() {
    let _alone = common::alone();
    let seed = common::seed("batch");
    for (mode, ctx) in &common::fresh_contexts() {
        let a = generate::random(300, 300, 0.01, seed).map_values(|v| v * 0.5);
        let x = generate::random_vector(300, seed + 1);
        let y0 = generate::random_vector(300, seed + 2);
        let matrix = GpuSparse::from_csr(ctx, &a, Conversion::Csr).unwrap();
        let plan = Spmv::new(ctx, &matrix, SpmvAlgorithm::CsrSplit).unwrap();
        let (x_gpu, mut y) = (ctx.upload(&x).unwrap(), ctx.upload(&y0).unwrap());
        let coefficients = |k: usize| (0.25 + (k % 7) as f32 * 0.125, if k.is_multiple_of(3) { 0.0 } else { 0.5 });
        // The first run makes the pipelines and bind groups…
        plan.run(1.0, &x_gpu, 0.5, &mut y).unwrap();
        let (pipelines, groups) = (ctx.pipelines_compiled(), ctx.bind_groups_cached());
        // …and a thousand more make none.
        y.write(&y0).unwrap();
        let mut batch = ctx.batch();
        for k in 0..1000 {
            let (alpha, beta) = coefficients(k);
            plan.record(&mut batch.recorder(), alpha, &x_gpu, beta, &mut y).unwrap();
        }
        batch.submit().unwrap();
        assert_eq!((ctx.pipelines_compiled(), ctx.bind_groups_cached()), (pipelines, groups), "{mode}");
        let mut want: Vec<f64> = y0.iter().map(|&v| v as f64).collect();
        for k in 0..1000 {
            let (alpha, beta) = coefficients(k);
            // The twin in f64, rounded to f32 after each run as the GPU's y is.
            let prev: Vec<f32> = want.iter().map(|&v| v as f32).collect();
            want = spmv_csr(alpha as f64, &a, &x, beta as f64, &prev);
        }
        let error = relative_error(&y.read_blocking().unwrap(), &want);
        assert!(error <= 1e-4, "seed {seed} {mode}: {error:e}");
    }
}

/// A readback recorded in the batch arrives with it; staging buffers go back to a pool and
/// are reused. On a context of its own: the shared one's pool also serves the tests running
/// beside this one, which made the count below move (a CI failure, 2026-11-24).
#[test]
fn readbacks_ride_in_the_batch_and_staging_is_pooled() {
    let _alone = common::alone();
    let own = Context::new_blocking(ContextOptions::from_env().unwrap()).unwrap();
    let ctx = &own;
    let x = ctx.upload(&(0..1000).map(|i| i as f32).collect::<Vec<_>>()).unwrap();
    let mut y = ctx.zeros::<f32>(1000).unwrap();
    for _ in 0..5 {
        let mut batch = ctx.batch();
        blas1::axpby(&mut batch.recorder(), 2.0, &x, 0.0, &mut y).unwrap();
        let ticket = batch.read_back(&y).unwrap();
        batch.submit().unwrap();
        let mut out = vec![0.0f32; 1000];
        ticket.wait_into(&mut out).unwrap();
        assert_eq!(out, (0..1000).map(|i| 2.0 * i as f32).collect::<Vec<_>>());
    }
    let pooled = ctx.readback_buffers_pooled();
    assert!(pooled >= 1);
    for _ in 0..5 {
        y.read_blocking().unwrap();
    }
    assert_eq!(ctx.readback_buffers_pooled(), pooled, "reads reuse the pooled staging buffers");
    // A ticket of a batch never submitted says so.
    let mut batch = ctx.batch();
    let ticket = batch.read_back(&y).unwrap();
    drop(batch);
    assert!(matches!(ticket.wait(), Err(Error::InvalidArgument(_))));
}

/// Dispatches after `Batch::gate` run only while the flag is zero when the gate is reached
/// on the GPU: a kernel of the batch sets it, and the rest of the section does nothing.
#[test]
fn a_device_flag_turns_the_rest_of_a_batch_into_no_ops() {
    let _beside = common::beside_others();
    for (mode, ctx) in common::contexts() {
        let x = ctx.upload(&vec![1.0f32; 700]).unwrap();
        let mut y = ctx.zeros::<f32>(700).unwrap();
        let flag = ctx.zeros::<u32>(1).unwrap();
        let one = ctx.upload(&[1u32]).unwrap();
        let mut flag_target = ctx.zeros::<u32>(1).unwrap();
        let mut batch = ctx.batch();
        batch.gate(&flag, 0).unwrap();
        blas1::axpy(&mut batch.recorder(), 1.0, &x, &mut y).unwrap(); // runs: flag is 0
        blas1::copy(&mut batch.recorder(), &one, &mut flag_target).unwrap(); // "converged"
        batch.gate(&flag_target, 0).unwrap();
        blas1::axpy(&mut batch.recorder(), 10.0, &x, &mut y).unwrap(); // skipped
        blas1::axpy(&mut batch.recorder(), 100.0, &x, &mut y).unwrap(); // skipped
        batch.ungate();
        blas1::axpy(&mut batch.recorder(), 1000.0, &x, &mut y).unwrap(); // runs
        batch.submit().unwrap();
        assert_eq!(y.read_blocking().unwrap(), vec![1001.0; 700], "{mode}");

        // A flag already set skips the whole section.
        let mut y = ctx.zeros::<f32>(700).unwrap();
        let mut batch = ctx.batch();
        batch.gate(&one, 0).unwrap();
        for _ in 0..3 {
            blas1::axpy(&mut batch.recorder(), 1.0, &x, &mut y).unwrap();
        }
        batch.submit().unwrap();
        assert_eq!(y.read_blocking().unwrap(), vec![0.0; 700], "{mode}");
    }
}

/// More gated dispatches than one chunk of arguments holds: the section continues, gated,
/// in the next chunk.
#[test]
fn long_gated_sections_span_chunks() {
    let _beside = common::beside_others();
    let ctx = common::context();
    let x = ctx.upload(&[1.0f32; 64]).unwrap();
    let mut y = ctx.zeros::<f32>(64).unwrap();
    let flag = ctx.zeros::<u32>(1).unwrap();
    let mut batch = ctx.batch();
    batch.gate(&flag, 0).unwrap();
    for _ in 0..5000 {
        blas1::axpy(&mut batch.recorder(), 1.0, &x, &mut y).unwrap();
    }
    batch.submit().unwrap();
    assert_eq!(y.read_blocking().unwrap(), vec![5000.0; 64]);
}

/// The profiler times sections of a batch with GPU timestamps.
#[test]
fn the_profiler_times_sections_of_a_batch() {
    let _beside = common::beside_others();
    let ctx = common::context();
    if !ctx.has_timestamps() {
        assert!(matches!(Profiler::new(ctx, 4), Err(Error::Unsupported(_))));
        return;
    }
    let a = generate::laplacian_2d(200);
    let plan =
        Spmv::new(ctx, &GpuSparse::from_csr(ctx, &a, Conversion::Csr).unwrap(), SpmvAlgorithm::CsrThread).unwrap();
    let x = ctx.upload(&vec![1.0f32; a.cols()]).unwrap();
    let mut y = ctx.zeros::<f32>(a.rows()).unwrap();
    let mut profiler = Profiler::new(ctx, 2).unwrap();
    let mut batch = ctx.batch();
    batch.timed(&mut profiler, "first", |rec| plan.record(rec, 1.0, &x, 0.0, &mut y)).unwrap();
    batch.timed(&mut profiler, "second", |rec| plan.record(rec, 1.0, &x, 0.0, &mut y)).unwrap();
    assert!(batch.timed(&mut profiler, "third", |_| Ok(())).is_err(), "capacity is enforced");
    batch.submit().unwrap();
    let times = profiler.read(ctx).unwrap();
    assert_eq!(times.iter().map(|t| t.0.as_str()).collect::<Vec<_>>(), ["first", "second"]);
    assert!(times.iter().all(|t| t.1 > 0.0 && t.1 < 10e6), "{times:?}");
}

/// A device the caller opened: wgsparse works on it, records into the caller's own pass,
/// and leaves the caller's error handler in place. The caller's instance leaves GL out, as
/// wgsparse's own do (`DEFAULT_BACKENDS`: NVIDIA's EGL torn down beside another thread's
/// device deadlocked in the driver).
#[test]
fn wgsparse_runs_on_the_callers_device_and_in_the_callers_pass() {
    let _alone = common::alone();
    let mut descriptor = wgpu::InstanceDescriptor::new_without_display_handle();
    descriptor.backends = wgsparse::context::DEFAULT_BACKENDS;
    let instance = wgpu::Instance::new(descriptor);
    let adapter = pollster::block_on(instance.request_adapter(&wgpu::RequestAdapterOptions::default())).unwrap();
    let (device, queue) = pollster::block_on(adapter.request_device(&wgpu::DeviceDescriptor {
        required_features: wgpu::Features::IMMEDIATES,
        required_limits: adapter.limits(),
        ..Default::default()
    }))
    .unwrap();
    let errors = Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let seen = errors.clone();
    device.on_uncaptured_error(Arc::new(move |e| seen.lock().unwrap().push(e.to_string())));
    let ctx = Context::from_wgpu(device.clone(), queue.clone(), true).unwrap();

    let a = generate::random(500, 400, 0.02, 7);
    let plan = Spmv::new(&ctx, &GpuSparse::from_csr(&ctx, &a, Conversion::Csr).unwrap(), SpmvAlgorithm::Auto).unwrap();
    let x = generate::random_vector(400, 8);
    let x_gpu = ctx.upload(&x).unwrap();
    let mut y = ctx.zeros::<f32>(500).unwrap();
    let mut encoder = device.create_command_encoder(&Default::default());
    {
        let mut pass = encoder.begin_compute_pass(&Default::default());
        let mut rec = Recorder::new(&ctx, &mut pass);
        plan.record(&mut rec, 1.0, &x_gpu, 0.0, &mut y).unwrap();
    }
    queue.submit([encoder.finish()]);
    let error = relative_error(&y.read_blocking().unwrap(), &spmv_csr(1.0, &a, &x, 0.0, &[]));
    assert!(error <= 1e-5, "{error:e}");

    // The caller's handler is still the one called for the caller's own mistakes.
    let bad = device.create_buffer(&wgpu::BufferDescriptor {
        label: None,
        size: 4,
        usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::STORAGE,
        mapped_at_creation: false,
    });
    drop(bad);
    device.poll(wgpu::PollType::Poll).ok();
    assert_eq!(errors.lock().unwrap().len(), 1, "the caller's uncaptured-error handler was replaced");

    // A device without IMMEDIATES is refused with a typed error.
    let (plain, plain_queue) = pollster::block_on(adapter.request_device(&Default::default())).unwrap();
    assert!(matches!(Context::from_wgpu(plain, plain_queue, true), Err(Error::RequestDevice(_))));
}

/// Plans, vectors and passes of one context given to another: a typed error, nothing
/// recorded, no wrong answer.
#[test]
fn operands_of_another_context_are_refused() {
    let _alone = common::alone();
    let ctx = common::context();
    let other = Context::new_blocking(ContextOptions::from_env().unwrap()).unwrap();
    let a = generate::random(50, 40, 0.1, 3);
    let plan =
        Spmv::new(ctx, &GpuSparse::from_csr(ctx, &a, Conversion::Csr).unwrap(), SpmvAlgorithm::CsrThread).unwrap();
    let x = ctx.upload(&[1.0f32; 40]).unwrap();
    let foreign_x = other.upload(&[1.0f32; 40]).unwrap();
    let mut y = ctx.upload(&[5.0f32; 50]).unwrap();
    let mut foreign_y = other.upload(&[5.0f32; 50]).unwrap();

    assert!(matches!(plan.run(1.0, &foreign_x, 0.0, &mut y), Err(Error::ContextMismatch(_))));
    assert!(matches!(plan.run(1.0, &x, 0.0, &mut foreign_y), Err(Error::ContextMismatch(_))));
    let alpha = other.scalar(1.0f32).unwrap();
    assert!(matches!(plan.run(&alpha, &x, 0.0, &mut y), Err(Error::ContextMismatch(_))));
    // The plan recorded into a pass said to belong to the other context.
    let mut batch = other.batch();
    let err = plan.record(&mut batch.recorder(), 1.0, &x, 0.0, &mut y).unwrap_err();
    assert!(matches!(err, Error::ContextMismatch(_)), "{err}");
    // A matrix of the other context.
    let foreign_matrix = GpuSparse::from_csr(&other, &a, Conversion::Csr).unwrap();
    assert!(matches!(Spmv::new(ctx, &foreign_matrix, SpmvAlgorithm::CsrThread), Err(Error::ContextMismatch(_))));
    assert_eq!(y.read_blocking().unwrap(), vec![5.0; 50]);
    assert_eq!(foreign_y.read_blocking().unwrap(), vec![5.0; 50]);
}

struct Flag(std::sync::atomic::AtomicBool);
impl Wake for Flag {
    fn wake(self: Arc<Self>) {
        self.0.store(true, std::sync::atomic::Ordering::SeqCst);
    }
}

/// Awaiting a readback parks the task, not the thread: the first poll returns at once while
/// the GPU is still busy, and the context's poller thread wakes the task when the data is
/// there (nobody else polls the device here).
#[test]
fn async_readback_never_blocks_the_thread() {
    let _beside = common::beside_others();
    let ctx = common::context();
    let a = generate::laplacian_2d(400);
    let plan =
        Spmv::new(ctx, &GpuSparse::from_csr(ctx, &a, Conversion::Csr).unwrap(), SpmvAlgorithm::CsrThread).unwrap();
    let x = ctx.upload(&vec![1.0f32; a.cols()]).unwrap();
    let mut y = ctx.zeros::<f32>(a.rows()).unwrap();
    let mut batch = ctx.batch();
    for _ in 0..100 {
        plan.record(&mut batch.recorder(), 1.0, &x, 0.0, &mut y).unwrap();
    }
    let submitted = Instant::now();
    batch.submit().unwrap();
    let flag = Arc::new(Flag(false.into()));
    let waker = Waker::from(flag.clone());
    let mut task = TaskContext::from_waker(&waker);
    let mut read = Box::pin(y.read());
    let first = Instant::now();
    let polled = read.as_mut().poll(&mut task);
    let first_poll = first.elapsed();
    let result = match polled {
        Poll::Ready(r) => r,
        Poll::Pending => {
            assert!(first_poll < Duration::from_millis(200), "the first poll blocked for {first_poll:?}");
            // Wait for the wake-up without polling the device ourselves.
            let deadline = Instant::now() + Duration::from_secs(60);
            while !flag.0.load(std::sync::atomic::Ordering::SeqCst) {
                assert!(Instant::now() < deadline, "never woken");
                std::thread::sleep(Duration::from_millis(1));
            }
            match read.as_mut().poll(&mut task) {
                Poll::Ready(r) => r,
                Poll::Pending => panic!("woken but not ready"),
            }
        }
    };
    eprintln!("GPU work took {:?}; first poll {first_poll:?}", submitted.elapsed());
    let want = twin::scal(
        1.0,
        &spmv_csr(1.0, &a, &vec![1.0f32; a.cols()], 0.0, &[]).iter().map(|&v| v as f32).collect::<Vec<_>>(),
    );
    assert!(relative_error(&result.unwrap(), &want) <= 1e-6);
}

/// A wait polls the device for `wait_spin` and then blocks: whichever way it ends, it
/// returns only once the work is done (a callback the queue runs at completion has run) and
/// reads return the work's result. Spins of zero (block at once), 1 µs (spent before the
/// work is: poll, then block) and 60 s (poll to the end), on lavapipe too, where the default
/// is not to spin.
#[test]
fn waits_poll_then_block_and_return_only_once_the_work_is_done() {
    let _alone = common::alone();
    let seed = common::seed("wait spin");
    let a = generate::random(2000, 2000, 0.01, seed);
    let x = generate::random_vector(2000, seed + 1);
    let want = spmv_csr(1.0, &a, &x, 0.0, &[]);
    for spin in [Duration::ZERO, Duration::from_micros(1), Duration::from_secs(60)] {
        let options = ContextOptions { wait_spin: Some(spin), ..ContextOptions::from_env().unwrap() };
        let ctx = Context::new_blocking(options).unwrap();
        let plan = Spmv::new(&ctx, &GpuSparse::from_csr(&ctx, &a, Conversion::Csr).unwrap(), SpmvAlgorithm::CsrThread)
            .unwrap();
        let x_gpu = ctx.upload(&x).unwrap();
        let mut y = ctx.upload(&vec![f32::NAN; a.rows()]).unwrap();
        for _ in 0..3 {
            let mut batch = ctx.batch();
            for _ in 0..50 {
                plan.record(&mut batch.recorder(), 1.0, &x_gpu, 0.0, &mut y).unwrap();
            }
            batch.submit().unwrap();
            let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
            let flag = done.clone();
            ctx.queue().on_submitted_work_done(move || flag.store(true, std::sync::atomic::Ordering::SeqCst));
            ctx.synchronize().unwrap();
            assert!(done.load(std::sync::atomic::Ordering::SeqCst), "spin {spin:?}: synchronize returned early");
            let error = relative_error(&y.read_blocking().unwrap(), &want);
            assert!(error <= 1e-5, "spin {spin:?}: {error:e}");
            y.write(&vec![f32::NAN; a.rows()]).unwrap();
        }
    }
}

#[test]
fn plans_and_device_objects_are_send_and_sync() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Context>();
    assert_send_sync::<Spmv<f32>>();
    assert_send_sync::<Spmv<f64>>();
    assert_send_sync::<GpuSparse<f32>>();
    assert_send_sync::<wgsparse::GpuVec<f64>>();
    assert_send_sync::<wgsparse::GpuScalar<f32>>();
    assert_send_sync::<wgsparse::GpuDense<f32>>();
    assert_send_sync::<blas1::Reduction<f64>>();
    assert_send_sync::<Profiler>();
}

/// Dropped arrays of 8 MiB and more are kept and handed to the next allocation of their
/// size, cleared; never while a batch (open, or finished and not submitted) that was open
/// when one was dropped may still use it; the oldest make room at the cap; never one whose
/// wgpu handle a caller took, nor any once ops were recorded into a caller's pass (work
/// whose submission wgsparse cannot see); uploads (mapped at creation) are not kept.
#[test]
fn large_arrays_are_reused_cleared_and_never_under_a_pending_batch() {
    let _alone = common::alone();
    let n = 16 << 20; // 64 MiB of f32
    let bytes = (n * 4) as u64;
    let ctx = Context::new_blocking(ContextOptions::from_env().unwrap()).unwrap();
    drop(ctx.upload(&vec![1.0f32; n]).unwrap());
    assert_eq!(ctx.pooled_buffer_bytes(), 0, "an upload is not kept");
    let poisoned = ctx.zeros::<f32>(n).unwrap();
    poisoned.write(&vec![7.0f32; n]).unwrap();
    drop(poisoned);
    assert_eq!(ctx.pooled_buffer_bytes(), bytes, "dropped, kept");
    let reused = ctx.zeros::<f32>(n).unwrap();
    assert_eq!(ctx.pooled_buffer_bytes(), 0, "taken again");
    assert!(reused.read_blocking().unwrap().iter().all(|&v| v == 0.0), "cleared");
    drop(reused);
    // Arrays under 8 MiB are not kept.
    drop(ctx.zeros::<f32>(n / 8 - 1024).unwrap());
    assert_eq!(ctx.pooled_buffer_bytes(), bytes);
    assert_eq!(ctx.release_pooled_buffers(), bytes);
    assert_eq!(ctx.pooled_buffer_bytes(), 0);

    // A batch records a copy out of `source`, which is then dropped: until the batch is
    // submitted, a new array does not get its buffer (the clear would reach the copy).
    for finish_first in [false, true] {
        let source = ctx.zeros::<f32>(n).unwrap();
        source.write(&vec![1.0f32; n]).unwrap();
        let mut target = ctx.zeros::<f32>(n).unwrap();
        let mut batch = ctx.batch();
        blas1::copy(&mut batch.recorder(), &source, &mut target).unwrap();
        drop(source);
        let pending = if finish_first { Err(batch.finish().unwrap()) } else { Ok(batch) };
        let other = ctx.zeros::<f32>(n).unwrap();
        assert_eq!(ctx.pooled_buffer_bytes(), bytes, "finished first {finish_first}: kept, not handed out");
        match pending {
            Err(recorded) => recorded.submit().unwrap(),
            Ok(batch) => batch.submit().unwrap(),
        }
        assert!(target.read_blocking().unwrap().iter().all(|&v| v == 1.0), "finished first {finish_first}");
        let after = ctx.zeros::<f32>(n).unwrap();
        assert_eq!(ctx.pooled_buffer_bytes(), 0, "finished first {finish_first}: submitted, reused");
        drop((other, after, target));
        ctx.release_pooled_buffers();
    }

    // A handle taken by the caller: not kept.
    let taken = ctx.zeros::<f32>(n).unwrap();
    let _handle = taken.buffer().clone();
    drop(taken);
    assert_eq!(ctx.pooled_buffer_bytes(), 0, "the caller holds the handle");

    // The cap: none kept at 0; at 100 MiB a second array evicts the first.
    let none =
        Context::new_blocking(ContextOptions { buffer_pool_bytes: 0, ..ContextOptions::from_env().unwrap() }).unwrap();
    drop(none.zeros::<f32>(n).unwrap());
    assert_eq!(none.pooled_buffer_bytes(), 0);
    let small =
        Context::new_blocking(ContextOptions { buffer_pool_bytes: 100 << 20, ..ContextOptions::from_env().unwrap() })
            .unwrap();
    drop(small.zeros::<f32>(n).unwrap());
    drop(small.zeros::<f32>(n + n / 8).unwrap());
    assert_eq!(small.pooled_buffer_bytes(), bytes + bytes / 8, "the newer kept, the older freed");

    // Recorded into a caller's pass: nothing kept from then on.
    let x = ctx.upload(&[1.0f32; 4]).unwrap();
    let mut y = ctx.zeros::<f32>(4).unwrap();
    let mut encoder = ctx.device().create_command_encoder(&Default::default());
    {
        let mut pass = encoder.begin_compute_pass(&Default::default());
        blas1::copy(&mut Recorder::new(&ctx, &mut pass), &x, &mut y).unwrap();
    }
    drop(ctx.zeros::<f32>(n).unwrap());
    assert_eq!(ctx.pooled_buffer_bytes(), 0, "a caller's pass: nothing kept");
    ctx.queue().submit([encoder.finish()]);
}
