//! Per-tile (or per-interval) carries and the kernel that adds them into row sums.

use crate::context::Context;
use crate::element::Scalar;
use crate::gpu::{Bind, GpuVec};
use crate::kernel::shaders::spmv_carry_fixup as fixup;
use crate::kernel::shaders::structs::Carry;
use crate::kernel::Kernel;
use crate::record::Recorder;
use crate::Result;

/// One carry (row, partial sum) per tile or interval, reduced in order: deterministic.
pub(crate) struct Carries<T: Scalar> {
    pub(crate) buffer: GpuVec<Carry<T>>,
    fixup: Kernel<fixup::Shader, T>,
}

impl<T: Scalar> Carries<T> {
    pub(crate) fn new(ctx: &Context, count: usize) -> Result<Self> {
        Ok(Carries {
            buffer: ctx.zeros(count)?,
            fixup: ctx.kernel::<fixup::Shader, T>(Default::default(), Default::default())?,
        })
    }

    /// Records `sums[row] += Σ carries of row`, for rows below `rows`.
    pub(crate) fn record_fixup(&self, rec: &mut Recorder<'_, '_>, rows: usize, sums: Bind<'_, T>) -> Result<()> {
        let count = self.buffer.len();
        rec.dispatch_items(
            &self.fixup,
            fixup::Params { count: count as u32, rows: rows as u32 },
            fixup::Bindings { carries: self.buffer.bind(), sums },
            count as u64,
        )
    }

    pub(crate) fn device_bytes(&self) -> u64 {
        self.buffer.byte_len()
    }
}
