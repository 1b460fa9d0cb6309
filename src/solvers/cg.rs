//! Conjugate gradients for symmetric positive definite A (and M), preconditioned:
//! Saad's Algorithm 9.1, with every coefficient on the device.

use super::steps::{slot, AfterStop, Partials, Ratio, Sum};
use super::{CgFolding, Common, Method, Operator, Sink, SolverOptions};
use crate::element::Scalar;
use crate::gpu::GpuVec;
use crate::kernel::shaders::{cg_direction as direction, cg_residual as residual};
use crate::kernel::Kernel;
use crate::ops::blas1;
use crate::record::Recorder;
use crate::{Batch, Context, Result};

/// ρ of the iteration running: the r·z that α divides (kept by α's step for β).
const RHO: usize = slot::FIRST_FREE;
const PQ: usize = RHO + 1;
const ALPHA: usize = RHO + 2;
/// ρ of the next iteration: the new r·z, β's numerator.
const RHO_NEW: usize = RHO + 3;
/// r·r with a preconditioner (without one it is ρ itself).
const RR: usize = RHO + 4;
const SLOTS: usize = RHO + 5;

/// Iterations per gate: the gate's kernel and the barrier after it cost ~5 µs on the H100,
/// and an iteration after the stop leaves x and r (its step is zero, its check does not
/// count), so a stop wastes at most `GATE_EVERY − 1` iterations of GPU time.
pub(super) const GATE_EVERY: usize = 4;

/// Rows a lane of `cg_residual` updates (`ROWS` in the shader), and its lanes.
const RESIDUAL_ROWS: usize = 8;
const LANES: usize = 256;
/// Partials held for an operator's `p·A·p` ([`LinOp::apply_dot`](super::LinOp::apply_dot)):
/// one per workgroup of at least this many rows.
const DOT_ROWS: usize = 64;

/// A planned CG solve: work vectors (r, p, A·p, and z = M⁻¹·r with a preconditioner)
/// allocated once, reused by every [`Cg::solve`].
///
/// An iteration is five dispatches, plus the convergence gate every fourth iteration:
/// `q ← A·p` with the partials of p·q (an operator that cannot fold them in gets a pass of
/// its own), a step that adds them up and makes α, `r −= α·q` with the partials of r·r
/// (`cg_residual.wgsl`), a step that adds those up and tests ‖r‖, and `x += α·p;
/// p ← z + β·p` (`cg_direction.wgsl`): A and 8 vector passes (a preconditioner adds its
/// own, and r·z unless one of its passes leaves r·z's partials, as `IncompleteLu`'s diagonal
/// form does through [`LinOp::apply_dot`](super::LinOp::apply_dot)); a preconditioner that
/// offers [`CgFolding`] (IC(0) in diagonal form, one sweep) takes the residual and direction
/// passes into its own two. The iterations between gates that run after the solve stopped leave x
/// and r as they are (their step is zero) and are not counted; only p moves, which a
/// restart's start rebuilds.
pub struct Cg<'a, T: Scalar> {
    common: Common<'a, T>,
    /// The solvers of [`Self::solve_many`]'s second and later systems.
    more_systems: Vec<Self>,
    r: GpuVec<T>,
    p: GpuVec<T>,
    q: GpuVec<T>,
    /// M⁻¹·r; without a preconditioner z is r itself and this is unused.
    z: Option<GpuVec<T>>,
    /// Where the preconditioner folds CG's updates into its passes ([`CgFolding`]): the
    /// residual's other buffer (the folded pass reads r and writes the new r here; the two
    /// trade places every iteration).
    r_next: Option<GpuVec<T>>,
    /// The partials of p·A·p from the operator, then of r·r from the residual pass.
    partials: GpuVec<[T; 2]>,
    residual: Kernel<residual::Shader, T>,
    direction: Kernel<direction::Shader, T>,
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
        let folds = common.precond.as_ref().is_some_and(|m| m.cg_folding().is_some());
        let r_next = folds.then(|| common.vector()).transpose()?;
        let rows = common.steps.rows();
        let partials = ctx.zeros(rows.div_ceil(DOT_ROWS).max(rows.div_ceil(RESIDUAL_ROWS * LANES)).max(1))?;
        common.count_bytes(partials.byte_len());
        Ok(Cg {
            r: common.vector()?,
            p: common.vector()?,
            q: common.vector()?,
            z,
            r_next,
            partials,
            residual: ctx
                .kernel(Default::default(), residual::Overrides { wg_size: LANES as u32, ..Default::default() })?,
            direction: ctx.kernel(Default::default(), Default::default())?,
            common,
            more_systems: Vec::new(),
        })
    }

    solve_entry_points!();

    /// `ρ ← r·z` (z = M⁻¹·r) into `RHO_NEW`, then p ← z.
    fn precondition_into_p(&mut self, batch: &mut Batch<'_>) -> Result<()> {
        let mut rec = batch.recorder();
        let steps = &self.common.steps;
        match &mut self.z {
            Some(z) => {
                self.common.precondition(&mut rec, &self.r, z)?;
                steps.dot(&mut rec, &self.r, z, RHO_NEW)?;
            }
            None => steps.dot(&mut rec, &self.r, &self.r, RHO_NEW)?,
        }
        blas1::copy(&mut rec, self.z.as_ref().unwrap_or(&self.r), &mut self.p)
    }

    /// `r −= α·q`, leaving the partials of the new r·r.
    fn update_residual(&self, rec: &mut Recorder<'_, '_>) -> Result<Partials<'_, T>> {
        let len = self.r.len();
        let workgroups = len.div_ceil(RESIDUAL_ROWS * LANES).max(1);
        let params = residual::Params { len: len as u32, workgroups: workgroups as u32, alpha: ALPHA as u32 };
        let bindings = residual::Bindings {
            state: self.common.steps.state().bind(),
            q: self.q.bind(),
            r: self.r.bind(),
            partials: self.partials.bind(),
        };
        rec.dispatch(&self.residual, params, bindings, workgroups as u64)?;
        Ok(Partials { buffer: &self.partials, count: workgroups, second: false })
    }

    /// `x += α·p`, then `p ← z + β·p` (β = ρ_new/ρ).
    fn update_direction(&self, rec: &mut Recorder<'_, '_>, x: &mut GpuVec<T>) -> Result<()> {
        let params =
            direction::Params { len: x.len() as u32, alpha: ALPHA as u32, rho_new: RHO_NEW as u32, rho: RHO as u32 };
        let bindings = direction::Bindings {
            state: self.common.steps.state().bind(),
            z: self.z.as_ref().unwrap_or(&self.r).bind(),
            x: x.bind(),
            p: self.p.bind(),
        };
        rec.dispatch_items(&self.direction, params, bindings, x.len() as u64)
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
        self.precondition_into_p(batch)
    }

    fn iteration<'p>(
        &mut self,
        sink: &mut impl Sink<'p>,
        _b: &GpuVec<T>,
        x: &mut GpuVec<T>,
        history_at: usize,
    ) -> Result<()> {
        // A solve gates every few iterations; those between idle once stopped.
        let after_stop = if sink.gated() { AfterStop::Idle } else { AfterStop::Run };
        if history_at.is_multiple_of(GATE_EVERY) {
            self.common.steps.gate(sink)?;
        }
        {
            let mut rec = sink.rec();
            let steps = &self.common.steps;
            let pq = match self.common.op.apply_dot(&mut rec, &self.p, &mut self.q, &self.partials)? {
                Some(count) => Partials { buffer: &self.partials, count, second: false },
                None => steps.dot_partials(&mut rec, &self.p, &self.q)?,
            };
            // α = ρ/(p·q), ρ kept for β. ρ = 0 with r ≠ 0 (an indefinite preconditioner) is a
            // breakdown; without one, r = 0 has stopped the solve before.
            let alpha = Ratio {
                keep: Some(RHO),
                positive: true,
                nonzero_num: true,
                after_stop,
                ..Ratio::quotient(RHO_NEW, PQ, ALPHA, None)
            };
            steps.ratio_after(&mut rec, Some(Sum { partials: pq, into: PQ, root: None }), alpha)?;
        }
        let folding = self.common.precond.as_ref().and_then(|m| m.cg_folding());
        if let (Some(CgFolding(m)), Some(r_next)) = (folding, &mut self.r_next) {
            let steps = &self.common.steps;
            let count = {
                let mut rec = sink.rec();
                let vectors = (&self.q, &self.r, &mut *r_next);
                let count = m.record_cg_lower(&mut rec, steps.state(), ALPHA, vectors, &self.partials)?;
                let rr = Sum {
                    partials: Partials { buffer: &self.partials, count, second: true },
                    into: RR,
                    root: Some(slot::R_NORM),
                };
                steps.check_after(&mut rec, Some(rr), slot::R_NORM, Some(history_at), after_stop)?;
                count
            };
            let mut rec = sink.rec();
            let rz = Partials { buffer: &self.partials, count, second: false };
            steps.sum(&mut rec, Sum { partials: rz, into: RHO_NEW, root: None })?;
            m.record_cg_upper(&mut rec, steps.state(), [ALPHA, RHO_NEW, RHO], x, &mut self.p)?;
            std::mem::swap(&mut self.r, r_next);
            return Ok(());
        }
        {
            let mut rec = sink.rec();
            let into = if self.z.is_some() { RR } else { RHO_NEW };
            let partials = self.update_residual(&mut rec)?;
            let rr = Sum { partials, into, root: Some(slot::R_NORM) };
            self.common.steps.check_after(&mut rec, Some(rr), slot::R_NORM, Some(history_at), after_stop)?;
        }
        let mut rec = sink.rec();
        if let (Some(z), Some(m)) = (&mut self.z, &self.common.precond) {
            // r·z from the preconditioner's own pass where it can fold it in (the r·r
            // partials are spent: the check above has summed them).
            let steps = &self.common.steps;
            let rz = match m.apply_dot(&mut rec, &self.r, z, &self.partials)? {
                Some(count) => Partials { buffer: &self.partials, count, second: false },
                None => steps.dot_partials(&mut rec, &self.r, z)?,
            };
            steps.sum(&mut rec, Sum { partials: rz, into: RHO_NEW, root: None })?;
        }
        self.update_direction(&mut rec, x)
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

    /// The fused passes against their f64 twins at lengths around the lane, subgroup and
    /// workgroup tiles: `r −= α·q` with r·r and ‖r‖ summed by the step after it, then
    /// `x += α·p; p ← r + β·p`; and with α = 0 (a failed step), q and p not finite and not
    /// read: r and x stay as they were.
    fn fused_passes_match_twin<T: Scalar>() {
        let tolerance = tolerance::<T>();
        for (subgroups, ctx) in contexts::<T>() {
            for len in [1, 7, 255, 256, 257, 2047, 2048, 2049, 4097, 5000] {
                let what = format!("{} subgroups {subgroups} len {len}", T::KIND.name());
                let op = Unused(len);
                let cg = Cg::<T>::new(&ctx, &op as &dyn LinOp<T>, None, SolverOptions::default()).unwrap();
                let (alpha, rho, rho_new) = (0.37, 2.0, 0.9);
                let steps = &cg.common.steps;
                steps.reset(0.0, 0.0).unwrap();
                for (slot, value) in [(ALPHA, alpha), (RHO, rho), (RHO_NEW, rho_new), (RR, f64::NAN)] {
                    steps.set(slot, T::from_f64(value)).unwrap();
                }
                let [r, q, p, x]: [Vec<T>; 4] = std::array::from_fn(|i| values(len, 7 * len as u64 + i as u64));
                cg.r.write(&r).unwrap();
                cg.q.write(&q).unwrap();
                cg.p.write(&p).unwrap();
                let mut x_gpu = ctx.upload(&x).unwrap();
                let mut batch = ctx.batch();
                {
                    let mut rec = batch.recorder();
                    let partials = cg.update_residual(&mut rec).unwrap();
                    steps.sum(&mut rec, Sum { partials, into: RR, root: Some(slot::R_NORM) }).unwrap();
                    cg.update_direction(&mut rec, &mut x_gpu).unwrap();
                }
                batch.submit().unwrap();
                let [r, q, p, x] = [&r, &q, &p, &x].map(|v| as_f64(v));
                let want_r: Vec<f64> = r.iter().zip(&q).map(|(r, q)| r - alpha * q).collect();
                let want_x: Vec<f64> = x.iter().zip(&p).map(|(x, p)| x + alpha * p).collect();
                let want_p: Vec<f64> = want_r.iter().zip(&p).map(|(r, p)| r + rho_new / rho * p).collect();
                let rr: f64 = want_r.iter().map(|v| v * v).sum();
                for (name, got, want) in [("r", &cg.r, &want_r), ("p", &cg.p, &want_p), ("x", &x_gpu, &want_x)] {
                    let got = as_f64(&got.read_blocking().unwrap());
                    let error = crate::reference::relative_error(&got, want);
                    assert!(error <= tolerance, "{what}: {name} off by {error:e}");
                }
                let state = as_f64(&steps.state().read_blocking().unwrap());
                assert!((state[RR] - rr).abs() <= tolerance * rr, "{what}: r·r {} vs {rr}", state[RR]);
                let norm = rr.sqrt();
                assert!((state[slot::R_NORM] - norm).abs() <= tolerance * norm, "{what}: ‖r‖");

                // A failed step: α = 0, q and p not finite.
                steps.set(ALPHA, T::default()).unwrap();
                let r_before = cg.r.read_blocking().unwrap();
                let x_before = x_gpu.read_blocking().unwrap();
                cg.q.write(&vec![T::from_f64(f64::NAN); len]).unwrap();
                cg.p.write(&vec![T::from_f64(f64::INFINITY); len]).unwrap();
                let mut batch = ctx.batch();
                {
                    let mut rec = batch.recorder();
                    cg.update_residual(&mut rec).unwrap();
                    cg.update_direction(&mut rec, &mut x_gpu).unwrap();
                }
                batch.submit().unwrap();
                let r_after = cg.r.read_blocking().unwrap();
                assert!(r_after == r_before, "{what}: α = 0 changed r");
                assert!(x_gpu.read_blocking().unwrap() == x_before, "{what}: α = 0 changed x");
            }
        }
    }

    #[test]
    fn fused_passes_match_twin_f32() {
        fused_passes_match_twin::<f32>();
    }

    #[test]
    fn fused_passes_match_twin_f64() {
        fused_passes_match_twin::<f64>();
    }
}
