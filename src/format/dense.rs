use super::{check_len, check_u32, CooMatrix, CsrMatrix, FormatError, Scalar};

/// A dense matrix stored row-major: entry (i, j) is `data[i * cols + j]`.
///
/// `rows * cols` must fit in u32, like every index the kernels compute.
#[derive(Debug, Clone, PartialEq)]
pub struct DenseMatrix<T = f32> {
    rows: usize,
    cols: usize,
    data: Vec<T>,
}

impl<T: Scalar> DenseMatrix<T> {
    /// Wraps row-major data of length `rows * cols`.
    pub fn try_new(rows: usize, cols: usize, data: Vec<T>) -> Result<Self, FormatError> {
        let len = checked_len(rows, cols)?;
        check_len("data", len, data.len())?;
        Ok(DenseMatrix { rows, cols, data })
    }

    /// The `rows × cols` matrix of zeros; refused before allocating if it is too large.
    pub fn zeros(rows: usize, cols: usize) -> Result<Self, FormatError> {
        let len = checked_len(rows, cols)?;
        Ok(DenseMatrix { rows, cols, data: vec![T::from_f64(0.0); len] })
    }

    /// Number of rows.
    pub fn rows(&self) -> usize {
        self.rows
    }
    /// Number of columns.
    pub fn cols(&self) -> usize {
        self.cols
    }
    /// Entry (i, j), or `None` outside the matrix.
    pub fn get(&self, i: usize, j: usize) -> Option<T> {
        if i < self.rows && j < self.cols {
            Some(self.data[i * self.cols + j])
        } else {
            None
        }
    }
    /// Row `i` (panics if `i >= rows`, like slice indexing).
    pub fn row(&self, i: usize) -> &[T] {
        &self.data[i * self.cols..(i + 1) * self.cols]
    }
    /// The row-major data.
    pub fn data(&self) -> &[T] {
        &self.data
    }
    /// Mutable row-major data; the shape stays fixed.
    pub fn data_mut(&mut self) -> &mut [T] {
        &mut self.data
    }
    /// The row-major data, consuming the matrix.
    pub fn into_data(self) -> Vec<T> {
        self.data
    }

    /// Row-sorted COO of the entries that are not exactly zero (NaN is kept, -0.0 dropped).
    /// Nothing is allocated per row, so a tall matrix without columns stays cheap.
    pub fn to_coo(&self) -> CooMatrix<T> {
        let zero = T::from_f64(0.0);
        let (mut row_indices, mut col_indices, mut values) = (Vec::new(), Vec::new(), Vec::new());
        for (k, &v) in self.data.iter().enumerate() {
            if v != zero {
                row_indices.push((k / self.cols) as u32);
                col_indices.push((k % self.cols) as u32);
                values.push(v);
            }
        }
        CooMatrix::from_parts_unchecked(self.rows, self.cols, row_indices, col_indices, values)
    }

    /// CSR of the entries that are not exactly zero (see [`to_coo`](Self::to_coo)).
    pub fn to_csr(&self) -> CsrMatrix<T> {
        self.to_coo().to_csr()
    }

    /// The dense form of a CSR matrix; refused if `rows * cols` does not fit u32.
    pub fn from_csr(csr: &CsrMatrix<T>) -> Result<Self, FormatError> {
        let mut dense = Self::zeros(csr.rows(), csr.cols())?;
        for i in 0..csr.rows() {
            let (cols, vals) = csr.row(i);
            for (&j, &v) in cols.iter().zip(vals) {
                dense.data[i * dense.cols + j as usize] = v;
            }
        }
        Ok(dense)
    }
}

/// `rows * cols`, checked to fit the u32 element indices of the kernels.
fn checked_len(rows: usize, cols: usize) -> Result<usize, FormatError> {
    check_u32("rows", rows)?;
    check_u32("cols", cols)?;
    let len = rows.checked_mul(cols).ok_or(FormatError::TooLarge { what: "rows * cols", value: usize::MAX })?;
    check_u32("rows * cols", len)?;
    Ok(len)
}
