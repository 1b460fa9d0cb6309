//! Operations on device-resident operands. Each op is a plan (`Spmv`, …) built once for a
//! matrix (kernels compiled, scratch allocated, analyses shared) and recorded many times
//! into a batch or the caller's pass; `run` records and submits one.

pub mod bitmap;
pub mod blas1;
pub(crate) mod common;
pub mod gemv;
pub mod lu;
pub mod sddmm;
pub mod spmm;
pub mod spmv;
pub mod sptrsv;
mod tile_options;
mod transpose;

pub use gemv::{Gemv, GemvOptions, Transpose};
pub use lu::{BatchedLu, LuAlgorithm, LuOptions, Pivoting, TallPanels};
pub use sddmm::{Sddmm, SddmmAlgorithm, SddmmOptions};
pub use spmm::{Spmm, SpmmAlgorithm, SpmmOptions};
pub use spmv::{preferred_conversion, Spmv, SpmvAlgorithm, SpmvOptions, DOT_WORKGROUP_MAX};
pub use sptrsv::{Diagonal, LevelCapture, SolveReport, SptrsvAlgorithm, SptrsvOptions, Triangle, TriangularSolve};
pub use tile_options::{TileOptions, TransposedReads};
pub use transpose::transpose;
