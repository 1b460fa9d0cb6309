//! Row-sorted COO on the GPU.

use super::Index;
use crate::element::Scalar;
use crate::format::CooMatrix;
use crate::gpu::{Device, GpuVec};
use crate::Result;

/// Coordinates on the GPU, sorted by row (the order the segmented-reduction kernel needs);
/// repeated positions are kept and add up.
#[derive(Debug)]
pub struct GpuCoo<T: Scalar, I: Index = u32> {
    rows: usize,
    row_indices: GpuVec<I>,
    col_indices: GpuVec<I>,
    values: GpuVec<T>,
}

impl<T: Scalar> GpuCoo<T> {
    /// Uploads a row-sorted COO matrix whose rows are counted from 0.
    pub(crate) fn upload(device: &Device, a: &CooMatrix<T>) -> Result<Self> {
        debug_assert!(a.is_row_sorted());
        Ok(GpuCoo {
            rows: a.rows(),
            row_indices: GpuVec::upload_on(device, a.row_indices())?,
            col_indices: GpuVec::upload_on(device, a.col_indices())?,
            values: GpuVec::upload_on(device, a.values())?,
        })
    }

    /// Wraps arrays built on the GPU (valid by construction, sorted by row).
    pub(crate) fn from_parts(
        rows: usize,
        row_indices: GpuVec<u32>,
        col_indices: GpuVec<u32>,
        values: GpuVec<T>,
    ) -> Self {
        GpuCoo { rows, row_indices, col_indices, values }
    }

    /// Uploads entries `rows` of a row-sorted matrix (panel rows counted from its first).
    pub(crate) fn upload_rows(
        device: &Device,
        rows: std::ops::Range<usize>,
        row_indices: &[u32],
        col_indices: &[u32],
        values: &[T],
    ) -> Result<Self> {
        let shifted: Vec<u32> = row_indices.iter().map(|&r| r - rows.start as u32).collect();
        Ok(GpuCoo {
            rows: rows.len(),
            row_indices: GpuVec::upload_on(device, &shifted)?,
            col_indices: GpuVec::upload_on(device, col_indices)?,
            values: GpuVec::upload_on(device, values)?,
        })
    }

    pub(crate) fn write_values(&self, values: &[T]) -> Result<()> {
        self.values.write(values)
    }
}

impl<T: Scalar, I: Index> GpuCoo<T, I> {
    /// Rows.
    pub fn rows(&self) -> usize {
        self.rows
    }
    /// Stored entries.
    pub fn nnz(&self) -> usize {
        self.values.len()
    }
    /// Row of each entry, non-decreasing.
    pub fn row_indices(&self) -> &GpuVec<I> {
        &self.row_indices
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
        self.row_indices.byte_len() + self.col_indices.byte_len() + self.values.byte_len()
    }
}
