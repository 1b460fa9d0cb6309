//! csr-split: rows up to a threshold one invocation each, longer rows cut into chunks for
//! groups of lanes, all in one dispatch (chunks first so that their longer work starts
//! early); the group that finishes a long row's last chunk adds the row's chunk sums in
//! order. The chunks are RoDe's row decomposition (seed 002), an analysis of the matrix
//! built on the GPU and shared.

use std::sync::Arc;

use super::{panel_as, PanelKernel, Run, SpmvAlgorithm, SpmvOptions};
use crate::analysis::row_split::RowSplit;
use crate::context::Context;
use crate::element::Scalar;
use crate::gpu::GpuVec;
use crate::kernel::shaders::spmv_csr_split as split;
use crate::kernel::Kernel;
use crate::matrix::{GpuSparse, PanelStorage};
use crate::ops::common::{ready_sums_scratch, recompute_pieces, Groups};
use crate::record::Recorder;
use crate::Result;

struct CsrSplit<T: Scalar> {
    split: Kernel<split::Shader, T>,
    groups: Groups,
    max_len: u32,
    chunk_len: u32,
    decomposition: Arc<RowSplit>,
    /// An arrival counter per long row, then two sets of chunk sums as ready-state words
    /// (the layout is the shader's).
    scratch: GpuVec<u32>,
}

pub(super) fn plan<T: Scalar>(
    ctx: &Context,
    a: &GpuSparse<T>,
    panel: usize,
    options: &SpmvOptions,
) -> Result<Box<dyn PanelKernel<T>>> {
    let csr = panel_as!(a.panels()[panel].storage(), Csr);
    let wg_size = options.workgroup_size_for(ctx, SpmvAlgorithm::CsrSplit, a.panels()[panel].rows().len());
    let groups = Groups::new(ctx, wg_size);
    let max_len = options.split_threshold;
    let chunk_len = groups.max_size * options.chunk_steps;
    let name = RowSplit::name(&format!("panel {panel}"), None, max_len, chunk_len);
    let decomposition = a
        .structure()
        .get_or_build(&name, || RowSplit::build(ctx, csr.row_offsets(), 0..csr.rows(), max_len, chunk_len))?;
    let overrides = split::Overrides { wg_size, tasks_per_workgroup: groups.tasks_per_workgroup };
    Ok(Box::new(CsrSplit {
        split: ctx.kernel::<split::Shader, T>(Default::default(), overrides)?,
        groups,
        max_len,
        chunk_len,
        scratch: ready_sums_scratch::<T>(ctx, decomposition.long_row_count(), decomposition.chunk_count())?,
        decomposition,
    }))
}

impl<T: Scalar> PanelKernel<T> for CsrSplit<T> {
    fn record(&self, rec: &mut Recorder<'_, '_>, panel: &PanelStorage<T>, run: &Run<'_, T>) -> Result<()> {
        let a = panel_as!(panel, Csr);
        let chunks = self.decomposition.chunk_count() as u64;
        let row_workgroups = (run.rows as u64).div_ceil(self.split.workgroup_size() as u64);
        let chunk_workgroups = self.groups.workgroups(chunks);
        let long_rows = self.decomposition.long_row_count() as u64;
        let params = split::Params {
            rows: run.rows as u32,
            max_len: self.max_len,
            chunk_workgroups: chunk_workgroups as u32,
            chunks: chunks as u32,
            chunk_len: self.chunk_len,
            long_rows: long_rows as u32,
            recompute_chunks: recompute_pieces(),
            scaling: run.scaling.params,
        };
        let bindings = split::Bindings {
            row_offsets: a.row_offsets().bind(),
            col_indices: a.col_indices().bind(),
            values: a.values().bind(),
            x: run.x,
            chunks: self.decomposition.chunks.bind(),
            long_rows: self.decomposition.long_rows.bind(),
            alpha_dev: run.scaling.alpha_dev,
            beta_dev: run.scaling.beta_dev,
            y: run.y,
            scratch: self.scratch.bind(),
        };
        rec.dispatch(&self.split, params, bindings, chunk_workgroups + row_workgroups)
    }

    fn extra_bytes(&self) -> u64 {
        self.scratch.byte_len() + crate::matrix::Analysis::device_bytes(&*self.decomposition)
    }
}
