//! ell: one invocation per row over the padded, column-major slots.

use super::{dot_workgroup_size, dot_workgroups, panel_as, PanelKernel, Run, SpmvAlgorithm, SpmvOptions};
use crate::context::Context;
use crate::element::Scalar;
use crate::gpu::{Bind, GpuVec};
use crate::kernel::shaders::{spmv_ell as kernel, spmv_ell_dot as dot};
use crate::kernel::Kernel;
use crate::matrix::{EllIndices, GpuEll, GpuSparse, PanelStorage};
use crate::ops::common::ScalarBinds;
use crate::record::Recorder;
use crate::Result;

/// The ELL kernel for one panel's index encoding and width (HYB's ELL part uses it too).
pub(crate) struct EllKernel<T: Scalar> {
    kernel: Kernel<kernel::Shader, T>,
    wg_size: u32,
}

impl<T: Scalar> EllKernel<T> {
    pub(crate) fn new(ctx: &Context, a: &GpuEll<T>, wg_size: u32) -> Result<Self> {
        let flags = kernel::Flags { diagonal_offsets: a.compact(), value_table: a.value_table() };
        let overrides = kernel::Overrides { wg_size, batch: batch(a.width()) };
        Ok(EllKernel { kernel: ctx.kernel::<kernel::Shader, T>(flags, overrides)?, wg_size })
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
        let (col_indices, first_row, index_stride) = indices(a);
        let (rows, width) = (a.rows() as u32, a.width() as u32);
        let params = kernel::Params { rows, width, first_row, index_stride, scaling: scaling.params };
        let bindings = kernel::Bindings {
            col_indices,
            values: a.values().bind(),
            x,
            alpha_dev: scaling.alpha_dev,
            beta_dev: scaling.beta_dev,
            y,
        };
        rec.dispatch_items(&self.kernel, params, bindings, a.rows() as u64)
    }
}

/// The column encoding's buffer, the first row and the halfword stride (see spmv_ell.wgsl).
pub(crate) fn indices<T: Scalar>(a: &GpuEll<T>) -> (Bind<'_, u32>, u32, u32) {
    match a.indices() {
        EllIndices::Columns(columns) => (columns.bind(), 0, 0),
        EllIndices::DiagonalOffsets { packed, first_row, stride } => (packed.bind(), *first_row, *stride),
        EllIndices::CodedOffsets { words, first_row } => (words.bind(), *first_row, 0),
    }
}

/// Slots per load batch of spmv_ell (at most its MAX_BATCH of 8): `width` split into the
/// fewest batches of at most 8, as equal as can be, so that few loads re-read a clamped slot.
pub(crate) fn batch(width: usize) -> u32 {
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
    let wg_size = options.workgroup_size_for(ctx, SpmvAlgorithm::Ell, a.panels()[panel].rows().len());
    Ok(Box::new(EllKernel::new(ctx, ell, wg_size)?))
}

impl<T: Scalar> PanelKernel<T> for EllKernel<T> {
    fn record(&self, rec: &mut Recorder<'_, '_>, panel: &PanelStorage<T>, run: &Run<'_, T>) -> Result<()> {
        EllKernel::record(self, rec, panel_as!(panel, Ell), run.x, &run.scaling, run.y)
    }

    fn record_dot(
        &self,
        rec: &mut Recorder<'_, '_>,
        panel: &PanelStorage<T>,
        run: &Run<'_, T>,
        partials: &GpuVec<[T; 2]>,
    ) -> Result<Option<usize>> {
        let wg_size = dot_workgroup_size(self.wg_size);
        let Some(workgroups) = dot_workgroups(run.rows, wg_size, partials) else { return Ok(None) };
        let a = panel_as!(panel, Ell);
        let flags = dot::Flags { diagonal_offsets: a.compact(), value_table: a.value_table() };
        let overrides = dot::Overrides { wg_size, batch: batch(a.width()), ..Default::default() };
        let kernel = rec.context().kernel::<dot::Shader, T>(flags, overrides)?;
        let (col_indices, first_row, index_stride) = indices(a);
        let (rows, width) = (a.rows() as u32, a.width() as u32);
        let params = dot::Params { rows, width, first_row, index_stride, scaling: run.scaling.params };
        let bindings = dot::Bindings {
            col_indices,
            values: a.values().bind(),
            x: run.x,
            alpha_dev: run.scaling.alpha_dev,
            beta_dev: run.scaling.beta_dev,
            y: run.y,
            partials: partials.bind(),
        };
        rec.dispatch(&kernel, params, bindings, workgroups as u64)?;
        Ok(Some(workgroups))
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
