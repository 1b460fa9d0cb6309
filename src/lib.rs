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
pub mod solvers;

pub use context::{AdapterReport, Context, ContextOptions};
pub use element::{ElementKind, Scalar};
pub use error::{Error, Result, SolveProblem};
pub use format::{BitmapMatrix, BitmapOptions, CooMatrix, CsrMatrix, DenseMatrix, EllMatrix, FormatError, HybMatrix};
pub use gpu::{GpuScalar, GpuVec, ScalarArg};
/// The shaders wgsparse ships, validated by naga at build time, with the typed interface
/// build.rs generated for each (`shaders::<file name>::{Params, Bindings, Flags, Overrides}`).
///
/// Host code names every field of a shader's interface, so a field that changes on one side
/// only fails the build. `shaders/spmv_ell.wgsl` declares
/// `struct Params { rows: u32, width: u32, first_row: u32, index_stride: u32, scaling: Scaling }`:
///
/// ```
/// use wgsparse::shaders::{spmv_ell, structs::Scaling};
/// let params = spmv_ell::Params::<f32> { rows: 4, width: 2, first_row: 0, index_stride: 0, scaling: Scaling::default() };
/// let overrides = spmv_ell::Overrides { wg_size: 256, batch: 2 };
/// # let _ = (params, overrides);
/// ```
///
/// A field the shader does not have is a compile error:
///
/// ```compile_fail
/// use wgsparse::shaders::{spmv_ell, structs::Scaling};
/// let params = spmv_ell::Params::<f32> {
///     rows: 4, width: 2, first_row: 0, index_stride: 0, scaling: Scaling::default(), alpha: 1.0,
/// };
/// ```
///
/// So is a field of the wrong type (`rows` is a `u32` in the shader)…
///
/// ```compile_fail
/// use wgsparse::shaders::{spmv_ell, structs::Scaling};
/// let params = spmv_ell::Params::<f32> { rows: 4.0, width: 2, first_row: 0, index_stride: 0, scaling: Scaling::default() };
/// ```
///
/// …and a missing one (here the `BATCH` override):
///
/// ```compile_fail
/// let overrides = wgsparse::shaders::spmv_ell::Overrides { wg_size: 256 };
/// ```
pub use kernel::registry as shaders;
pub use matrix::{Conversion, DenseLayout, Format, GpuDense, GpuSparse};
pub use record::{Batch, Recorder};
/// The wgpu this crate is built on, for callers that share its device and passes.
pub use wgpu;
