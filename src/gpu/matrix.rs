//! Sparse matrices resident on the GPU, uploaded from validated host formats.
//!
//! Uploading only accepts the host types, whose constructors validated every index, so the
//! kernels that read these buffers may run without naga's bounds checks.

use super::{Context, GpuVec};
use crate::format::{CooMatrix, CsrMatrix, EllMatrix, EllOptions, HybMatrix, HybSplit};
use crate::Result;

/// CSR on the GPU.
#[derive(Debug, Clone)]
pub struct GpuCsr {
    pub(crate) rows: usize,
    pub(crate) cols: usize,
    pub(crate) row_offsets: GpuVec<u32>,
    pub(crate) col_indices: GpuVec<u32>,
    pub(crate) values: GpuVec<f32>,
    pub(crate) stats: RowStats,
}

/// Row-sorted COO on the GPU (the order the segmented-reduction kernel needs).
#[derive(Debug, Clone)]
pub struct GpuCoo {
    pub(crate) rows: usize,
    pub(crate) cols: usize,
    pub(crate) row_indices: GpuVec<u32>,
    pub(crate) col_indices: GpuVec<u32>,
    pub(crate) values: GpuVec<f32>,
}

/// Column-major padded ELL on the GPU.
#[derive(Debug, Clone)]
pub struct GpuEll {
    pub(crate) rows: usize,
    pub(crate) cols: usize,
    pub(crate) width: usize,
    pub(crate) nnz: usize,
    pub(crate) col_indices: GpuVec<u32>,
    pub(crate) values: GpuVec<f32>,
}

/// HYB on the GPU: an ELL part and a row-sorted COO tail.
#[derive(Debug, Clone)]
pub struct GpuHyb {
    pub(crate) ell: GpuEll,
    pub(crate) coo: GpuCoo,
}

/// A sparse matrix on the GPU in one of the formats the kernels read.
#[derive(Debug, Clone)]
pub enum GpuMatrix {
    /// Compressed sparse rows.
    Csr(GpuCsr),
    /// Coordinates, sorted by row.
    Coo(GpuCoo),
    /// Padded ELL.
    Ell(GpuEll),
    /// ELL + COO.
    Hyb(GpuHyb),
}

/// A device format with its conversion options, for [`GpuMatrix::from_csr`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Format {
    /// Compressed sparse rows.
    Csr,
    /// Row-sorted coordinates.
    Coo,
    /// Padded ELL; conversion refuses matrices whose padding exceeds the options' bound.
    Ell(EllOptions),
    /// ELL + COO split as given.
    Hyb(HybSplit),
}

impl Format {
    /// `csr`, `coo`, `ell` or `hyb`.
    pub fn name(&self) -> &'static str {
        match self {
            Format::Csr => "csr",
            Format::Coo => "coo",
            Format::Ell(_) => "ell",
            Format::Hyb(_) => "hyb",
        }
    }
}

/// Cheap row-length statistics, taken on upload, that drive the automatic choices.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RowStats {
    /// Rows.
    pub rows: usize,
    /// Stored entries.
    pub nnz: usize,
    /// Longest row.
    pub max_len: usize,
    /// Rows with no entry.
    pub empty_rows: usize,
    /// Mean row length.
    pub mean: f64,
    /// Standard deviation of the row lengths.
    pub std_dev: f64,
}

impl RowStats {
    /// Statistics of CSR row offsets.
    pub fn from_offsets(row_offsets: &[u32]) -> Self {
        let rows = row_offsets.len().saturating_sub(1);
        let (mut max_len, mut empty_rows, mut sum_sq) = (0usize, 0usize, 0f64);
        for w in row_offsets.windows(2) {
            let len = (w[1] - w[0]) as usize;
            max_len = max_len.max(len);
            empty_rows += (len == 0) as usize;
            sum_sq += (len * len) as f64;
        }
        let nnz = row_offsets.last().copied().unwrap_or(0) as usize;
        let mean = if rows == 0 { 0.0 } else { nnz as f64 / rows as f64 };
        let variance = if rows == 0 { 0.0 } else { (sum_sq / rows as f64 - mean * mean).max(0.0) };
        RowStats { rows, nnz, max_len, empty_rows, mean, std_dev: variance.sqrt() }
    }
}

impl GpuCsr {
    /// Uploads a validated CSR matrix.
    pub fn upload(ctx: &Context, a: &CsrMatrix<f32>) -> Result<Self> {
        Ok(GpuCsr {
            rows: a.rows(),
            cols: a.cols(),
            row_offsets: ctx.upload(a.row_offsets())?,
            col_indices: ctx.upload(a.col_indices())?,
            values: ctx.upload(a.values())?,
            stats: RowStats::from_offsets(a.row_offsets()),
        })
    }
    /// Row-length statistics taken on upload.
    pub fn stats(&self) -> &RowStats {
        &self.stats
    }
}

impl GpuCoo {
    /// Uploads a validated COO matrix, sorting it by row first if needed.
    pub fn upload(ctx: &Context, a: &CooMatrix<f32>) -> Result<Self> {
        let sorted;
        let a = if a.is_row_sorted() {
            a
        } else {
            sorted = a.sorted_by_row();
            &sorted
        };
        Ok(GpuCoo {
            rows: a.rows(),
            cols: a.cols(),
            row_indices: ctx.upload(a.row_indices())?,
            col_indices: ctx.upload(a.col_indices())?,
            values: ctx.upload(a.values())?,
        })
    }
}

impl GpuEll {
    /// Uploads a validated ELL matrix.
    pub fn upload(ctx: &Context, a: &EllMatrix<f32>) -> Result<Self> {
        Ok(GpuEll {
            rows: a.rows(),
            cols: a.cols(),
            width: a.width(),
            nnz: a.nnz(),
            col_indices: ctx.upload(a.col_indices())?,
            values: ctx.upload(a.values())?,
        })
    }
}

impl GpuHyb {
    /// Uploads a validated HYB matrix.
    pub fn upload(ctx: &Context, a: &HybMatrix<f32>) -> Result<Self> {
        Ok(GpuHyb { ell: GpuEll::upload(ctx, a.ell())?, coo: GpuCoo::upload(ctx, a.coo())? })
    }
}

impl GpuMatrix {
    /// Converts a validated CSR matrix to `format` on the host and uploads it.
    pub fn from_csr(ctx: &Context, a: &CsrMatrix<f32>, format: Format) -> Result<Self> {
        Ok(match format {
            Format::Csr => GpuMatrix::Csr(GpuCsr::upload(ctx, a)?),
            Format::Coo => GpuMatrix::Coo(GpuCoo::upload(ctx, &a.to_coo())?),
            Format::Ell(options) => GpuMatrix::Ell(GpuEll::upload(ctx, &EllMatrix::from_csr(a, &options)?)?),
            Format::Hyb(split) => GpuMatrix::Hyb(GpuHyb::upload(ctx, &HybMatrix::from_csr(a, split)?)?),
        })
    }

    /// Rows.
    pub fn rows(&self) -> usize {
        match self {
            GpuMatrix::Csr(m) => m.rows,
            GpuMatrix::Coo(m) => m.rows,
            GpuMatrix::Ell(m) => m.rows,
            GpuMatrix::Hyb(m) => m.ell.rows,
        }
    }
    /// Columns.
    pub fn cols(&self) -> usize {
        match self {
            GpuMatrix::Csr(m) => m.cols,
            GpuMatrix::Coo(m) => m.cols,
            GpuMatrix::Ell(m) => m.cols,
            GpuMatrix::Hyb(m) => m.ell.cols,
        }
    }
    /// Stored entries (padding excluded).
    pub fn nnz(&self) -> usize {
        match self {
            GpuMatrix::Csr(m) => m.col_indices.len(),
            GpuMatrix::Coo(m) => m.col_indices.len(),
            GpuMatrix::Ell(m) => m.nnz,
            GpuMatrix::Hyb(m) => m.ell.nnz + m.coo.col_indices.len(),
        }
    }
    /// Bytes of device memory the matrix occupies.
    pub fn device_bytes(&self) -> u64 {
        fn coo(m: &GpuCoo) -> u64 {
            m.row_indices.byte_len() + m.col_indices.byte_len() + m.values.byte_len()
        }
        fn ell(m: &GpuEll) -> u64 {
            m.col_indices.byte_len() + m.values.byte_len()
        }
        match self {
            GpuMatrix::Csr(m) => m.row_offsets.byte_len() + m.col_indices.byte_len() + m.values.byte_len(),
            GpuMatrix::Coo(m) => coo(m),
            GpuMatrix::Ell(m) => ell(m),
            GpuMatrix::Hyb(m) => ell(&m.ell) + coo(&m.coo),
        }
    }
    /// The format's name (`csr`, `coo`, `ell`, `hyb`).
    pub fn format_name(&self) -> &'static str {
        match self {
            GpuMatrix::Csr(_) => "csr",
            GpuMatrix::Coo(_) => "coo",
            GpuMatrix::Ell(_) => "ell",
            GpuMatrix::Hyb(_) => "hyb",
        }
    }
}
