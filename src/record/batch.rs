//! A batch: one command encoder that any number of ops, copies and readbacks are recorded
//! into, submitted once.

use std::ops::Range;
use std::sync::{Arc, Mutex};

use bytemuck::Pod;

use super::gate::Gate;
use super::profiler::Profiler;
use super::Recorder;
use crate::context::Context;
use crate::element::Stored;
use crate::gpu::{stage, BatchMark, GpuVec, HostView, PendingRead, Staged};
use crate::kernel::PassState;
use crate::{Error, Result};

/// Ops recorded into one command buffer and submitted together: `run` on a plan is a batch of
/// one. Dropping a batch without submitting it discards what was recorded.
///
/// ```no_run
/// # fn demo(ctx: &wgsparse::Context, spmv: &wgsparse::ops::Spmv<f32>, x: &wgsparse::GpuVec<f32>,
/// #         y: &mut wgsparse::GpuVec<f32>) -> wgsparse::Result<()> {
/// let mut batch = ctx.batch();
/// for _ in 0..1000 {
///     spmv.record(&mut batch.recorder(), 1.0, x, 0.0, y)?;
/// }
/// batch.submit()?;
/// # Ok(()) }
/// ```
pub struct Batch<'c> {
    ctx: &'c Context,
    encoder: Option<wgpu::CommandEncoder>,
    pass: Option<wgpu::ComputePass<'static>>,
    /// What the open pass has bound.
    state: PassState,
    /// Gated sections: their argument buffers are written at submission.
    gate: Gate,
    reads: Vec<Arc<Mutex<TicketState>>>,
    /// Until submitted or dropped, buffers dropped meanwhile are not reused (`gpu/pool.rs`).
    mark: BatchMark,
}

impl Context {
    /// A new, empty batch.
    pub fn batch(&self) -> Batch<'_> {
        Batch {
            ctx: self,
            encoder: Some(
                self.device().create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("wgsparse batch") }),
            ),
            pass: None,
            state: PassState::default(),
            gate: Gate::default(),
            reads: Vec::new(),
            mark: self.gpu().open_batch(),
        }
    }
}

impl<'c> Batch<'c> {
    /// The context the batch records for.
    pub fn context(&self) -> &'c Context {
        self.ctx
    }

    /// A recorder into the batch's current compute pass (opened if none is).
    pub fn recorder(&mut self) -> Recorder<'_, 'static> {
        if self.pass.is_none() {
            let encoder = self.encoder.as_mut().expect("a batch keeps its encoder until submitted");
            let pass = encoder
                .begin_compute_pass(&wgpu::ComputePassDescriptor { label: Some("wgsparse"), timestamp_writes: None });
            self.pass = Some(pass.forget_lifetime());
        }
        let pass = self.pass.as_mut().expect("opened above");
        let gate = self.gate.is_open().then_some(&mut self.gate);
        Recorder::in_batch(self.ctx, pass, &mut self.state, gate)
    }

    /// Records what `record` records into a compute pass of its own, between two GPU
    /// timestamps of `profiler` (read them with [`Profiler::read`] after submitting).
    pub fn timed<R>(
        &mut self,
        profiler: &mut Profiler,
        label: &str,
        record: impl FnOnce(&mut Recorder<'_, 'static>) -> Result<R>,
    ) -> Result<R> {
        let writes = profiler.next_span(self.ctx, label)?;
        self.end_pass();
        let encoder = self.encoder.as_mut().expect("a batch keeps its encoder until submitted");
        let pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
            label: Some(label),
            timestamp_writes: Some(writes.as_pass_writes()),
        });
        self.pass = Some(pass.forget_lifetime());
        let result = record(&mut self.recorder());
        self.end_pass();
        result
    }

    /// Turns every dispatch recorded from here on (until [`Batch::ungate`] or the end of the
    /// batch) into an indirect dispatch that runs only while `flag[index]` is zero when this
    /// call's point in the batch is reached on the GPU: a solver's convergence test writes the
    /// flag, and the iterations recorded after it become no-ops.
    pub fn gate(&mut self, flag: &GpuVec<u32>, index: usize) -> Result<()> {
        self.ctx.check_owner("the gate flag", flag.device_id())?;
        if index >= flag.len() {
            return Err(Error::InvalidArgument(format!("gate flag index {index} of {}", flag.len())));
        }
        self.recorder();
        let pass = self.pass.as_mut().expect("opened by recorder()");
        self.gate.open(self.ctx, pass, &mut self.state, flag, index)
    }

    /// Ends the gated section: later dispatches run unconditionally.
    pub fn ungate(&mut self) {
        self.gate.close();
    }

    /// Records a copy of `source` to the host, delivered after [`Batch::submit`] through the
    /// returned ticket: the result of the batch's last op, read with no second submission.
    pub fn read_back<T: Stored + Pod>(&mut self, source: &GpuVec<T>) -> Result<ReadTicket<T>> {
        self.read_back_range(source, 0..source.len())
    }

    /// [`read_back`](Self::read_back) of the elements `range` of `source` alone.
    pub fn read_back_range<T: Stored + Pod>(
        &mut self,
        source: &GpuVec<T>,
        range: Range<usize>,
    ) -> Result<ReadTicket<T>> {
        self.ctx.check_owner("the vector to read", source.device_id())?;
        if range.start > range.end || range.end > source.len() {
            return Err(Error::InvalidArgument(format!(
                "read_back_range: elements {range:?} of a vector of {}",
                source.len()
            )));
        }
        self.end_pass();
        let encoder = self.encoder.as_mut().expect("a batch keeps its encoder until submitted");
        let size = T::stride();
        let (offset, bytes) = (source.byte_offset() + range.start as u64 * size, range.len() as u64 * size);
        let staged = stage(self.ctx.gpu(), encoder, source.raw_buffer(), offset, bytes)?;
        let state = Arc::new(Mutex::new(TicketState::Staged(staged)));
        self.reads.push(state.clone());
        Ok(ReadTicket { state, len: range.len(), _element: std::marker::PhantomData })
    }

    /// Submits everything recorded, in recording order; returns without waiting for the GPU.
    pub fn submit(self) -> Result<()> {
        self.finish()?.submit()
    }

    /// Ends recording: the batch becomes a command buffer, ready to submit (from any thread).
    pub fn finish(mut self) -> Result<Recorded<'c>> {
        self.ungate();
        self.end_pass();
        let encoder = self.encoder.take().expect("finished once");
        let commands = self.ctx.gpu().scoped("finishing a batch", || encoder.finish())?;
        Ok(Recorded {
            ctx: self.ctx,
            commands,
            gate: std::mem::take(&mut self.gate),
            reads: std::mem::take(&mut self.reads),
            _mark: self.mark,
        })
    }

    /// wgsparse dispatches recorded so far (a caller's raw ones not counted).
    pub(crate) fn dispatches(&self) -> usize {
        self.state.dispatches()
    }

    fn end_pass(&mut self) {
        self.pass = None;
        self.state.forget();
    }
}

/// A finished batch: its command buffer, waiting for [`Recorded::submit`].
pub struct Recorded<'c> {
    ctx: &'c Context,
    commands: wgpu::CommandBuffer,
    gate: Gate,
    reads: Vec<Arc<Mutex<TicketState>>>,
    /// The batch's claim on dropped buffers, released once the commands are submitted.
    _mark: BatchMark,
}

impl Recorded<'_> {
    /// Submits the batch; returns without waiting for the GPU.
    pub fn submit(self) -> Result<()> {
        self.gate.write_intended()?;
        let commands = self.commands;
        let submission = self.ctx.gpu().scoped("submitting a batch", || self.ctx.gpu().submit([commands]))?;
        self.gate.release(self.ctx);
        for read in self.reads {
            let mut state = read.lock().unwrap_or_else(|p| p.into_inner());
            if let TicketState::Staged(staged) = std::mem::replace(&mut *state, TicketState::Taken) {
                *state = TicketState::Pending(staged.map(submission.clone()));
            }
        }
        Ok(())
    }
}

enum TicketState {
    Staged(Staged),
    Pending(PendingRead),
    Taken,
}

/// A readback recorded in a batch; wait on it after the batch is submitted.
pub struct ReadTicket<T> {
    state: Arc<Mutex<TicketState>>,
    len: usize,
    _element: std::marker::PhantomData<fn() -> T>,
}

impl<T: Stored + Pod> ReadTicket<T> {
    /// Waits for the copy and writes it into `out` (of the vector's length).
    pub fn wait_into(self, out: &mut [T]) -> Result<()> {
        if out.len() != self.len {
            return Err(Error::dimension("ReadTicket::wait_into", "output length", self.len, out.len()));
        }
        self.pending()?.finish_blocking(bytemuck::cast_slice_mut(out))
    }

    /// Waits for the copy and returns it in host memory without copying it again (a view of
    /// the mapped staging buffer: see [`HostView`]).
    pub fn wait_view(self) -> Result<HostView<T>> {
        self.pending()?.finish_view()
    }

    /// Waits for the copy.
    pub fn wait(self) -> Result<Vec<T>> {
        let mut out = vec![T::zeroed(); self.len];
        self.wait_into(&mut out)?;
        Ok(out)
    }

    fn pending(self) -> Result<PendingRead> {
        match std::mem::replace(&mut *self.state.lock().unwrap_or_else(|p| p.into_inner()), TicketState::Taken) {
            TicketState::Pending(pending) => Ok(pending),
            TicketState::Staged(_) | TicketState::Taken => {
                Err(Error::InvalidArgument("the batch holding this readback was not submitted".into()))
            }
        }
    }
}
