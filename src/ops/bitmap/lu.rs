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
use crate::record::Recorder;
use crate::{Error, Result};

/// A planned batched LU of `batch` bitmap matrices of `n × n`, stacked by rows in one
/// [`GpuBitmap`] of `batch·n` rows and `n` columns: `P·A = L·U` per matrix, with
/// - [`l`](Self::l): unit-lower L, its strictly lower entries that are not zero (the
///   diagonal's ones implied, not stored);
/// - [`u`](Self::u): U, its entries on and above the diagonal that are not zero;
/// - per matrix an `info`: 0, or 1 + the first column whose pivot was exactly zero (never
///   divided by; the factorization goes on, as LAPACK's does).
///
/// The factors are outputs of the plan, with room for every entry of their triangles, so
/// that a factorization records into a batch without waiting ([`record`](Self::record));
/// [`finish`](Self::finish) then reads their entry counts and the infos.
pub struct BitmapLu<T: Scalar> {
    ctx: Context,
    n: usize,
    batch: usize,
    lu: BatchedLu<T>,
    dense: GpuDense<T>,
    pivots: GpuVec<u32>,
    info: GpuVec<u32>,
    steps: [StructureSteps; 2],
    /// Bound by the densify in place of the entry arrays it does not write.
    no_entries: [GpuVec<u32>; 2],
    l: GpuBitmap<T>,
    u: GpuBitmap<T>,
}

impl<T: Scalar> BitmapLu<T> {
    /// Plans the factorization: `Pivoting::None` is seed 004's elimination (the pattern of
    /// the factors is the fill of A's), `Pivoting::Partial` LAPACK's `getrf`,
    /// `Pivoting::Tournament` the blocked LU's tournament for large n.
    pub fn new(ctx: &Context, n: usize, batch: usize, pivoting: Pivoting) -> Result<Self> {
        let rows = n
            .checked_mul(batch)
            .ok_or_else(|| Error::InvalidArgument(format!("a batch of {batch} matrices of {n} rows passes usize")))?;
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
            no_entries: [ctx.zeros(1)?, ctx.zeros(1)?],
            l: GpuBitmap::allocate(ctx, rows, n, batch * n * n.saturating_sub(1) / 2)?,
            u: GpuBitmap::allocate(ctx, rows, n, batch * n * (n + 1) / 2)?,
        })
    }

    /// Device bytes the plan holds beyond its input and its factors: the dense batch, the
    /// pivots, the infos, and the dense engine's own ([`BatchedLu::extra_bytes`]).
    pub fn extra_bytes(&self) -> u64 {
        self.dense.byte_len() + self.pivots.byte_len() + self.info.byte_len() + self.lu.extra_bytes()
    }

    /// How the dense engine factors (see [`BatchedLu::describe`]).
    pub fn describe(&self) -> String {
        self.lu.describe()
    }

    /// Records the factorization of `a` into [`l`](Self::l), [`u`](Self::u) and the pivots.
    pub fn record(&mut self, rec: &mut Recorder<'_, '_>, a: &GpuBitmap<T>) -> Result<()> {
        Operands::new(rec.context(), "bitmap lu")?.owned("the plan", self.ctx.id())?.owned("A", a.device_id())?;
        check_len("bitmap lu", "A rows", self.n * self.batch, a.rows())?;
        check_len("bitmap lu", "A columns", self.n, a.cols())?;
        a.record_to_dense(rec, &mut self.dense, &self.no_entries)?;
        self.lu.record_factor_in_place(rec, &mut self.dense, &mut self.pivots, &mut self.info)?;
        let panel = dense_panel(&self.ctx, &self.dense)?;
        let parts = [(&self.l, Part::StrictlyLower, &self.steps[0]), (&self.u, Part::Upper, &self.steps[1])];
        for (out, part, steps) in parts {
            let source = DensePart { layout: DenseLayout::RowMajor, part, block_rows: self.n };
            record_from_dense(rec, panel, source, out, steps)?;
        }
        Ok(())
    }

    /// After a recorded factorization was submitted: waits for it, sets the factors' entry
    /// counts and returns each matrix's info.
    pub fn finish(&mut self) -> Result<Vec<u32>> {
        let mut batch = self.ctx.batch();
        let totals = [batch.read_back(self.steps[0].total())?, batch.read_back(self.steps[1].total())?];
        let info = batch.read_back(&self.info)?;
        batch.submit()?;
        let [l_total, u_total] = totals;
        self.l.set_nnz(l_total.wait()?[0] as usize)?;
        self.u.set_nnz(u_total.wait()?[0] as usize)?;
        info.wait()
    }

    /// Factors `a`: records, submits and [`finish`](Self::finish)es.
    pub fn factor(&mut self, a: &GpuBitmap<T>) -> Result<Vec<u32>> {
        let ctx = self.ctx.clone();
        let mut batch = ctx.batch();
        self.record(&mut batch.recorder(), a)?;
        batch.submit()?;
        self.finish()
    }

    /// L of the last factorization.
    pub fn l(&self) -> &GpuBitmap<T> {
        &self.l
    }

    /// U of the last factorization.
    pub fn u(&self) -> &GpuBitmap<T> {
        &self.u
    }

    /// The pivots of the last factorization (`batch·n`, LAPACK's order of swaps per matrix;
    /// the identity without pivoting).
    pub fn pivots(&self) -> &GpuVec<u32> {
        &self.pivots
    }
}
