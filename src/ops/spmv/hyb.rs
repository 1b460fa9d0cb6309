//! hyb: the ELL part one invocation per row and the COO tail by the segmented walk, in one
//! dispatch (`shaders/spmv_hyb.wgsl`): a row with a tail is stored where its tail is
//! completed, with its ELL part added there. A panel whose tail is empty is plain ELL.

use super::coo_segmented::Intervals;
use super::ell::{self, EllKernel};
use super::{panel_as, PanelKernel, Run, SpmvAlgorithm, SpmvOptions};
use crate::context::Context;
use crate::element::Scalar;
use crate::kernel::shaders::spmv_hyb as kernel;
use crate::kernel::Kernel;
use crate::matrix::{GpuSparse, PanelStorage};
use crate::ops::common::recompute_pieces;
use crate::record::Recorder;
use crate::Result;

enum Hyb<T: Scalar> {
    /// The tail is empty.
    Ell(EllKernel<T>),
    WithTail {
        kernel: Kernel<kernel::Shader, T>,
        intervals: Intervals,
    },
}

pub(super) fn plan<T: Scalar>(
    ctx: &Context,
    a: &GpuSparse<T>,
    panel: usize,
    options: &SpmvOptions,
) -> Result<Box<dyn PanelKernel<T>>> {
    let hyb = panel_as!(a.panels()[panel].storage(), Hyb);
    let wg_size = options.workgroup_size_for(ctx, SpmvAlgorithm::Hyb, a.panels()[panel].rows().len());
    if hyb.coo().nnz() == 0 {
        return Ok(Box::new(Hyb::Ell(EllKernel::new(ctx, hyb.ell(), wg_size)?)));
    }
    let intervals = Intervals::new(ctx, a, hyb.coo(), &format!("panel {panel} tail"), wg_size, options)?;
    let flags = kernel::Flags { diagonal_offsets: hyb.ell().compact(), value_table: hyb.ell().value_table() };
    let overrides = kernel::Overrides {
        wg_size,
        batch: ell::batch(hyb.ell().width()),
        tasks_per_workgroup: intervals.groups.tasks_per_workgroup,
    };
    Ok(Box::new(Hyb::WithTail { kernel: ctx.kernel::<kernel::Shader, T>(flags, overrides)?, intervals }))
}

impl<T: Scalar> PanelKernel<T> for Hyb<T> {
    fn record(&self, rec: &mut Recorder<'_, '_>, panel: &PanelStorage<T>, run: &Run<'_, T>) -> Result<()> {
        let a = panel_as!(panel, Hyb);
        let (kernel, intervals) = match self {
            Hyb::Ell(ell) => return ell.record(rec, a.ell(), run.x, &run.scaling, run.y),
            Hyb::WithTail { kernel, intervals } => (kernel, intervals),
        };
        let (ell, tail) = (a.ell(), a.coo());
        let (col_indices, first_row, index_stride) = ell::indices(ell);
        let interval_workgroups = intervals.workgroups();
        let params = kernel::Params {
            rows: ell.rows() as u32,
            width: ell.width() as u32,
            first_row,
            index_stride,
            coo_nnz: tail.nnz() as u32,
            intervals: intervals.count as u32,
            interval_len: intervals.interval_len,
            window: intervals.window,
            interval_workgroups: interval_workgroups as u32,
            recompute: recompute_pieces(),
            scaling: run.scaling.params,
        };
        let bindings = kernel::Bindings {
            col_indices,
            values: ell.values().bind(),
            coo_rows: tail.row_indices().bind(),
            coo_cols: tail.col_indices().bind(),
            coo_values: tail.values().bind(),
            x: run.x,
            bounds: intervals.analysis.bounds.bind(),
            occupied: intervals.analysis.occupied.bind(),
            alpha_dev: run.scaling.alpha_dev,
            beta_dev: run.scaling.beta_dev,
            y: run.y,
            scratch: intervals.scratch.bind(),
        };
        let row_workgroups = (ell.rows() as u64).div_ceil(kernel.workgroup_size() as u64);
        rec.dispatch(kernel, params, bindings, interval_workgroups + row_workgroups)
    }

    fn extra_bytes(&self) -> u64 {
        match self {
            Hyb::Ell(_) => 0,
            Hyb::WithTail { intervals, .. } => intervals.device_bytes(),
        }
    }
}
