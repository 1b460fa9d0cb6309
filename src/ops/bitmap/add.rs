//! `C = A ± B` on bitmaps (seed 004): C's flags are the OR of A's and B's; per position,
//! both stored: `a ± b`; only A: `a`; only B: `±b`. A position stored in both whose values
//! cancel stays stored (with value 0), as the pattern rule says.

use super::StructureSteps;
use crate::context::Context;
use crate::element::Scalar;
use crate::kernel::shaders::bitmap_add;
use crate::matrix::GpuBitmap;
use crate::ops::common::{check_len, Operands};
use crate::Result;

/// `A + B`, a new bitmap (submitted and waited for: the entry count sizes the result).
/// Operands of different shapes are refused ([`crate::Error::DimensionMismatch`]).
pub fn add<T: Scalar>(ctx: &Context, a: &GpuBitmap<T>, b: &GpuBitmap<T>) -> Result<GpuBitmap<T>> {
    add_or_sub(ctx, a, b, false)
}

/// `A − B`, as [`add`].
pub fn sub<T: Scalar>(ctx: &Context, a: &GpuBitmap<T>, b: &GpuBitmap<T>) -> Result<GpuBitmap<T>> {
    add_or_sub(ctx, a, b, true)
}

fn add_or_sub<T: Scalar>(ctx: &Context, a: &GpuBitmap<T>, b: &GpuBitmap<T>, subtract: bool) -> Result<GpuBitmap<T>> {
    let op = if subtract { "bitmap sub" } else { "bitmap add" };
    Operands::new(ctx, op)?.owned("A", a.device_id())?.owned("B", b.device_id())?;
    check_len(op, "B rows", a.rows(), b.rows())?;
    check_len(op, "B columns", a.cols(), b.cols())?;
    let (rows, cols) = (a.rows(), a.cols());
    // At most every entry of A and of B (and at most every position).
    let capacity = (a.nnz() + b.nnz()).min(rows.saturating_mul(cols));
    let mut c = GpuBitmap::allocate(ctx, rows, cols, capacity)?;
    let steps = StructureSteps::new(ctx, rows, cols)?;
    let kernel = ctx.kernel::<bitmap_add::Shader, T>(Default::default(), Default::default())?;
    let mut batch = ctx.batch();
    {
        let mut rec = batch.recorder();
        steps.record(&mut rec, &c, Some((a, b)))?;
        let params = bitmap_add::Params {
            rows: rows as u32,
            words: c.words_per_row() as u32,
            blocks: c.blocks_per_row() as u32,
            subtract: subtract as u32,
        };
        let bindings = bitmap_add::Bindings {
            a_flags: a.flags().bind(),
            a_rank: a.rank_directory().bind(),
            a_values: a.values().bind(),
            b_flags: b.flags().bind(),
            b_rank: b.rank_directory().bind(),
            b_values: b.values().bind(),
            c_rank: c.rank_directory().bind(),
            c_values: c.values().bind(),
        };
        rec.dispatch_items(&kernel, params, bindings, (rows * c.words_per_row()) as u64)?;
    }
    let total = batch.read_back(steps.total())?;
    batch.submit()?;
    c.set_nnz(total.wait()?[0] as usize)?;
    Ok(c)
}
