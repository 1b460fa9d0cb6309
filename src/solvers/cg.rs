//! Conjugate gradients for symmetric positive definite A (and M), preconditioned:
//! Saad's Algorithm 9.1, with every coefficient on the device.

use super::steps::{slot, Ratio};
use super::{Common, Method, Operator, Sink, SolverOptions};
use crate::element::Scalar;
use crate::gpu::GpuVec;
use crate::ops::blas1;
use crate::{Batch, Context, Result};

const RHO: usize = slot::FIRST_FREE;
const PQ: usize = RHO + 1;
const ALPHA: usize = RHO + 2;
const NEG_ALPHA: usize = RHO + 3;
const BETA: usize = RHO + 4;
const RHO_NEW: usize = RHO + 5;
const SLOTS: usize = RHO + 6;

/// A planned CG solve: work vectors (r, p, A·p, and z = M⁻¹·r with a preconditioner)
/// allocated once, reused by every [`Cg::solve`].
pub struct Cg<'a, T: Scalar> {
    common: Common<'a, T>,
    r: GpuVec<T>,
    p: GpuVec<T>,
    q: GpuVec<T>,
    /// M⁻¹·r; without a preconditioner z is r itself and this is unused.
    z: Option<GpuVec<T>>,
}

impl<'a, T: Scalar> Cg<'a, T> {
    /// Plans CG on `op` (square, symmetric positive definite) with an optional
    /// preconditioner `z ← M⁻¹·r` (symmetric positive definite too).
    pub fn new(
        ctx: &Context,
        op: impl Into<Operator<'a, T>>,
        precond: Option<Operator<'a, T>>,
        options: SolverOptions,
    ) -> Result<Self> {
        let common = Common::new(ctx, "cg", op.into(), precond, options, SLOTS)?;
        let z = common.precond.as_ref().map(|_| common.vector()).transpose()?;
        Ok(Cg { r: common.vector()?, p: common.vector()?, q: common.vector()?, z, common })
    }

    solve_entry_points!();

    /// `ρ ← r·z` (z = M⁻¹·r), then p ← z.
    fn precondition_into_p<'p>(&mut self, sink: &mut impl Sink<'p>, rho: usize) -> Result<()> {
        let mut rec = sink.rec();
        match &mut self.z {
            Some(z) => {
                self.common.precondition(&mut rec, &self.r, z)?;
                self.common.steps.dot(&mut rec, &self.r, z, rho)
            }
            None => self.common.steps.dot(&mut rec, &self.r, &self.r, rho),
        }
    }
}

impl<T: Scalar> Method<T> for Cg<'_, T> {
    fn common(&self) -> &Common<'_, T> {
        &self.common
    }

    fn start(&mut self, batch: &mut Batch<'_>, b: &GpuVec<T>, x: &mut GpuVec<T>) -> Result<()> {
        {
            let mut rec = batch.recorder();
            self.common.residual(&mut rec, b, x, &mut self.r, slot::R_NORM)?;
            self.common.steps.check(&mut rec, slot::R_NORM, None)?;
        }
        self.precondition_into_p(batch, RHO)?;
        let z = self.z.as_ref().unwrap_or(&self.r);
        blas1::copy(&mut batch.recorder(), z, &mut self.p)
    }

    fn iteration<'p>(
        &mut self,
        sink: &mut impl Sink<'p>,
        _b: &GpuVec<T>,
        x: &mut GpuVec<T>,
        history_at: usize,
    ) -> Result<()> {
        let steps = &self.common.steps;
        steps.gate(sink)?;
        {
            let mut rec = sink.rec();
            self.common.op.apply(&mut rec, &self.p, &mut self.q)?;
            steps.dot(&mut rec, &self.p, &self.q, PQ)?;
            steps.ratio(&mut rec, Ratio { positive: true, ..Ratio::quotient(RHO, PQ, ALPHA, Some(NEG_ALPHA)) })?;
            blas1::axpy(&mut rec, steps.arg(ALPHA), &self.p, x)?;
            blas1::axpy(&mut rec, steps.arg(NEG_ALPHA), &self.q, &mut self.r)?;
            steps.norm(&mut rec, &self.r, slot::R_NORM)?;
            steps.check(&mut rec, slot::R_NORM, Some(history_at))?;
        }
        // β = ρ_new / ρ, ρ ← ρ_new; without a preconditioner ρ_new = ‖r‖², no second reduction.
        let beta = if self.z.is_some() {
            self.precondition_into_p(sink, RHO_NEW)?;
            Ratio { keep: Some(RHO), ..Ratio::quotient(RHO_NEW, RHO, BETA, None) }
        } else {
            Ratio { num: (slot::R_NORM, slot::R_NORM), keep: Some(RHO), ..Ratio::quotient(RHO_NEW, RHO, BETA, None) }
        };
        let steps = &self.common.steps;
        let mut rec = sink.rec();
        steps.ratio(&mut rec, beta)?;
        let z = self.z.as_ref().unwrap_or(&self.r);
        blas1::axpby(&mut rec, T::from_f64(1.0), z, steps.arg(BETA), &mut self.p)
    }

    fn true_residual(&mut self, batch: &mut Batch<'_>, b: &GpuVec<T>, x: &GpuVec<T>) -> Result<()> {
        self.common.residual(&mut batch.recorder(), b, x, &mut self.r, slot::TRUE_NORM)
    }
}
