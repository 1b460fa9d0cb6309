//! The one error type of wgsparse. Every fallible public function returns [`Result`].

pub use crate::format::matrix_market::MatrixMarketError;
pub use crate::format::FormatError;

/// Result alias used throughout the crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong in wgsparse. Bad input never panics; it lands here.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// No GPU adapter matched the request.
    #[error("no GPU adapter found ({request}); {hint}")]
    NoAdapter {
        /// What was asked for (backends, name filter).
        request: String,
        /// How to get one.
        hint: &'static str,
    },
    /// `WGSPARSE_BACKEND` (or the options) named a backend wgpu does not know.
    #[error("unknown backend {0:?}: expected vulkan, metal, dx12 or gl")]
    UnknownBackend(String),
    /// The adapter refused the device request.
    #[error("could not open the GPU device: {0}")]
    RequestDevice(String),
    /// A host matrix or vector failed validation.
    #[error(transparent)]
    Format(#[from] FormatError),
    /// A Matrix Market file could not be read or written.
    #[error(transparent)]
    MatrixMarket(#[from] MatrixMarketError),
    /// Operand shapes do not fit together.
    #[error("{op}: dimension mismatch, {what} is {found} but must be {expected}")]
    DimensionMismatch {
        /// The operation that refused.
        op: &'static str,
        /// Which operand.
        what: &'static str,
        /// What the operation needs.
        expected: usize,
        /// What it got.
        found: usize,
    },
    /// The request needs more than one of the device's limits allows.
    #[error("{what} needs {requested} but the device limit {limit} is {max}")]
    LimitExceeded {
        /// What was being created or dispatched.
        what: String,
        /// The wgpu limit's name, e.g. `max_storage_buffer_binding_size`.
        limit: &'static str,
        /// What was requested.
        requested: u64,
        /// The limit.
        max: u64,
    },
    /// The device ran out of memory.
    #[error("out of GPU memory while {0}")]
    OutOfMemory(String),
    /// The device was lost (driver reset, `Device::destroy`, unplugged GPU).
    #[error("the GPU device was lost: {0}")]
    DeviceLost(String),
    /// A wait for the GPU gave up: the submitted work ran for minutes (or the device hangs).
    #[error("{0}")]
    Timeout(String),
    /// An operand (vector, matrix, scalar, plan) belongs to another context than the one
    /// the call was given: each context is one device, and its buffers mean nothing to another.
    #[error("{0}")]
    ContextMismatch(String),
    /// An output shares memory with another operand of the same op (a race on the GPU).
    #[error("{0}")]
    Aliasing(String),
    /// The adapter lacks what the request needs (f64 without `SHADER_F64`, a float atomic
    /// in f64, …).
    #[error("unsupported here: {0}")]
    Unsupported(String),
    /// wgpu reported a validation error: a bug in wgsparse, please report it.
    #[error("wgpu validation error (a wgsparse bug): {0}")]
    Validation(String),
    /// Mapping a buffer for readback failed.
    #[error("buffer readback failed: {0}")]
    Readback(String),
    /// A matrix an op must solve with cannot be solved: the first offending row and why (an
    /// entry on the wrong side of a triangle, a missing or zero diagonal entry).
    #[error("{op}: row {row}: {problem}")]
    NotSolvable {
        /// The operation that refused.
        op: &'static str,
        /// The first offending row.
        row: usize,
        /// What is wrong with it.
        problem: SolveProblem,
    },
    /// An operation was given an argument outside its domain (a tuning out of range, a
    /// batch recorded into after submission, …).
    #[error("{0}")]
    InvalidArgument(String),
}

/// Why a row stops a solve ([`Error::NotSolvable`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SolveProblem {
    /// An entry lies on the wrong side of the diagonal: the matrix is not the triangle the
    /// solve was planned for.
    #[error("an entry lies outside the triangle")]
    OutsideTriangle,
    /// The row stores no diagonal entry (and the diagonal is not unit).
    #[error("the diagonal entry is missing")]
    MissingDiagonal,
    /// The diagonal entry is zero.
    #[error("the diagonal entry (pivot) is zero")]
    ZeroPivot,
    /// A Cholesky-type factorization (IC(0)) met a pivot that is not positive (or a pivot
    /// came out not finite): the matrix is not positive definite enough for it.
    #[error("a pivot is not positive: the matrix is not positive definite")]
    NotPositiveDefinite,
}

impl Error {
    pub(crate) fn dimension(op: &'static str, what: &'static str, expected: usize, found: usize) -> Self {
        Error::DimensionMismatch { op, what, expected, found }
    }
}
