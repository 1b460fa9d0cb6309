//! Dense matrices on the GPU, the operands of SpMM, SDDMM, GEMV and LU.
//!
//! A matrix larger than one storage binding (or one buffer) is kept in row panels, each its
//! own buffer within the limits: B and C of SpMM at K = 128 on a 4 M-row matrix are 2 GiB,
//! just past the H100's 2 GiB binding limit. Panels hold a multiple of [`PANEL_ALIGN_ROWS`]
//! rows, so that any block of rows starting at such a multiple can be bound at its offset.

use std::ops::Range;

use crate::context::Context;
use crate::element::Scalar;
use crate::format::DenseMatrix;
use crate::gpu::{Bind, DeviceId, GpuVec};
use crate::{Error, Result};

/// Panels (of dense and sparse matrices) start at multiples of this many rows: 64 rows of
/// 4-byte elements are 256 bytes, the largest `min_storage_buffer_offset_alignment`.
pub(crate) const PANEL_ALIGN_ROWS: usize = 64;

/// How a dense matrix lies in memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DenseLayout {
    /// Entry (i, j) at `i * cols + j`.
    RowMajor,
    /// Entry (i, j) at `j * rows + i` (within each row panel: `rows` is the panel's).
    ColMajor,
}

/// A dense `rows × cols` matrix on the GPU, row- or column-major, in row panels when it is
/// larger than one storage binding.
#[derive(Debug)]
pub struct GpuDense<T: Scalar> {
    rows: usize,
    cols: usize,
    layout: DenseLayout,
    /// Rows of every panel but the last.
    panel_rows: usize,
    panels: Vec<GpuVec<T>>,
}

impl<T: Scalar> GpuDense<T> {
    /// Uploads `a` (row-major on the host) in `layout`.
    pub fn upload(ctx: &Context, a: &DenseMatrix<T>, layout: DenseLayout) -> Result<Self> {
        let mut m = Self::zeros(ctx, a.rows(), a.cols(), layout)?;
        m.write(a)?;
        Ok(m)
    }

    /// A `rows × cols` matrix of zeros.
    pub fn zeros(ctx: &Context, rows: usize, cols: usize, layout: DenseLayout) -> Result<Self> {
        ctx.check_element::<T>()?;
        rows.checked_mul(cols)
            .filter(|&len| len <= u32::MAX as usize)
            .ok_or_else(|| Error::InvalidArgument(format!("a {rows} x {cols} matrix has more than 2^32 entries")))?;
        let panel_rows = panel_rows(ctx.limits(), cols, T::stride())?;
        let panels = (0..rows.div_ceil(panel_rows).max(1))
            .map(|p| ctx.zeros((rows - (p * panel_rows).min(rows)).min(panel_rows) * cols))
            .collect::<Result<_>>()?;
        Ok(GpuDense { rows, cols, layout, panel_rows, panels })
    }

    /// Overwrites the matrix with `a` (row-major on the host, of the same shape).
    pub fn write(&mut self, a: &DenseMatrix<T>) -> Result<()> {
        crate::ops::common::check_len("GpuDense::write", "rows", self.rows, a.rows())?;
        crate::ops::common::check_len("GpuDense::write", "columns", self.cols, a.cols())?;
        for (p, panel) in self.panels.iter().enumerate() {
            let rows = self.panel_range(p);
            let data = &a.data()[rows.start * self.cols..rows.end * self.cols];
            match self.layout {
                DenseLayout::RowMajor => panel.write(data)?,
                DenseLayout::ColMajor => panel.write(&transpose(data, rows.len(), self.cols))?,
            }
        }
        Ok(())
    }

    /// Copies the matrix to the host (row-major), waiting on this thread.
    pub fn read_blocking(&self) -> Result<DenseMatrix<T>> {
        let mut data = Vec::with_capacity(self.rows * self.cols);
        for (p, panel) in self.panels.iter().enumerate() {
            let part = panel.read_blocking()?;
            match self.layout {
                DenseLayout::RowMajor => data.extend_from_slice(&part[..self.panel_range(p).len() * self.cols]),
                DenseLayout::ColMajor => data.extend(transpose(&part, self.cols, self.panel_range(p).len())),
            }
        }
        Ok(DenseMatrix::try_new(self.rows, self.cols, data)?)
    }

    /// Rows.
    pub fn rows(&self) -> usize {
        self.rows
    }
    /// Columns.
    pub fn cols(&self) -> usize {
        self.cols
    }
    /// Row- or column-major.
    pub fn layout(&self) -> DenseLayout {
        self.layout
    }
    /// The row panels, each in layout order; one unless the matrix passes a storage binding.
    pub fn panels(&self) -> &[GpuVec<T>] {
        &self.panels
    }
    /// The row panels, to write with vector ops (a fill, a scal).
    pub fn panels_mut(&mut self) -> &mut [GpuVec<T>] {
        &mut self.panels
    }
    /// Rows of every panel but the last (a multiple of 64).
    pub fn panel_rows(&self) -> usize {
        self.panel_rows
    }
    /// The matrix rows panel `p` holds (panics if `p` is not a panel, like slice indexing).
    pub fn panel_range(&self, p: usize) -> Range<usize> {
        (p * self.panel_rows).min(self.rows)..((p + 1) * self.panel_rows).min(self.rows)
    }
    /// Rows per panel of a dense matrix of `cols` columns on `ctx`.
    pub(crate) fn panel_rows_for(ctx: &Context, cols: usize) -> Result<usize> {
        panel_rows(ctx.limits(), cols, T::stride())
    }
    /// Device bytes of the panels.
    pub fn byte_len(&self) -> u64 {
        self.panels.iter().map(GpuVec::byte_len).sum()
    }
    /// The context the matrix lives on.
    pub fn device_id(&self) -> DeviceId {
        self.panels[0].device_id()
    }

    /// Rows `rows`, within one panel, bound at their offset (the caller keeps it aligned: rows
    /// starting at a sparse panel's start or a dense panel's do).
    pub(crate) fn bind_rows(&self, rows: Range<usize>) -> Bind<'_, T> {
        let p = rows.start / self.panel_rows;
        let first = p * self.panel_rows;
        debug_assert!(rows.end <= first + self.panel_rows);
        self.panels[p].bind_range((rows.start - first) * self.cols..(rows.end - first) * self.cols)
    }
}

/// Rows per panel for rows of `cols` elements of `stride` bytes: as many as one binding
/// (and one buffer) holds, a multiple of [`PANEL_ALIGN_ROWS`].
fn panel_rows(limits: &wgpu::Limits, cols: usize, stride: u64) -> Result<usize> {
    let limit = limits.max_storage_buffer_binding_size.min(limits.max_buffer_size);
    // (A row past u64's bytes holds no row a binding can.)
    let row_bytes = (cols.max(1) as u64).checked_mul(stride);
    let rows = row_bytes.map_or(0, |bytes| (limit / bytes) as usize / PANEL_ALIGN_ROWS * PANEL_ALIGN_ROWS);
    if rows == 0 {
        return Err(Error::LimitExceeded {
            what: format!("{PANEL_ALIGN_ROWS} rows of a dense matrix of {cols} columns"),
            limit: "max_storage_buffer_binding_size",
            requested: row_bytes.map_or(u64::MAX, |bytes| bytes.saturating_mul(PANEL_ALIGN_ROWS as u64)),
            max: limit,
        });
    }
    Ok(rows)
}

/// The `cols × rows` transpose of row-major `rows × cols` data.
fn transpose<T: Copy>(data: &[T], rows: usize, cols: usize) -> Vec<T> {
    (0..cols).flat_map(|j| (0..rows).map(move |i| data[i * cols + j])).collect()
}
