//! csr-thread: one invocation per row, for short rows of similar length.

use super::{dot_workgroup_size, dot_workgroups, panel_as, PanelKernel, Run, SpmvAlgorithm, SpmvOptions};
use crate::context::Context;
use crate::element::Scalar;
use crate::gpu::GpuVec;
use crate::kernel::shaders::{spmv_csr_thread as kernel, spmv_csr_thread_dot as dot};
use crate::kernel::Kernel;
use crate::matrix::{GpuSparse, PanelStorage};
use crate::record::Recorder;
use crate::Result;

struct CsrThread<T: Scalar> {
    kernel: Kernel<kernel::Shader, T>,
    wg_size: u32,
}

pub(super) fn plan<T: Scalar>(
    ctx: &Context,
    a: &GpuSparse<T>,
    panel: usize,
    options: &SpmvOptions,
) -> Result<Box<dyn PanelKernel<T>>> {
    // A lane walks its row eight entries a step (`shared/csr_row_sum.wgsl`).
    let longest = a.stats().max_len as u64;
    ctx.check_loop_iterations(|| format!("csr-thread SpMV on rows of {longest} entries"), longest.div_ceil(8) + 2)?;
    let wg_size = options.workgroup_size_for(ctx, SpmvAlgorithm::CsrThread, a.panels()[panel].rows().len());
    Ok(Box::new(CsrThread {
        kernel: ctx.kernel::<kernel::Shader, T>(Default::default(), kernel::Overrides { wg_size })?,
        wg_size,
    }))
}

impl<T: Scalar> PanelKernel<T> for CsrThread<T> {
    fn record(&self, rec: &mut Recorder<'_, '_>, panel: &PanelStorage<T>, run: &Run<'_, T>) -> Result<()> {
        let a = panel_as!(panel, Csr);
        let bindings = kernel::Bindings {
            row_offsets: a.row_offsets().bind(),
            col_indices: a.col_indices().bind(),
            values: a.values().bind(),
            x: run.x,
            alpha_dev: run.scaling.alpha_dev,
            beta_dev: run.scaling.beta_dev,
            y: run.y,
        };
        let params = kernel::Params { rows: run.rows as u32, scaling: run.scaling.params };
        rec.dispatch_items(&self.kernel, params, bindings, run.rows as u64)
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
        let a = panel_as!(panel, Csr);
        let overrides = dot::Overrides { wg_size, ..Default::default() };
        let kernel = rec.context().kernel::<dot::Shader, T>(Default::default(), overrides)?;
        let bindings = dot::Bindings {
            row_offsets: a.row_offsets().bind(),
            col_indices: a.col_indices().bind(),
            values: a.values().bind(),
            x: run.x,
            alpha_dev: run.scaling.alpha_dev,
            beta_dev: run.scaling.beta_dev,
            y: run.y,
            partials: partials.bind(),
        };
        let params = dot::Params { rows: run.rows as u32, scaling: run.scaling.params };
        rec.dispatch(&kernel, params, bindings, workgroups as u64)?;
        Ok(Some(workgroups))
    }
}
