//! BiCGSTAB for general square A, right-preconditioned (van der Vorst; the form of SciPy's
//! `bicgstab`), every coefficient on the device, with a pseudo-random shadow residual by
//! default ([`Shadow`]) and reliable updating: once the recurrence's residual norm has fallen
//! below 1% of its peak since the last time, the next iteration starts from r = b − A·x
//! (Sleijpen and van der Vorst 1996), so that the rounding r gathered while it was large
//! leaves it. Without that, an f32 solve of convection–diffusion 32² whose residual peaked at
//! 55·‖b‖ ended with a recurrence at 10⁻¹⁴ and a true residual of 2.7·10⁻³.

use super::steps::{slot, Ratio, Sum};
use super::{Common, Method, Operator, Shadow, Sink, SolverOptions};
use crate::element::Scalar;
use crate::gpu::GpuVec;
use crate::kernel::shaders::bicgstab_direction as direction;
use crate::kernel::Kernel;
use crate::ops::blas1;
use crate::record::Recorder;
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
    /// The solvers of [`Self::solve_many`]'s second and later systems.
    more_systems: Vec<Self>,
    r: GpuVec<T>,
    r_hat: GpuVec<T>,
    p: GpuVec<T>,
    v: GpuVec<T>,
    t: GpuVec<T>,
    /// M⁻¹·p and M⁻¹·s; without a preconditioner, p and s (= r) themselves.
    preconditioned: Option<[GpuVec<T>; 2]>,
    direction: Kernel<direction::Shader, T>,
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
            direction: ctx.kernel(Default::default(), Default::default())?,
            common,
            more_systems: Vec::new(),
        })
    }

    solve_entry_points!();

    /// `p ← r + β·(p − ω·v)` in one pass.
    fn update_direction(&self, rec: &mut Recorder<'_, '_>) -> Result<()> {
        let len = self.p.len();
        let params = direction::Params { len: len as u32, beta: BETA as u32, omega: OMEGA as u32 };
        let bindings = direction::Bindings {
            state: self.common.steps.state().bind(),
            r: self.r.bind(),
            v: self.v.bind(),
            p: self.p.bind(),
        };
        rec.dispatch_items(&self.direction, params, bindings, len as u64)
    }
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
        // ρ_new = r̂·r (its partials added up by β's step); β = (ρ_new/ρ)·(α/ω); ρ ← ρ_new.
        let rho_new = Sum { partials: steps.dot_partials(&mut rec, &self.r_hat, &self.r)?, into: RHO_NEW, root: None };
        let beta =
            Ratio { num: (RHO_NEW, ALPHA), den: (RHO, OMEGA), nonzero_num: true, ..Ratio::quotient(0, 0, BETA, None) };
        steps.ratio_after(&mut rec, Some(rho_new), beta)?;
        steps.ratio(&mut rec, Ratio::quotient(RHO_NEW, slot::ONE, RHO, None))?;
        self.update_direction(&mut rec)?;
        // p̂ = M⁻¹·p; v = A·p̂; α = ρ / (r̂·v)
        let (p_hat, s_hat) = match &mut self.preconditioned {
            Some([p_hat, s_hat]) => {
                self.common.precondition(&mut rec, &self.p, p_hat)?;
                (&*p_hat, Some(s_hat))
            }
            None => (&self.p, None),
        };
        self.common.op.apply(&mut rec, p_hat, &mut self.v)?;
        let rv = Sum { partials: steps.dot_partials(&mut rec, &self.r_hat, &self.v)?, into: RV, root: None };
        steps.ratio_after(&mut rec, Some(rv), Ratio::quotient(RHO, RV, ALPHA, Some(NEG_ALPHA)))?;
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
        let tt = Sum { partials: steps.dot_partials(&mut rec, &self.t, &self.t)?, into: TT, root: None };
        steps.ratio_after(&mut rec, Some(tt), Ratio::quotient(TS, TT, OMEGA, Some(NEG_OMEGA)))?;
        blas1::axpy(&mut rec, steps.arg(OMEGA), s_hat, x)?;
        blas1::axpy(&mut rec, steps.arg(NEG_OMEGA), &self.t, &mut self.r)?;
        steps.norm(&mut rec, &self.r, slot::R_NORM)?;
        steps.check_replacing(&mut rec, slot::R_NORM, history_at, PEAK)
    }

    fn true_residual(&mut self, batch: &mut Batch<'_>, b: &GpuVec<T>, x: &GpuVec<T>) -> Result<()> {
        self.common.residual(&mut batch.recorder(), b, x, &mut self.r, slot::TRUE_NORM)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::solvers::test_support::{as_f64, contexts, tolerance, values, Unused};
    use crate::solvers::LinOp;

    /// `p ← r + β·(p − ω·v)` against its f64 twin at lengths around the workgroup; with β = 0
    /// (a failed step) p becomes r without p or v being read, and with ω = 0 v is not read
    /// (both not finite there).
    fn direction_matches_twin<T: Scalar>() {
        let tolerance = tolerance::<T>();
        for (subgroups, ctx) in contexts::<T>() {
            for len in [1, 255, 256, 257, 5000] {
                let what = format!("{} subgroups {subgroups} len {len}", T::KIND.name());
                let op = Unused(len);
                let solver = BiCgStab::<T>::new(&ctx, &op as &dyn LinOp<T>, None, SolverOptions::default()).unwrap();
                let [r, v, p]: [Vec<T>; 3] = std::array::from_fn(|i| values(len, 5 * len as u64 + i as u64));
                solver.r.write(&r).unwrap();
                let run = |beta: f64, omega: f64, v: &[T], p: &[T]| {
                    solver.common.steps.set(BETA, T::from_f64(beta)).unwrap();
                    solver.common.steps.set(OMEGA, T::from_f64(omega)).unwrap();
                    solver.v.write(v).unwrap();
                    solver.p.write(p).unwrap();
                    let mut batch = ctx.batch();
                    solver.update_direction(&mut batch.recorder()).unwrap();
                    batch.submit().unwrap();
                    as_f64(&solver.p.read_blocking().unwrap())
                };
                let [r64, v64, p64] = [&r, &v, &p].map(|x| as_f64(x));
                let (beta, omega) = (0.8, -1.7);
                let want: Vec<f64> = (0..len).map(|i| r64[i] + beta * (p64[i] - omega * v64[i])).collect();
                let error = crate::reference::relative_error(&run(beta, omega, &v, &p), &want);
                assert!(error <= tolerance, "{what}: p off by {error:e}");

                let nan = vec![T::from_f64(f64::NAN); len];
                assert!(run(0.0, omega, &nan, &nan) == r64, "{what}: β = 0 must give p = r");
                let want: Vec<f64> = (0..len).map(|i| r64[i] + beta * p64[i]).collect();
                let error = crate::reference::relative_error(&run(beta, 0.0, &nan, &p), &want);
                assert!(error <= tolerance, "{what}: ω = 0 read v ({error:e})");
            }
        }
    }

    #[test]
    fn direction_matches_twin_f32() {
        direction_matches_twin::<f32>();
    }

    #[test]
    fn direction_matches_twin_f64() {
        direction_matches_twin::<f64>();
    }
}
