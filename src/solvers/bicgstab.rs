//! BiCGSTAB for general square A, right-preconditioned (van der Vorst; the form of SciPy's
//! `bicgstab`), every coefficient on the device, with a pseudo-random shadow residual by
//! default ([`Shadow`]) and reliable updating: once the recurrence's residual norm has fallen
//! below 1% of its peak since the last time, the next iteration starts from r = b − A·x
//! (Sleijpen and van der Vorst 1996), so that the rounding r gathered while it was large
//! leaves it. Without that, an f32 solve of convection–diffusion 32² whose residual peaked at
//! 55·‖b‖ ended with a recurrence at 10⁻¹⁴ and a true residual of 2.7·10⁻³.

use super::steps::{slot, Ratio};
use super::{Common, Method, Operator, Shadow, Sink, SolverOptions};
use crate::element::Scalar;
use crate::gpu::GpuVec;
use crate::ops::blas1;
use crate::{Batch, Context, Result};

const RHO: usize = slot::FIRST_FREE;
const RHO_NEW: usize = RHO + 1;
const ALPHA: usize = RHO + 2;
const NEG_ALPHA: usize = RHO + 3;
const OMEGA: usize = RHO + 4;
const NEG_OMEGA: usize = RHO + 5;
const BETA: usize = RHO + 6;
const RV: usize = RHO + 7;
const TS: usize = RHO + 8;
const TT: usize = RHO + 9;
const S_NORM: usize = RHO + 10;
/// The largest residual norm since the last replacement (`Steps::check_replacing`).
const PEAK: usize = RHO + 11;
const SLOTS: usize = RHO + 12;

/// A planned BiCGSTAB solve: r, r̂, p, v, t and (with a preconditioner) p̂, ŝ allocated once.
pub struct BiCgStab<'a, T: Scalar> {
    common: Common<'a, T>,
    r: GpuVec<T>,
    r_hat: GpuVec<T>,
    p: GpuVec<T>,
    v: GpuVec<T>,
    t: GpuVec<T>,
    /// M⁻¹·p and M⁻¹·s; without a preconditioner, p and s (= r) themselves.
    preconditioned: Option<[GpuVec<T>; 2]>,
}

impl<'a, T: Scalar> BiCgStab<'a, T> {
    /// Plans BiCGSTAB on `op` (square) with an optional right preconditioner `z ← M⁻¹·r`.
    pub fn new(
        ctx: &Context,
        op: impl Into<Operator<'a, T>>,
        precond: Option<Operator<'a, T>>,
        options: SolverOptions,
    ) -> Result<Self> {
        let common = Common::new(ctx, "bicgstab", op.into(), precond, options, SLOTS)?;
        let preconditioned =
            common.precond.as_ref().map(|_| Ok::<_, crate::Error>([common.vector()?, common.vector()?])).transpose()?;
        Ok(BiCgStab {
            r: common.vector()?,
            r_hat: common.vector()?,
            p: common.vector()?,
            v: common.vector()?,
            t: common.vector()?,
            preconditioned,
            common,
        })
    }

    solve_entry_points!();
}

impl<T: Scalar> Method<T> for BiCgStab<'_, T> {
    fn common(&self) -> &Common<'_, T> {
        &self.common
    }

    fn start(&mut self, batch: &mut Batch<'_>, b: &GpuVec<T>, x: &mut GpuVec<T>) -> Result<()> {
        // ρ = α = ω = 1 and p = v = 0, so that the first iteration's p is r; no peak yet.
        for s in [RHO, ALPHA, OMEGA] {
            self.common.steps.set(s, T::from_f64(1.0))?;
        }
        self.common.steps.set(PEAK, T::default())?;
        let mut rec = batch.recorder();
        self.common.residual(&mut rec, b, x, &mut self.r, slot::R_NORM)?;
        self.common.steps.check(&mut rec, slot::R_NORM, None)?;
        match self.common.options.shadow {
            Shadow::Residual => blas1::copy(&mut rec, &self.r, &mut self.r_hat)?,
            Shadow::Hashed(seed) => blas1::fill_hashed(&mut rec, T::from_f64(1.0), seed, &mut self.r_hat)?,
        }
        blas1::fill(&mut rec, T::default(), &mut self.p)?;
        blas1::fill(&mut rec, T::default(), &mut self.v)
    }

    fn iteration<'p>(
        &mut self,
        sink: &mut impl Sink<'p>,
        b: &GpuVec<T>,
        x: &mut GpuVec<T>,
        history_at: usize,
    ) -> Result<()> {
        let steps = &self.common.steps;
        // r = b − A·x if the last check asked for it (a few times a solve: a profiled
        // iteration, ungated, leaves it out). A·x goes to t, free until A·ŝ below: a caller's
        // operator recording raw passes runs ungated, and may write t every iteration.
        if sink.gated() {
            steps.gate_replace(sink)?;
            let mut rec = sink.rec();
            self.common.op.apply(&mut rec, x, &mut self.t)?;
            blas1::copy(&mut rec, b, &mut self.r)?;
            blas1::axpy(&mut rec, T::from_f64(-1.0), &self.t, &mut self.r)?;
            steps.norm(&mut rec, &self.r, PEAK)?;
        }
        steps.gate(sink)?;
        let mut rec = sink.rec();
        // ρ_new = r̂·r; β = (ρ_new/ρ)·(α/ω); ρ ← ρ_new.
        steps.dot(&mut rec, &self.r_hat, &self.r, RHO_NEW)?;
        steps.ratio(
            &mut rec,
            Ratio { num: (RHO_NEW, ALPHA), den: (RHO, OMEGA), nonzero_num: true, ..Ratio::quotient(0, 0, BETA, None) },
        )?;
        steps.ratio(&mut rec, Ratio::quotient(RHO_NEW, slot::ONE, RHO, None))?;
        // p ← r + β·(p − ω·v)
        blas1::axpy(&mut rec, steps.arg(NEG_OMEGA), &self.v, &mut self.p)?;
        blas1::axpby(&mut rec, T::from_f64(1.0), &self.r, steps.arg(BETA), &mut self.p)?;
        // p̂ = M⁻¹·p; v = A·p̂; α = ρ / (r̂·v)
        let (p_hat, s_hat) = match &mut self.preconditioned {
            Some([p_hat, s_hat]) => {
                self.common.precondition(&mut rec, &self.p, p_hat)?;
                (&*p_hat, Some(s_hat))
            }
            None => (&self.p, None),
        };
        self.common.op.apply(&mut rec, p_hat, &mut self.v)?;
        steps.dot(&mut rec, &self.r_hat, &self.v, RV)?;
        steps.ratio(&mut rec, Ratio::quotient(RHO, RV, ALPHA, Some(NEG_ALPHA)))?;
        // s = r − α·v (in r); x += α·p̂; stop here if s is small enough.
        blas1::axpy(&mut rec, steps.arg(NEG_ALPHA), &self.v, &mut self.r)?;
        blas1::axpy(&mut rec, steps.arg(ALPHA), p_hat, x)?;
        steps.norm(&mut rec, &self.r, S_NORM)?;
        steps.check(&mut rec, S_NORM, None)?;
        drop(rec);
        steps.gate(sink)?;
        let mut rec = sink.rec();
        // ŝ = M⁻¹·s; t = A·ŝ; ω = (t·s)/(t·t); x += ω·ŝ; r = s − ω·t.
        let s_hat = match s_hat {
            Some(s_hat) => {
                self.common.precondition(&mut rec, &self.r, s_hat)?;
                &*s_hat
            }
            None => &self.r,
        };
        self.common.op.apply(&mut rec, s_hat, &mut self.t)?;
        steps.dot(&mut rec, &self.t, &self.r, TS)?;
        steps.dot(&mut rec, &self.t, &self.t, TT)?;
        steps.ratio(&mut rec, Ratio::quotient(TS, TT, OMEGA, Some(NEG_OMEGA)))?;
        blas1::axpy(&mut rec, steps.arg(OMEGA), s_hat, x)?;
        blas1::axpy(&mut rec, steps.arg(NEG_OMEGA), &self.t, &mut self.r)?;
        steps.norm(&mut rec, &self.r, slot::R_NORM)?;
        steps.check_replacing(&mut rec, slot::R_NORM, history_at, PEAK)
    }

    fn true_residual(&mut self, batch: &mut Batch<'_>, b: &GpuVec<T>, x: &GpuVec<T>) -> Result<()> {
        self.common.residual(&mut batch.recorder(), b, x, &mut self.r, slot::TRUE_NORM)
    }
}
