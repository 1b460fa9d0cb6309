//! What the sparse × dense ops (SpMM, SDDMM) share: the blocks of A's rows a dispatch runs
//! on, their row decompositions, and the binding of a dense operand gathered by column.
//!
//! A dense operand that follows A's rows (C of SpMM, B1 of SDDMM) may be in row panels
//! (`GpuDense`), as A may: a block is a run of rows within one panel of each, so that both
//! can be bound at the block's offset. The operand gathered by A's column indices (B of
//! SpMM, B2 of SDDMM) is bound whole, up to four panels, which the kernels choose between
//! (`shaders/shared/gathered_rows.wgsl`).

use std::ops::Range;
use std::sync::Arc;

use crate::analysis::row_split::RowSplit;
use crate::analysis::transpose::Transpose;
use crate::context::Context;
use crate::element::Scalar;
use crate::gpu::{Bind, GpuVec};
use crate::matrix::{DenseLayout, GpuDense, GpuSparse, PanelStorage};
use crate::ops::TileOptions;
use crate::{Error, Result};

/// Tasks (groups of rows, chunks) a default tiling leaves at least where the matrix allows:
/// a large GPU needs ~10⁴ of them in flight (an H100 holds 132 SMs × 64 warps; a task is a
/// slot of up to 32 lanes), and on small matrices a task's serial chain of loads is the time.
pub(crate) const MIN_TASKS: usize = 16384;

/// Panels the kernels can gather from (`gather0`..`gather3`).
pub(crate) const GATHER_PANELS: usize = 4;

/// Rows of A that one dispatch covers: within A's panel `panel` and one panel of the dense
/// operand that follows A's rows.
#[derive(Debug, Clone)]
pub(crate) struct RowBlock {
    pub(crate) panel: usize,
    /// The rows within the panel.
    pub(crate) local: Range<usize>,
    /// The rows of the matrix.
    pub(crate) rows: Range<usize>,
}

/// A's rows cut at its panels and at multiples of `dense_panel_rows` (the panels of a dense
/// operand with A's rows). Empty when A has no rows.
pub(crate) fn row_blocks<T: Scalar>(a: &GpuSparse<T>, dense_panel_rows: usize) -> Vec<RowBlock> {
    a.panels().iter().enumerate().flat_map(|(panel, p)| blocks_of(panel, p.rows(), dense_panel_rows)).collect()
}

/// Rows `rows` of one sparse panel (starting at row `rows.start` of the matrix), cut at
/// multiples of `dense_panel_rows`.
pub(crate) fn blocks_of(panel: usize, rows: Range<usize>, dense_panel_rows: usize) -> Vec<RowBlock> {
    let mut blocks = Vec::new();
    let mut start = rows.start;
    while start < rows.end {
        let end = ((start / dense_panel_rows + 1) * dense_panel_rows).min(rows.end);
        blocks.push(RowBlock { panel, local: start - rows.start..end - rows.start, rows: start..end });
        start = end;
    }
    blocks
}

/// The row decomposition of a block (rows longer than `max_len` in chunks of `chunk_len`),
/// kept with A's analyses; shared with SpMV's csr-split when the block is a whole panel and
/// the lengths agree.
pub(crate) fn block_split<T: Scalar>(
    ctx: &Context,
    a: &GpuSparse<T>,
    block: &RowBlock,
    max_len: u32,
    chunk_len: u32,
) -> Result<Arc<RowSplit>> {
    let PanelStorage::Csr(csr) = a.panels()[block.panel].storage() else {
        return Err(Error::Validation("a row split of a panel that is not CSR".into()));
    };
    let source = format!("panel {}", block.panel);
    kept_split(ctx, a, &source, csr.row_offsets(), block, max_len, chunk_len)
}

/// The row decomposition of a block of the rows of A's transpose, kept like
/// [`block_split`]'s.
pub(crate) fn transpose_split<T: Scalar>(
    ctx: &Context,
    a: &GpuSparse<T>,
    transpose: &Transpose,
    block: &RowBlock,
    max_len: u32,
    chunk_len: u32,
) -> Result<Arc<RowSplit>> {
    kept_split(ctx, a, "transpose", &transpose.row_offsets, block, max_len, chunk_len)
}

fn kept_split<T: Scalar>(
    ctx: &Context,
    a: &GpuSparse<T>,
    source: &str,
    row_offsets: &GpuVec<u32>,
    block: &RowBlock,
    max_len: u32,
    chunk_len: u32,
) -> Result<Arc<RowSplit>> {
    let whole = block.local.len() == row_offsets.len() - 1;
    let name = RowSplit::name(source, (!whole).then_some(&block.local), max_len, chunk_len);
    a.structure().get_or_build(&name, || RowSplit::build(ctx, row_offsets, block.local.clone(), max_len, chunk_len))
}

/// A dense operand gathered by column index, bound as the kernels' `gather0`..`gather3`.
#[derive(Clone, Copy)]
pub(crate) struct Gathered<'a, T: Scalar> {
    pub(crate) panels: [Bind<'a, T>; GATHER_PANELS],
    /// Rows per panel (all but the last).
    pub(crate) panel_rows: u32,
    /// Whether there is more than one panel (the kernels' GATHER_PANELS variant).
    pub(crate) paneled: bool,
}

impl<'a, T: Scalar> Gathered<'a, T> {
    /// `b`'s panels; unused slots bind the first again.
    pub(crate) fn of(op: &'static str, b: &'a GpuDense<T>) -> Result<Self> {
        let panels = b.panels();
        if panels.len() > GATHER_PANELS {
            return Err(Error::LimitExceeded {
                what: format!("{op}: a gathered dense operand of {} panels", panels.len()),
                limit: "max_storage_buffer_binding_size",
                requested: b.byte_len(),
                max: GATHER_PANELS as u64 * panels[0].byte_len(),
            });
        }
        let bind = |p: usize| panels.get(p).unwrap_or(&panels[0]).bind();
        Ok(Gathered {
            panels: [bind(0), bind(1), bind(2), bind(3)],
            panel_rows: b.panel_rows().min(u32::MAX as usize) as u32,
            paneled: panels.len() > 1,
        })
    }
}

/// Refuses a dense operand that is not row-major (the kernels gather rows; a column-major
/// gather would load one element per row, uncoalesced).
pub(crate) fn check_row_major<T: Scalar>(op: &'static str, what: &str, m: &GpuDense<T>) -> Result<()> {
    if m.layout() != DenseLayout::RowMajor {
        return Err(Error::Unsupported(format!("{op}: {what} must be row-major")));
    }
    Ok(())
}

/// Refuses a dense width `k` past 2^32 columns for plan `op` (the kernels index columns in
/// u32), before anything is sized from it.
pub(crate) fn check_width(op: &str, k: usize) -> Result<()> {
    match k > u32::MAX as usize {
        true => Err(Error::InvalidArgument(format!("{op}: k = {k} columns pass 2^32"))),
        false => Ok(()),
    }
}

/// How a sparse × dense plan's kernels run: slots of `lanes` lanes, `workgroup_size / lanes`
/// per workgroup, each taking one segment (`shaders/shared/slots.wgsl`). Resolved from the
/// plan's options, k and the device.
#[derive(Debug, Clone, Copy)]
pub(crate) struct TileShape {
    pub(crate) workgroup_size: u32,
    pub(crate) lanes: u32,
    pub(crate) chunk_len: u32,
}

impl TileShape {
    /// Checks the options of plan `op` for width `k` and resolves their defaults: lanes
    /// k/4 rounded up to a power of two, or with `widest_slots` k (one column a lane), at
    /// most 32 and the smallest subgroup either way; chunks of `default_chunk_len` entries
    /// rounded up to whole tiles of lanes.
    pub(crate) fn resolve(
        ctx: &Context,
        op: &str,
        options: &TileOptions,
        k: usize,
        default_chunk_len: u64,
        widest_slots: bool,
    ) -> Result<Self> {
        let TileOptions { workgroup_size, chunk_len, lanes, .. } = *options;
        let columns_per_lane = if widest_slots { 1 } else { 4 };
        let default_lanes = (k.div_ceil(columns_per_lane).max(1) as u32).next_power_of_two().min(32);
        let bad = |what: String| Err(Error::InvalidArgument(format!("{op}: {what}")));
        let subgroups = ctx.subgroup_size_range();
        let limit = ctx.limits().max_compute_invocations_per_workgroup;
        let wg = workgroup_size.unwrap_or(if subgroups.is_some() { 256 } else { 64 }).min(limit);
        let largest_subgroup = subgroups.map_or(1, |r| r.1);
        if !wg.is_power_of_two() || wg < largest_subgroup.max(32) || wg > limit {
            return bad(format!(
                "workgroup_size {wg} must be a power of two between 32, the subgroup size and the device limit"
            ));
        }
        // Slots must not straddle subgroups; without subgroups, 32 lanes at most.
        let max_lanes = subgroups.map_or(32, |r| r.0).min(wg);
        let lanes = lanes.unwrap_or(default_lanes.min(max_lanes));
        if !lanes.is_power_of_two() || lanes > max_lanes {
            return bad(format!("lanes {lanes} must be a power of two up to {max_lanes}"));
        }
        let chunk_len = chunk_len.unwrap_or(default_chunk_len.next_multiple_of(lanes as u64).min(1 << 24) as u32);
        if chunk_len == 0 || chunk_len % lanes != 0 || chunk_len > 1 << 24 {
            return bad(format!("chunk_len {chunk_len} must be a positive multiple of {lanes} (the lanes) up to 2^24"));
        }
        Ok(TileShape { workgroup_size: wg, lanes, chunk_len })
    }

    /// Slots (groups of lanes) per workgroup.
    pub(crate) fn slots(&self) -> u64 {
        (self.workgroup_size / self.lanes) as u64
    }

    /// Workgroups for `tasks` tasks, one per slot.
    pub(crate) fn workgroups(&self, tasks: u64) -> u64 {
        tasks.div_ceil(self.slots())
    }
}
