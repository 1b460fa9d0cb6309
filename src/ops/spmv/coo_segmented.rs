//! coo-segmented: seed 000's segmented reduction, in one dispatch. Entries, sorted by row,
//! are cut into intervals of equal length, one per group of lanes; a row within an interval
//! is stored by it, a row across intervals is added up, in a fixed order, by the group that
//! finishes its last piece (`shaders/shared/coo_walk.wgsl`), and empty rows by workgroups of
//! their own. No float atomics: deterministic. HYB runs the same walk for its COO tail.

use std::sync::Arc;

use super::{panel_as, PanelKernel, Run, SpmvAlgorithm, SpmvOptions};
use crate::analysis::coo_intervals::CooIntervals;
use crate::context::Context;
use crate::element::Scalar;
use crate::gpu::GpuVec;
use crate::kernel::shaders::spmv_coo_segmented as kernel;
use crate::kernel::Kernel;
use crate::matrix::{GpuCoo, GpuSparse, PanelStorage};
use crate::ops::common::{ready_sums_scratch, recompute_pieces, Groups};
use crate::record::Recorder;
use crate::Result;

/// The intervals of one COO matrix (a panel, or HYB's tail) and their scratch.
pub(crate) struct Intervals {
    pub(crate) groups: Groups,
    pub(crate) interval_len: u32,
    /// Entries before an interval that it walks too when its first row began there (the
    /// shader's `window`): 32 or the largest group, at most the interval, a whole number of
    /// steps.
    pub(crate) window: u32,
    pub(crate) count: usize,
    pub(crate) analysis: Arc<CooIntervals>,
    /// An arrival counter per interval, then two sets of a carry and a head sum per interval
    /// as ready-state words (the layout is the shader's).
    pub(crate) scratch: GpuVec<u32>,
}

impl Intervals {
    /// `source` names the COO matrix among `a`'s analyses (`panel 2`, `panel 0 tail`).
    pub(crate) fn new<T: Scalar>(
        ctx: &Context,
        a: &GpuSparse<T>,
        coo: &GpuCoo<T>,
        source: &str,
        wg_size: u32,
        options: &SpmvOptions,
    ) -> Result<Self> {
        let groups = Groups::new(ctx, wg_size);
        let interval_len = groups.max_size * options.coo_steps_for(coo.nnz());
        let count = CooIntervals::count(coo.nnz(), interval_len);
        let name = CooIntervals::name(source, interval_len);
        let analysis = a.structure().get_or_build(&name, || CooIntervals::build(ctx, coo, interval_len))?;
        Ok(Intervals {
            groups,
            interval_len,
            window: groups.max_size.max(32).min(interval_len),
            count,
            analysis,
            scratch: ready_sums_scratch::<T>(ctx, count, 2 * count)?,
        })
    }

    pub(crate) fn workgroups(&self) -> u64 {
        self.groups.workgroups(self.count as u64)
    }

    pub(crate) fn device_bytes(&self) -> u64 {
        self.scratch.byte_len() + crate::matrix::Analysis::device_bytes(&*self.analysis)
    }
}

struct CooSegmented<T: Scalar> {
    kernel: Kernel<kernel::Shader, T>,
    intervals: Intervals,
}

pub(super) fn plan<T: Scalar>(
    ctx: &Context,
    a: &GpuSparse<T>,
    panel: usize,
    options: &SpmvOptions,
) -> Result<Box<dyn PanelKernel<T>>> {
    let coo = panel_as!(a.panels()[panel].storage(), Coo);
    let wg_size = options.workgroup_size_for(ctx, SpmvAlgorithm::CooSegmented, a.panels()[panel].rows().len());
    let intervals = Intervals::new(ctx, a, coo, &format!("panel {panel}"), wg_size, options)?;
    let overrides = kernel::Overrides { wg_size, tasks_per_workgroup: intervals.groups.tasks_per_workgroup };
    Ok(Box::new(CooSegmented { kernel: ctx.kernel::<kernel::Shader, T>(Default::default(), overrides)?, intervals }))
}

impl<T: Scalar> PanelKernel<T> for CooSegmented<T> {
    fn record(&self, rec: &mut Recorder<'_, '_>, panel: &PanelStorage<T>, run: &Run<'_, T>) -> Result<()> {
        let a = panel_as!(panel, Coo);
        let intervals = &self.intervals;
        let interval_workgroups = intervals.workgroups();
        let row_words = run.rows.div_ceil(32) as u64;
        let params = kernel::Params {
            rows: run.rows as u32,
            coo_nnz: a.nnz() as u32,
            intervals: intervals.count as u32,
            interval_len: intervals.interval_len,
            window: intervals.window,
            interval_workgroups: interval_workgroups as u32,
            recompute: recompute_pieces(),
            scaling: run.scaling.params,
        };
        let bindings = kernel::Bindings {
            coo_rows: a.row_indices().bind(),
            coo_cols: a.col_indices().bind(),
            coo_values: a.values().bind(),
            x: run.x,
            bounds: intervals.analysis.bounds.bind(),
            occupied: intervals.analysis.occupied.bind(),
            alpha_dev: run.scaling.alpha_dev,
            beta_dev: run.scaling.beta_dev,
            y: run.y,
            scratch: intervals.scratch.bind(),
        };
        let workgroups = interval_workgroups + row_words.div_ceil(self.kernel.workgroup_size() as u64);
        rec.dispatch(&self.kernel, params, bindings, workgroups)
    }

    fn extra_bytes(&self) -> u64 {
        self.intervals.device_bytes()
    }
}
