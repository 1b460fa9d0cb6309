//! wgsparse: sparse linear algebra on any GPU through wgpu and WGSL compute shaders.
#![doc = include_str!("../README.md")]
#![warn(missing_docs)]

pub mod analysis;
pub mod context;
pub mod element;
pub mod error;
pub mod format;
pub mod generate;
pub mod gpu;
pub(crate) mod kernel;
pub mod matrix;
pub mod ops;
pub mod record;
pub mod reference;

pub use context::{AdapterReport, Context, ContextOptions};
pub use element::{ElementKind, Scalar};
pub use error::{Error, Result};
pub use format::{CooMatrix, CsrMatrix, DenseMatrix, EllMatrix, FormatError, HybMatrix};
pub use gpu::{GpuScalar, GpuVec, ScalarArg};
/// The shaders wgsparse ships, validated and reflected at build time.
pub use kernel::registry as shaders;
pub use matrix::{Conversion, DenseLayout, Format, GpuDense, GpuSparse};
pub use record::{Batch, Recorder};
/// The wgpu this crate is built on, for callers that share its device and passes.
pub use wgpu;
