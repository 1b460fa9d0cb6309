//! Restarted GMRES(m), right-preconditioned (Saad's Algorithm 9.5): classical Gram–Schmidt
//! in two passes over the basis (`gram_schmidt.rs`), by default projected a second time when
//! the first cancelled too much (DGKS, decided on the device), Givens rotations and the
//! back substitution by the step kernel (one invocation), so a cycle never waits for the host.

use super::gram_schmidt::{Basis, Coefficients, Dots};
use super::steps::{slot, GmresSlots, Ratio};
use super::{Common, Method, Operator, Orthogonalization, Sink, SolverOptions};
use crate::element::Scalar;
use crate::gpu::GpuVec;
use crate::ops::blas1;
use crate::{Batch, Context, Result};

/// 1 / ‖w‖, the scale of the next basis vector.
const INV: usize = slot::FIRST_FREE;
/// ‖w‖ before the projection, for the reorthogonalization test.
const W_NORM: usize = INV + 1;
const FIRST_ARRAY: usize = INV + 2;

/// The cycle's update: x += Σ yᵢ·vᵢ, y zero past the cycle's columns (those vectors skipped).
fn add(first: usize) -> Coefficients {
    Coefficients { first, subtract: false, skip_zero: true }
}

/// Gram–Schmidt: w −= Σ hᵢ·vᵢ, every vector read.
fn subtract(first: usize) -> Coefficients {
    Coefficients { first, subtract: true, skip_zero: false }
}

/// A planned GMRES(m) solve: the m + 1 basis vectors and the small dense arrays allocated
/// once.
pub struct Gmres<'a, T: Scalar> {
    common: Common<'a, T>,
    slots: GmresSlots,
    basis: Basis<T>,
    /// The next basis vector before it is normalized (its own buffer: a dispatch may not
    /// read one part of a buffer and write another).
    w: GpuVec<T>,
    /// M⁻¹·v (and M⁻¹·Σ yᵢ·vᵢ at the update), with a preconditioner.
    z: Option<GpuVec<T>>,
    /// Σ yᵢ·vᵢ, with a preconditioner (without one, the update goes straight into x).
    u: Option<GpuVec<T>>,
    /// Columns recorded in the open cycle.
    column: usize,
    /// Whether a column may be projected twice ([`Orthogonalization::Reorthogonalized`]).
    reorthogonalize: bool,
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
        let basis = Basis::new(ctx, common.steps.rows(), m + 1)?;
        common.count_bytes(basis.bytes());
        let w = common.vector()?;
        let z = common.precond.as_ref().map(|_| common.vector()).transpose()?;
        let u = common.precond.as_ref().map(|_| common.vector()).transpose()?;
        let reorthogonalize = options.orthogonalization == Orthogonalization::Reorthogonalized;
        Ok(Gmres { slots, basis, w, z, u, column: 0, reorthogonalize, common })
    }

    solve_entry_points!();

    /// A cycle's start: v₀ = r / ‖r‖, g = ‖r‖·e₁.
    fn cycle_start<'p>(&mut self, sink: &mut impl Sink<'p>, b: &GpuVec<T>, x: &GpuVec<T>) -> Result<()> {
        self.column = 0;
        let steps = &self.common.steps;
        let mut rec = sink.rec();
        steps.cycle_start(&mut rec)?;
        self.common.residual(&mut rec, b, x, &mut self.basis.vectors[0], slot::R_NORM)?;
        steps.check(&mut rec, slot::R_NORM, None)?;
        steps.ratio(&mut rec, Ratio::quotient(slot::R_NORM, slot::ONE, self.slots.g, None))?;
        steps.ratio(&mut rec, Ratio::quotient(slot::ONE, slot::R_NORM, INV, None))?;
        blas1::scal(&mut rec, steps.arg(INV), &mut self.basis.vectors[0])
    }

    /// The open cycle's update, x += M⁻¹·V·y with y = R⁻¹·g, if the cycle ran.
    fn update<'p>(&mut self, sink: &mut impl Sink<'p>, x: &mut GpuVec<T>) -> Result<()> {
        let steps = &self.common.steps;
        let (m, y) = (self.slots.m, self.slots.y);
        steps.gate_update(sink)?;
        let mut rec = sink.rec();
        steps.back_solve(&mut rec, self.slots)?;
        match (&mut self.u, &mut self.z) {
            (Some(u), Some(z)) => {
                blas1::fill(&mut rec, T::default(), u)?;
                self.basis.update(&mut rec, m, add(y), u, steps.state(), None)?;
                self.common.precondition(&mut rec, u, z)?;
                blas1::axpy(&mut rec, T::from_f64(1.0), z, x)?;
            }
            _ => self.basis.update(&mut rec, m, add(y), x, steps.state(), None)?,
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
        let (column, below) = (s.h_at(0, j), s.h_at(j + 1, j));
        steps.gate(sink)?;
        {
            let mut rec = sink.rec();
            let v = &self.basis.vectors[j];
            match &mut self.z {
                Some(z) => {
                    self.common.precondition(&mut rec, v, z)?;
                    self.common.op.apply(&mut rec, z, &mut self.w)?;
                }
                None => self.common.op.apply(&mut rec, v, &mut self.w)?,
            }
            // Classical Gram–Schmidt against v₀ … v_j: h = Vᵀ·w, then w −= V·h.
            let (w, state) = (&self.w, steps.state());
            self.basis.project(&mut rec, j + 1, w, state, Dots { into: column, add_to: None }, Some(W_NORM))?;
            self.basis.update(&mut rec, j + 1, subtract(column), w, state, Some(below))?;
            if self.reorthogonalize {
                steps.reorthogonalize(&mut rec, below, W_NORM)?;
            }
        }
        if self.reorthogonalize {
            // Once more if the device says so: c = Vᵀ·w, w −= V·c, h += c.
            steps.gate_reorthogonalize(sink)?;
            let mut rec = sink.rec();
            let (w, state) = (&self.w, steps.state());
            self.basis.project(&mut rec, j + 1, w, state, Dots { into: s.c, add_to: Some(column) }, None)?;
            self.basis.update(&mut rec, j + 1, subtract(s.c), w, state, Some(below))?;
            drop(rec);
            steps.gate(sink)?;
        }
        {
            let mut rec = sink.rec();
            steps.givens(&mut rec, s, j, slot::R_NORM, INV)?;
            steps.check(&mut rec, slot::R_NORM, Some(history_at))?;
            blas1::axpby(&mut rec, steps.arg(INV), &self.w, T::default(), &mut self.basis.vectors[j + 1])?;
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
        self.common.residual(&mut batch.recorder(), b, x, &mut self.basis.vectors[0], slot::TRUE_NORM)
    }
}
