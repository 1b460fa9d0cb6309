//! The byte and flop models behind the GB/s and GFLOP/s columns, one per op, kept together
//! so that every op is counted by the same rules: the compulsory traffic of the op's
//! operands in CSR (u32 indices, f32 values), whatever format an algorithm reads, so that
//! rows of one op compare; padding and re-reads are the algorithm's cost, not extra credit.
//!
//! A new op adds its [`Model`] and a function from shape to [`Cost`] here.

/// Bytes moved and flops done by one run of an op.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Cost {
    /// Bytes read and written; `None` where no byte count is meaningful.
    pub bytes: Option<u64>,
    /// Floating-point operations; `None` where none are counted.
    pub flops: Option<u64>,
}

/// How a [`Cost`] is counted, in words for the report footer.
#[derive(Debug, Clone, Copy)]
pub struct Model {
    /// The byte formula.
    pub bytes: &'static str,
    /// The flop formula.
    pub flops: &'static str,
}

/// Shape of a sparse operand.
#[derive(Debug, Clone, Copy)]
pub struct Shape {
    /// Rows.
    pub rows: u64,
    /// Columns.
    pub cols: u64,
    /// Stored entries.
    pub nnz: u64,
}

/// SpMV `y = A·x`: each entry's value and column index once, the row offsets, `x` once and
/// `y` written once; a multiply and an add per entry.
pub const SPMV: Model = Model { bytes: "nnz·8 + (rows+1)·4 + cols·4 + rows·4", flops: "2·nnz" };

/// See [`SPMV`].
pub fn spmv(a: Shape) -> Cost {
    Cost { bytes: Some(a.nnz * 8 + (a.rows + 1) * 4 + a.cols * 4 + a.rows * 4), flops: Some(2 * a.nnz) }
}
