//! csr-vector: a group of lanes per row (up to a subgroup, sized from the mean row length),
//! reduced by subgroup shuffles or workgroup memory: long rows.

use super::{panel_as, PanelKernel, Run, SpmvAlgorithm, SpmvOptions};
use crate::context::Context;
use crate::element::Scalar;
use crate::kernel::shaders::spmv_csr_vector as kernel;
use crate::kernel::Kernel;
use crate::matrix::{GpuSparse, PanelStorage};
use crate::record::Recorder;
use crate::Result;

struct CsrVector<T: Scalar> {
    kernel: Kernel<kernel::Shader, T>,
    rows_per_workgroup: u32,
}

pub(super) fn plan<T: Scalar>(
    ctx: &Context,
    a: &GpuSparse<T>,
    panel: usize,
    options: &SpmvOptions,
) -> Result<Box<dyn PanelKernel<T>>> {
    let wg_size = options.workgroup_size_for(ctx, SpmvAlgorithm::CsrVector, a.panels()[panel].rows().len());
    let group = options.vector_lanes.unwrap_or_else(|| lanes(ctx, wg_size, a.stats().mean));
    // A lane walks every group-th entry of its row, then the group's reduction.
    let longest = a.stats().max_len as u64;
    let walk = longest.div_ceil(group as u64) + 8;
    ctx.check_loop_iterations(|| format!("csr-vector SpMV on rows of {longest} entries, {group} lanes a row"), walk)?;
    let kernel = ctx.kernel::<kernel::Shader, T>(Default::default(), kernel::Overrides { wg_size, group })?;
    Ok(Box::new(CsrVector { kernel, rows_per_workgroup: wg_size / group }))
}

/// Lanes per row: the mean row length rounded up to a power of two, at least 4 and at most a
/// subgroup (32 lanes without subgroups).
fn lanes(ctx: &Context, wg: u32, mean_row_len: f64) -> u32 {
    let max = ctx.subgroup_size_range().map_or(32, |(min, _)| min).clamp(4, wg);
    (mean_row_len.ceil() as u32).next_power_of_two().clamp(4, max)
}

impl<T: Scalar> PanelKernel<T> for CsrVector<T> {
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
        let workgroups = (run.rows as u64).div_ceil(self.rows_per_workgroup as u64);
        rec.dispatch(&self.kernel, params, bindings, workgroups)
    }
}
