//! csr-merge: merge path (Merrill & Garland): equal work per workgroup whatever the row
//! lengths, in one dispatch. Tiles store the rows that lie within them; a row cut by tile
//! boundaries is added up, in a fixed order, by the workgroup that finishes its last piece
//! (deterministic: no float atomics). The partition is an analysis of the matrix, built on
//! the GPU.

use std::sync::Arc;

use super::{panel_as, PanelKernel, Run, SpmvAlgorithm, SpmvOptions};
use crate::analysis::merge_path::MergePartition;
use crate::context::Context;
use crate::element::Scalar;
use crate::gpu::GpuVec;
use crate::kernel::shaders::spmv_csr_merge as kernel;
use crate::kernel::Kernel;
use crate::matrix::{GpuSparse, PanelStorage};
use crate::ops::common::{ready_sums_scratch, recompute_pieces};
use crate::record::Recorder;
use crate::Result;

struct CsrMerge<T: Scalar> {
    kernel: Kernel<kernel::Shader, T>,
    partition: Arc<MergePartition>,
    tiles: usize,
    /// An arrival counter per tile, then two sets of a carry and a head sum per tile as
    /// ready-state words (the layout is the shader's).
    scratch: GpuVec<u32>,
}

/// Workgroup memory of spmv_csr_merge for `elem` bytes per value: row ends, products and
/// partial sums of a tile of wg × items; the scans' keys and sums (the group scan's only
/// without subgroups, counted anyway); subgroup totals of the workgroup sum; four words.
pub(super) fn workgroup_bytes(wg: u32, items: u32, elem: u64) -> u64 {
    let tile = wg as u64 * items as u64;
    (4 + 2 * elem) * tile + 2 * (4 + elem) * wg as u64 + elem * wg as u64 + 16
}

/// Merge items per invocation: 2, or 1 where the device's workgroup memory is small. Six a
/// lane (18 KB a workgroup of 256) left 2 workgroups resident an SM on the H100, whose driver
/// gives an SM 48 KiB of workgroup memory in all: 2 items ran R-MAT 641.5 → 515.7 µs, the
/// dense row 260.2 → 200.9, the uniform matrix 1333.1 → 1167.6 (benches/NOTES.md, session 42).
fn items(ctx: &Context, wg: u32, elem: u64) -> u32 {
    let budget = ctx.limits().max_compute_workgroup_storage_size as u64;
    (1..=MERGE_ITEMS).rev().find(|&items| workgroup_bytes(wg, items, elem) <= budget).unwrap_or(1)
}

/// The merge items a lane takes by default.
const MERGE_ITEMS: u32 = 2;

pub(super) fn plan<T: Scalar>(
    ctx: &Context,
    a: &GpuSparse<T>,
    panel: usize,
    options: &SpmvOptions,
) -> Result<Box<dyn PanelKernel<T>>> {
    let csr = panel_as!(a.panels()[panel].storage(), Csr);
    let wg_size = options.workgroup_size_for(ctx, SpmvAlgorithm::CsrMerge, a.panels()[panel].rows().len());
    let items = options.merge_items.unwrap_or_else(|| items(ctx, wg_size, T::KIND.size()));
    let tile = wg_size * items;
    let name = format!("merge-path partition (panel {panel}, tiles of {tile})");
    let tiles = MergePartition::tiles(csr, tile);
    let partition = a.structure().get_or_build(&name, || MergePartition::build(ctx, csr, tile))?;
    Ok(Box::new(CsrMerge {
        kernel: ctx.kernel::<kernel::Shader, T>(
            Default::default(),
            kernel::Overrides { wg_size, items, ..Default::default() },
        )?,
        tiles,
        scratch: ready_sums_scratch::<T>(ctx, tiles, 2 * tiles)?,
        partition,
    }))
}

impl<T: Scalar> PanelKernel<T> for CsrMerge<T> {
    fn record(&self, rec: &mut Recorder<'_, '_>, panel: &PanelStorage<T>, run: &Run<'_, T>) -> Result<()> {
        let a = panel_as!(panel, Csr);
        let params = kernel::Params {
            rows: run.rows as u32,
            nnz: a.nnz() as u32,
            tiles: self.tiles as u32,
            recompute: recompute_pieces(),
            scaling: run.scaling.params,
        };
        let bindings = kernel::Bindings {
            row_offsets: a.row_offsets().bind(),
            col_indices: a.col_indices().bind(),
            values: a.values().bind(),
            x: run.x,
            tile_rows: self.partition.tile_rows.bind(),
            alpha_dev: run.scaling.alpha_dev,
            beta_dev: run.scaling.beta_dev,
            y: run.y,
            scratch: self.scratch.bind(),
        };
        rec.dispatch(&self.kernel, params, bindings, self.tiles as u64)
    }

    fn extra_bytes(&self) -> u64 {
        self.scratch.byte_len() + crate::matrix::Analysis::device_bytes(&*self.partition)
    }
}
