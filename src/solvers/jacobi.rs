//! The Jacobi preconditioner: `z ← D⁻¹·r`, D the diagonal of A.

use super::LinOp;
use crate::element::Scalar;
use crate::error::SolveProblem;
use crate::gpu::GpuVec;
use crate::kernel::shaders::csr_diagonal as kernel;
use crate::matrix::PanelStorage;
use crate::ops::blas1;
use crate::record::Recorder;
use crate::{Context, Error, GpuSparse, Result};

/// `z ← D⁻¹·r`, with D⁻¹ computed on the GPU once from a CSR matrix.
pub struct Jacobi<T: Scalar> {
    inverse: GpuVec<T>,
}

impl<T: Scalar> Jacobi<T> {
    /// D⁻¹ of `a` (CSR, square, any number of row panels). A row without a diagonal entry or
    /// with a zero one is refused ([`Error::NotSolvable`], the first such row named).
    pub fn new(ctx: &Context, a: &GpuSparse<T>) -> Result<Self> {
        crate::ops::common::Operands::new(ctx, "jacobi")?.owned("the matrix", a.device_id())?;
        if a.rows() != a.cols() {
            return Err(Error::dimension("jacobi", "matrix columns (a square matrix)", a.rows(), a.cols()));
        }
        // A lane walks its row for the diagonal entry.
        let longest = a.stats().max_len as u64;
        ctx.check_loop_iterations(|| format!("jacobi on rows of {longest} entries"), longest + 2)?;
        let inverse = ctx.zeros::<T>(a.rows())?;
        let problems = ctx.upload(&[u32::MAX, u32::MAX])?;
        let diagonal = ctx.kernel::<kernel::Shader, T>(Default::default(), Default::default())?;
        let mut batch = ctx.batch();
        {
            let mut rec = batch.recorder();
            for panel in a.panels() {
                let PanelStorage::Csr(csr) = panel.storage() else {
                    return Err(Error::Unsupported(format!(
                        "jacobi: the diagonal of a {} matrix (CSR only)",
                        a.format().name()
                    )));
                };
                let rows = panel.rows();
                let params = kernel::Params { rows: rows.len() as u32, row_start: rows.start as u32 };
                let bindings = kernel::Bindings {
                    row_offsets: csr.row_offsets().bind(),
                    col_indices: csr.col_indices().bind(),
                    values: csr.values().bind(),
                    inverse: inverse.bind(),
                    problems: problems.bind(),
                };
                rec.dispatch_items(&diagonal, params, bindings, rows.len() as u64)?;
            }
        }
        let ticket = batch.read_back(&problems)?;
        batch.submit()?;
        let found = ticket.wait()?;
        let refuse = |row: u32, problem| Err(Error::NotSolvable { op: "jacobi", row: row as usize, problem });
        match (found[0], found[1]) {
            (u32::MAX, u32::MAX) => Ok(Jacobi { inverse }),
            (missing, zero) if missing <= zero => refuse(missing, SolveProblem::MissingDiagonal),
            (_, zero) => refuse(zero, SolveProblem::ZeroPivot),
        }
    }

    /// D⁻¹ as a vector.
    pub fn inverse_diagonal(&self) -> &GpuVec<T> {
        &self.inverse
    }
}

impl<T: Scalar> LinOp<T> for Jacobi<T> {
    fn shape(&self) -> (usize, usize) {
        (self.inverse.len(), self.inverse.len())
    }

    fn apply(&self, rec: &mut Recorder<'_, '_>, x: &GpuVec<T>, y: &mut GpuVec<T>) -> Result<()> {
        blas1::mul(rec, &self.inverse, x, y)
    }
}
