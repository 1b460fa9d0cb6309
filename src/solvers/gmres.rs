//! Restarted GMRES(m), right-preconditioned (Saad's Algorithm 9.5): delayed classical
//! Gram–Schmidt, two passes over the basis a column (`gram_schmidt.rs`), Givens rotations and
//! the back substitution by the step kernel (one invocation), so a cycle never waits for the
//! host.
//!
//! The delay: column j's pass also projects the vector that becomes v_j a second time, so
//! v_j is final only after A has been applied to it once projected, and column j − 1 of H
//! (with its residual estimate and convergence check) is finished in column j's iteration.
//! The check of a cycle's last column comes after one more pass over the basis (its dots,
//! no update), and a run that stops mid-cycle finishes its open column in `finish`.

use super::gram_schmidt::{Basis, ColumnSlots};
use super::steps::{slot, GmresSlots};
use super::{Common, Method, Operator, Orthogonalization, Sink, SolverOptions};
use crate::element::Scalar;
use crate::gpu::GpuVec;
use crate::ops::blas1;
use crate::record::Recorder;
use crate::{Batch, Context, Result};

/// Where Givens leaves 1/H[j + 1, j] (not used here).
const INV: usize = slot::FIRST_FREE;
const FIRST_ARRAY: usize = INV + 1;

/// A planned GMRES(m) solve: the m basis vectors and the small dense arrays allocated once.
pub struct Gmres<'a, T: Scalar> {
    common: Common<'a, T>,
    /// The solvers of [`Self::solve_many`]'s second and later systems.
    more_systems: Vec<Self>,
    slots: GmresSlots,
    basis: Basis<T>,
    /// The open column's vector u, projected once (its second projection makes it v_j)...
    u: GpuVec<T>,
    /// ... and p = A·M⁻¹·u, which the column's update turns into the next u (the two then
    /// swap).
    p: GpuVec<T>,
    /// M⁻¹·u (and M⁻¹·Σ yᵢ·vᵢ at the update), with a preconditioner.
    z: Option<GpuVec<T>>,
    /// Σ yᵢ·vᵢ, with a preconditioner (without one, the update goes straight into x).
    sum: Option<GpuVec<T>>,
    /// Columns recorded in the open cycle.
    column: usize,
    /// Whether u is projected twice ([`Orthogonalization::Reorthogonalized`]).
    reorthogonalize: bool,
    /// The history entry of the next check in the current batch: a batch's checks lag its
    /// iterations by one column within a cycle.
    next_history: usize,
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
        let basis = Basis::new(ctx, common.steps.rows(), m)?;
        common.count_bytes(basis.bytes());
        let (u, p) = (common.vector()?, common.vector()?);
        let z = common.precond.as_ref().map(|_| common.vector()).transpose()?;
        let sum = common.precond.as_ref().map(|_| common.vector()).transpose()?;
        let reorthogonalize = options.orthogonalization == Orthogonalization::Reorthogonalized;
        Ok(Gmres {
            slots,
            basis,
            u,
            p,
            z,
            sum,
            column: 0,
            reorthogonalize,
            next_history: 0,
            common,
            more_systems: Vec::new(),
        })
    }

    solve_entry_points!();

    fn column_slots(&self) -> ColumnSlots {
        ColumnSlots { dots: self.slots.dots, inv_beta: self.slots.inv_beta, mu: self.slots.mu }
    }

    /// A cycle's start: u = r (v₀ = r/‖r‖ comes out of column 0's pass, g = ‖r‖·e₁ out of its
    /// step).
    fn cycle_start<'p>(&mut self, sink: &mut impl Sink<'p>, b: &GpuVec<T>, x: &GpuVec<T>) -> Result<()> {
        self.column = 0;
        let steps = &self.common.steps;
        let mut rec = sink.rec();
        steps.cycle_start(&mut rec)?;
        self.common.residual(&mut rec, b, x, &mut self.u, slot::R_NORM)?;
        steps.check(&mut rec, slot::R_NORM, None)
    }

    /// Column `j`'s coefficients from its dots; for j > 0 that finishes column j − 1: its
    /// rotation and convergence check.
    fn column_step(&mut self, rec: &mut Recorder<'_, '_>, j: usize) -> Result<()> {
        let steps = &self.common.steps;
        steps.column(rec, self.slots, j, self.reorthogonalize)?;
        if j > 0 {
            steps.givens(rec, self.slots, j - 1, slot::R_NORM, INV)?;
            // Gated off (the solve stopped) when the history is already full.
            let at = self.next_history.min(steps.history_len() - 1);
            self.next_history += 1;
            steps.check(rec, slot::R_NORM, Some(at))?;
        }
        Ok(())
    }

    /// Finishes the open cycle's last column (u's second projection: its dots and step).
    fn close_column<'p>(&mut self, sink: &mut impl Sink<'p>) -> Result<()> {
        let j = self.column;
        self.common.steps.gate(sink)?;
        let mut rec = sink.rec();
        self.basis.column_dots(&mut rec, j, &self.u, &self.p, self.common.steps.state(), self.column_slots())?;
        self.column_step(&mut rec, j)
    }

    /// The open cycle's update, x += M⁻¹·V·y with y = R⁻¹·g, if the cycle ran.
    fn update<'p>(&mut self, sink: &mut impl Sink<'p>, x: &mut GpuVec<T>) -> Result<()> {
        let steps = &self.common.steps;
        let (m, y) = (self.slots.m, self.slots.y);
        steps.gate_update(sink)?;
        let mut rec = sink.rec();
        steps.back_solve(&mut rec, self.slots)?;
        match (&mut self.sum, &mut self.z) {
            (Some(sum), Some(z)) => {
                blas1::fill(&mut rec, T::default(), sum)?;
                self.basis.add(&mut rec, m, y, sum, steps.state())?;
                self.common.precondition(&mut rec, sum, z)?;
                blas1::axpy(&mut rec, T::from_f64(1.0), z, x)?;
            }
            _ => self.basis.add(&mut rec, m, y, x, steps.state())?,
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
        if history_at == 0 {
            self.next_history = 0;
        }
        let j = self.column;
        self.common.steps.gate(sink)?;
        {
            let mut rec = sink.rec();
            match &mut self.z {
                Some(z) => {
                    self.common.precondition(&mut rec, &self.u, z)?;
                    self.common.op.apply(&mut rec, z, &mut self.p)?;
                }
                None => self.common.op.apply(&mut rec, &self.u, &mut self.p)?,
            }
            let (state, slots) = (self.common.steps.state(), self.column_slots());
            self.basis.column_dots(&mut rec, j, &self.u, &self.p, state, slots)?;
            self.column_step(&mut rec, j)?;
            let state = self.common.steps.state();
            self.basis.column_update(&mut rec, j, &self.u, &self.p, state, slots)?;
        }
        std::mem::swap(&mut self.u, &mut self.p);
        self.column += 1;
        if self.column == self.slots.m {
            self.close_column(sink)?;
            self.update(sink, x)?;
            self.common.steps.gate(sink)?;
            self.cycle_start(sink, b, x)?;
        }
        Ok(())
    }

    fn finish(&mut self, batch: &mut Batch<'_>, x: &mut GpuVec<T>) -> Result<()> {
        if self.column > 0 {
            self.close_column(batch)?;
            self.update(batch, x)?;
        }
        Ok(())
    }

    fn true_residual(&mut self, batch: &mut Batch<'_>, b: &GpuVec<T>, x: &GpuVec<T>) -> Result<()> {
        self.common.residual(&mut batch.recorder(), b, x, &mut self.p, slot::TRUE_NORM)
    }
}
