//! Batches encoded on worker threads and submitted in order, for a host loop that records
//! many small dispatches (the solvers).
//!
//! wgpu 30 records a pass as a list and encodes it in `CommandEncoder::finish` (validation,
//! usage tracking, barriers, the driver's command recording): ~4 µs a dispatch on the H100's
//! host, against ~0.5 µs to record it. A solve of a small system spends most of its wall
//! clock there while the GPU waits (benches/NOTES.md, session 39). Encoders finish
//! independently, so the recording thread hands each batch to a worker (`Batch::finish` on
//! another thread; error scopes are per thread) and submits the finished ones in the order
//! they were recorded.

use std::collections::BTreeMap;
use std::sync::mpsc;
use std::sync::Mutex;

use super::{Batch, Recorded};
use crate::context::Context;
use crate::{Error, Result};

/// Worker threads at most: on the H100's host four finished a CG iteration's batch in 7.6 µs
/// an iteration against 20.7 on one, eight in 5.6.
const MAX_WORKERS: usize = 4;

/// The batch being recorded, and those handed to the workers until they are submitted.
pub(crate) struct Pipeline<'c> {
    ctx: &'c Context,
    current: Batch<'c>,
    /// Whether anything was asked of `current` (a batch never used is not submitted).
    used: bool,
    /// `None` without workers: a cut batch is finished and submitted on this thread.
    jobs: Option<mpsc::Sender<(usize, Batch<'c>)>>,
    results: Option<mpsc::Receiver<(usize, Result<Recorded<'c>>)>>,
    /// Batches handed over, and how many of them (the first ones) are submitted.
    sent: usize,
    submitted: usize,
    /// Finished and not yet submitted: waiting for an earlier one.
    finished: BTreeMap<usize, Recorded<'c>>,
}

impl<'c> Pipeline<'c> {
    /// Runs `f` with a pipeline whose workers (with `encoders`, where the host has cores to
    /// spare) live as long as the call; without, batches are finished and submitted as they
    /// are cut, on this thread. `f` ends with [`Pipeline::submit_all`]: what it leaves
    /// recorded, or handed over and not yet submitted (it returned early, with an error), is
    /// dropped — discarded, as a dropped batch is (batches already submitted run).
    pub(crate) fn run<R>(
        ctx: &'c Context,
        encoders: bool,
        f: impl FnOnce(&mut Pipeline<'c>) -> Result<R>,
    ) -> Result<R> {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let workers = if encoders { cores.saturating_sub(1).min(MAX_WORKERS) } else { 0 };
        Self::run_with(ctx, workers, f)
    }

    /// `run` with this many encoder threads (0: none).
    fn run_with<R>(ctx: &'c Context, workers: usize, f: impl FnOnce(&mut Pipeline<'c>) -> Result<R>) -> Result<R> {
        if workers == 0 {
            return f(&mut Pipeline::new(ctx, None, None));
        }
        let (job_sender, job_receiver) = mpsc::channel::<(usize, Batch<'c>)>();
        let job_receiver = Mutex::new(job_receiver);
        let (result_sender, result_receiver) = mpsc::channel();
        std::thread::scope(|scope| {
            let mut started = 0;
            for _ in 0..workers {
                let (jobs, results) = (&job_receiver, result_sender.clone());
                let worker = move || loop {
                    // The lock is held only while taking a job (dropped with the statement).
                    let Ok((index, batch)) = jobs.lock().unwrap_or_else(|p| p.into_inner()).recv() else { break };
                    // A panic inside wgpu becomes this batch's error: the recording thread,
                    // waiting for it in order, must not wait forever.
                    let finished = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| batch.finish()))
                        .unwrap_or_else(|_| Err(Error::Validation("encoding a batch panicked".into())));
                    if results.send((index, finished)).is_err() {
                        break;
                    }
                };
                let builder = std::thread::Builder::new().name("wgsparse-encoder".into());
                started += usize::from(builder.spawn_scoped(scope, worker).is_ok());
            }
            drop(result_sender);
            // A pipeline owns the job channel's sender and is dropped before the scope ends,
            // so the workers see the channel close and return.
            let mut pipeline = match started {
                0 => Pipeline::new(ctx, None, None),
                _ => Pipeline::new(ctx, Some(job_sender), Some(result_receiver)),
            };
            f(&mut pipeline)
        })
    }

    fn new(
        ctx: &'c Context,
        jobs: Option<mpsc::Sender<(usize, Batch<'c>)>>,
        results: Option<mpsc::Receiver<(usize, Result<Recorded<'c>>)>>,
    ) -> Self {
        Pipeline {
            ctx,
            current: ctx.batch(),
            used: false,
            jobs,
            results,
            sent: 0,
            submitted: 0,
            finished: BTreeMap::new(),
        }
    }

    /// The batch being recorded.
    pub(crate) fn batch(&mut self) -> &mut Batch<'c> {
        self.used = true;
        &mut self.current
    }

    /// Ends the batch being recorded (a new one takes its place): it is handed to a worker,
    /// or without workers finished and submitted here. Read tickets of a cut batch can be
    /// waited on once [`Pipeline::submit_all`] has returned.
    pub(crate) fn cut(&mut self) -> Result<()> {
        if !std::mem::take(&mut self.used) {
            return Ok(());
        }
        let batch = std::mem::replace(&mut self.current, self.ctx.batch());
        let Some(jobs) = &self.jobs else {
            self.sent += 1;
            self.submitted += 1;
            return batch.submit();
        };
        if jobs.send((self.sent, batch)).is_err() {
            return Err(Error::Validation("the encoder threads stopped".into()));
        }
        self.sent += 1;
        self.submit_finished(false)
    }

    /// Cuts the batch being recorded and submits every batch handed over, in order, waiting
    /// for the workers to finish them.
    pub(crate) fn submit_all(&mut self) -> Result<()> {
        self.cut()?;
        self.submit_finished(true)
    }

    /// Submits the finished batches that are next in order; with `wait`, until every batch
    /// handed over is submitted.
    fn submit_finished(&mut self, wait: bool) -> Result<()> {
        loop {
            while let Some(recorded) = self.finished.remove(&self.submitted) {
                self.submitted += 1;
                recorded.submit()?;
            }
            if self.submitted == self.sent {
                return Ok(());
            }
            let Some(results) = &self.results else { return Ok(()) };
            let next = if wait { results.recv().ok() } else { results.try_recv().ok() };
            match next {
                Some((index, recorded)) => {
                    self.finished.insert(index, recorded?);
                }
                None if wait => return Err(Error::Validation("the encoder threads stopped".into())),
                None => return Ok(()),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::blas1;
    use crate::ContextOptions;

    /// Batches cut one step each, finished on 4 or 1 encoder threads or on this one, run in the
    /// order they were recorded (`y ← i·x + 2·y` for i = 0, 1, …: exact in f32, and any
    /// other order gives another y); a read recorded in the last batch can be waited on
    /// after `submit_all`; an early return drops what was not submitted, and ends.
    #[test]
    fn cut_batches_run_in_recording_order() {
        let ctx = Context::new_blocking(ContextOptions::from_env().unwrap()).unwrap();
        let n = 1000;
        let x = ctx.upload(&vec![1.0f32; n]).unwrap();
        for workers in [4, 1, 0] {
            for steps in [1usize, 2, 7, 20] {
                let mut y = ctx.zeros::<f32>(n).unwrap();
                let want = (0..steps).fold(0.0f32, |y, i| i as f32 + 2.0 * y);
                let got = Pipeline::run_with(&ctx, workers, |pipeline| {
                    for i in 0..steps {
                        blas1::axpby(&mut pipeline.batch().recorder(), i as f32, &x, 2.0, &mut y)?;
                        if i + 1 < steps {
                            pipeline.cut()?;
                        }
                    }
                    let ticket = pipeline.batch().read_back(&y)?;
                    pipeline.submit_all()?;
                    ticket.wait()
                })
                .unwrap();
                assert!(got.iter().all(|&v| v == want), "{workers} workers, {steps} steps: {} vs {want}", got[0]);
            }
            let stopped: Result<()> = Pipeline::run_with(&ctx, workers, |pipeline| {
                let mut y = ctx.zeros::<f32>(n)?;
                blas1::axpby(&mut pipeline.batch().recorder(), 1.0, &x, 2.0, &mut y)?;
                pipeline.cut()?;
                Err(Error::InvalidArgument("stopped early".into()))
            });
            assert!(matches!(stopped, Err(Error::InvalidArgument(_))), "{stopped:?}");
        }
    }
}
