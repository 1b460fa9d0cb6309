//! CPU twins of the GPU operations: the oracles every kernel test compares against.
//!
//! Each twin has the name of its GPU op and loops over its format the way the shader does
//! (row by row for CSR and ELL, entry by entry for COO), but accumulates in f64 so that its
//! own rounding error is negligible next to the f32 kernels'.
//!
//! These functions take test inputs, not user input: operand shapes are checked with
//! `assert!`, and a mismatch panics with a message saying which operand is wrong.

mod bitmap;
pub mod blas1;
mod compare;
mod incomplete;
mod lu;
mod solvers;
mod spmm;
mod spmv;
mod sptrsv;

pub use bitmap::{bitmap_add, bitmap_lu, bitmap_multiply, lu_pattern};
pub use compare::{error_relative_to_terms, max_error_relative_to_terms, max_relative_error, relative_error};
pub use incomplete::{
    apply_incomplete, diagonal_factor, diagonal_incomplete_factor, exact_incomplete_factor, has_diagonal_form,
    incomplete_factor,
};
pub use lu::{lu_backward_error, lu_factor, lu_residual_along};
pub use solvers::{bicgstab, cg, gmres, TwinPreconditioner, TwinSolve};
pub use spmm::{sddmm_csr, spmm_csr};
pub use spmv::{gemv_dense, gemv_dense_t, spmv_coo, spmv_csr, spmv_ell, spmv_hyb};
pub use sptrsv::{triangular_backward_error, triangular_solve};
