//! GPU plumbing: the context (adapter, device, features, limits), device vectors and
//! device-resident sparse matrices.

mod buffer;
mod context;
mod matrix;

pub use buffer::GpuVec;
pub(crate) use buffer::VecSlice;
pub use context::{parse_backends, AdapterReport, Context, ContextOptions};
pub use matrix::{Format, GpuMatrix, RowStats};
pub(crate) use matrix::{GpuCoo, GpuCsr, GpuEll, Storage};
