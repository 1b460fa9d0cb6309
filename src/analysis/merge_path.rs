//! The merge-path partition of a CSR matrix (Merrill & Garland): where each tile of
//! `tile` merge items (row ends + nonzeros) starts, as a row coordinate. Built on the GPU
//! once per pattern, panel and tile size.

use crate::context::Context;
use crate::element::Scalar;
use crate::gpu::GpuVec;
use crate::kernel::shaders::spmv_csr_merge_partition as partition;
use crate::matrix::{Analysis, GpuCsr};
use crate::Result;

/// The row where each tile boundary crosses the merge path.
pub(crate) struct MergePartition {
    /// `tiles + 1` row coordinates.
    pub(crate) tile_rows: GpuVec<u32>,
}

impl Analysis for MergePartition {
    fn device_bytes(&self) -> u64 {
        self.tile_rows.byte_len()
    }
}

impl MergePartition {
    /// Tiles of `a` for `tile` merge items each.
    pub(crate) fn tiles<T: Scalar>(a: &GpuCsr<T>, tile: u32) -> usize {
        (a.rows() + a.nnz()).div_ceil(tile as usize)
    }

    pub(crate) fn build<T: Scalar>(ctx: &Context, a: &GpuCsr<T>, tile: u32) -> Result<Self> {
        let tiles = Self::tiles(a, tile);
        let tile_rows = ctx.zeros::<u32>(tiles + 1)?;
        let kernel = ctx.plain_kernel::<partition::Shader>(Default::default(), Default::default())?;
        let mut batch = ctx.batch();
        batch.recorder().dispatch_items(
            &kernel,
            partition::Params { rows: a.rows() as u32, nnz: a.nnz() as u32, boundaries: tiles as u32 + 1, tile },
            partition::Bindings { row_offsets: a.row_offsets().bind(), tile_rows: tile_rows.bind() },
            tiles as u64 + 1,
        )?;
        // Submitted now, read by the plan's runs later: queue order is enough, no wait.
        batch.submit()?;
        Ok(MergePartition { tile_rows })
    }
}
