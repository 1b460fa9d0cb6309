//! Gated sections of a batch: dispatches whose workgroup counts a device flag can zero.
//!
//! Each gated dispatch takes a slot of indirect arguments. The host writes every slot's
//! intended counts when the batch is submitted; at each gate, a small kernel copies them
//! into the slots the dispatches read — or zeros, if the flag is set by then.

use crate::context::{Context, GateBuffers};
use crate::gpu::{Bind, DeviceId, GpuVec};
use crate::kernel::shaders::gate_dispatch as kernel;
use crate::kernel::{Dispatch, Kernel, PassState};
use crate::Result;

/// Slots per chunk of arguments.
const CHUNK_SLOTS: usize = 4096;

/// The gating state of one batch.
#[derive(Default)]
pub(crate) struct Gate {
    flag: Option<FlagRef>,
    chunks: Vec<Chunk>,
}

/// The flag of the open section, kept by handle so that a new chunk can be gated by it too.
struct FlagRef {
    buffer: wgpu::Buffer,
    offset: u64,
    id: u64,
    device: DeviceId,
    index: u32,
}

struct Chunk {
    intended: Vec<[u32; 4]>,
    buffers: GateBuffers,
}

impl Gate {
    pub(crate) fn is_open(&self) -> bool {
        self.flag.is_some()
    }

    /// Opens a section gated by `flag[index]` at this point of `pass`.
    pub(crate) fn open(
        &mut self,
        ctx: &Context,
        pass: &mut wgpu::ComputePass<'_>,
        state: &mut PassState,
        flag: &GpuVec<u32>,
        index: usize,
    ) -> Result<()> {
        self.flag = Some(FlagRef {
            buffer: flag.raw_buffer().clone(),
            offset: flag.byte_offset(),
            id: flag.bind().entry("flag", false).id,
            device: flag.device_id(),
            // (A vector holds at most 2^32 elements.)
            index: index as u32,
        });
        let opened = match self.chunks.last().is_none_or(|c| c.intended.len() == CHUNK_SLOTS) {
            true => Chunk::new(ctx).map(|chunk| self.chunks.push(chunk)),
            false => Ok(()),
        }
        .and_then(|()| self.record_gate(ctx, pass, state));
        // A gate that could not be recorded gates nothing after it.
        if opened.is_err() {
            self.flag = None;
        }
        opened
    }

    pub(crate) fn close(&mut self) {
        self.flag = None;
    }

    /// A slot for a gated dispatch of `counts` workgroups: (buffer, byte offset).
    pub(crate) fn slot(
        &mut self,
        ctx: &Context,
        pass: &mut wgpu::ComputePass<'_>,
        state: &mut PassState,
        counts: [u32; 3],
    ) -> Result<(wgpu::Buffer, u64)> {
        if self.chunks.last().is_none_or(|c| c.intended.len() == CHUNK_SLOTS) {
            self.chunks.push(Chunk::new(ctx)?);
            // The section goes on in a new chunk: gate it too (the flag is unchanged unless a
            // dispatch of this section wrote it).
            self.record_gate(ctx, pass, state)?;
        }
        let chunk = self.chunks.last_mut().expect("pushed above");
        chunk.intended.push([counts[0], counts[1], counts[2], 0]);
        Ok((chunk.buffers.args.raw_buffer().clone(), (chunk.intended.len() as u64 - 1) * 16))
    }

    fn record_gate(&self, ctx: &Context, pass: &mut wgpu::ComputePass<'_>, state: &mut PassState) -> Result<()> {
        let (Some(flag), Some(chunk)) = (&self.flag, self.chunks.last()) else { return Ok(()) };
        let gate: Kernel<kernel::Shader> =
            ctx.plain_kernel::<kernel::Shader>(Default::default(), Default::default())?;
        let first = chunk.intended.len();
        let bindings = kernel::Bindings {
            flag: Bind::from_raw(&flag.buffer, flag.id, flag.device, flag.offset, (flag.index as u64 + 1) * 4),
            intended: chunk.buffers.intended.bind(),
            args: chunk.buffers.args.bind(),
        };
        let group = gate.bind_group(ctx.gpu(), &bindings)?;
        let params = kernel::Params { flag_index: flag.index, first: first as u32, count: CHUNK_SLOTS as u32 };
        let workgroups = (CHUNK_SLOTS - first).div_ceil(gate.workgroup_size() as usize) as u32;
        if workgroups > 0 {
            gate.record(pass, state, &group, &params, Dispatch::Direct(workgroups, 1));
        }
        Ok(())
    }

    /// Writes every chunk's intended counts; called when the batch is submitted.
    pub(crate) fn write_intended(&self) -> Result<()> {
        for chunk in &self.chunks {
            chunk.buffers.intended.write_at(0, &chunk.intended)?;
        }
        Ok(())
    }

    /// Hands the chunks' buffers back to `ctx` once the batch is submitted. A reused chunk
    /// holds an earlier batch's counts past this batch's slots: its gate copies them into
    /// arguments that no dispatch of this batch reads.
    pub(crate) fn release(self, ctx: &Context) {
        for chunk in self.chunks {
            ctx.keep_gate_buffers(chunk.buffers);
        }
    }
}

impl Chunk {
    fn new(ctx: &Context) -> Result<Self> {
        Ok(Chunk { intended: Vec::with_capacity(CHUNK_SLOTS), buffers: ctx.take_gate_buffers(CHUNK_SLOTS)? })
    }
}
