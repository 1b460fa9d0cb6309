//! Host-side sparse and dense formats, their validation and conversions.
//!
//! Indices are `u32` (what the shaders read); values are any [`Scalar`] so that f64 can
//! follow f32. Constructors validate everything a kernel will later trust.

mod bitmap;
mod coo;
mod csr;
mod dense;
mod ell;
mod hyb;
pub mod matrix_market;

pub use crate::element::Scalar;
pub(crate) use bitmap::check_flag_bound;
pub use bitmap::{blocks_per_row, flagged_columns, words_per_row, BitmapMatrix, BitmapOptions, RANK_BLOCK_WORDS};
pub(crate) use coo::row_indices_from_offsets;
pub use coo::CooMatrix;
pub use csr::CsrMatrix;
pub use dense::DenseMatrix;
pub use ell::{EllMatrix, EllOptions, ELL_PADDING, MAX_DIAGONAL_OFFSET, MAX_VALUE_TABLE};
pub use hyb::{HybMatrix, HybSplit};

/// Why a host matrix was refused. Every variant names the offending position.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum FormatError {
    /// `rows`, `cols` or `nnz` does not fit the `u32` indices the GPU kernels use.
    #[error("{what} = {value} does not fit in u32 indices")]
    TooLarge {
        /// Which quantity.
        what: &'static str,
        /// Its value.
        value: usize,
    },
    /// Two arrays that must have the same (or a derived) length do not.
    #[error("{what} has length {found}, expected {expected}")]
    LengthMismatch {
        /// Which array.
        what: &'static str,
        /// The length it must have.
        expected: usize,
        /// The length it has.
        found: usize,
    },
    /// A row or column index is outside the matrix.
    #[error("{what} index {index} at position {position} is out of bounds (must be < {bound})")]
    IndexOutOfBounds {
        /// `"row"` or `"column"`.
        what: &'static str,
        /// Where in the index array.
        position: usize,
        /// The index found.
        index: u32,
        /// The exclusive upper bound.
        bound: usize,
    },
    /// CSR offsets must start at 0, never decrease and end at nnz.
    #[error("row offsets are invalid at position {position}: {reason}")]
    InvalidOffsets {
        /// Index into the offsets array.
        position: usize,
        /// What is wrong there.
        reason: &'static str,
    },
    /// A row holds the same column twice where the format forbids it.
    #[error("duplicate entry ({row}, {col})")]
    DuplicateEntry {
        /// Row of the duplicate.
        row: usize,
        /// Column of the duplicate.
        col: u32,
    },
    /// Converting to ELL would store too many padding slots.
    #[error("ELL width {width} x {rows} rows = {padded} slots for {nnz} nonzeros exceeds the padding bound ({max_ratio} x nnz)")]
    EllPaddingTooLarge {
        /// The width the widest row needs.
        width: usize,
        /// Rows of the matrix.
        rows: usize,
        /// Slots the ELL arrays would hold.
        padded: usize,
        /// Stored nonzeros.
        nnz: usize,
        /// The caller's bound on `padded / nnz`.
        max_ratio: f64,
    },
    /// A bitmap's flags contradict its counts or its shape.
    #[error("bitmap flags of row {row} are invalid: {reason}")]
    InvalidFlags {
        /// The row.
        row: usize,
        /// What is wrong there.
        reason: &'static str,
    },
    /// Converting to the bitmap format would take too many bytes of flags.
    #[error("bitmap flags and rank directory of {flag_bytes} bytes exceed the bound ({max_ratio} x the {csr_bytes} bytes of CSR)")]
    BitmapFlagsTooLarge {
        /// Bytes of flags and rank directory the matrix would need.
        flag_bytes: u64,
        /// Bytes of its CSR arrays.
        csr_bytes: u64,
        /// The caller's bound on their ratio.
        max_ratio: f64,
    },
}

/// Checks that `value` fits the u32 indices of the GPU formats.
pub(crate) fn check_u32(what: &'static str, value: usize) -> Result<(), FormatError> {
    if value > u32::MAX as usize {
        return Err(FormatError::TooLarge { what, value });
    }
    Ok(())
}

/// Checks that an array has the length its format requires.
pub(crate) fn check_len(what: &'static str, expected: usize, found: usize) -> Result<(), FormatError> {
    if found != expected {
        return Err(FormatError::LengthMismatch { what, expected, found });
    }
    Ok(())
}

/// Checks that every index is `< bound`, except `sentinel` where the format reserves one
/// (ELL padding). Reports the first offending position.
pub(crate) fn check_indices(
    what: &'static str,
    indices: &[u32],
    bound: usize,
    sentinel: Option<u32>,
) -> Result<(), FormatError> {
    match indices.iter().position(|&i| i as usize >= bound && Some(i) != sentinel) {
        Some(position) => Err(FormatError::IndexOutOfBounds { what, position, index: indices[position], bound }),
        None => Ok(()),
    }
}

/// Checks that one row names no column twice and tells whether its columns are strictly
/// increasing. Unsorted rows are sorted in `scratch` (reused across rows), so no array
/// sized by the column count, which may be up to `u32::MAX`, is ever allocated.
pub(crate) fn check_row_columns(row: usize, columns: &[u32], scratch: &mut Vec<u32>) -> Result<bool, FormatError> {
    if columns.windows(2).all(|w| w[0] < w[1]) {
        return Ok(true);
    }
    scratch.clear();
    scratch.extend_from_slice(columns);
    scratch.sort_unstable();
    match scratch.windows(2).find(|w| w[0] == w[1]) {
        Some(w) => Err(FormatError::DuplicateEntry { row, col: w[0] }),
        None => Ok(false),
    }
}
