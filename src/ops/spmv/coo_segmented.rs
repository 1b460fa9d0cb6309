//! coo-segmented: seed 000's segmented reduction. Entries, sorted by row, are cut into
//! intervals of equal length, one per group of lanes; each row that ends inside an interval
//! is added into the row sums by that interval, the rest through per-interval carries and a
//! fix-up. No atomics: deterministic. HYB runs the same steps for its COO tail.

use super::{panel_as, PanelKernel, RowSums, Run, SpmvAlgorithm, SpmvOptions};
use crate::context::Context;
use crate::element::Scalar;
use crate::gpu::Bind;
use crate::kernel::shaders::spmv_coo_segmented as kernel;
use crate::kernel::Kernel;
use crate::matrix::{GpuCoo, GpuSparse, PanelStorage};
use crate::ops::common::{Carries, Groups};
use crate::record::Recorder;
use crate::Result;

/// The segmented reduction of one COO matrix into row sums.
pub(crate) struct SegmentedSums<T: Scalar> {
    kernel: Kernel<kernel::Shader, T>,
    /// One carry per interval.
    carries: Carries<T>,
    interval_len: u32,
    groups: Groups,
}

impl<T: Scalar> SegmentedSums<T> {
    pub(crate) fn new(ctx: &Context, a: &GpuCoo<T>, wg_size: u32, options: &SpmvOptions) -> Result<Self> {
        let groups = Groups::new(ctx, wg_size);
        let interval_len = groups.max_size * options.coo_steps;
        let intervals = (a.nnz() as u64).div_ceil(interval_len as u64) as usize;
        let overrides = kernel::Overrides { wg_size, tasks_per_workgroup: groups.tasks_per_workgroup };
        Ok(SegmentedSums {
            kernel: ctx.kernel::<kernel::Shader, T>(Default::default(), overrides)?,
            carries: Carries::new(ctx, intervals)?,
            interval_len,
            groups,
        })
    }

    /// Records `sums += A·x` (unscaled).
    pub(crate) fn record(
        &self,
        rec: &mut Recorder<'_, '_>,
        a: &GpuCoo<T>,
        x: Bind<'_, T>,
        sums: Bind<'_, T>,
    ) -> Result<()> {
        let intervals = self.carries.buffer.len() as u32;
        let params = kernel::Params { nnz: a.nnz() as u32, intervals, interval_len: self.interval_len };
        let bindings = kernel::Bindings {
            row_indices: a.row_indices().bind(),
            col_indices: a.col_indices().bind(),
            values: a.values().bind(),
            x,
            sums,
            carries: self.carries.buffer.bind(),
        };
        rec.dispatch(&self.kernel, params, bindings, self.groups.workgroups(intervals as u64))?;
        self.carries.record_fixup(rec, a.rows(), sums)
    }

    pub(crate) fn device_bytes(&self) -> u64 {
        self.carries.device_bytes()
    }
}

struct CooSegmented<T: Scalar> {
    reduction: SegmentedSums<T>,
    sums: RowSums<T>,
}

pub(super) fn plan<T: Scalar>(
    ctx: &Context,
    a: &GpuSparse<T>,
    panel: usize,
    options: &SpmvOptions,
) -> Result<Box<dyn PanelKernel<T>>> {
    let coo = panel_as!(a.panels()[panel].storage(), Coo);
    let wg_size = options.workgroup_size_for(ctx, SpmvAlgorithm::CooSegmented);
    Ok(Box::new(CooSegmented {
        reduction: SegmentedSums::new(ctx, coo, wg_size, options)?,
        sums: RowSums::new(ctx, coo.rows())?,
    }))
}

impl<T: Scalar> PanelKernel<T> for CooSegmented<T> {
    fn record(&self, rec: &mut Recorder<'_, '_>, panel: &PanelStorage<T>, run: &Run<'_, T>) -> Result<()> {
        let a = panel_as!(panel, Coo);
        self.sums.clear(rec)?;
        self.reduction.record(rec, a, run.x, self.sums.bind())?;
        self.sums.finish(rec, run)
    }

    fn extra_bytes(&self) -> u64 {
        self.reduction.device_bytes() + self.sums.device_bytes()
    }
}
