use super::coo::row_indices_from_offsets;
use super::{check_indices, check_len, check_row_columns, check_u32, CooMatrix, FormatError, Scalar};

/// Compressed sparse rows: `row_offsets[i]..row_offsets[i + 1]` indexes row `i`'s entries in
/// `col_indices` and `values`.
///
/// Invariants (checked by [`CsrMatrix::try_from_csr_data`]): `row_offsets` has `rows + 1`
/// entries, starts at 0, never decreases and ends at `nnz`; every column index is `< cols`;
/// no row names a column twice. Columns within a row may be unsorted; [`columns_sorted`]
/// tells, and [`sort_columns`] sorts them.
///
/// [`columns_sorted`]: CsrMatrix::columns_sorted
/// [`sort_columns`]: CsrMatrix::sort_columns
#[derive(Debug, Clone, PartialEq)]
pub struct CsrMatrix<T = f32> {
    rows: usize,
    cols: usize,
    row_offsets: Vec<u32>,
    col_indices: Vec<u32>,
    values: Vec<T>,
    columns_sorted: bool,
}

impl<T: Scalar> CsrMatrix<T> {
    /// Validates and wraps CSR arrays.
    pub fn try_from_csr_data(
        rows: usize,
        cols: usize,
        row_offsets: Vec<u32>,
        col_indices: Vec<u32>,
        values: Vec<T>,
    ) -> Result<Self, FormatError> {
        check_u32("rows", rows)?;
        check_u32("cols", cols)?;
        check_u32("nnz", col_indices.len())?;
        check_len("row_offsets", rows + 1, row_offsets.len())?;
        check_len("values", col_indices.len(), values.len())?;
        if row_offsets[0] != 0 {
            return Err(FormatError::InvalidOffsets { position: 0, reason: "first offset must be 0" });
        }
        for (i, w) in row_offsets.windows(2).enumerate() {
            if w[1] < w[0] {
                return Err(FormatError::InvalidOffsets { position: i + 1, reason: "offsets decrease" });
            }
        }
        if row_offsets[rows] as usize != col_indices.len() {
            return Err(FormatError::InvalidOffsets {
                position: rows,
                reason: "last offset must equal the number of stored entries",
            });
        }
        check_indices("column", &col_indices, cols, None)?;
        let columns_sorted = check_columns(&row_offsets, &col_indices)?;
        Ok(CsrMatrix { rows, cols, row_offsets, col_indices, values, columns_sorted })
    }

    /// Wraps arrays that a conversion in this crate built valid (columns may be unsorted).
    /// Debug builds re-validate them.
    pub(crate) fn from_parts_unchecked(
        rows: usize,
        cols: usize,
        row_offsets: Vec<u32>,
        col_indices: Vec<u32>,
        values: Vec<T>,
    ) -> Self {
        if cfg!(debug_assertions) {
            if let Err(e) =
                Self::try_from_csr_data(rows, cols, row_offsets.clone(), col_indices.clone(), values.clone())
            {
                panic!("internal conversion built an invalid CSR matrix: {e}");
            }
        }
        let columns_sorted =
            row_offsets.windows(2).all(|w| col_indices[w[0] as usize..w[1] as usize].windows(2).all(|c| c[0] < c[1]));
        CsrMatrix { rows, cols, row_offsets, col_indices, values, columns_sorted }
    }

    /// CSR from COO: duplicates summed, columns sorted (see [`CooMatrix::to_csr`]).
    pub fn from_coo(coo: &CooMatrix<T>) -> Self {
        coo.to_csr()
    }

    /// The `rows × cols` matrix with no entries.
    pub fn zeros(rows: usize, cols: usize) -> Result<Self, FormatError> {
        check_u32("rows", rows)?;
        Self::try_from_csr_data(rows, cols, vec![0; rows + 1], Vec::new(), Vec::new())
    }

    /// Number of rows.
    pub fn rows(&self) -> usize {
        self.rows
    }
    /// Number of columns.
    pub fn cols(&self) -> usize {
        self.cols
    }
    /// Number of stored entries.
    pub fn nnz(&self) -> usize {
        self.col_indices.len()
    }
    /// `rows + 1` offsets into the entry arrays.
    pub fn row_offsets(&self) -> &[u32] {
        &self.row_offsets
    }
    /// Column index of each stored entry.
    pub fn col_indices(&self) -> &[u32] {
        &self.col_indices
    }
    /// Value of each stored entry.
    pub fn values(&self) -> &[T] {
        &self.values
    }
    /// Mutable values; the structure stays fixed so the invariants hold.
    pub fn values_mut(&mut self) -> &mut [T] {
        &mut self.values
    }
    /// Whether every row's columns are strictly increasing.
    pub fn columns_sorted(&self) -> bool {
        self.columns_sorted
    }
    /// Number of stored entries in row `i` (panics if `i >= rows`, like slice indexing).
    pub fn row_len(&self, i: usize) -> usize {
        (self.row_offsets[i + 1] - self.row_offsets[i]) as usize
    }
    /// Length of the longest row (0 for a matrix without rows).
    pub fn max_row_len(&self) -> usize {
        self.row_offsets.windows(2).map(|w| (w[1] - w[0]) as usize).max().unwrap_or(0)
    }
    /// Column indices and values of row `i` (panics if `i >= rows`, like slice indexing).
    pub fn row(&self, i: usize) -> (&[u32], &[T]) {
        let r = self.row_offsets[i] as usize..self.row_offsets[i + 1] as usize;
        (&self.col_indices[r.clone()], &self.values[r])
    }
    /// The arrays, in `try_from_csr_data` order.
    pub fn into_parts(self) -> (usize, usize, Vec<u32>, Vec<u32>, Vec<T>) {
        (self.rows, self.cols, self.row_offsets, self.col_indices, self.values)
    }

    /// Sorts the columns of every row (values follow their columns).
    pub fn sort_columns(&mut self) {
        if self.columns_sorted {
            return;
        }
        let mut scratch: Vec<(u32, T)> = Vec::new();
        for i in 0..self.rows {
            let r = self.row_offsets[i] as usize..self.row_offsets[i + 1] as usize;
            scratch.clear();
            scratch.extend(self.col_indices[r.clone()].iter().copied().zip(self.values[r.clone()].iter().copied()));
            scratch.sort_unstable_by_key(|e| e.0);
            for (k, (c, v)) in scratch.iter().enumerate() {
                self.col_indices[r.start + k] = *c;
                self.values[r.start + k] = *v;
            }
        }
        self.columns_sorted = true;
    }

    /// Row-sorted COO with the same entries in the same order.
    pub fn to_coo(&self) -> CooMatrix<T> {
        let row_indices = row_indices_from_offsets(&self.row_offsets);
        CooMatrix::from_parts_unchecked(
            self.rows,
            self.cols,
            row_indices,
            self.col_indices.clone(),
            self.values.clone(),
        )
    }

    /// `Aᵀ` (the CSC of A, read as CSR): column j of A becomes row j, its entries in A's row
    /// order, so its columns are sorted.
    pub fn transpose(&self) -> CsrMatrix<T> {
        let mut offsets = vec![0u32; self.cols + 1];
        for &c in &self.col_indices {
            offsets[c as usize + 1] += 1;
        }
        for j in 0..self.cols {
            offsets[j + 1] += offsets[j];
        }
        let mut next = offsets.clone();
        let mut col_indices = vec![0u32; self.nnz()];
        let mut values = vec![T::default(); self.nnz()];
        for (row, w) in self.row_offsets.windows(2).enumerate() {
            for e in w[0] as usize..w[1] as usize {
                let at = &mut next[self.col_indices[e] as usize];
                col_indices[*at as usize] = row as u32;
                values[*at as usize] = self.values[e];
                *at += 1;
            }
        }
        CsrMatrix { rows: self.cols, cols: self.rows, row_offsets: offsets, col_indices, values, columns_sorted: true }
    }

    /// Converts the values to another scalar type.
    pub fn map_values<U: Scalar>(&self, f: impl Fn(T) -> U) -> CsrMatrix<U> {
        CsrMatrix {
            rows: self.rows,
            cols: self.cols,
            row_offsets: self.row_offsets.clone(),
            col_indices: self.col_indices.clone(),
            values: self.values.iter().map(|&v| f(v)).collect(),
            columns_sorted: self.columns_sorted,
        }
    }
}

/// Checks every row for duplicate columns; returns whether all rows are sorted.
/// `col_indices` must already be in bounds and `row_offsets` valid.
fn check_columns(row_offsets: &[u32], col_indices: &[u32]) -> Result<bool, FormatError> {
    let mut columns_sorted = true;
    let mut scratch = Vec::new();
    for (row, w) in row_offsets.windows(2).enumerate() {
        columns_sorted &= check_row_columns(row, &col_indices[w[0] as usize..w[1] as usize], &mut scratch)?;
    }
    Ok(columns_sorted)
}
