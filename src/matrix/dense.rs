//! Dense matrices on the GPU, the operands of SpMM, SDDMM, GEMV and LU.

use crate::context::Context;
use crate::element::Scalar;
use crate::format::DenseMatrix;
use crate::gpu::{DeviceId, GpuVec};
use crate::{Error, Result};

/// How a dense matrix lies in memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DenseLayout {
    /// Entry (i, j) at `i * cols + j`.
    RowMajor,
    /// Entry (i, j) at `j * rows + i`.
    ColMajor,
}

/// A dense `rows × cols` matrix on the GPU, row- or column-major.
#[derive(Debug)]
pub struct GpuDense<T: Scalar> {
    rows: usize,
    cols: usize,
    layout: DenseLayout,
    data: GpuVec<T>,
}

impl<T: Scalar> GpuDense<T> {
    /// Uploads `a` (row-major on the host) in `layout`.
    pub fn upload(ctx: &Context, a: &DenseMatrix<T>, layout: DenseLayout) -> Result<Self> {
        ctx.check_element::<T>()?;
        let data = match layout {
            DenseLayout::RowMajor => ctx.upload(a.data())?,
            DenseLayout::ColMajor => {
                let mut transposed = Vec::with_capacity(a.rows() * a.cols());
                for j in 0..a.cols() {
                    transposed.extend((0..a.rows()).map(|i| a.data()[i * a.cols() + j]));
                }
                ctx.upload(&transposed)?
            }
        };
        Ok(GpuDense { rows: a.rows(), cols: a.cols(), layout, data })
    }

    /// A `rows × cols` matrix of zeros.
    pub fn zeros(ctx: &Context, rows: usize, cols: usize, layout: DenseLayout) -> Result<Self> {
        ctx.check_element::<T>()?;
        let len = rows.checked_mul(cols).ok_or(Error::InvalidArgument(format!("a {rows} x {cols} matrix")))?;
        Ok(GpuDense { rows, cols, layout, data: ctx.zeros(len)? })
    }

    /// Copies the matrix to the host (row-major), waiting on this thread.
    pub fn read_blocking(&self) -> Result<DenseMatrix<T>> {
        let data = self.data.read_blocking()?;
        let data = match self.layout {
            DenseLayout::RowMajor => data,
            DenseLayout::ColMajor => {
                let mut row_major = vec![T::default(); data.len()];
                for j in 0..self.cols {
                    for i in 0..self.rows {
                        row_major[i * self.cols + j] = data[j * self.rows + i];
                    }
                }
                row_major
            }
        };
        Ok(DenseMatrix::try_new(self.rows, self.cols, data)?)
    }

    /// Rows.
    pub fn rows(&self) -> usize {
        self.rows
    }
    /// Columns.
    pub fn cols(&self) -> usize {
        self.cols
    }
    /// Row- or column-major.
    pub fn layout(&self) -> DenseLayout {
        self.layout
    }
    /// The elements, in layout order.
    pub fn data(&self) -> &GpuVec<T> {
        &self.data
    }
    /// The context the matrix lives on.
    pub fn device_id(&self) -> DeviceId {
        self.data.device_id()
    }
}
