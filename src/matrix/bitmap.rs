//! The bitmap format of seed 004 on the GPU.

use crate::context::Context;
use crate::element::Scalar;
use crate::format::{blocks_per_row, words_per_row, BitmapMatrix};
use crate::gpu::{next_object_id, DeviceId, GpuVec};
use crate::{Error, Result};

/// A [`BitmapMatrix`] on the GPU: flags, rank directory, row starts and values, each one
/// buffer (a matrix whose arrays pass one storage binding is refused with
/// [`Error::LimitExceeded`]; the bitmap format suits matrices dense enough that they rarely
/// do).
///
/// Its ops are in [`crate::ops::bitmap`]: element access, A ± B, A·B, SpMV and batched LU;
/// conversions from and to CSR, COO and dense run on the GPU there too.
#[derive(Debug)]
pub struct GpuBitmap<T: Scalar> {
    rows: usize,
    cols: usize,
    nnz: usize,
    /// Names the pattern: new for every matrix, kept when only values change, so that a plan
    /// made for a pattern can tell a matrix of another.
    pattern: u64,
    row_offsets: GpuVec<u32>,
    flags: GpuVec<u32>,
    rank: GpuVec<u32>,
    /// At least `nnz` values (an op that learns its output's size on the GPU allocates a
    /// bound and keeps it).
    values: GpuVec<T>,
}

impl<T: Scalar> GpuBitmap<T> {
    /// Uploads a validated host bitmap.
    pub fn upload(ctx: &Context, a: &BitmapMatrix<T>) -> Result<Self> {
        ctx.check_alive()?;
        ctx.check_element::<T>()?;
        check_fits::<T>(ctx, a.rows(), a.cols(), a.nnz())?;
        Ok(GpuBitmap {
            rows: a.rows(),
            cols: a.cols(),
            nnz: a.nnz(),
            pattern: next_object_id(),
            row_offsets: ctx.upload(a.row_offsets())?,
            flags: ctx.upload(a.flags())?,
            rank: ctx.upload(a.rank_directory())?,
            values: ctx.upload(a.values())?,
        })
    }

    /// A bitmap whose arrays the GPU will fill: `rows + 1` offsets, the flags and directory of
    /// the shape (zeroed), and room for `capacity` values.
    pub(crate) fn allocate(ctx: &Context, rows: usize, cols: usize, capacity: usize) -> Result<Self> {
        ctx.check_alive()?;
        ctx.check_element::<T>()?;
        check_fits::<T>(ctx, rows, cols, capacity)?;
        Ok(GpuBitmap {
            rows,
            cols,
            nnz: 0,
            pattern: next_object_id(),
            row_offsets: ctx.zeros(rows + 1)?,
            flags: ctx.zeros(rows * words_per_row(cols))?,
            rank: ctx.zeros(rows * blocks_per_row(cols))?,
            values: ctx.zeros(capacity)?,
        })
    }

    /// Sets the entry count the GPU computed (at most the values' capacity).
    pub(crate) fn set_nnz(&mut self, nnz: usize) -> Result<()> {
        if nnz > self.values.len() {
            return Err(Error::Validation(format!(
                "a bitmap built on the GPU counts {nnz} entries for room of {}",
                self.values.len()
            )));
        }
        self.nnz = nnz;
        Ok(())
    }

    /// Replaces the values with `capacity` zeros (an output whose entry count the GPU
    /// just computed).
    pub(crate) fn reserve_values(&mut self, ctx: &Context, capacity: usize) -> Result<()> {
        check_fits::<T>(ctx, self.rows, self.cols, capacity)?;
        self.values = ctx.zeros(capacity)?;
        Ok(())
    }

    /// Copies the matrix to the host, waiting on this thread (validated again there).
    pub fn read_blocking(&self) -> Result<BitmapMatrix<T>> {
        let mut values = self.values.read_blocking()?;
        values.truncate(self.nnz);
        Ok(BitmapMatrix::try_new(
            self.rows,
            self.cols,
            self.row_offsets.read_blocking()?,
            self.flags.read_blocking()?,
            values,
        )?)
    }

    /// Overwrites the values of the stored entries (`a` must have this matrix's pattern:
    /// compared on the host after reading the flags back; [`Error::InvalidArgument`]
    /// otherwise, nothing written).
    pub fn update_values(&mut self, a: &BitmapMatrix<T>) -> Result<()> {
        if (a.rows(), a.cols(), a.nnz()) != (self.rows, self.cols, self.nnz) || self.flags.read_blocking()? != a.flags()
        {
            return Err(Error::InvalidArgument("GpuBitmap::update_values: the pattern differs".into()));
        }
        self.values.write_at(0, a.values())
    }
}

impl<T: Scalar> GpuBitmap<T> {
    /// Rows.
    pub fn rows(&self) -> usize {
        self.rows
    }
    /// Columns.
    pub fn cols(&self) -> usize {
        self.cols
    }
    /// Stored entries.
    pub fn nnz(&self) -> usize {
        self.nnz
    }
    /// Flag words a row.
    pub fn words_per_row(&self) -> usize {
        words_per_row(self.cols)
    }
    /// The pattern's id: a plan made for one pattern refuses matrices of another.
    pub(crate) fn pattern_id(&self) -> u64 {
        self.pattern
    }
    /// Rank-directory entries a row.
    pub fn blocks_per_row(&self) -> usize {
        blocks_per_row(self.cols)
    }
    /// `rows + 1` starts into the values.
    pub fn row_offsets(&self) -> &GpuVec<u32> {
        &self.row_offsets
    }
    /// The flags, row by row.
    pub fn flags(&self) -> &GpuVec<u32> {
        &self.flags
    }
    /// The rank directory (absolute positions of each block's first entry).
    pub fn rank_directory(&self) -> &GpuVec<u32> {
        &self.rank
    }
    /// The values: the first [`nnz`](Self::nnz) are the entries (the vector may be longer).
    pub fn values(&self) -> &GpuVec<T> {
        &self.values
    }
    /// Bytes of device memory the arrays occupy.
    pub fn device_bytes(&self) -> u64 {
        self.row_offsets.byte_len() + self.flags.byte_len() + self.rank.byte_len() + self.values.byte_len()
    }
    /// The context the matrix lives on.
    pub fn device_id(&self) -> DeviceId {
        self.flags.device_id()
    }
}

/// Refuses a bitmap whose arrays pass one storage binding, or whose flag words do not fit
/// the kernels' u32 indices.
fn check_fits<T: Scalar>(ctx: &Context, rows: usize, cols: usize, values: usize) -> Result<()> {
    let max = ctx.limits().max_storage_buffer_binding_size.min(ctx.limits().max_buffer_size);
    let words = (rows as u64).saturating_mul(words_per_row(cols) as u64);
    for (what, bytes) in [
        ("flags", words.saturating_mul(4)),
        ("values", (values as u64).saturating_mul(T::stride())),
        ("row offsets", (rows as u64 + 1) * 4),
    ] {
        if bytes > max || words > u32::MAX as u64 {
            return Err(Error::LimitExceeded {
                what: format!("the {what} of a {rows} x {cols} bitmap"),
                limit: "max_storage_buffer_binding_size",
                requested: bytes,
                max,
            });
        }
    }
    Ok(())
}
