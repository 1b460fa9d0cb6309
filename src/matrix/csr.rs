//! CSR on the GPU.

use super::Index;
use crate::element::Scalar;
use crate::format::CsrMatrix;
use crate::gpu::{Device, GpuVec};
use crate::Result;

/// Compressed sparse rows on the GPU: `row_offsets[i]..row_offsets[i + 1]` indexes row `i`'s
/// entries in `col_indices` and `values`.
#[derive(Debug)]
pub struct GpuCsr<T: Scalar, I: Index = u32> {
    rows: usize,
    row_offsets: GpuVec<I>,
    col_indices: GpuVec<I>,
    values: GpuVec<T>,
}

impl<T: Scalar> GpuCsr<T> {
    pub(crate) fn upload(device: &Device, a: &CsrMatrix<T>) -> Result<Self> {
        Ok(GpuCsr {
            rows: a.rows(),
            row_offsets: GpuVec::upload_on(device, a.row_offsets())?,
            col_indices: GpuVec::upload_on(device, a.col_indices())?,
            values: GpuVec::upload_on(device, a.values())?,
        })
    }

    /// Wraps arrays built on the GPU (valid by construction).
    pub(crate) fn from_parts(
        rows: usize,
        row_offsets: GpuVec<u32>,
        col_indices: GpuVec<u32>,
        values: GpuVec<T>,
    ) -> Self {
        GpuCsr { rows, row_offsets, col_indices, values }
    }

    /// The same pattern (copied on the GPU) with zero values.
    pub(crate) fn zeros_like(&self, device: &Device) -> Result<Self> {
        Ok(GpuCsr {
            rows: self.rows,
            row_offsets: self.row_offsets.duplicate()?,
            col_indices: self.col_indices.duplicate()?,
            values: GpuVec::zeros_on(device, self.values.len())?,
        })
    }

    pub(crate) fn write_values(&self, a: &CsrMatrix<T>) -> Result<()> {
        self.values.write(a.values())
    }
}

impl<T: Scalar, I: Index> GpuCsr<T, I> {
    /// Rows.
    pub fn rows(&self) -> usize {
        self.rows
    }
    /// Stored entries.
    pub fn nnz(&self) -> usize {
        self.col_indices.len()
    }
    /// `rows + 1` offsets into the entry arrays.
    pub fn row_offsets(&self) -> &GpuVec<I> {
        &self.row_offsets
    }
    /// Column of each entry.
    pub fn col_indices(&self) -> &GpuVec<I> {
        &self.col_indices
    }
    /// Value of each entry.
    pub fn values(&self) -> &GpuVec<T> {
        &self.values
    }
    pub(crate) fn device_bytes(&self) -> u64 {
        self.row_offsets.byte_len() + self.col_indices.byte_len() + self.values.byte_len()
    }
}
