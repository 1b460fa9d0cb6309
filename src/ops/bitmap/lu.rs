//! Batched LU of bitmap matrices (seed 004): each matrix densified, factored by the batched
//! LU engine ([`BatchedLu`]: workgroup memory for small n, the seed's elimination that skips
//! updates where `l_ik` or `u_kj` is zero when not pivoting), and L and U returned as
//! bitmaps with their fill.

use super::convert::{dense_panel, record_from_dense, DensePart, Part};
use super::StructureSteps;
use crate::context::Context;
use crate::element::Scalar;
use crate::gpu::GpuVec;
use crate::matrix::{DenseLayout, GpuBitmap, GpuDense};
use crate::ops::common::{check_len, Operands};
use crate::ops::{BatchedLu, Pivoting};
use crate::Result;

/// The factors of a batch: `P·A = L·U` per matrix, stacked as the input was.
#[derive(Debug)]
pub struct BitmapLuFactors<T: Scalar> {
    /// Unit-lower L, its strictly lower entries that are not zero (the diagonal's ones are
    /// implied, not stored).
    pub l: GpuBitmap<T>,
    /// U, its entries on and above the diagonal that are not zero.
    pub u: GpuBitmap<T>,
    /// Per matrix: 0, or 1 + the first column whose pivot was exactly zero (not divided by).
    pub info: Vec<u32>,
}

/// A planned batched LU of `batch` bitmap matrices of `n × n`, stacked by rows in one
/// [`GpuBitmap`] of `batch·n` rows and `n` columns.
pub struct BitmapLu<T: Scalar> {
    ctx: Context,
    n: usize,
    batch: usize,
    lu: BatchedLu<T>,
    dense: GpuDense<T>,
    pivots: GpuVec<u32>,
    info: GpuVec<u32>,
    steps: [StructureSteps; 2],
}

impl<T: Scalar> BitmapLu<T> {
    /// Plans the factorization: `Pivoting::None` is seed 004's elimination (the pattern of
    /// the factors is the fill of A's), `Pivoting::Partial` LAPACK's `getrf`.
    pub fn new(ctx: &Context, n: usize, batch: usize, pivoting: Pivoting) -> Result<Self> {
        let rows = n.checked_mul(batch).ok_or_else(|| {
            crate::Error::InvalidArgument(format!("a batch of {batch} matrices of {n} rows passes usize"))
        })?;
        let lu = BatchedLu::new(ctx, n, batch, pivoting)?;
        let dense = GpuDense::zeros(ctx, rows, n, DenseLayout::RowMajor)?;
        dense_panel(ctx, &dense)?;
        Ok(BitmapLu {
            ctx: ctx.clone(),
            n,
            batch,
            lu,
            dense,
            pivots: ctx.zeros(rows)?,
            info: ctx.zeros(batch)?,
            steps: [StructureSteps::new(ctx, rows, n)?, StructureSteps::new(ctx, rows, n)?],
        })
    }

    /// How the dense engine factors (see [`BatchedLu::describe`]).
    pub fn describe(&self) -> String {
        self.lu.describe()
    }

    /// Factors the batch: one submission, one wait (the factors' entry counts and `info`).
    pub fn factor(&mut self, a: &GpuBitmap<T>) -> Result<BitmapLuFactors<T>> {
        Operands::new(&self.ctx, "bitmap lu")?.owned("A", a.device_id())?;
        check_len("bitmap lu", "A rows", self.n * self.batch, a.rows())?;
        check_len("bitmap lu", "A columns", self.n, a.cols())?;
        let (ctx, n, rows) = (&self.ctx, self.n, self.n * self.batch);
        let mut l = GpuBitmap::allocate(ctx, rows, n, self.batch * n * n.saturating_sub(1) / 2)?;
        let mut u = GpuBitmap::allocate(ctx, rows, n, self.batch * n * (n + 1) / 2)?;
        let mut batch = ctx.batch();
        {
            let mut rec = batch.recorder();
            a.record_to_dense(&mut rec, &mut self.dense)?;
            self.lu.record_factor_in_place(&mut rec, &mut self.dense, &mut self.pivots, &mut self.info)?;
            let panel = dense_panel(ctx, &self.dense)?;
            for (out, part, steps) in [(&l, Part::StrictlyLower, &self.steps[0]), (&u, Part::Upper, &self.steps[1])] {
                let source = DensePart { layout: DenseLayout::RowMajor, part, block_rows: n };
                record_from_dense(&mut rec, panel, source, out, steps)?;
            }
        }
        let totals = [batch.read_back(self.steps[0].total())?, batch.read_back(self.steps[1].total())?];
        let info = batch.read_back(&self.info)?;
        batch.submit()?;
        let [l_total, u_total] = totals;
        l.set_nnz(l_total.wait()?[0] as usize)?;
        u.set_nnz(u_total.wait()?[0] as usize)?;
        Ok(BitmapLuFactors { l, u, info: info.wait()? })
    }

    /// The pivots of the last factorization (`batch·n`, LAPACK's order of swaps per matrix;
    /// the identity without pivoting).
    pub fn pivots(&self) -> &GpuVec<u32> {
        &self.pivots
    }
}
