//! Row panels: a matrix whose arrays pass `max_storage_buffer_binding_size` (or
//! `max_buffer_size`) is cut into blocks of rows, each within the limits, and ops run panel
//! by panel, each writing its own rows of the output. Panels start at multiples of the rows
//! of 4-byte elements that fit `min_storage_buffer_offset_alignment` (64 rows at most), so
//! that outputs, row offsets and dense row panels can be bound at the panel's offset.

use std::ops::Range;

use super::dense::PANEL_ALIGN_ROWS;
use super::Conversion;
use crate::format::{CsrMatrix, HybSplit, Scalar};
use crate::{Error, Result};

/// What a block of rows puts in its panel's largest device array.
#[derive(Debug, Clone, Copy, Default)]
struct Extent {
    rows: u64,
    nnz: u64,
    /// Longest row, for ELL's width × rows slots.
    width: u64,
}

impl Extent {
    fn of(row_offsets: &[u32], rows: Range<usize>) -> Extent {
        let width = rows.clone().map(|r| row_offsets[r + 1] - row_offsets[r]).max().unwrap_or(0);
        Extent {
            rows: rows.len() as u64,
            nnz: (row_offsets[rows.end] - row_offsets[rows.start]) as u64,
            width: width as u64,
        }
    }

    fn join(self, other: Extent) -> Extent {
        Extent { rows: self.rows + other.rows, nnz: self.nnz + other.nnz, width: self.width.max(other.width) }
    }

    /// Bytes of the largest array of `format`: its entry slots, or its row offsets.
    fn bytes(self, conversion: Conversion, value_bytes: u64) -> u64 {
        let slots = match conversion {
            Conversion::Csr | Conversion::Coo => self.nnz,
            Conversion::Ell(_) => self.nnz.max(self.width * self.rows),
            // The automatic split keeps ELL slots within 3 per stored entry.
            Conversion::Hyb(HybSplit::Auto) => 3 * self.nnz,
            Conversion::Hyb(HybSplit::Width(k)) => self.nnz.max(self.width.min(k as u64) * self.rows),
        };
        (value_bytes.max(4) * slots).max(4 * (self.rows + 1))
    }
}

/// Cuts `0..rows` into panels whose arrays each fit the device limits, starting at
/// multiples of the rows the offset alignment allows for 4-byte elements (so also for
/// values of `value_bytes`, and within the 64-row blocks dense panels start at). One pass
/// over the row offsets.
pub(crate) fn panel_bounds(
    limits: &wgpu::Limits,
    row_offsets: &[u32],
    conversion: Conversion,
    value_bytes: u64,
) -> Result<Vec<Range<usize>>> {
    let limit = limits.max_storage_buffer_binding_size.min(limits.max_buffer_size) / 4 * 4;
    let rows = row_offsets.len() - 1;
    let align = (limits.min_storage_buffer_offset_alignment as usize / 4).clamp(1, PANEL_ALIGN_ROWS);
    let mut bounds = Vec::new();
    let (mut start, mut extent) = (0, Extent::default());
    let mut block_start = 0;
    while block_start < rows {
        let block = block_start..(block_start + align).min(rows);
        let block_extent = Extent::of(row_offsets, block.clone());
        if block_extent.bytes(conversion, value_bytes) > limit {
            return Err(Error::LimitExceeded {
                what: format!("rows {}..{} of the matrix (a panel cannot be smaller)", block.start, block.end),
                limit: "max_storage_buffer_binding_size",
                requested: block_extent.bytes(conversion, value_bytes),
                max: limit,
            });
        }
        if extent.join(block_extent).bytes(conversion, value_bytes) > limit {
            bounds.push(start..block.start);
            (start, extent) = (block.start, Extent::default());
        }
        extent = extent.join(block_extent);
        block_start = block.end;
    }
    if start < rows {
        bounds.push(start..rows);
    }
    Ok(bounds)
}

/// Rows `rows` of `a` as a matrix of their own (offsets rebased to 0).
pub(crate) fn row_panel<T: Scalar>(a: &CsrMatrix<T>, rows: Range<usize>) -> CsrMatrix<T> {
    let offsets = &a.row_offsets()[rows.start..=rows.end];
    let entries = offsets[0] as usize..offsets[offsets.len() - 1] as usize;
    CsrMatrix::from_parts_unchecked(
        rows.len(),
        a.cols(),
        offsets.iter().map(|&o| o - offsets[0]).collect(),
        a.col_indices()[entries.clone()].to_vec(),
        a.values()[entries].to_vec(),
    )
}
