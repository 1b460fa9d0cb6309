//! `C = A ± B` on bitmaps (seed 004): C's flags are the OR of A's and B's; per position,
//! both stored: `a ± b`; only A: `a`; only B: `±b`. A position stored in both whose values
//! cancel stays stored (with value 0), as the pattern rule says.

use super::StructureSteps;
use crate::context::Context;
use crate::element::Scalar;
use crate::kernel::shaders::bitmap_add;
use crate::kernel::Kernel;
use crate::matrix::GpuBitmap;
use crate::ops::common::{check_len, Operands};
use crate::record::Recorder;
use crate::{Error, Result};

/// `A + B`, a new bitmap (submitted and waited for: the entry count sizes the result).
/// Operands of different shapes are refused ([`Error::DimensionMismatch`]).
pub fn add<T: Scalar>(ctx: &Context, a: &GpuBitmap<T>, b: &GpuBitmap<T>) -> Result<GpuBitmap<T>> {
    Ok(BitmapSum::new(ctx, a, b, false)?.into_output())
}

/// `A − B`, as [`add`].
pub fn sub<T: Scalar>(ctx: &Context, a: &GpuBitmap<T>, b: &GpuBitmap<T>) -> Result<GpuBitmap<T>> {
    Ok(BitmapSum::new(ctx, a, b, true)?.into_output())
}

/// `C = A ± B` planned for two patterns: [`BitmapSum::new`] builds C (pattern and values,
/// one submission and one wait); [`record`](Self::record) recomputes C's values for new
/// values of A and B with the same patterns (the numeric phase alone, one dispatch).
pub struct BitmapSum<T: Scalar> {
    ctx: Context,
    kernel: Kernel<bitmap_add::Shader, T>,
    subtract: bool,
    patterns: (u64, u64),
    c: GpuBitmap<T>,
}

impl<T: Scalar> BitmapSum<T> {
    /// Computes `A − B` (`subtract`) or `A + B`.
    pub fn new(ctx: &Context, a: &GpuBitmap<T>, b: &GpuBitmap<T>, subtract: bool) -> Result<Self> {
        let op = if subtract { "bitmap sub" } else { "bitmap add" };
        Operands::new(ctx, op)?.owned("A", a.device_id())?.owned("B", b.device_id())?;
        check_len(op, "B rows", a.rows(), b.rows())?;
        check_len(op, "B columns", a.cols(), b.cols())?;
        let (rows, cols) = (a.rows(), a.cols());
        // At most every entry of A and of B (and at most every position).
        let capacity = (a.nnz() + b.nnz()).min(rows.saturating_mul(cols));
        let steps = StructureSteps::new(ctx, rows, cols)?;
        let mut sum = BitmapSum {
            ctx: ctx.clone(),
            kernel: ctx.kernel::<bitmap_add::Shader, T>(Default::default(), Default::default())?,
            subtract,
            patterns: (a.pattern_id(), b.pattern_id()),
            c: GpuBitmap::allocate(ctx, rows, cols, capacity)?,
        };
        let mut batch = ctx.batch();
        {
            let mut rec = batch.recorder();
            steps.record(&mut rec, &sum.c, Some((a, b)))?;
            sum.record_values(&mut rec, a, b)?;
        }
        let total = batch.read_back(steps.total())?;
        batch.submit()?;
        sum.c.set_nnz(total.wait()?[0] as usize)?;
        Ok(sum)
    }

    /// Records C's values again from A's and B's (which must have the planned patterns:
    /// [`Error::InvalidArgument`] otherwise).
    pub fn record(&self, rec: &mut Recorder<'_, '_>, a: &GpuBitmap<T>, b: &GpuBitmap<T>) -> Result<()> {
        Operands::new(rec.context(), "bitmap sum")?
            .owned("the plan", self.ctx.id())?
            .owned("A", a.device_id())?
            .owned("B", b.device_id())?;
        if (a.pattern_id(), b.pattern_id()) != self.patterns {
            return Err(Error::InvalidArgument("BitmapSum::record: A or B is not the matrix planned for".into()));
        }
        self.record_values(rec, a, b)
    }

    fn record_values(&self, rec: &mut Recorder<'_, '_>, a: &GpuBitmap<T>, b: &GpuBitmap<T>) -> Result<()> {
        let c = &self.c;
        let params = bitmap_add::Params {
            rows: c.rows() as u32,
            words: c.words_per_row() as u32,
            blocks: c.blocks_per_row() as u32,
            subtract: self.subtract as u32,
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
        rec.dispatch_items(&self.kernel, params, bindings, (c.rows() * c.words_per_row()) as u64)
    }

    /// C.
    pub fn output(&self) -> &GpuBitmap<T> {
        &self.c
    }

    /// C, the plan dropped.
    pub fn into_output(self) -> GpuBitmap<T> {
        self.c
    }
}
