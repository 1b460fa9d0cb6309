//! csr-merge: merge path (Merrill & Garland): equal work per workgroup whatever the row
//! lengths. Tiles store the rows they complete into a row-sum vector, rows cut by a tile
//! boundary leave carries added in by a fix-up (deterministic: no atomics), and one axpby
//! pass applies α and β. The partition is an analysis of the matrix, built on the GPU.

use std::sync::Arc;

use super::{panel_as, PanelKernel, RowSums, Run, SpmvAlgorithm, SpmvOptions};
use crate::analysis::merge_path::MergePartition;
use crate::context::Context;
use crate::element::Scalar;
use crate::kernel::shaders::spmv_csr_merge as kernel;
use crate::kernel::Kernel;
use crate::matrix::{GpuSparse, PanelStorage};
use crate::ops::common::Carries;
use crate::record::Recorder;
use crate::Result;

struct CsrMerge<T: Scalar> {
    kernel: Kernel<kernel::Shader, T>,
    partition: Arc<MergePartition>,
    carries: Carries<T>,
    sums: RowSums<T>,
}

/// Workgroup memory of spmv_csr_merge for `elem` bytes per value: row ends, products and
/// partial sums of a tile of wg × items, and the scans' keys and sums (the group scan's only
/// without subgroups, counted anyway).
pub(super) fn workgroup_bytes(wg: u32, items: u32, elem: u64) -> u64 {
    let tile = wg as u64 * items as u64;
    (4 + 2 * elem) * tile + 2 * (4 + elem) * wg as u64
}

/// Merge items per invocation: 6, or fewer where the device's workgroup memory is small.
fn items(ctx: &Context, wg: u32, elem: u64) -> u32 {
    let budget = ctx.limits().max_compute_workgroup_storage_size as u64;
    (1..=6).rev().find(|&items| workgroup_bytes(wg, items, elem) <= budget).unwrap_or(1)
}

pub(super) fn plan<T: Scalar>(
    ctx: &Context,
    a: &GpuSparse<T>,
    panel: usize,
    options: &SpmvOptions,
) -> Result<Box<dyn PanelKernel<T>>> {
    let csr = panel_as!(a.panels()[panel].storage(), Csr);
    let wg_size = options.workgroup_size_for(ctx, SpmvAlgorithm::CsrMerge);
    let items = options.merge_items.unwrap_or_else(|| items(ctx, wg_size, T::KIND.size()));
    let tile = wg_size * items;
    let name = format!("merge-path partition (panel {panel}, tiles of {tile})");
    let partition = a.structure().get_or_build(&name, || MergePartition::build(ctx, csr, tile))?;
    Ok(Box::new(CsrMerge {
        kernel: ctx.kernel::<kernel::Shader, T>(
            Default::default(),
            kernel::Overrides { wg_size, items, ..Default::default() },
        )?,
        carries: Carries::new(ctx, MergePartition::tiles(csr, tile))?,
        sums: RowSums::new(ctx, csr.rows())?,
        partition,
    }))
}

impl<T: Scalar> PanelKernel<T> for CsrMerge<T> {
    fn record(&self, rec: &mut Recorder<'_, '_>, panel: &PanelStorage<T>, run: &Run<'_, T>) -> Result<()> {
        let a = panel_as!(panel, Csr);
        let tiles = self.carries.buffer.len() as u32;
        let params = kernel::Params { rows: run.rows as u32, nnz: a.nnz() as u32, tiles };
        let bindings = kernel::Bindings {
            row_offsets: a.row_offsets().bind(),
            col_indices: a.col_indices().bind(),
            values: a.values().bind(),
            x: run.x,
            tile_rows: self.partition.tile_rows.bind(),
            sums: self.sums.bind(),
            carries: self.carries.buffer.bind(),
        };
        rec.dispatch(&self.kernel, params, bindings, tiles as u64)?;
        self.carries.record_fixup(rec, run.rows, self.sums.bind())?;
        self.sums.finish(rec, run)
    }

    fn extra_bytes(&self) -> u64 {
        self.carries.device_bytes() + self.sums.device_bytes() + crate::matrix::Analysis::device_bytes(&*self.partition)
    }
}
