//! Ops on the bitmap format of seed 004 ([`GpuBitmap`]): conversions on the GPU, element
//! access, `A ± B`, `A·B`, SpMV and batched LU.
//!
//! Ops whose output pattern the GPU decides (`A ± B`, `A·B`, LU, conversions from COO and
//! dense) build it in the same steps: the output's flags, then the popcount of each rank
//! block, an exclusive scan of those counts (the directory then holds each block's absolute
//! position, and the row starts follow), then the values, each written at its position.
//! They submit their work and wait for the entry count (`A·B` with room for more than 4 MiB
//! of C's values waits once more, between its pattern and its values, to allocate no more
//! than the values it has).

mod access;
mod add;
mod convert;
mod lu;
mod multiply;
mod spmv;

pub use access::{AccessReport, ElementAccess};
pub use add::{add, sub, BitmapSum};
pub use lu::BitmapLu;
pub use multiply::{multiply, BitmapProduct, MultiplyAlgorithm};
pub use spmv::BitmapSpmv;

use crate::analysis::scan::Scan;
use crate::context::Context;
use crate::element::Scalar;
use crate::gpu::GpuVec;
use crate::kernel::shaders::bitmap_rank;
use crate::kernel::Kernel;
use crate::matrix::GpuBitmap;
use crate::record::Recorder;
use crate::Result;

/// The steps that follow an output's flags: block popcounts (with `or`, of the OR of two
/// operands' flags, stored as the output's), their scan, the row starts. `total` then holds
/// the entry count.
pub(crate) struct StructureSteps {
    count: Kernel<bitmap_rank::Shader>,
    count_or: Kernel<bitmap_rank::Shader>,
    offsets: Kernel<bitmap_rank::Shader>,
    scan: Scan,
    total: GpuVec<u32>,
}

impl StructureSteps {
    /// Steps for bitmaps of `rows × cols`.
    pub(crate) fn new(ctx: &Context, rows: usize, cols: usize) -> Result<Self> {
        let kernel =
            |count, or| ctx.plain_kernel::<bitmap_rank::Shader>(bitmap_rank::Flags { count, or }, Default::default());
        Ok(StructureSteps {
            count: kernel(true, false)?,
            count_or: kernel(true, true)?,
            offsets: kernel(false, false)?,
            scan: Scan::new(ctx, rows * crate::format::blocks_per_row(cols))?,
            total: ctx.zeros(1)?,
        })
    }

    /// Records the steps for `m`, whose flags are set (or, with `or`, are to be formed as
    /// the OR of those two matrices' flags, of `m`'s shape).
    pub(crate) fn record<T: Scalar>(
        &self,
        rec: &mut Recorder<'_, '_>,
        m: &GpuBitmap<T>,
        or: Option<(&GpuBitmap<T>, &GpuBitmap<T>)>,
    ) -> Result<()> {
        let (rows, blocks) = (m.rows(), m.blocks_per_row());
        let params = bitmap_rank::Params { rows: rows as u32, words: m.words_per_row() as u32, blocks: blocks as u32 };
        let (count, a, b) = match or {
            Some((a, b)) => (&self.count_or, a.flags(), b.flags()),
            None => (&self.count, &self.total, &self.total),
        };
        rec.dispatch_items(count, params, self.bindings(m, a, b), (rows * blocks) as u64)?;
        self.scan.record(rec, m.rank_directory(), rows * blocks, &self.total)?;
        rec.dispatch_items(&self.offsets, params, self.bindings(m, &self.total, &self.total), rows as u64 + 1)
    }

    fn bindings<'a, T: Scalar>(
        &'a self,
        m: &'a GpuBitmap<T>,
        a: &'a GpuVec<u32>,
        b: &'a GpuVec<u32>,
    ) -> bitmap_rank::Bindings<'a> {
        bitmap_rank::Bindings {
            a_flags: a.bind(),
            b_flags: b.bind(),
            flags: m.flags().bind(),
            rank: m.rank_directory().bind(),
            row_offsets: m.row_offsets().bind(),
            total: self.total.bind(),
        }
    }

    /// The entry count, once the recorded steps ran.
    pub(crate) fn total(&self) -> &GpuVec<u32> {
        &self.total
    }
}
