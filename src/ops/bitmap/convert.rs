//! Conversions between the bitmap format and CSR, COO and dense, on the GPU.

use super::StructureSteps;
use crate::context::Context;
use crate::element::Scalar;
use crate::format::{check_flag_bound, BitmapOptions};
use crate::gpu::GpuVec;
use crate::kernel::shaders::{bitmap_entries, bitmap_export, bitmap_from_dense, bitmap_transpose};
use crate::matrix::{DenseLayout, Format, GpuBitmap, GpuCoo, GpuCsr, GpuDense, GpuSparse, PanelStorage};
use crate::record::Recorder;
use crate::{Error, Result};

impl<T: Scalar> GpuBitmap<T> {
    /// The bitmap form of a CSR or COO matrix on the GPU (repeated COO positions add up, in
    /// entry order), refused as the host conversion is when the flags would pass `options`'
    /// bound ([`crate::FormatError::BitmapFlagsTooLarge`]). The matrix must be in one row panel.
    pub fn from_sparse(ctx: &Context, a: &GpuSparse<T>, options: &BitmapOptions) -> Result<Self> {
        ctx.check_owner("GpuBitmap::from_sparse", a.device_id())?;
        let (rows, cols) = (a.rows(), a.cols());
        check_flag_bound::<T>(rows, cols, a.nnz(), options)?;
        // A lane walks a row's entries (COO: after two searches for the row's range).
        let longest = a.stats().max_len as u64;
        let walk = longest + 2 * (usize::BITS - a.nnz().leading_zeros()) as u64 + 4;
        ctx.check_loop_iterations(|| format!("a bitmap from rows of {longest} entries"), walk)?;
        let mut out = GpuBitmap::allocate(ctx, rows, cols, a.nnz())?;
        let Some(panel) = single_panel(ctx, a)? else {
            return Ok(out);
        };
        let (row_offsets, row_indices, col_indices, values, coo) = match panel {
            PanelStorage::Csr(m) => (m.row_offsets(), m.col_indices(), m.col_indices(), m.values(), false),
            PanelStorage::Coo(m) => (m.row_indices(), m.row_indices(), m.col_indices(), m.values(), true),
            _ => {
                return Err(Error::InvalidArgument(format!(
                    "GpuBitmap::from_sparse converts CSR and COO, not {}",
                    a.format().name()
                )))
            }
        };
        let steps = StructureSteps::new(ctx, rows, cols)?;
        let kernel = |values_step| {
            ctx.kernel::<bitmap_entries::Shader, T>(
                bitmap_entries::Flags { coo, values: values_step },
                Default::default(),
            )
        };
        let params = bitmap_entries::Params {
            rows: rows as u32,
            words: out.words_per_row() as u32,
            blocks: out.blocks_per_row() as u32,
            nnz: a.nnz() as u32,
        };
        let bindings = || bitmap_entries::Bindings {
            row_offsets: row_offsets.bind(),
            row_indices: row_indices.bind(),
            col_indices: col_indices.bind(),
            values: values.bind(),
            flags: out.flags().bind(),
            rank: out.rank_directory().bind(),
            out: out.values().bind(),
        };
        let mut batch = ctx.batch();
        {
            let mut rec = batch.recorder();
            rec.dispatch_items(&kernel(false)?, params, bindings(), rows as u64)?;
            steps.record(&mut rec, &out, None)?;
            rec.dispatch_items(&kernel(true)?, params, bindings(), rows as u64)?;
        }
        let total = batch.read_back(steps.total())?;
        batch.submit()?;
        out.set_nnz(total.wait()?[0] as usize)?;
        Ok(out)
    }

    /// The same entries as a [`GpuSparse`] in CSR or COO (`format`), built on the GPU. The
    /// pattern is read back once for the matrix's row statistics and fingerprint (what
    /// [`GpuSparse::update_values`] checks).
    pub fn to_sparse(&self, ctx: &Context, format: Format) -> Result<GpuSparse<T>> {
        ctx.check_owner("GpuBitmap::to_sparse", self.device_id())?;
        let with_rows = match format {
            Format::Csr => false,
            Format::Coo => true,
            _ => {
                return Err(Error::InvalidArgument(format!(
                    "GpuBitmap::to_sparse builds CSR or COO, not {}",
                    format.name()
                )))
            }
        };
        let (row_indices, col_indices) = (ctx.zeros::<u32>(self.nnz())?, ctx.zeros::<u32>(self.nnz())?);
        let values = ctx.zeros::<T>(self.nnz())?;
        let mut batch = ctx.batch();
        {
            let mut rec = batch.recorder();
            self.record_export(&mut rec, false, with_rows, &row_indices, &col_indices, ctx.unused::<T>()?, false)?;
            crate::ops::blas1::copy_range(
                &mut rec,
                self.values().bind_range(0..self.nnz()),
                values.bind(),
                self.nnz() as u64 * T::KIND.size(),
            )?;
        }
        batch.submit()?;
        let offsets = self.row_offsets().read_blocking()?;
        let columns = col_indices.read_blocking()?;
        let offsets_copy = ctx.upload(&offsets)?;
        let storage = if with_rows {
            PanelStorage::Coo(GpuCoo::from_parts(self.rows(), row_indices, col_indices, values))
        } else {
            PanelStorage::Csr(GpuCsr::from_parts(self.rows(), offsets_copy, col_indices, values))
        };
        Ok(GpuSparse::from_device_panel(ctx, self.cols(), storage, &offsets, &columns))
    }

    /// The bitmap form of a dense matrix on the GPU (entries not exactly zero; NaN kept).
    /// The matrix must be in one panel.
    pub fn from_dense(ctx: &Context, a: &GpuDense<T>) -> Result<Self> {
        ctx.check_owner("GpuBitmap::from_dense", a.device_id())?;
        let panel = dense_panel(ctx, a)?;
        let steps = StructureSteps::new(ctx, a.rows(), a.cols())?;
        let mut out = GpuBitmap::allocate(ctx, a.rows(), a.cols(), a.rows() * a.cols())?;
        let mut batch = ctx.batch();
        {
            let mut rec = batch.recorder();
            let part = DensePart { layout: a.layout(), part: Part::All, block_rows: a.rows() };
            record_from_dense(&mut rec, panel, part, &out, &steps, false)?;
        }
        let total = batch.read_back(steps.total())?;
        batch.submit()?;
        out.set_nnz(total.wait()?[0] as usize)?;
        Ok(out)
    }

    /// The dense form on the GPU, in `layout`; refused past one panel.
    pub fn to_dense(&self, ctx: &Context, layout: DenseLayout) -> Result<GpuDense<T>> {
        ctx.check_owner("GpuBitmap::to_dense", self.device_id())?;
        let mut dense = GpuDense::zeros(ctx, self.rows(), self.cols(), layout)?;
        dense_panel(ctx, &dense)?;
        let no_entries = [ctx.zeros::<u32>(1)?, ctx.zeros::<u32>(1)?];
        let mut batch = ctx.batch();
        self.record_to_dense(&mut batch.recorder(), &mut dense, &no_entries)?;
        batch.submit()?;
        Ok(dense)
    }

    /// The transpose, built on the GPU (an atomic OR of each entry's flag into the
    /// transpose's rows, its structure steps, then each value at its place).
    pub fn transpose(&self, ctx: &Context) -> Result<GpuBitmap<T>> {
        ctx.check_owner("GpuBitmap::transpose", self.device_id())?;
        let t = GpuBitmap::allocate(ctx, self.cols(), self.rows(), self.nnz())?;
        let steps = StructureSteps::new(ctx, t.rows(), t.cols())?;
        let mut batch = ctx.batch();
        {
            let mut rec = batch.recorder();
            self.record_transpose(&mut rec, &t, false)?;
            steps.record(&mut rec, &t, None)?;
            self.record_transpose(&mut rec, &t, true)?;
        }
        batch.submit()?;
        let mut t = t;
        t.set_nnz(self.nnz())?;
        Ok(t)
    }

    /// Records a step of the transpose into `t` (allocated for it): its flags, or (`values`,
    /// after its structure steps) its values.
    pub(crate) fn record_transpose(&self, rec: &mut Recorder<'_, '_>, t: &GpuBitmap<T>, values: bool) -> Result<()> {
        let ctx = rec.context().clone();
        let kernel =
            ctx.kernel::<bitmap_transpose::Shader, T>(bitmap_transpose::Flags { values }, Default::default())?;
        let params = bitmap_transpose::Params {
            rows: self.rows() as u32,
            words: self.words_per_row() as u32,
            blocks: self.blocks_per_row() as u32,
            t_words: t.words_per_row() as u32,
            t_blocks: t.blocks_per_row() as u32,
        };
        let bindings = bitmap_transpose::Bindings {
            b_flags: self.flags().bind(),
            b_rank: self.rank_directory().bind(),
            b_values: self.values().bind(),
            t_flags: t.flags().bind(),
            t_rank: t.rank_directory().bind(),
            t_values: t.values().bind(),
        };
        rec.dispatch_items(&kernel, params, bindings, (self.rows() * self.words_per_row()) as u64)
    }

    /// Records `dense ← this matrix` (every element written), `dense` of its shape in one panel.
    /// `no_entries`: two distinct vectors bound in place of the entry arrays the dense export
    /// does not write (both are bound writable, so they cannot be one), kept by the caller.
    pub(crate) fn record_to_dense(
        &self,
        rec: &mut Recorder<'_, '_>,
        dense: &mut GpuDense<T>,
        no_entries: &[GpuVec<u32>; 2],
    ) -> Result<()> {
        let ctx = rec.context().clone();
        let panel = dense_panel(&ctx, dense)?;
        self.record_export(
            rec,
            true,
            false,
            &no_entries[0],
            &no_entries[1],
            panel,
            dense.layout() == DenseLayout::ColMajor,
        )
    }

    /// Records each entry's column into `cols` (room for the entries; CSR's column indices,
    /// the values staying where they are). `no_rows`: a vector bound in place of the row
    /// indices this export does not write, other than `cols`.
    pub(crate) fn record_columns(
        &self,
        rec: &mut Recorder<'_, '_>,
        cols: &GpuVec<u32>,
        no_rows: &GpuVec<u32>,
    ) -> Result<()> {
        let ctx = rec.context().clone();
        self.record_export(rec, false, false, no_rows, cols, ctx.unused::<T>()?, false)
    }

    #[allow(clippy::too_many_arguments)]
    fn record_export(
        &self,
        rec: &mut Recorder<'_, '_>,
        dense_out: bool,
        with_rows: bool,
        row_indices: &GpuVec<u32>,
        col_indices: &GpuVec<u32>,
        dense: &GpuVec<T>,
        col_major: bool,
    ) -> Result<()> {
        let ctx = rec.context().clone();
        let kernel =
            ctx.kernel::<bitmap_export::Shader, T>(bitmap_export::Flags { dense: dense_out }, Default::default())?;
        let params = bitmap_export::Params {
            rows: self.rows() as u32,
            cols: self.cols() as u32,
            words: self.words_per_row() as u32,
            blocks: self.blocks_per_row() as u32,
            with_rows: with_rows as u32,
            col_major: col_major as u32,
        };
        let bindings = bitmap_export::Bindings {
            flags: self.flags().bind(),
            rank: self.rank_directory().bind(),
            values: self.values().bind(),
            row_indices: row_indices.bind(),
            col_indices: col_indices.bind(),
            dense: dense.bind(),
        };
        rec.dispatch_items(&kernel, params, bindings, (self.rows() * self.words_per_row()) as u64)
    }
}

/// Which part of each block of rows a dense-to-bitmap conversion keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Part {
    /// Every entry.
    All,
    /// Strictly below each block's diagonal (the L of an LU).
    StrictlyLower,
    /// On and above it (the U).
    Upper,
}

/// A dense source: its layout, the part kept, and the rows of each block (the matrices of
/// a stacked batch).
#[derive(Debug, Clone, Copy)]
pub(crate) struct DensePart {
    pub(crate) layout: DenseLayout,
    pub(crate) part: Part,
    pub(crate) block_rows: usize,
}

/// Records `out ← the bitmap of dense` (`out` allocated with room for the entries): its
/// flags (those of the values that are not zero, unless `flags_set`: a pattern given), the
/// structure steps, the values at the flags.
pub(crate) fn record_from_dense<T: Scalar>(
    rec: &mut Recorder<'_, '_>,
    dense: &GpuVec<T>,
    source: DensePart,
    out: &GpuBitmap<T>,
    steps: &StructureSteps,
    flags_set: bool,
) -> Result<()> {
    if !flags_set {
        record_dense_pass(rec, dense, source, out, false)?;
    }
    steps.record(rec, out, None)?;
    record_dense_pass(rec, dense, source, out, true)
}

/// One pass of `bitmap_from_dense.wgsl`: the flags, or (`values`) the values at them.
fn record_dense_pass<T: Scalar>(
    rec: &mut Recorder<'_, '_>,
    dense: &GpuVec<T>,
    source: DensePart,
    out: &GpuBitmap<T>,
    values: bool,
) -> Result<()> {
    let ctx = rec.context().clone();
    let kernel = ctx.kernel::<bitmap_from_dense::Shader, T>(bitmap_from_dense::Flags { values }, Default::default())?;
    let params = bitmap_from_dense::Params {
        rows: out.rows() as u32,
        cols: out.cols() as u32,
        words: out.words_per_row() as u32,
        blocks: out.blocks_per_row() as u32,
        col_major: (source.layout == DenseLayout::ColMajor) as u32,
        part: match source.part {
            Part::All => 0,
            Part::StrictlyLower => 1,
            Part::Upper => 2,
        },
        n: source.block_rows.max(1) as u32,
    };
    let bindings = bitmap_from_dense::Bindings {
        dense: dense.bind(),
        flags: out.flags().bind(),
        rank: out.rank_directory().bind(),
        out: out.values().bind(),
    };
    rec.dispatch_items(&kernel, params, bindings, (out.rows() * out.words_per_row()) as u64)
}

/// The one panel of a sparse matrix (`None` without rows); more panels are refused.
fn single_panel<'a, T: Scalar>(ctx: &Context, a: &'a GpuSparse<T>) -> Result<Option<&'a PanelStorage<T>>> {
    match a.panels() {
        [] => Ok(None),
        [panel] => Ok(Some(panel.storage())),
        panels => Err(Error::LimitExceeded {
            what: format!("a bitmap of a matrix in {} row panels", panels.len()),
            limit: "max_storage_buffer_binding_size",
            requested: a.device_bytes(),
            max: ctx.limits().max_storage_buffer_binding_size,
        }),
    }
}

/// The one panel of a dense matrix; more panels are refused.
pub(crate) fn dense_panel<'a, T: Scalar>(ctx: &Context, a: &'a GpuDense<T>) -> Result<&'a GpuVec<T>> {
    match a.panels() {
        [panel] => Ok(panel),
        panels => Err(Error::LimitExceeded {
            what: format!("a bitmap conversion of a dense matrix in {} panels", panels.len()),
            limit: "max_storage_buffer_binding_size",
            requested: a.byte_len(),
            max: ctx.limits().max_storage_buffer_binding_size,
        }),
    }
}
