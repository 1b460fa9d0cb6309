//! wgsparse: sparse linear algebra on any GPU through wgpu and WGSL compute shaders.
#![doc = include_str!("../README.md")]
#![warn(missing_docs)]

pub mod error;
pub mod format;
pub mod generate;
pub mod gpu;
pub mod ops;
mod pipeline;
pub mod reference;

pub use error::{Error, Result};
pub use format::{CooMatrix, CsrMatrix, DenseMatrix, EllMatrix, FormatError, HybMatrix, Scalar};
pub use gpu::{Context, ContextOptions};
/// The shaders wgsparse ships, validated and reflected at build time.
pub use pipeline::registry as shaders;
