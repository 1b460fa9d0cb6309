//! Restarted GMRES(m), right-preconditioned (Saad's Algorithm 9.5): modified Gram–Schmidt,
//! Givens rotations and the back substitution on the device, by the one-invocation step
//! kernel, so a cycle never waits for the host.

use super::steps::{slot, GmresSlots, Ratio};
use super::{Common, Method, Operator, Sink, SolverOptions};
use crate::element::Scalar;
use crate::gpu::GpuVec;
use crate::ops::blas1;
use crate::{Batch, Context, Result};

/// h and −h of the Gram–Schmidt step being applied.
const H: usize = slot::FIRST_FREE;
const NEG_H: usize = H + 1;
/// 1 / ‖w‖, the scale of the next basis vector.
const INV: usize = H + 2;
const FIRST_ARRAY: usize = H + 3;

/// A planned GMRES(m) solve: the m + 1 basis vectors and the small dense arrays allocated
/// once.
pub struct Gmres<'a, T: Scalar> {
    common: Common<'a, T>,
    slots: GmresSlots,
    basis: Vec<GpuVec<T>>,
    /// M⁻¹·v (and M⁻¹·Σ yᵢ·vᵢ at the update), with a preconditioner.
    z: Option<GpuVec<T>>,
    /// Σ yᵢ·vᵢ, with a preconditioner (without one, the update goes straight into x).
    u: Option<GpuVec<T>>,
    /// Columns recorded in the open cycle.
    column: usize,
}

impl<'a, T: Scalar> Gmres<'a, T> {
    /// Plans GMRES(m), `m = options.restart`, on `op` (square) with an optional right
    /// preconditioner.
    pub fn new(
        ctx: &Context,
        op: impl Into<Operator<'a, T>>,
        precond: Option<Operator<'a, T>>,
        options: SolverOptions,
    ) -> Result<Self> {
        let m = options.restart;
        let slots = GmresSlots::after(FIRST_ARRAY, m);
        let common = Common::new(ctx, "gmres", op.into(), precond, options, slots.end())?;
        let basis = (0..=m).map(|_| common.vector()).collect::<Result<Vec<_>>>()?;
        let z = common.precond.as_ref().map(|_| common.vector()).transpose()?;
        let u = common.precond.as_ref().map(|_| common.vector()).transpose()?;
        Ok(Gmres { slots, basis, z, u, column: 0, common })
    }

    solve_entry_points!();

    /// A cycle's start: v₀ = r / ‖r‖, g = ‖r‖·e₁.
    fn cycle_start<'p>(&mut self, sink: &mut impl Sink<'p>, b: &GpuVec<T>, x: &GpuVec<T>) -> Result<()> {
        self.column = 0;
        let steps = &self.common.steps;
        let mut rec = sink.rec();
        steps.cycle_start(&mut rec)?;
        self.common.residual(&mut rec, b, x, &mut self.basis[0], slot::R_NORM)?;
        steps.check(&mut rec, slot::R_NORM, None)?;
        steps.ratio(&mut rec, Ratio::quotient(slot::R_NORM, slot::ONE, self.slots.g, None))?;
        steps.ratio(&mut rec, Ratio::quotient(slot::ONE, slot::R_NORM, INV, None))?;
        blas1::scal(&mut rec, steps.arg(INV), &mut self.basis[0])
    }

    /// The open cycle's update, x += M⁻¹·V·y with y = R⁻¹·g, if the cycle ran.
    fn update<'p>(&mut self, sink: &mut impl Sink<'p>, x: &mut GpuVec<T>) -> Result<()> {
        let steps = &self.common.steps;
        steps.gate_update(sink)?;
        let mut rec = sink.rec();
        steps.back_solve(&mut rec, self.slots)?;
        let target = match &mut self.u {
            Some(u) => {
                blas1::fill(&mut rec, T::default(), u)?;
                u
            }
            None => &mut *x,
        };
        // y past the cycle's columns is zero: those axpys read nothing.
        for (i, v) in self.basis[..self.slots.m].iter().enumerate() {
            blas1::axpy(&mut rec, steps.arg(self.slots.y + i), v, target)?;
        }
        if let (Some(u), Some(z)) = (&self.u, &mut self.z) {
            self.common.precondition(&mut rec, u, z)?;
            blas1::axpy(&mut rec, T::from_f64(1.0), z, x)?;
        }
        steps.cycle_end(&mut rec)
    }
}

impl<T: Scalar> Method<T> for Gmres<'_, T> {
    fn common(&self) -> &Common<'_, T> {
        &self.common
    }

    fn start(&mut self, batch: &mut Batch<'_>, b: &GpuVec<T>, x: &mut GpuVec<T>) -> Result<()> {
        self.cycle_start(batch, b, x)
    }

    fn iteration<'p>(
        &mut self,
        sink: &mut impl Sink<'p>,
        b: &GpuVec<T>,
        x: &mut GpuVec<T>,
        history_at: usize,
    ) -> Result<()> {
        let j = self.column;
        let s = self.slots;
        let steps = &self.common.steps;
        steps.gate(sink)?;
        {
            let mut rec = sink.rec();
            let (done, next) = self.basis.split_at_mut(j + 1);
            let w = &mut next[0];
            match &mut self.z {
                Some(z) => {
                    self.common.precondition(&mut rec, &done[j], z)?;
                    self.common.op.apply(&mut rec, z, w)?;
                }
                None => self.common.op.apply(&mut rec, &done[j], w)?,
            }
            // Modified Gram–Schmidt against v₀ … v_j.
            for (i, v) in done.iter().enumerate() {
                steps.dot(&mut rec, v, w, s.h_at(i, j))?;
                steps.ratio(&mut rec, Ratio::quotient(s.h_at(i, j), slot::ONE, H, Some(NEG_H)))?;
                blas1::axpy(&mut rec, steps.arg(NEG_H), v, w)?;
            }
            steps.norm(&mut rec, w, s.h_at(j + 1, j))?;
            steps.givens(&mut rec, s, j, slot::R_NORM, INV)?;
            steps.check(&mut rec, slot::R_NORM, Some(history_at))?;
            blas1::scal(&mut rec, steps.arg(INV), w)?;
        }
        self.column += 1;
        if self.column == s.m {
            self.update(sink, x)?;
            self.common.steps.gate(sink)?;
            self.cycle_start(sink, b, x)?;
        }
        Ok(())
    }

    fn finish(&mut self, batch: &mut Batch<'_>, x: &mut GpuVec<T>) -> Result<()> {
        if self.column > 0 {
            self.update(batch, x)?;
        }
        Ok(())
    }

    fn true_residual(&mut self, batch: &mut Batch<'_>, b: &GpuVec<T>, x: &GpuVec<T>) -> Result<()> {
        self.common.residual(&mut batch.recorder(), b, x, &mut self.basis[0], slot::TRUE_NORM)
    }
}
