use super::{check_indices, check_len, check_row_columns, check_u32, CooMatrix, CsrMatrix, FormatError, Scalar};

/// Column index of an ELL padding slot. Kernels skip it, so a NaN or infinity in `x` never
/// leaks into a row through its padding.
pub const ELL_PADDING: u32 = u32::MAX;

/// Limits on the padding an ELL conversion may add.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct EllOptions {
    /// Refuse when `width * rows > max_padding_ratio * max(nnz, 1)`, i.e. when the padded
    /// arrays would hold more than this many slots per stored entry. A matrix with no rows
    /// or no entries always passes (it needs no slots); NaN refuses everything else.
    pub max_padding_ratio: f64,
    /// On upload to the GPU, store each column as a 16-bit offset from the diagonal
    /// (column − row) when every entry lies within [`MAX_DIAGONAL_OFFSET`] of it, halving
    /// the index bytes the kernel reads (banded matrices: stencils, reordered meshes).
    /// Matrices with farther entries keep 32-bit columns whatever this says.
    pub compact_indices: bool,
    /// On upload to the GPU, with compact indices, store each value as a 16-bit code into a
    /// table of the matrix's distinct values when it has at most this many (0: never; at
    /// most [`MAX_VALUE_TABLE`]). A slot then takes 4 bytes, offset and code in one word,
    /// instead of 6 (f32) or 10 (f64): stencils with constant coefficients, banded graph
    /// Laplacians and adjacency matrices. The default, 256, keeps the values in use within
    /// a few KB, which the caches hold (the table has room for more, see
    /// [`GpuSparse::update_values`](crate::GpuSparse::update_values), which refuses new
    /// values that do not fit it); a larger limit also works, with the table's reads
    /// scattered.
    pub value_table_limit: usize,
}

/// The most distinct values a value table holds (codes are 16-bit).
pub const MAX_VALUE_TABLE: usize = 1 << 16;

/// The farthest an entry may lie from the diagonal (`|column − row|`) for 16-bit offsets.
pub const MAX_DIAGONAL_OFFSET: u32 = i16::MAX as u32;

impl Default for EllOptions {
    /// 3 slots per entry (beyond that, HYB or CSR kernels read less memory than ELL),
    /// compact indices where they fit, and a value table of up to 256 values.
    fn default() -> Self {
        Self::with_max_padding_ratio(3.0)
    }
}

impl EllOptions {
    /// Default options with `max_padding_ratio` set.
    pub const fn with_max_padding_ratio(max_padding_ratio: f64) -> Self {
        EllOptions { max_padding_ratio, compact_indices: true, value_table_limit: 256 }
    }
}

/// ELLPACK: every row padded to `width` slots, stored column-major so that consecutive GPU
/// threads (rows) read consecutive addresses: slot `k` of row `i` is at `k * rows + i` in
/// `col_indices` and `values`. Padding slots hold [`ELL_PADDING`] and value 0.
#[derive(Debug, Clone, PartialEq)]
pub struct EllMatrix<T = f32> {
    rows: usize,
    cols: usize,
    width: usize,
    nnz: usize,
    col_indices: Vec<u32>,
    values: Vec<T>,
}

impl<T: Scalar> EllMatrix<T> {
    /// ELL of width `max row length`, refused with [`FormatError::EllPaddingTooLarge`] when
    /// that would break `options.max_padding_ratio`. Rows keep the CSR's column order.
    pub fn from_csr(csr: &CsrMatrix<T>, options: &EllOptions) -> Result<Self, FormatError> {
        let width = csr.max_row_len();
        check_padding(width, csr.rows(), csr.nnz(), options.max_padding_ratio)?;
        Ok(Self::from_csr_truncated(csr, width))
    }

    /// Validates and wraps column-major ELL arrays of `width * rows` slots. Padding slots
    /// (column [`ELL_PADDING`]) may sit anywhere in a row; their values are ignored.
    pub fn try_from_ell_data(
        rows: usize,
        cols: usize,
        width: usize,
        col_indices: Vec<u32>,
        values: Vec<T>,
    ) -> Result<Self, FormatError> {
        let slots = checked_slots(width, rows)?;
        check_u32("cols", cols)?;
        check_len("col_indices", slots, col_indices.len())?;
        check_len("values", slots, values.len())?;
        check_indices("column", &col_indices, cols, Some(ELL_PADDING))?;
        // (A row holds at most `width` slots, and with no rows none are read.)
        let mut row = Vec::with_capacity(width.min(slots));
        let mut scratch = Vec::new();
        let mut nnz = 0;
        for i in 0..rows {
            row.clear();
            row.extend((0..width).map(|k| col_indices[k * rows + i]).filter(|&c| c != ELL_PADDING));
            check_row_columns(i, &row, &mut scratch)?;
            nnz += row.len();
        }
        Ok(EllMatrix { rows, cols, width, nnz, col_indices, values })
    }

    /// ELL holding the first `width` entries of every row (the ELL part of a HYB matrix).
    /// The caller has checked `width * rows` with [`check_padding`].
    pub(crate) fn from_csr_truncated(csr: &CsrMatrix<T>, width: usize) -> Self {
        let rows = csr.rows();
        let mut col_indices = vec![ELL_PADDING; width * rows];
        let mut values = vec![T::from_f64(0.0); width * rows];
        let mut nnz = 0;
        for i in 0..rows {
            let (cols, vals) = csr.row(i);
            for (k, (&c, &v)) in cols.iter().zip(vals).take(width).enumerate() {
                col_indices[k * rows + i] = c;
                values[k * rows + i] = v;
                nnz += 1;
            }
        }
        EllMatrix { rows, cols: csr.cols(), width, nnz, col_indices, values }
    }

    /// Number of rows.
    pub fn rows(&self) -> usize {
        self.rows
    }
    /// Number of columns.
    pub fn cols(&self) -> usize {
        self.cols
    }
    /// Slots per row.
    pub fn width(&self) -> usize {
        self.width
    }
    /// Number of real (non-padding) entries.
    pub fn nnz(&self) -> usize {
        self.nnz
    }
    /// Column of each slot, column-major; [`ELL_PADDING`] marks padding.
    pub fn col_indices(&self) -> &[u32] {
        &self.col_indices
    }
    /// Value of each slot, column-major.
    pub fn values(&self) -> &[T] {
        &self.values
    }

    /// CSR of the real entries, in slot order within each row.
    pub fn to_csr(&self) -> CsrMatrix<T> {
        self.to_csr_with_tail(&CooMatrix::from_parts_unchecked(
            self.rows,
            self.cols,
            Vec::new(),
            Vec::new(),
            Vec::new(),
        ))
    }

    /// CSR of the real entries followed, in each row, by that row's entries of `tail`, a
    /// row-sorted COO of the same shape (the COO part of a HYB matrix).
    pub(crate) fn to_csr_with_tail(&self, tail: &CooMatrix<T>) -> CsrMatrix<T> {
        let rows = self.rows;
        let mut row_offsets = Vec::with_capacity(rows + 1);
        let mut col_indices = Vec::with_capacity(self.nnz + tail.nnz());
        let mut values = Vec::with_capacity(self.nnz + tail.nnz());
        row_offsets.push(0);
        let mut t = 0;
        for i in 0..rows {
            for k in 0..self.width {
                let c = self.col_indices[k * rows + i];
                if c != ELL_PADDING {
                    col_indices.push(c);
                    values.push(self.values[k * rows + i]);
                }
            }
            while t < tail.nnz() && tail.row_indices()[t] as usize == i {
                col_indices.push(tail.col_indices()[t]);
                values.push(tail.values()[t]);
                t += 1;
            }
            row_offsets.push(col_indices.len() as u32);
        }
        CsrMatrix::from_parts_unchecked(rows, self.cols, row_offsets, col_indices, values)
    }
}

/// `width * rows`, refused if it does not fit the u32 slot indices of the kernels.
fn checked_slots(width: usize, rows: usize) -> Result<usize, FormatError> {
    check_u32("rows", rows)?;
    check_u32("width", width)?;
    let slots = width.checked_mul(rows).ok_or(FormatError::TooLarge { what: "ELL slots", value: usize::MAX })?;
    check_u32("ELL slots", slots)?;
    Ok(slots)
}

/// Refuses an ELL of `width * rows` slots for `nnz` entries when it exceeds
/// `max_ratio * max(nnz, 1)` slots (see [`EllOptions::max_padding_ratio`]) or u32 indices.
pub(crate) fn check_padding(width: usize, rows: usize, nnz: usize, max_ratio: f64) -> Result<(), FormatError> {
    let padded = width.saturating_mul(rows);
    let within_ratio = padded as f64 <= max_ratio * nnz.max(1) as f64; // false for a NaN ratio
    if padded > 0 && !within_ratio {
        return Err(FormatError::EllPaddingTooLarge { width, rows, padded, nnz, max_ratio });
    }
    checked_slots(width, rows).map(|_| ())
}
