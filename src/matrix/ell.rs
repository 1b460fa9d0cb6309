//! Column-major padded ELL on the GPU, with 32-bit columns or 16-bit diagonal offsets.

use crate::element::Scalar;
use crate::format::{CsrMatrix, EllMatrix, ELL_PADDING, MAX_DIAGONAL_OFFSET};
use crate::gpu::{Device, GpuVec};
use crate::Result;

/// ELL on the GPU: slot `k` of row `i` at `k * rows + i`, so neighbouring invocations read
/// neighbouring words.
#[derive(Debug)]
pub struct GpuEll<T: Scalar> {
    rows: usize,
    width: usize,
    indices: EllIndices,
    values: GpuVec<T>,
}

/// How a [`GpuEll`] stores its columns (spmv_ell.wgsl reads both).
#[derive(Debug)]
pub enum EllIndices {
    /// The column of each slot, column-major; [`ELL_PADDING`] pads.
    Columns(GpuVec<u32>),
    /// `column − (first_row + row)` as i16, two per word: slot `k` of row `i` is halfword
    /// `k * stride + i` with `stride` = rows rounded up to even; `0x8000` pads. Half the index
    /// bytes, for matrices whose entries all lie within 32,767 of the diagonal.
    DiagonalOffsets {
        /// The halfwords, two per word.
        packed: GpuVec<u32>,
        /// The matrix row of the panel's first row.
        first_row: u32,
        /// Halfwords per slot column.
        stride: u32,
    },
}

/// The halfword marking an ELL padding slot among 16-bit diagonal offsets.
const OFFSET_PADDING: u16 = 0x8000;

impl<T: Scalar> GpuEll<T> {
    /// Uploads rows `first_row..` of a matrix; `compact` (the caller checked
    /// [`within_diagonal_band`]) stores 16-bit diagonal offsets instead of columns.
    pub(crate) fn upload(device: &Device, a: &EllMatrix<T>, first_row: usize, compact: bool) -> Result<Self> {
        debug_assert!(a.col_indices().iter().all(|&c| c == ELL_PADDING || (c as usize) < a.cols()));
        let indices = if compact {
            let stride = a.rows() + a.rows() % 2;
            EllIndices::DiagonalOffsets {
                packed: GpuVec::upload_on(device, &pack_diagonal_offsets(a, first_row, stride))?,
                first_row: first_row as u32,
                stride: stride as u32,
            }
        } else {
            EllIndices::Columns(GpuVec::upload_on(device, a.col_indices())?)
        };
        Ok(GpuEll { rows: a.rows(), width: a.width(), indices, values: GpuVec::upload_on(device, a.values())? })
    }

    pub(crate) fn write_values(&self, a: &EllMatrix<T>) -> Result<()> {
        self.values.write(a.values())
    }

    /// Rows.
    pub fn rows(&self) -> usize {
        self.rows
    }
    /// Slots per row.
    pub fn width(&self) -> usize {
        self.width
    }
    /// The column encoding.
    pub fn indices(&self) -> &EllIndices {
        &self.indices
    }
    /// Value of each slot, column-major (padding holds 0).
    pub fn values(&self) -> &GpuVec<T> {
        &self.values
    }
    /// Whether columns are 16-bit diagonal offsets.
    pub fn compact(&self) -> bool {
        matches!(self.indices, EllIndices::DiagonalOffsets { .. })
    }
    pub(crate) fn device_bytes(&self) -> u64 {
        let indices = match &self.indices {
            EllIndices::Columns(columns) => columns.byte_len(),
            EllIndices::DiagonalOffsets { packed, .. } => packed.byte_len(),
        };
        indices + self.values.byte_len()
    }
}

/// Whether every entry of `a` lies within [`MAX_DIAGONAL_OFFSET`] of the diagonal.
pub(crate) fn within_diagonal_band<T: Scalar>(a: &CsrMatrix<T>) -> bool {
    (0..a.rows())
        .all(|i| a.row(i).0.iter().all(|&c| (c as i64 - i as i64).unsigned_abs() <= MAX_DIAGONAL_OFFSET as u64))
}

/// The 16-bit diagonal offsets of [`EllIndices::DiagonalOffsets`], packed two per word.
fn pack_diagonal_offsets<T: Scalar>(a: &EllMatrix<T>, first_row: usize, stride: usize) -> Vec<u32> {
    let (rows, columns) = (a.rows(), a.col_indices());
    let mut halves = vec![OFFSET_PADDING; a.width() * stride];
    for k in 0..a.width() {
        for i in 0..rows {
            let c = columns[k * rows + i];
            if c != ELL_PADDING {
                let offset = c as i64 - (first_row + i) as i64;
                debug_assert!(offset.unsigned_abs() <= MAX_DIAGONAL_OFFSET as u64);
                halves[k * stride + i] = offset as i16 as u16;
            }
        }
    }
    halves.chunks(2).map(|pair| pair[0] as u32 | (pair[1] as u32) << 16).collect()
}
