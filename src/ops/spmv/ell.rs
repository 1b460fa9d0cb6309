//! ell: one invocation per row over the padded, column-major slots.

use super::{panel_as, PanelKernel, Run, SpmvAlgorithm, SpmvOptions};
use crate::context::Context;
use crate::element::Scalar;
use crate::gpu::Bind;
use crate::kernel::shaders::spmv_ell as kernel;
use crate::kernel::Kernel;
use crate::matrix::{EllIndices, GpuEll, GpuSparse, PanelStorage};
use crate::ops::common::ScalarBinds;
use crate::record::Recorder;
use crate::Result;

/// The ELL kernel for one panel's index encoding and width (HYB's ELL part uses it too).
pub(crate) struct EllKernel<T: Scalar> {
    kernel: Kernel<kernel::Shader, T>,
}

impl<T: Scalar> EllKernel<T> {
    pub(crate) fn new(ctx: &Context, a: &GpuEll<T>, wg_size: u32) -> Result<Self> {
        let flags = kernel::Flags { diagonal_offsets: a.compact() };
        let overrides = kernel::Overrides { wg_size, batch: batch(a.width()) };
        Ok(EllKernel { kernel: ctx.kernel::<kernel::Shader, T>(flags, overrides)? })
    }

    /// Records `y ← α·A·x + β·y` for the ELL matrix `a`.
    pub(crate) fn record(
        &self,
        rec: &mut Recorder<'_, '_>,
        a: &GpuEll<T>,
        x: Bind<'_, T>,
        scaling: &ScalarBinds<'_, T>,
        y: Bind<'_, T>,
    ) -> Result<()> {
        let (indices, first_row, index_stride) = match a.indices() {
            EllIndices::Columns(columns) => (columns, 0, 0),
            EllIndices::DiagonalOffsets { packed, first_row, stride } => (packed, *first_row, *stride),
        };
        let params = kernel::Params {
            rows: a.rows() as u32,
            width: a.width() as u32,
            first_row,
            index_stride,
            scaling: scaling.params,
        };
        let bindings = kernel::Bindings {
            col_indices: indices.bind(),
            values: a.values().bind(),
            x,
            alpha_dev: scaling.alpha_dev,
            beta_dev: scaling.beta_dev,
            y,
        };
        rec.dispatch_items(&self.kernel, params, bindings, a.rows() as u64)
    }
}

/// Slots per load batch of spmv_ell (at most its MAX_BATCH of 8): `width` split into the
/// fewest batches of at most 8, as equal as can be, so that few loads re-read a clamped slot.
fn batch(width: usize) -> u32 {
    const MAX_BATCH: usize = 8;
    let batches = width.div_ceil(MAX_BATCH).max(1);
    width.div_ceil(batches).max(1) as u32
}

pub(super) fn plan<T: Scalar>(
    ctx: &Context,
    a: &GpuSparse<T>,
    panel: usize,
    options: &SpmvOptions,
) -> Result<Box<dyn PanelKernel<T>>> {
    let ell = panel_as!(a.panels()[panel].storage(), Ell);
    Ok(Box::new(EllKernel::new(ctx, ell, options.workgroup_size_for(ctx, SpmvAlgorithm::Ell))?))
}

impl<T: Scalar> PanelKernel<T> for EllKernel<T> {
    fn record(&self, rec: &mut Recorder<'_, '_>, panel: &PanelStorage<T>, run: &Run<'_, T>) -> Result<()> {
        EllKernel::record(self, rec, panel_as!(panel, Ell), run.x, &run.scaling, run.y)
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn ell_batches_are_as_full_as_the_width_allows() {
        let batches: Vec<u32> = [0, 1, 5, 7, 8, 9, 16, 17, 64].into_iter().map(super::batch).collect();
        assert_eq!(batches, [1, 1, 5, 7, 8, 5, 8, 6, 8]);
    }
}
