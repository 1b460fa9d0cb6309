//! Device-to-device vector copy.

use bytemuck::{Pod, Zeroable};

use crate::gpu::{Context, GpuVec};
use crate::pipeline::registry::ids;
use crate::pipeline::KernelKey;
use crate::{Error, Result};

#[repr(C)]
#[derive(Clone, Copy, Pod, Zeroable)]
struct CopyParams {
    len: u32,
    _pad: [u32; 3],
}

const WG_SIZE: u32 = 256;

/// Records `dst ← src` into `pass` with a kernel moving 16 bytes per invocation (the
/// benchmark's yardstick for device bandwidth). Lengths must match.
pub fn encode_copy<T: Pod>(
    ctx: &Context,
    pass: &mut wgpu::ComputePass<'_>,
    src: &GpuVec<T>,
    dst: &mut GpuVec<T>,
) -> Result<()> {
    if src.len() != dst.len() {
        return Err(Error::dimension("copy", "destination length", src.len(), dst.len()));
    }
    let kernel =
        ctx.inner.pipelines.get(ctx, &KernelKey::new(ids::COPY_VECTOR).constant("WG_SIZE", WG_SIZE).unchecked())?;
    // Allocations are padded to 16 bytes, so whole vec4s cover the data.
    let vec4s = src.byte_len().div_ceil(16);
    let params = CopyParams { len: vec4s as u32, _pad: [0; 3] };
    let bind = kernel.bind(ctx, &params, &[("src", src.binding()), ("dst", dst.binding())])?;
    kernel.dispatch(ctx, pass, &bind, vec4s.div_ceil(WG_SIZE as u64))
}
