use super::{check_indices, check_len, check_u32, CsrMatrix, FormatError, Scalar};

/// Coordinate format: entry `k` is `values[k]` at (`row_indices[k]`, `col_indices[k]`).
///
/// Entries may come in any order and may repeat a position; repeated positions mean their sum
/// (as in Matrix Market files and assembly loops). [`to_csr`](CooMatrix::to_csr) sums them;
/// [`sorted_by_row`](CooMatrix::sorted_by_row) keeps them, in the order the GPU COO kernel
/// wants.
#[derive(Debug, Clone, PartialEq)]
pub struct CooMatrix<T = f32> {
    rows: usize,
    cols: usize,
    row_indices: Vec<u32>,
    col_indices: Vec<u32>,
    values: Vec<T>,
}

impl<T: Scalar> CooMatrix<T> {
    /// Validates and wraps COO arrays: equal lengths, every index inside the matrix, and
    /// `rows`, `cols`, `nnz` within the u32 indices of the kernels.
    pub fn try_new(
        rows: usize,
        cols: usize,
        row_indices: Vec<u32>,
        col_indices: Vec<u32>,
        values: Vec<T>,
    ) -> Result<Self, FormatError> {
        check_u32("rows", rows)?;
        check_u32("cols", cols)?;
        check_u32("nnz", values.len())?;
        check_len("row_indices", values.len(), row_indices.len())?;
        check_len("col_indices", values.len(), col_indices.len())?;
        check_indices("row", &row_indices, rows, None)?;
        check_indices("column", &col_indices, cols, None)?;
        Ok(Self::from_parts_unchecked(rows, cols, row_indices, col_indices, values))
    }

    /// Wraps arrays that a conversion in this crate built valid.
    pub(crate) fn from_parts_unchecked(
        rows: usize,
        cols: usize,
        row_indices: Vec<u32>,
        col_indices: Vec<u32>,
        values: Vec<T>,
    ) -> Self {
        debug_assert!(row_indices.len() == values.len() && col_indices.len() == values.len());
        debug_assert!(row_indices.iter().all(|&r| (r as usize) < rows));
        debug_assert!(col_indices.iter().all(|&c| (c as usize) < cols));
        CooMatrix { rows, cols, row_indices, col_indices, values }
    }

    /// Number of rows.
    pub fn rows(&self) -> usize {
        self.rows
    }
    /// Number of columns.
    pub fn cols(&self) -> usize {
        self.cols
    }
    /// Number of stored entries, duplicates included.
    pub fn nnz(&self) -> usize {
        self.values.len()
    }
    /// Row index of each stored entry.
    pub fn row_indices(&self) -> &[u32] {
        &self.row_indices
    }
    /// Column index of each stored entry.
    pub fn col_indices(&self) -> &[u32] {
        &self.col_indices
    }
    /// Value of each stored entry.
    pub fn values(&self) -> &[T] {
        &self.values
    }
    /// The arrays, in `try_new` order.
    pub fn into_parts(self) -> (usize, usize, Vec<u32>, Vec<u32>, Vec<T>) {
        (self.rows, self.cols, self.row_indices, self.col_indices, self.values)
    }

    /// Whether row indices never decrease (what the GPU COO kernel requires).
    pub fn is_row_sorted(&self) -> bool {
        self.row_indices.windows(2).all(|w| w[0] <= w[1])
    }

    /// The same entries ordered by row, stably: within a row, entries (duplicates included)
    /// keep their input order. A counting sort, O(nnz + rows).
    pub fn sorted_by_row(&self) -> CooMatrix<T> {
        let (offsets, col_indices, values) = self.bucket_by_row();
        CooMatrix::from_parts_unchecked(self.rows, self.cols, row_indices_from_offsets(&offsets), col_indices, values)
    }

    /// CSR with duplicates summed and columns sorted, from entries in any order.
    ///
    /// Rows are bucketed by a counting sort (O(nnz + rows)); only rows whose columns are not
    /// already strictly increasing are sorted, stably, so duplicates are summed in input
    /// order. Sums are accumulated in f64 and rounded once.
    pub fn to_csr(&self) -> CsrMatrix<T> {
        let (mut offsets, mut col_indices, mut values) = self.bucket_by_row();
        let mut scratch: Vec<(u32, T)> = Vec::new();
        let mut write = 0;
        let mut start = 0;
        for i in 0..self.rows {
            let end = offsets[i + 1] as usize;
            if col_indices[start..end].windows(2).all(|w| w[0] < w[1]) {
                col_indices.copy_within(start..end, write);
                values.copy_within(start..end, write);
                write += end - start;
            } else {
                scratch.clear();
                scratch.extend(col_indices[start..end].iter().copied().zip(values[start..end].iter().copied()));
                scratch.sort_by_key(|e| e.0);
                for run in scratch.chunk_by(|a, b| a.0 == b.0) {
                    col_indices[write] = run[0].0;
                    values[write] = match run {
                        [(_, v)] => *v,
                        _ => T::from_f64(run.iter().map(|e| e.1.to_f64()).sum()),
                    };
                    write += 1;
                }
            }
            start = end;
            offsets[i + 1] = write as u32;
        }
        col_indices.truncate(write);
        values.truncate(write);
        CsrMatrix::from_parts_unchecked(self.rows, self.cols, offsets, col_indices, values)
    }

    /// CSR-style offsets of the rows: `rows + 1` running counts of the entries per row
    /// (where each row's entries would start once sorted by row).
    pub(crate) fn row_offsets(&self) -> Vec<u32> {
        let mut offsets = vec![0u32; self.rows + 1];
        for &r in &self.row_indices {
            offsets[r as usize + 1] += 1;
        }
        for i in 0..self.rows {
            offsets[i + 1] += offsets[i];
        }
        offsets
    }

    /// Counting sort by row: row offsets, then the columns and values in row order (stable).
    fn bucket_by_row(&self) -> (Vec<u32>, Vec<u32>, Vec<T>) {
        let offsets = self.row_offsets();
        let mut cursor = offsets[..self.rows].to_vec();
        let mut col_indices = vec![0u32; self.nnz()];
        let mut values = vec![T::default(); self.nnz()];
        for ((&r, &c), &v) in self.row_indices.iter().zip(&self.col_indices).zip(&self.values) {
            let dst = &mut cursor[r as usize];
            col_indices[*dst as usize] = c;
            values[*dst as usize] = v;
            *dst += 1;
        }
        (offsets, col_indices, values)
    }
}

/// Expands CSR-style row offsets into one row index per entry.
pub(crate) fn row_indices_from_offsets(offsets: &[u32]) -> Vec<u32> {
    let mut row_indices = Vec::with_capacity(offsets.last().map_or(0, |&n| n as usize));
    for (i, w) in offsets.windows(2).enumerate() {
        row_indices.extend(std::iter::repeat_n(i as u32, (w[1] - w[0]) as usize));
    }
    row_indices
}
