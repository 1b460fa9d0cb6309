use super::ell::check_padding;
use super::{CooMatrix, CsrMatrix, EllMatrix, FormatError, Scalar};

/// How a HYB matrix splits rows between its ELL and COO parts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum HybSplit {
    /// The width chosen by [`HybMatrix::auto_width`].
    #[default]
    Auto,
    /// This ELL width, clamped to the longest row. Refused with
    /// [`FormatError::EllPaddingTooLarge`] when the ELL part would hold more than
    /// [`HybSplit::MAX_PADDING_RATIO`] slots per stored entry of the whole matrix.
    Width(usize),
}

impl HybSplit {
    /// Bound on ELL slots per stored entry for an explicit [`HybSplit::Width`]: generous
    /// (an explicit width is a deliberate choice) but it keeps a typo from asking for
    /// gigabytes of padding. [`HybSplit::Auto`] never exceeds 3.
    pub const MAX_PADDING_RATIO: f64 = 16.0;
}

/// Hybrid ELL + COO (Bell & Garland): the first `width` entries of every row in an ELL part,
/// the rest of each longer row in a row-sorted COO part. Regular rows get the coalesced ELL
/// kernel; a few long rows no longer dictate the padding.
#[derive(Debug, Clone, PartialEq)]
pub struct HybMatrix<T = f32> {
    ell: EllMatrix<T>,
    coo: CooMatrix<T>,
}

impl<T: Scalar> HybMatrix<T> {
    /// Splits a CSR matrix; rows keep their column order across the two parts.
    pub fn from_csr(csr: &CsrMatrix<T>, split: HybSplit) -> Result<Self, FormatError> {
        let width = match split {
            HybSplit::Auto => Self::auto_width(csr),
            HybSplit::Width(w) => w.min(csr.max_row_len()),
        };
        check_padding(width, csr.rows(), csr.nnz(), HybSplit::MAX_PADDING_RATIO)?;
        let ell = EllMatrix::from_csr_truncated(csr, width);
        let (mut row_indices, mut col_indices, mut values) = (Vec::new(), Vec::new(), Vec::new());
        for i in 0..csr.rows() {
            let (cols, vals) = csr.row(i);
            if cols.len() > width {
                row_indices.extend(std::iter::repeat_n(i as u32, cols.len() - width));
                col_indices.extend_from_slice(&cols[width..]);
                values.extend_from_slice(&vals[width..]);
            }
        }
        let coo = CooMatrix::from_parts_unchecked(csr.rows(), csr.cols(), row_indices, col_indices, values);
        Ok(HybMatrix { ell, coo })
    }

    /// The ELL width [`HybSplit::Auto`] picks, after CUSP's rule (Bell & Garland 2009): the
    /// largest `k` such that at least a third of the rows have `k` or more entries, i.e. every
    /// ELL column is at least one-third real entries, so the ELL part holds at most 3 slots
    /// per entry it stores. 0 when fewer than a third of the rows are non-empty. (CUSP also
    /// requires 4096 such rows, a GPU occupancy guess we leave to the kernel choice.)
    /// O(rows) from the row-length histogram.
    pub fn auto_width(csr: &CsrMatrix<T>) -> usize {
        let mut histogram = vec![0usize; csr.max_row_len() + 1];
        for w in csr.row_offsets().windows(2) {
            histogram[(w[1] - w[0]) as usize] += 1;
        }
        // Walk k downwards, counting rows of length >= k; the first k that qualifies is the largest.
        let mut at_least = 0;
        for k in (1..histogram.len()).rev() {
            at_least += histogram[k];
            if 3 * at_least >= csr.rows() {
                return k;
            }
        }
        0
    }

    /// Number of rows.
    pub fn rows(&self) -> usize {
        self.ell.rows()
    }
    /// Number of columns.
    pub fn cols(&self) -> usize {
        self.ell.cols()
    }
    /// Number of stored entries in both parts.
    pub fn nnz(&self) -> usize {
        self.ell.nnz() + self.coo.nnz()
    }
    /// ELL width, i.e. entries per row held by the ELL part.
    pub fn width(&self) -> usize {
        self.ell.width()
    }
    /// The ELL part.
    pub fn ell(&self) -> &EllMatrix<T> {
        &self.ell
    }
    /// The COO part, sorted by row.
    pub fn coo(&self) -> &CooMatrix<T> {
        &self.coo
    }

    /// The CSR matrix this was split from.
    pub fn to_csr(&self) -> CsrMatrix<T> {
        self.ell.to_csr_with_tail(&self.coo)
    }
}
