//! Recording GPU work: a [`Recorder`] takes an op's dispatches into a compute pass — of a
//! [`Batch`] wgsparse submits, or of the caller's own encoder — and [`Profiler`] times
//! parts of a batch with GPU timestamps.
//!
//! Recording allocates nothing once an op has run with the same operands: kernels come from
//! the pipeline cache, bind groups from the bind-group cache, and parameters (α and β
//! included) travel as immediate data captured at record time. Any number of ops recorded
//! into one batch go to the GPU in one submission.

mod batch;
mod gate;
mod pipeline;
mod profiler;

pub use batch::{Batch, ReadTicket, Recorded};
pub(crate) use pipeline::Pipeline;
pub use profiler::Profiler;

use crate::context::Context;
use crate::element::Scalar;
use crate::gpu::GpuVec;
use crate::kernel::spec::ShaderSpec;
use crate::kernel::{fold_workgroups, Dispatch, Kernel, PassState};
use crate::{Error, Result};
use gate::Gate;

/// Where an op records its dispatches: a compute pass, with the context it belongs to.
pub struct Recorder<'r, 'p> {
    ctx: &'r Context,
    pass: &'r mut wgpu::ComputePass<'p>,
    /// What the pass has bound: the batch's, or this recorder's own for a caller's pass.
    state: StateRef<'r>,
    /// Set inside a batch's gated section: dispatches become indirect, sized by a device flag.
    gate: Option<&'r mut Gate>,
}

enum StateRef<'r> {
    Borrowed(&'r mut PassState),
    Owned(PassState),
}

impl StateRef<'_> {
    fn get(&mut self) -> &mut PassState {
        match self {
            StateRef::Borrowed(state) => state,
            StateRef::Owned(state) => state,
        }
    }
}

impl<'r, 'p> Recorder<'r, 'p> {
    /// Records into `pass`, a compute pass of an encoder of `ctx.device()`: the caller's own,
    /// so that wgsparse ops join the caller's wgpu work (see [`Context::from_wgpu`]). wgpu
    /// passes do not say which device they belong to, so the context is given with it; every
    /// operand and plan recorded must belong to that context (a typed error otherwise).
    /// The caller submits the encoder.
    ///
    /// The context then keeps no dropped arrays for reuse
    /// ([`ContextOptions::buffer_pool_bytes`](crate::ContextOptions::buffer_pool_bytes)): it
    /// cannot see when the caller submits, and a reused buffer could reach work recorded
    /// before its vector was dropped.
    pub fn new(ctx: &'r Context, pass: &'r mut wgpu::ComputePass<'p>) -> Self {
        ctx.gpu().disable_pool();
        Recorder { ctx, pass, state: StateRef::Owned(PassState::default()), gate: None }
    }

    /// A recorder into a batch's pass, with the batch's record of what the pass has bound.
    pub(crate) fn in_batch(
        ctx: &'r Context,
        pass: &'r mut wgpu::ComputePass<'p>,
        state: &'r mut PassState,
        gate: Option<&'r mut Gate>,
    ) -> Self {
        Recorder { ctx, pass, state: StateRef::Borrowed(state), gate }
    }

    /// A recorder into the same pass for a shorter while (what `&mut *rec` would be).
    pub(crate) fn reborrow(&mut self) -> Recorder<'_, 'p> {
        Recorder {
            ctx: self.ctx,
            pass: &mut *self.pass,
            state: StateRef::Borrowed(self.state.get()),
            gate: self.gate.as_deref_mut(),
        }
    }

    /// The context recorded into.
    pub fn context(&self) -> &Context {
        self.ctx
    }

    /// The compute pass, for a caller's own dispatches between wgsparse's (a caller's
    /// [`crate::solvers::LinOp`]). What the caller binds is unknown to the recorder, so it
    /// forgets what the pass had bound. Inside a batch's gated section these dispatches are
    /// not gated.
    pub fn raw_pass(&mut self) -> &mut wgpu::ComputePass<'p> {
        self.state.get().forget();
        self.pass
    }

    /// Records `workgroups` workgroups of `kernel` (folded into two dimensions past the
    /// per-dimension limit; shaders recover the linear index).
    pub(crate) fn dispatch<S: ShaderSpec, T: Scalar>(
        &mut self,
        kernel: &Kernel<S, T>,
        params: S::Params<T>,
        bindings: S::Bindings<'_, T>,
        workgroups: u64,
    ) -> Result<()> {
        if workgroups == 0 {
            return Ok(());
        }
        let max = self.ctx.limits().max_compute_workgroups_per_dimension;
        let (x, y) = fold_workgroups(workgroups, max).ok_or_else(|| Error::LimitExceeded {
            what: format!("dispatch of {}", S::ID.info().name),
            limit: "max_compute_workgroups_per_dimension",
            requested: workgroups,
            max: (max as u64).pow(2),
        })?;
        let group = kernel.bind_group(self.ctx.gpu(), &bindings)?;
        let state = self.state.get();
        match self.gate.as_deref_mut() {
            None => kernel.record(self.pass, state, &group, &params, Dispatch::Direct(x, y)),
            Some(gate) => {
                let (buffer, offset) = gate.slot(self.ctx, self.pass, state, [x, y, 1])?;
                kernel.record(self.pass, state, &group, &params, Dispatch::Indirect(&buffer, offset));
            }
        }
        Ok(())
    }

    /// Records enough workgroups of `kernel` for one invocation per item.
    pub(crate) fn dispatch_items<S: ShaderSpec, T: Scalar>(
        &mut self,
        kernel: &Kernel<S, T>,
        params: S::Params<T>,
        bindings: S::Bindings<'_, T>,
        items: u64,
    ) -> Result<()> {
        let workgroups = items.div_ceil(kernel.workgroup_size() as u64);
        self.dispatch(kernel, params, bindings, workgroups)
    }

    /// Records a dispatch whose workgroup counts `args[index]` = (x, y, z, _) are read from
    /// the device when it runs: an earlier kernel decides how much work this one has (the
    /// relaunch of the sync-free triangular solve builds on it; tested in `tests` below).
    #[allow(dead_code)]
    pub(crate) fn dispatch_indirect<S: ShaderSpec, T: Scalar>(
        &mut self,
        kernel: &Kernel<S, T>,
        params: S::Params<T>,
        bindings: S::Bindings<'_, T>,
        args: &IndirectArgs,
        index: usize,
    ) -> Result<()> {
        self.ctx.check_owner("indirect dispatch arguments", args.slots.device_id())?;
        if index >= args.slots.len() {
            return Err(Error::InvalidArgument(format!("indirect arguments {index} of {}", args.slots.len())));
        }
        let group = kernel.bind_group(self.ctx.gpu(), &bindings)?;
        let dispatch = Dispatch::Indirect(args.slots.raw_buffer(), index as u64 * 16);
        kernel.record(self.pass, self.state.get(), &group, &params, dispatch);
        Ok(())
    }
}

/// Workgroup counts that kernels write and indirect dispatches read: slot `i` is
/// `[x, y, z, unused]`.
#[derive(Debug)]
pub struct IndirectArgs {
    slots: GpuVec<[u32; 4]>,
}

impl IndirectArgs {
    /// `count` slots of zeros on `ctx`.
    pub fn new(ctx: &Context, count: usize) -> Result<Self> {
        Ok(IndirectArgs { slots: GpuVec::indirect_on(ctx.gpu(), count)? })
    }

    /// The slots, for kernels to write.
    pub fn slots(&self) -> &GpuVec<[u32; 4]> {
        &self.slots
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gpu::ScalarArg;
    use crate::kernel::shaders::vector_scale;
    use crate::ops::common::ScalarBinds;
    use crate::ContextOptions;

    /// The workgroup count of an indirect dispatch comes from the device buffer when the
    /// dispatch runs: 2 workgroups of 256 fill 512 of 1024 elements; a count written later in
    /// the queue (before submission) is what runs.
    #[test]
    fn indirect_dispatches_take_their_size_from_the_device() {
        let ctx = Context::new_blocking(ContextOptions::from_env().unwrap()).unwrap();
        let y = ctx.zeros::<f32>(1024).unwrap();
        let args = IndirectArgs::new(&ctx, 2).unwrap();
        let kernel = ctx
            .kernel::<vector_scale::Shader, f32>(
                vector_scale::Flags { fill: true, ..Default::default() },
                Default::default(),
            )
            .unwrap();
        let scaling = ScalarBinds::new(&ctx, ScalarArg::Host(7.0f32), ScalarArg::Host(0.0)).unwrap();
        let mut batch = ctx.batch();
        {
            let mut rec = batch.recorder();
            let params = vector_scale::Params { len: 1024, seed: 0, scaling: scaling.params };
            let bindings =
                vector_scale::Bindings { alpha_dev: scaling.alpha_dev, beta_dev: scaling.beta_dev, y: y.bind() };
            rec.dispatch_indirect(&kernel, params, bindings, &args, 1).unwrap();
            assert!(rec.dispatch_indirect(&kernel, params, bindings, &args, 2).is_err(), "slot out of range");
        }
        args.slots().write(&[[0, 0, 0, 0], [2, 1, 1, 0]]).unwrap();
        batch.submit().unwrap();
        let got = y.read_blocking().unwrap();
        assert!(got[..512].iter().all(|&v| v == 7.0) && got[512..].iter().all(|&v| v == 0.0));
    }
}
