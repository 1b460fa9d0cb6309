//! GPU plumbing: the context (adapter, device, features, limits), device vectors and
//! device-resident sparse matrices.

mod buffer;
mod context;
mod matrix;

pub use buffer::GpuVec;
pub(crate) use buffer::VecSlice;
pub use context::{parse_backends, AdapterReport, Context, ContextOptions};
pub(crate) use matrix::{EllIndices, GpuCoo, GpuCsr, GpuEll, Storage};
pub use matrix::{Format, GpuMatrix, RowStats};
