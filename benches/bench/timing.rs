//! How rows are timed: GPU time from the library's profiler (timestamp queries written at
//! the start and end of each run's compute pass; wall clock per submission where the adapter
//! has no timestamps), end-to-end time (run and result on the host), the batched time (runs
//! recorded back to back in one batch), the rotation of operand copies that keeps repeated
//! runs out of cache, and the device copy bandwidth the GB/s are compared with.

use std::time::{Duration, Instant};

use wgsparse::ops::blas1;
use wgsparse::record::{Profiler, Recorder};
use wgsparse::{Context, GpuVec};

use crate::ops::{OneShot, OpError, Prepared, SolveFigures};

/// Working sets below this are rotated among copies: a few hundred MiB is beyond the last
/// cache level of current GPUs (50 MiB L2 on H100, 128 MiB Infinity Cache on RDNA).
pub const ROTATION_BYTES: u64 = 256 << 20;
/// At most this many copies, so that small matrices do not multiply device memory.
pub const MAX_COPIES: usize = 8;
/// The copy-bandwidth buffers are at most this large.
const COPY_BYTES: u64 = 512 << 20;
/// Warm-up keeps the GPU busy at least [`Warmup::time`], unless this many runs have
/// gone first.
pub const MAX_WARMUP: usize = 1 << 16;
/// Runs per submission are sized to take about this long...
const BATCH: Duration = Duration::from_millis(200);
/// ...and are at most this many.
const MAX_BATCH: usize = 64;
/// A run slower than this (a pathological kernel: float atomics on one hot row take
/// seconds) makes its row "slow"...
pub const SLOW_RUN: Duration = Duration::from_millis(100);
/// ...and such a row gets as many timed runs as fit this budget (at least one), and one
/// end-to-end run.
pub const SLOW_ROW_BUDGET: Duration = Duration::from_secs(5);
/// A batch of [`Settings::batched_runs`] runs is shortened to keep the GPU busy about this long.
pub const BATCHED_BUDGET: Duration = Duration::from_secs(2);
/// Batches whose CPU time is measured (the median is reported).
pub const CPU_BATCHES: usize = 5;

/// Repetition counts.
#[derive(Debug, Clone, Copy)]
pub struct Settings {
    /// Untimed runs before the timed ones (pipelines warm, clocks up).
    pub warmup: Warmup,
    /// Timed runs; the median is reported.
    pub runs: usize,
    /// Timed end-to-end runs (run and result on the host).
    pub e2e_runs: usize,
    /// Runs recorded in one batch for the batched time.
    pub batched_runs: usize,
}

impl Settings {
    /// Full counts, or few for `--quick` smoke tests.
    pub fn new(quick: bool) -> Self {
        if quick {
            let warmup = Warmup { runs: 1, time: Duration::from_millis(20) };
            Settings { warmup, runs: 5, e2e_runs: 2, batched_runs: 20 }
        } else {
            let warmup = Warmup { runs: 3, time: Duration::from_millis(600) };
            Settings { warmup, runs: 20, e2e_runs: 5, batched_runs: 1000 }
        }
    }
}

/// Untimed runs before the timed ones: at least `runs`, and back to back for `time`.
#[derive(Debug, Clone, Copy)]
pub struct Warmup {
    pub runs: usize,
    /// After 4 s or more without work, the H100's Vulkan driver runs the next ~0.4 s at
    /// about 55% of its memory bandwidth whatever the clocks say (benches/NOTES.md, "idle
    /// devices"); 600 ms of sustained work brings it back to the steady state.
    pub time: Duration,
}

impl Warmup {
    /// The warm-up of a row rotating among `copies` copies of its operands: at least one
    /// run per copy.
    pub fn for_copies(self, copies: usize) -> Warmup {
        Warmup { runs: self.runs.max(copies), ..self }
    }
}

/// Copies of a working set of `bytes` to rotate through: `min(8, ⌈256 MiB / bytes⌉)` below
/// [`ROTATION_BYTES`], else one.
pub fn rotation_copies(bytes: u64) -> usize {
    if bytes >= ROTATION_BYTES {
        return 1;
    }
    (ROTATION_BYTES.div_ceil(bytes.max(1)) as usize).min(MAX_COPIES)
}

/// The median and range of repeated times.
#[derive(Debug, Clone, Copy)]
pub struct Spread {
    /// Median.
    pub median: f64,
    /// Fastest.
    pub min: f64,
    /// Slowest.
    pub max: f64,
}

impl Spread {
    /// The spread of `values`; NaN everywhere when empty.
    pub fn of(mut values: Vec<f64>) -> Self {
        if values.is_empty() {
            return Spread { median: f64::NAN, min: f64::NAN, max: f64::NAN };
        }
        values.sort_by(f64::total_cmp);
        let mid = values.len() / 2;
        let median = if values.len() % 2 == 1 { values[mid] } else { (values[mid - 1] + values[mid]) / 2.0 };
        Spread { median, min: values[0], max: values[values.len() - 1] }
    }
}

/// CPU time per run of a batch, µs.
#[derive(Debug, Clone, Copy)]
pub struct CpuTimes {
    /// Recording the runs and finishing the command buffer.
    pub record: f64,
    /// Submitting it.
    pub submit: f64,
}

/// What one row measured.
#[derive(Debug, Clone)]
pub struct Measurement {
    /// GPU time of one run, µs.
    pub gpu: Spread,
    /// Timed runs (fewer than [`Settings::runs`] for a slow op).
    pub runs: usize,
    /// Median end-to-end time, µs: from recording the run to its result in host memory (the
    /// operands already on the device).
    pub e2e_us: f64,
    /// GPU time per run of [`Settings::batched_runs`] runs recorded in one batch, µs.
    pub batched_us: Option<f64>,
    /// CPU time per run to record the batch (the ops' recording and wgpu's encoding of the
    /// command buffer), and to submit it, µs.
    pub cpu: Option<CpuTimes>,
    /// Largest relative error over the end-to-end runs (every copy at least once).
    pub max_rel_err: f64,
    /// Copies the timed runs rotated through.
    pub copies: usize,
    /// For ops with a one-shot form: its median wall clock, µs, and what the last one reported.
    pub one_shot: Option<(f64, OneShot)>,
    /// For the solvers: what the last one-shot solve did.
    pub solve: Option<Box<SolveFigures>>,
}

/// Runs the whole protocol on a prepared op: add rotation copies, time on the GPU, then time
/// end to end while verifying every copy against the CPU twin.
pub fn measure(
    ctx: &Context,
    clock: &Clock,
    settings: &Settings,
    op: &mut dyn Prepared,
) -> Result<Measurement, OpError> {
    let wanted = rotation_copies(op.working_set_bytes());
    while op.copies() < wanted {
        // Out of memory for another copy is no reason to drop the row: rotate fewer.
        if let Err(e) = op.add_copy() {
            if e.refused {
                break;
            }
            return Err(e);
        }
    }
    let copies = op.copies();
    let timed = clock
        .time_runs(ctx, settings.warmup.for_copies(copies), settings.runs, |rec, run| op.record(rec, run % copies))?;
    // End-to-end runs go round the copies, each output poisoned first and checked after, so
    // that every copy is verified; a slow op goes once.
    let e2e_runs = if timed.runs < settings.runs { 1 } else { settings.e2e_runs.max(copies) };
    let mut e2e = Vec::with_capacity(e2e_runs);
    let mut max_rel_err = 0f64;
    for run in 0..e2e_runs {
        let copy = run % copies;
        op.poison(copy)?;
        e2e.push(op.run_and_read(copy)?.as_secs_f64() * 1e6);
        // `max` would drop a NaN; an error that is not a number is the worst error.
        let err = op.check();
        max_rel_err = if err.is_nan() { f64::INFINITY } else { max_rel_err.max(err) };
    }
    // The batched time: skipped for slow ops; fewer runs where a thousand would keep the GPU
    // busy past BATCHED_BUDGET.
    let gpu = Spread::of(timed.times_us);
    let (batched_us, cpu) = match timed.runs == settings.runs {
        true => {
            let fit = (BATCHED_BUDGET.as_secs_f64() * 1e6 / gpu.median.max(1e-3)) as usize;
            let count = settings.batched_runs.min(fit.max(10));
            clock.time_batch(ctx, count, |rec, copy| op.record(rec, copy), copies)?
        }
        false => (None, None),
    };
    let (one_shot, one_shot_err) = time_one_shot(op, if timed.runs < settings.runs { 1 } else { settings.e2e_runs })?;
    max_rel_err = if one_shot_err.is_nan() { f64::INFINITY } else { max_rel_err.max(one_shot_err) };
    let e2e_us = Spread::of(e2e).median;
    let solve = op.solve_figures().map(Box::new);
    Ok(Measurement { gpu, runs: timed.runs, e2e_us, batched_us, cpu, max_rel_err, copies, one_shot, solve })
}

/// The median of `runs` one-shot runs (none for ops without one), with the report of the
/// last; relaunches are the most any run needed. The runs follow each other with no host work
/// between them, as the peer's timed calls do (`wall_us` in peer_cusparse.py): a GPU left
/// idle for 2–20 ms made a 165 µs bitmap sum take 250–530 µs on the H200 (benches/NOTES.md,
/// session 46). The last run's output is then checked as the end-to-end runs are (ops whose
/// one-shot keeps its output, such as the solvers, are checked on it); every run computes
/// the same thing from the same operands.
fn time_one_shot(op: &mut dyn Prepared, runs: usize) -> Result<(Option<(f64, OneShot)>, f64), OpError> {
    let mut times = Vec::with_capacity(runs);
    let mut last: Option<OneShot> = None;
    for _ in 0..runs.max(1) {
        let Some(shot) = op.one_shot()? else { return Ok((None, 0.0)) };
        times.push(shot.time.as_secs_f64() * 1e6);
        let relaunches = last.map_or(0, |l| l.relaunches).max(shot.relaunches);
        last = Some(OneShot { relaunches, ..shot });
    }
    let err = op.check();
    let worst = if err.is_nan() { f64::INFINITY } else { err };
    Ok((last.map(|shot| (Spread::of(times).median, shot)), worst))
}

/// Device copy bandwidth: (bytes read + bytes written) / time of the library's 16-byte copy
/// kernel (`blas1::copy`), median of timed runs, on buffers of min(512 MiB, half the binding
/// and buffer limits).
pub fn copy_bandwidth(ctx: &Context, clock: &Clock, settings: &Settings) -> Result<(f64, u64), OpError> {
    let limits = ctx.limits();
    let bytes = COPY_BYTES.min(limits.max_storage_buffer_binding_size / 2).min(limits.max_buffer_size / 2) & !15;
    let len = (bytes / 4) as usize;
    let src: GpuVec<u32> = ctx.zeros(len)?;
    let mut dst: GpuVec<u32> = ctx.zeros(len)?;
    let timed = clock.time_runs(ctx, settings.warmup, settings.runs, |rec, _| Ok(blas1::copy(rec, &src, &mut dst)?))?;
    let us = Spread::of(timed.times_us).median;
    Ok((2.0 * bytes as f64 / (us * 1e3), bytes))
}

/// Times runs with the library's profiler when the adapter has timestamps.
pub struct Clock {
    profiler: Option<std::cell::RefCell<Profiler>>,
}

/// Records one run `i` (warm-up included) of an op.
type Record<'a> = dyn FnMut(&mut Recorder<'_, '_>, usize) -> Result<(), OpError> + 'a;

impl Clock {
    /// A clock for up to `runs` timed passes per measurement.
    pub fn new(ctx: &Context, runs: usize) -> Self {
        let profiler = Profiler::new(ctx, runs).ok().map(std::cell::RefCell::new);
        Clock { profiler }
    }

    /// Whether GPU time comes from timestamp queries (else from the wall clock).
    pub fn uses_timestamps(&self) -> bool {
        self.profiler.is_some()
    }

    /// Times runs of an op; `record(rec, i)` records run `i` (warm-up included). wgpu
    /// validation errors are caught and returned as failures.
    ///
    /// The first run goes alone and tells how long a run takes. Warm-up then continues for
    /// `warmup.runs` runs and at least `warmup.time` of back-to-back work. Timed runs
    /// are submitted back to back in batches of about [`BATCH`], each run in its own compute
    /// pass between two timestamps of the profiler (`Batch::timed`); wgpu's barriers between
    /// passes keep runs from overlapping. Without timestamps, each run is its own submission,
    /// timed by the wall clock.
    ///
    /// A first run slower than [`SLOW_RUN`] (a pathological kernel) skips further warm-up; the
    /// row gets as many timed runs, one per submission, as fit [`SLOW_ROW_BUDGET`], and when
    /// only one fits, the first run is the sample. One row cannot hold the benchmark for
    /// minutes; [`Timed::runs`] says how many ran.
    pub fn time_runs(
        &self,
        ctx: &Context,
        warmup: Warmup,
        runs: usize,
        mut record: impl FnMut(&mut Recorder<'_, '_>, usize) -> Result<(), OpError>,
    ) -> Result<Timed, OpError> {
        let scope = ctx.device().push_error_scope(wgpu::ErrorFilter::Validation);
        let timed = self.run_batches(ctx, warmup, runs, &mut record);
        if let Some(e) = pollster::block_on(scope.pop()) {
            return Err(OpError::failed(format!("wgpu validation error: {e}")));
        }
        timed
    }

    /// The GPU time per run of `count` runs recorded back to back in one batch (one compute
    /// pass between two timestamps, runs rotating among the operand copies), and the CPU times
    /// per run to record such a batch and to submit it, µs. The CPU times are the median of
    /// [`CPU_BATCHES`] batches on one copy after a warm-up batch: the first batch pays the page
    /// faults of wgpu's newly grown command buffers, and rotating operands costs wgpu's tracker
    /// extra work that a plan re-applied to the same vectors (an iterative method) does not
    /// pay. `None` without timestamps.
    pub fn time_batch(
        &self,
        ctx: &Context,
        count: usize,
        mut record: impl FnMut(&mut Recorder<'_, '_>, usize) -> Result<(), OpError>,
        copies: usize,
    ) -> Result<(Option<f64>, Option<CpuTimes>), OpError> {
        let Some(profiler) = &self.profiler else { return Ok((None, None)) };
        let mut profiler = profiler.borrow_mut();
        profiler.reset();
        let mut batch = ctx.batch();
        let mut failure = None;
        batch.timed(&mut profiler, "batched", |rec| {
            failure = (0..count).try_for_each(|i| record(rec, i % copies)).err();
            Ok(())
        })?;
        if let Some(e) = failure {
            return Err(e);
        }
        batch.submit()?;
        ctx.synchronize()?;
        let gpu_us = profiler.read(ctx)?[0].1 / count as f64;
        // CPU: a warm-up batch, then the median of CPU_BATCHES; only the last is submitted.
        let mut records = Vec::with_capacity(CPU_BATCHES);
        let mut submit = 0.0;
        for round in 0..=CPU_BATCHES {
            let mut batch = ctx.batch();
            let start = Instant::now();
            (0..count).try_for_each(|_| record(&mut batch.recorder(), 0))?;
            let recorded = batch.finish()?;
            let took = start.elapsed().as_secs_f64() * 1e6 / count as f64;
            if round > 0 {
                records.push(took);
            }
            if round == CPU_BATCHES {
                let start = Instant::now();
                recorded.submit()?;
                submit = start.elapsed().as_secs_f64() * 1e6 / count as f64;
                ctx.synchronize()?;
            }
        }
        let cpu = Some(CpuTimes { record: Spread::of(records).median, submit });
        Ok((Some(gpu_us), cpu))
    }

    fn run_batches(
        &self,
        ctx: &Context,
        warmup: Warmup,
        runs: usize,
        record: &mut Record<'_>,
    ) -> Result<Timed, OpError> {
        let runs = runs.min(self.profiler.as_ref().map_or(runs, |p| p.borrow().capacity()));
        if let Some(p) = &self.profiler {
            p.borrow_mut().reset();
        }
        // The first run goes alone, timed, and tells how long a run takes.
        let mut one_run = self.submit(ctx, 0..1, true, record)?;
        let mut next = 1;
        if one_run > SLOW_RUN && one_run < SLOW_ROW_BUDGET {
            // The first run on a new pipeline may carry the driver's lazy work: a second decides.
            one_run = self.submit(ctx, 1..2, true, record)?;
            next = 2;
        }
        if let Some(p) = &self.profiler {
            p.borrow_mut().reset();
        }
        let slow = one_run > SLOW_RUN;
        let (runs, batch) = if slow {
            let runs = budget_runs(one_run).clamp(1, runs);
            if runs == 1 {
                // Only one run fits the budget: the one just made is the sample.
                return Ok(Timed { times_us: vec![one_run.as_secs_f64() * 1e6], runs: 1 });
            }
            (runs, 1)
        } else {
            let batch = match &self.profiler {
                Some(_) => {
                    (BATCH.as_secs_f64() / one_run.as_secs_f64().max(1e-7)).clamp(1.0, MAX_BATCH as f64) as usize
                }
                None => 1,
            };
            (runs, batch)
        };
        let warming = Instant::now();
        while !slow && (next < warmup.runs || (warming.elapsed() < warmup.time && next < MAX_WARMUP)) {
            self.submit(ctx, next..next + batch, false, record)?;
            next += batch;
        }
        let mut wall = Vec::with_capacity(runs);
        for slot in (0..runs).step_by(batch) {
            let count = batch.min(runs - slot);
            let took = self.submit(ctx, next..next + count, true, record)?;
            wall.push(took.as_secs_f64() * 1e6);
            next += count;
        }
        let times_us = match &self.profiler {
            Some(p) => p.borrow().read(ctx)?.into_iter().map(|(_, us)| us).collect(),
            None => wall,
        };
        Ok(Timed { times_us, runs })
    }

    /// Records runs `indices` into one batch, each in its own timed pass when `timed` and the
    /// adapter has timestamps; submits and waits. Returns the wall time.
    fn submit(
        &self,
        ctx: &Context,
        indices: std::ops::Range<usize>,
        timed: bool,
        record: &mut Record<'_>,
    ) -> Result<Duration, OpError> {
        let mut batch = ctx.batch();
        for i in indices {
            match (&self.profiler, timed) {
                (Some(p), true) => {
                    let mut failure = None;
                    batch.timed(&mut p.borrow_mut(), "run", |rec| {
                        failure = record(rec, i).err();
                        Ok(())
                    })?;
                    if let Some(e) = failure {
                        return Err(e);
                    }
                }
                _ => record(&mut batch.recorder(), i)?,
            }
        }
        let start = Instant::now();
        batch.submit()?;
        ctx.synchronize()?;
        Ok(start.elapsed())
    }
}

/// Timed runs that fit [`SLOW_ROW_BUDGET`] when one takes `one_run`.
fn budget_runs(one_run: Duration) -> usize {
    (SLOW_ROW_BUDGET.as_secs_f64() / one_run.as_secs_f64()) as usize
}

/// What [`Clock::time_runs`] measured.
pub struct Timed {
    /// µs of each timed run.
    pub times_us: Vec<f64>,
    /// How many runs were timed (fewer than asked for slow runs).
    pub runs: usize,
}
