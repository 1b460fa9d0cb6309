//! Operations on device-resident operands. Each op is a plan (`Spmv`, …) built once for a
//! matrix (kernels compiled, scratch allocated) and run many times.

mod copy;
pub mod spmv;

pub use copy::encode_copy;
pub use spmv::{spmv, Spmv, SpmvAlgorithm, SpmvOptions};

use crate::gpu::Context;
use crate::Result;

/// Records `record` into one compute pass and submits it: the blocking-free `run` of every op.
pub(crate) fn submit_pass(
    ctx: &Context,
    label: &str,
    record: impl FnOnce(&mut wgpu::ComputePass<'_>) -> Result<()>,
) -> Result<()> {
    let mut encoder = ctx.device().create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some(label) });
    {
        let mut pass =
            encoder.begin_compute_pass(&wgpu::ComputePassDescriptor { label: Some(label), timestamp_writes: None });
        record(&mut pass)?;
    }
    ctx.scoped(label, || ctx.queue().submit([encoder.finish()]))?;
    Ok(())
}
