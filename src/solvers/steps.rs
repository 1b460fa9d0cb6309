//! The device side of a solve between vector passes: a vector of scalars (the solver's
//! coefficients and norms, used as device α/β by the vector ops), the status words, the
//! residual history of a batch, and the step kernel that computes coefficients and tests
//! convergence (`shaders/solver_step.wgsl`: one workgroup that may first add up a row of
//! partial sums, then one invocation for the op).

use super::Sink;
use crate::element::Scalar;
use crate::gpu::{GpuVec, ScalarArg};
use crate::kernel::shaders::solver_step as kernel;
use crate::kernel::Kernel;
use crate::ops::blas1::Reduction;
use crate::record::{ReadTicket, Recorder};
use crate::{Batch, Context, Error, Result};

/// Scalar slots every method shares; a method's own start at [`slot::FIRST_FREE`].
pub(super) mod slot {
    /// Always 1: the neutral factor of a ratio.
    pub const ONE: usize = 0;
    pub const B_NORM: usize = 1;
    /// What the recurrence's residual norm is checked against: max(rtol·‖b‖, atol).
    pub const THRESHOLD: usize = 2;
    pub const TRUE_NORM: usize = 3;
    /// The recurrence's residual norm.
    pub const R_NORM: usize = 4;
    /// The tolerances, written with the reset.
    pub const RTOL: usize = 5;
    pub const ATOL: usize = 6;
    pub const FIRST_FREE: usize = 7;
}

/// Status words (`STOP`… in the shader).
const STOP: usize = 0;
const ITERATIONS: usize = 1;
pub(super) const SKIP_UPDATE: usize = 3;
/// Set once an idling ratio found the solve stopped ([`AfterStop::Idle`]).
const IDLING: usize = 4;
/// BiCGSTAB: 0 when the residual is to be recomputed ([`Steps::check_replacing`]).
const SKIP_REPLACE: usize = 5;
const STATUS_WORDS: usize = 6;
const NONE: u32 = u32::MAX;
/// solver_step.wgsl's flag of a ratio or check that idles once stopped.
const IDLE_AFTER_STOP: u32 = 4;
/// solver_step.wgsl's flag of a check that tracks the norm's peak (`REPLACE_BELOW_PEAK`).
const REPLACE_BELOW_PEAK: u32 = 8;

#[repr(u32)]
enum Op {
    Ratio = 0,
    Check = 1,
    Givens = 2,
    BackSolve = 3,
    CycleStart = 4,
    CycleEnd = 5,
    /// GMRES: a column's coefficients by delayed classical Gram–Schmidt.
    Column = 6,
    /// Only the step's sum.
    SumOnly = 7,
    /// The threshold from ‖b‖; stops a solve whose b is zero or not finite.
    Threshold = 8,
}

/// A row of partial sums a pass left on the device (its `.0` halves), for the next step to
/// add up before its op: a reduction costs its first pass only.
#[derive(Clone, Copy)]
pub(super) struct Partials<'a, T: Scalar> {
    pub buffer: &'a GpuVec<[T; 2]>,
    pub count: usize,
    /// The pairs' second halves are the partials (else their first).
    pub second: bool,
}

/// What a step adds up first: `state[into] ← Σ partials`, and with `root`,
/// `state[root] ← √(Σ partials)` (a norm from a sum of squares).
#[derive(Clone, Copy)]
pub(super) struct Sum<'a, T: Scalar> {
    pub partials: Partials<'a, T>,
    pub into: usize,
    pub root: Option<usize>,
}

/// Why the device stopped the iterations (status word `STOP`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Stop {
    Converged,
    MaxIterations,
    Breakdown,
    NonFinite,
    Indefinite,
    /// b = 0: the solution is x = 0 (found before any iteration).
    ZeroRhs,
}

impl Stop {
    fn from_word(word: u32) -> Option<Self> {
        Some(match word {
            1 => Stop::Converged,
            2 => Stop::MaxIterations,
            3 => Stop::Breakdown,
            4 => Stop::NonFinite,
            5 => Stop::Indefinite,
            6 => Stop::ZeroRhs,
            _ => return None,
        })
    }
}

/// A coefficient `out = (a·c) / (b·d)`; `neg_out` gets −out and `keep` the numerator a·c.
/// A zero denominator (or with `positive`, one ≤ 0) stops the solve and writes zeros.
#[derive(Debug, Clone, Copy)]
pub(super) struct Ratio {
    pub num: (usize, usize),
    pub den: (usize, usize),
    pub out: usize,
    pub neg_out: Option<usize>,
    pub keep: Option<usize>,
    /// The denominator must be positive (CG's p·A·p).
    pub positive: bool,
    /// A zero numerator is a breakdown (BiCGSTAB's ρ; CG's ρ = r·z with a preconditioner).
    pub nonzero_num: bool,
    /// What the step does once the solve has stopped.
    pub after_stop: AfterStop,
}

/// What a ratio or a check does once the solve has stopped. A method whose dispatches are
/// not all gated (CG's solves gate every few iterations) idles, so that an iteration that
/// runs after the stop changes no iterate and is not counted (the iteration whose own ratio
/// failed still is); a profiled iteration (`record_iteration`, ungated) runs as the first
/// did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum AfterStop {
    Run,
    /// A ratio is a zero step and marks the iteration idling; a check in an idling
    /// iteration does nothing.
    Idle,
}

impl AfterStop {
    fn flag(self) -> u32 {
        match self {
            AfterStop::Run => 0,
            AfterStop::Idle => IDLE_AFTER_STOP,
        }
    }
}

impl Ratio {
    /// `out = a / b`, with −out in `neg_out`.
    pub fn quotient(a: usize, b: usize, out: usize, neg_out: Option<usize>) -> Self {
        Ratio {
            num: (a, slot::ONE),
            den: (b, slot::ONE),
            out,
            neg_out,
            keep: None,
            positive: false,
            nonzero_num: false,
            after_stop: AfterStop::Run,
        }
    }
}

/// A batch's status on its way to the host.
pub(super) struct StatusTickets<T> {
    status: ReadTicket<u32>,
    history: ReadTicket<T>,
    scalars: Option<ReadTicket<T>>,
}

/// A batch's status on the host.
pub(super) struct Status {
    pub stop: Option<Stop>,
    pub iterations: u32,
    /// The norms checked by the batch's iterations, by history index.
    pub history: Vec<f64>,
    /// The scalars (by [`slot`]) where the batch read them.
    pub scalars: Option<Vec<f64>>,
}

impl<T: Scalar> StatusTickets<T> {
    pub fn wait(self) -> Result<Status> {
        let status = self.status.wait()?;
        let history = self.history.wait()?;
        let scalars = match self.scalars {
            Some(ticket) => Some(ticket.wait()?.iter().map(|v| v.to_f64()).collect()),
            None => None,
        };
        Ok(Status {
            stop: Stop::from_word(status[STOP]),
            iterations: status[ITERATIONS],
            history: history.iter().map(|v| v.to_f64()).collect(),
            scalars,
        })
    }
}

/// The scalars, status and step kernel of one solver.
pub(super) struct Steps<T: Scalar> {
    ctx: Context,
    rows: usize,
    state: GpuVec<T>,
    status: GpuVec<u32>,
    history: GpuVec<T>,
    reduce: Reduction<T>,
    kernel: Kernel<kernel::Shader, T>,
    max_iterations: u32,
}

impl<T: Scalar> Steps<T> {
    pub fn new(ctx: &Context, rows: usize, slots: usize, history: usize, max_iterations: usize) -> Result<Self> {
        Ok(Steps {
            ctx: ctx.clone(),
            rows,
            state: ctx.zeros(slots.max(slot::FIRST_FREE))?,
            status: ctx.zeros(STATUS_WORDS)?,
            history: ctx.zeros(history.max(1))?,
            reduce: Reduction::new(ctx, rows)?,
            kernel: ctx.kernel::<kernel::Shader, T>(Default::default(), Default::default())?,
            max_iterations: max_iterations as u32,
        })
    }

    pub fn context(&self) -> &Context {
        &self.ctx
    }

    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Entries of a batch's history.
    pub fn history_len(&self) -> usize {
        self.history.len()
    }

    /// The scalars, as a vector (dot products write into it).
    pub fn state(&self) -> &GpuVec<T> {
        &self.state
    }

    /// Device bytes of the scalars, status, history and reduction partials.
    pub fn bytes(&self) -> u64 {
        self.state.byte_len() + self.status.byte_len() + self.history.byte_len() + self.reduce.bytes()
    }

    /// `state[slot]` as a device α or β.
    pub fn arg(&self, slot: usize) -> ScalarArg<'_, T> {
        ScalarArg::Device { vector: &self.state, index: slot }
    }

    /// A fresh solve to `rtol`, `atol`: scalars zero but those and ONE, status running with
    /// no update pending.
    pub fn reset(&self, rtol: f64, atol: f64) -> Result<()> {
        let mut state = vec![T::default(); self.state.len()];
        state[slot::ONE] = T::from_f64(1.0);
        state[slot::RTOL] = T::from_f64(rtol);
        state[slot::ATOL] = T::from_f64(atol);
        self.state.write(&state)?;
        let mut status = [0u32; STATUS_WORDS];
        status[SKIP_UPDATE] = 1;
        status[SKIP_REPLACE] = 1;
        self.status.write(&status)
    }

    /// Sets scalars before the start is submitted (no batch of this solver is in flight).
    pub fn set(&self, slot: usize, value: T) -> Result<()> {
        self.state.write_at(slot, &[value])
    }

    /// Clears the stop flag (and the idling that followed it) for a restart; the iteration
    /// count goes on.
    pub fn restart(&self) -> Result<()> {
        self.status.write_at(STOP, &[0])?;
        self.status.write_at(IDLING, &[0])
    }

    /// Makes the dispatches recorded next in `batch` run only while the solve goes on.
    pub fn gate<'p>(&self, sink: &mut impl Sink<'p>) -> Result<()> {
        sink.gate(&self.status, STOP)
    }

    /// Makes them run only while a GMRES cycle has an update to apply.
    pub fn gate_update<'p>(&self, sink: &mut impl Sink<'p>) -> Result<()> {
        sink.gate(&self.status, SKIP_UPDATE)
    }

    /// BiCGSTAB: makes the dispatches recorded next run only if the last
    /// [`check_replacing`](Self::check_replacing) asked for the residual to be recomputed.
    pub fn gate_replace<'p>(&self, sink: &mut impl Sink<'p>) -> Result<()> {
        sink.gate(&self.status, SKIP_REPLACE)
    }

    pub fn dot(&self, rec: &mut Recorder<'_, '_>, x: &GpuVec<T>, y: &GpuVec<T>, slot: usize) -> Result<()> {
        self.reduce.dot_into(rec, x, y, &self.state, slot)
    }

    pub fn norm(&self, rec: &mut Recorder<'_, '_>, x: &GpuVec<T>, slot: usize) -> Result<()> {
        self.reduce.nrm2_into(rec, x, &self.state, slot)
    }

    /// Records the first pass of `x·y`: partials for a step's [`Sum`] to finish.
    pub fn dot_partials(&self, rec: &mut Recorder<'_, '_>, x: &GpuVec<T>, y: &GpuVec<T>) -> Result<Partials<'_, T>> {
        let count = self.reduce.partial_dot(rec, x, y)?;
        Ok(Partials { buffer: self.reduce.partials(), count, second: false })
    }

    /// Records `state[B_NORM] ← ‖b‖` and the threshold from it, max(rtol·‖b‖, atol); a b
    /// that is zero or not finite stops the solve (`ZeroRhs`, `NonFinite`) before its start.
    pub fn threshold(&self, rec: &mut Recorder<'_, '_>, b: &GpuVec<T>) -> Result<()> {
        self.norm(rec, b, slot::B_NORM)?;
        let params = kernel::Params {
            a: slot::B_NORM as u32,
            b: slot::RTOL as u32,
            c: slot::ATOL as u32,
            out: slot::THRESHOLD as u32,
            ..Self::params(Op::Threshold)
        };
        self.record(rec, params)
    }

    /// Records only a sum: `state[sum.into] ← Σ partials` (and its root).
    pub fn sum(&self, rec: &mut Recorder<'_, '_>, sum: Sum<'_, T>) -> Result<()> {
        self.record_after(rec, Some(sum), Self::params(Op::SumOnly))
    }

    fn record(&self, rec: &mut Recorder<'_, '_>, params: kernel::Params) -> Result<()> {
        self.record_after(rec, None, params)
    }

    /// Records a step that adds `sum` up first, if given.
    fn record_after(&self, rec: &mut Recorder<'_, '_>, sum: Option<Sum<'_, T>>, params: kernel::Params) -> Result<()> {
        let (partials, params) = match sum {
            Some(Sum { partials, into, root }) => {
                let slots = self.state.len();
                if into >= slots || root.is_some_and(|r| r >= slots) {
                    return Err(Error::InvalidArgument(format!(
                        "solver step: sum into slot {into} ({root:?}) of {slots}"
                    )));
                }
                if partials.count == 0 || partials.count > partials.buffer.len() {
                    return Err(Error::InvalidArgument(format!(
                        "solver step: a sum of {} partials of {}",
                        partials.count,
                        partials.buffer.len()
                    )));
                }
                let params = kernel::Params {
                    sum_count: partials.count as u32,
                    sum_half: partials.second as u32,
                    sum_into: into as u32,
                    sum_root: root.map_or(NONE, |s| s as u32),
                    ..params
                };
                (partials.buffer, params)
            }
            None => (self.reduce.partials(), params),
        };
        let bindings = kernel::Bindings {
            state: self.state.bind(),
            status: self.status.bind(),
            history: self.history.bind(),
            partials: partials.bind(),
        };
        rec.dispatch(&self.kernel, params, bindings, 1)
    }

    fn params(op: Op) -> kernel::Params {
        kernel::Params {
            op: op as u32,
            a: 0,
            b: 0,
            c: 0,
            d: 0,
            out: 0,
            neg_out: NONE,
            keep: NONE,
            flags: 0,
            index: NONE,
            counts: 0,
            max_iterations: 0,
            m: 0,
            sum_count: 0,
            sum_half: 0,
            sum_into: 0,
            sum_root: NONE,
        }
    }

    pub fn ratio(&self, rec: &mut Recorder<'_, '_>, r: Ratio) -> Result<()> {
        self.ratio_after(rec, None, r)
    }

    /// [`Steps::ratio`], after adding `sum` up.
    pub fn ratio_after(&self, rec: &mut Recorder<'_, '_>, sum: Option<Sum<'_, T>>, r: Ratio) -> Result<()> {
        let params = kernel::Params {
            a: r.num.0 as u32,
            c: r.num.1 as u32,
            b: r.den.0 as u32,
            d: r.den.1 as u32,
            out: r.out as u32,
            neg_out: r.neg_out.map_or(NONE, |s| s as u32),
            keep: r.keep.map_or(NONE, |s| s as u32),
            flags: r.positive as u32 | (r.nonzero_num as u32) << 1 | r.after_stop.flag(),
            ..Self::params(Op::Ratio)
        };
        self.record_after(rec, sum, params)
    }

    /// Tests `state[norm]` against the threshold; with `history_at`, counts an iteration and
    /// keeps the norm in that history entry.
    pub fn check(&self, rec: &mut Recorder<'_, '_>, norm: usize, history_at: Option<usize>) -> Result<()> {
        self.check_after(rec, None, norm, history_at, AfterStop::Run)
    }

    /// [`Steps::check`], which also keeps the largest norm since the last replacement in
    /// `state[peak]` and asks for the residual to be recomputed once the norm falls below 1%
    /// of it ([`gate_replace`](Self::gate_replace); the replacement writes the new norm to
    /// `state[peak]`).
    pub fn check_replacing(
        &self,
        rec: &mut Recorder<'_, '_>,
        norm: usize,
        history_at: usize,
        peak: usize,
    ) -> Result<()> {
        self.record_check(rec, None, norm, Some(history_at), REPLACE_BELOW_PEAK, peak)
    }

    /// [`Steps::check`], after adding `sum` up.
    pub fn check_after(
        &self,
        rec: &mut Recorder<'_, '_>,
        sum: Option<Sum<'_, T>>,
        norm: usize,
        history_at: Option<usize>,
        after_stop: AfterStop,
    ) -> Result<()> {
        self.record_check(rec, sum, norm, history_at, after_stop.flag(), 0)
    }

    /// A check of `state[norm]` with the shader's `flags` (`peak`: the slot
    /// `REPLACE_BELOW_PEAK` tracks).
    fn record_check(
        &self,
        rec: &mut Recorder<'_, '_>,
        sum: Option<Sum<'_, T>>,
        norm: usize,
        history_at: Option<usize>,
        flags: u32,
        peak: usize,
    ) -> Result<()> {
        if history_at.is_some_and(|h| h >= self.history.len()) {
            return Err(Error::InvalidArgument(format!("solver history entry {history_at:?}")));
        }
        let params = kernel::Params {
            a: norm as u32,
            b: slot::THRESHOLD as u32,
            c: peak as u32,
            index: history_at.map_or(NONE, |h| h as u32),
            counts: history_at.is_some() as u32,
            max_iterations: self.max_iterations,
            flags,
            ..Self::params(Op::Check)
        };
        self.record_after(rec, sum, params)
    }

    /// GMRES: rotates column `column` of H (at `h`, (m + 1) × m), rotations at `rotations`
    /// (m cosines, m sines), g at `g`; the residual estimate to `out`, and 1/‖w‖ (the entry
    /// below the diagonal, before it is rotated away; 0 if it is 0) to `inv_norm`.
    pub fn givens(
        &self,
        rec: &mut Recorder<'_, '_>,
        gmres: GmresSlots,
        column: usize,
        out: usize,
        inv_norm: usize,
    ) -> Result<()> {
        let params = kernel::Params {
            a: gmres.h as u32,
            b: gmres.rotations as u32,
            c: gmres.g as u32,
            d: inv_norm as u32,
            out: out as u32,
            index: column as u32,
            m: gmres.m as u32,
            ..Self::params(Op::Givens)
        };
        self.record(rec, params)
    }

    /// GMRES: column `column`'s coefficients by delayed classical Gram–Schmidt from the dots
    /// its pass left at `gmres.dots` (`solver_step.wgsl`, `column`): finishes column
    /// `column − 1` of H (its second projection, copied to the rotated H for
    /// [`givens`](Self::givens)), stores column `column`'s first projection, and writes the
    /// update pass's 1/β and μ. With `reorthogonalize` false, one projection (classical).
    pub fn column(
        &self,
        rec: &mut Recorder<'_, '_>,
        gmres: GmresSlots,
        column: usize,
        reorthogonalize: bool,
    ) -> Result<()> {
        let params = kernel::Params {
            a: gmres.hessenberg as u32,
            b: gmres.h as u32,
            c: gmres.dots as u32,
            d: gmres.g as u32,
            out: gmres.inv_beta as u32,
            keep: gmres.mu as u32,
            index: column as u32,
            m: gmres.m as u32,
            flags: reorthogonalize as u32,
            ..Self::params(Op::Column)
        };
        self.record(rec, params)
    }

    /// GMRES: y ← R⁻¹·g over the cycle's columns (zero past them).
    pub fn back_solve(&self, rec: &mut Recorder<'_, '_>, gmres: GmresSlots) -> Result<()> {
        let params = kernel::Params {
            a: gmres.h as u32,
            c: gmres.g as u32,
            out: gmres.y as u32,
            m: gmres.m as u32,
            ..Self::params(Op::BackSolve)
        };
        self.record(rec, params)
    }

    pub fn cycle_start(&self, rec: &mut Recorder<'_, '_>) -> Result<()> {
        self.record(rec, Self::params(Op::CycleStart))
    }

    pub fn cycle_end(&self, rec: &mut Recorder<'_, '_>) -> Result<()> {
        self.record(rec, Self::params(Op::CycleEnd))
    }

    /// Records the copies of the status and history to the host, and with `scalars`, of
    /// the scalars too.
    pub fn read_status(&self, batch: &mut Batch<'_>, scalars: bool) -> Result<StatusTickets<T>> {
        batch.ungate();
        Ok(StatusTickets {
            status: batch.read_back(&self.status)?,
            history: batch.read_back(&self.history)?,
            scalars: if scalars { Some(batch.read_back(&self.state)?) } else { None },
        })
    }
}

/// Where GMRES keeps its small dense arrays among the scalars.
#[derive(Debug, Clone, Copy)]
pub(super) struct GmresSlots {
    pub m: usize,
    /// H as the Arnoldi relation has it, (m + 1) × m, column-major.
    pub hessenberg: usize,
    /// H rotated into R by the Givens rotations, laid out the same.
    pub h: usize,
    /// m cosines, then m sines.
    pub rotations: usize,
    /// g, m + 1.
    pub g: usize,
    /// y, m.
    pub y: usize,
    /// A column's dots (`Steps::column`), 2(m + 1).
    pub dots: usize,
    /// The column update's 1/β and μ.
    pub inv_beta: usize,
    pub mu: usize,
}

impl GmresSlots {
    pub fn after(first: usize, m: usize) -> Self {
        let hessenberg = first;
        let h = hessenberg + (m + 1) * m;
        let rotations = h + (m + 1) * m;
        let g = rotations + 2 * m;
        let y = g + m + 1;
        let dots = y + m;
        let inv_beta = dots + 2 * (m + 1);
        GmresSlots { m, hessenberg, h, rotations, g, y, dots, inv_beta, mu: inv_beta + 1 }
    }

    /// The first slot past the arrays.
    pub fn end(&self) -> usize {
        self.mu + 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::solvers::MAX_RESTART;
    use crate::ContextOptions;

    /// GMRES's column step against its definition, on small vectors in f64 on the host: Q
    /// orthonormal (j columns), u with a part in Q's span, p arbitrary, the dots a column
    /// pass leaves. Column j − 1 of H gets u's second projection (H[i, j−1] += qᵢ·u,
    /// H[j, j−1] = ‖u − Q·s‖) and is copied to the rotated H; 1/β, μ = v_j·p and column j's
    /// first projection follow, H[i, j] = (tᵢ − (H·s)ᵢ)/β, H[j, j] = (μ − β·s_{j−1})/β.
    /// Classical: s taken as 0 (and zeroed for the update pass). At j = 0, g[0] = ‖u‖; at
    /// j = m, nothing for a next column.
    #[test]
    fn gmres_column_step_matches_its_definition() {
        let ctx = Context::new_blocking(ContextOptions::from_env().unwrap()).unwrap();
        let dot = |x: &[f64], y: &[f64]| x.iter().zip(y).map(|(a, b)| a * b).sum::<f64>();
        // The largest restart: rows past the workgroup's 256 lanes.
        for (m, columns) in [(3, vec![0, 1, 2, 3]), (MAX_RESTART, vec![0, 1, 255, MAX_RESTART])] {
            let n = m + 4;
            let slots = GmresSlots::after(slot::FIRST_FREE, m);
            let steps = Steps::<f32>::new(&ctx, n, slots.end(), 1, 100).unwrap();
            let random =
                |seed: u64| crate::generate::random_vector(n, seed).into_iter().map(f64::from).collect::<Vec<_>>();
            // Q: Gram–Schmidt of random vectors (seeds below those of u and p).
            let mut q: Vec<Vec<f64>> = Vec::new();
            for seed in 0..m as u64 {
                let mut v = random(seed);
                for e in &q {
                    let c = dot(e, &v);
                    v.iter_mut().zip(e).for_each(|(x, y)| *x -= c * y);
                }
                let norm = dot(&v, &v).sqrt();
                q.push(v.iter().map(|x| x / norm).collect());
            }
            let h_at = |i: usize, j: usize| i + j * (m + 1);
            for j in columns {
                for reorthogonalize in [true, false] {
                    let what = format!("m {m} column {j}, reorthogonalize {reorthogonalize}");
                    column_step_case(&ctx, &steps, slots, &q, j, reorthogonalize, &what, h_at);
                }
            }
        }
    }

    /// One case of [`gmres_column_step_matches_its_definition`].
    #[allow(clippy::too_many_arguments)]
    fn column_step_case(
        ctx: &Context,
        steps: &Steps<f32>,
        slots: GmresSlots,
        q: &[Vec<f64>],
        j: usize,
        reorthogonalize: bool,
        what: &str,
        h_at: impl Fn(usize, usize) -> usize,
    ) {
        let (m, n) = (slots.m, q[0].len());
        let dot = |x: &[f64], y: &[f64]| x.iter().zip(y).map(|(a, b)| a * b).sum::<f64>();
        let random = |seed: u64| crate::generate::random_vector(n, seed).into_iter().map(f64::from).collect::<Vec<_>>();
        let mut u = random(1000);
        u.iter_mut().zip(&q[0]).for_each(|(x, e)| *x += 0.5 * e);
        let p = random(1001);
        let s: Vec<f64> = q[..j].iter().map(|e| dot(e, &u)).collect();
        let t: Vec<f64> = q[..j].iter().map(|e| dot(e, &p)).collect();
        let mut state = vec![0.0f64; slots.end()];
        // Upper Hessenberg: zero below the subdiagonal.
        let mut hess: Vec<f64> = (0..(m + 1) * m)
            .map(|k| if k % (m + 1) > k / (m + 1) + 1 { 0.0 } else { (k % 13) as f64 * 0.1 - 0.6 })
            .collect();
        state[slots.hessenberg..slots.h].copy_from_slice(&hess);
        for i in 0..j {
            state[slots.dots + i] = s[i];
            state[slots.dots + j + 1 + i] = t[i];
        }
        state[slots.dots + j] = dot(&u, &u);
        state[slots.dots + 2 * j + 1] = dot(&u, &p);
        state[slots.inv_beta] = f64::NAN;
        state[slots.mu] = f64::NAN;
        let cast: Vec<f32> = state.iter().map(|&v| v as f32).collect();
        steps.state.write(&cast).unwrap();
        let mut batch = ctx.batch();
        steps.column(&mut batch.recorder(), slots, j, reorthogonalize).unwrap();
        batch.submit().unwrap();
        let got: Vec<f64> = steps.state.read_blocking().unwrap().into_iter().map(f64::from).collect();

        let s_used: Vec<f64> = if reorthogonalize { s.clone() } else { vec![0.0; j] };
        let mut v = u.clone();
        for (e, c) in q.iter().zip(&s_used) {
            v.iter_mut().zip(e).for_each(|(x, y)| *x -= c * y);
        }
        let beta = dot(&v, &v).sqrt();
        v.iter_mut().for_each(|x| *x /= beta);
        // f32 rounding of a sum, relative to the sum of its terms' magnitudes.
        let close = |got: f64, want: f64, scale: f64, name: String| {
            assert!((got - want).abs() <= 1e-5 * (1.0 + scale), "{what}: {name}: {got} vs {want}")
        };
        if j == 0 {
            close(got[slots.g], beta, beta, "g[0]".into());
        } else {
            for i in 0..j {
                hess[h_at(i, j - 1)] += s_used[i];
            }
            hess[h_at(j, j - 1)] = beta;
            for i in 0..=j {
                let want = hess[h_at(i, j - 1)];
                close(got[slots.hessenberg + h_at(i, j - 1)], want, want.abs(), format!("H[{i}, {}]", j - 1));
                close(got[slots.h + h_at(i, j - 1)], want, want.abs(), format!("rotated H[{i}, {}]", j - 1));
            }
        }
        if j == m {
            assert!(got[slots.inv_beta].is_nan() && got[slots.mu].is_nan(), "{what}: no next column");
            return;
        }
        let mu = dot(&v, &p);
        close(got[slots.inv_beta], 1.0 / beta, 1.0 / beta, "1/β".into());
        close(got[slots.mu], mu, p.iter().map(|x| x.abs()).sum::<f64>() / beta, "μ".into());
        for i in 0..j {
            let terms = (0..j).map(|k| hess[h_at(i, k)] * s_used[k]);
            let hs: f64 = terms.clone().sum();
            let scale = (t[i].abs() + terms.map(f64::abs).sum::<f64>()) / beta;
            close(got[slots.hessenberg + h_at(i, j)], (t[i] - hs) / beta, scale, format!("H[{i}, {j}]"));
            close(got[slots.dots + i], s_used[i], s_used[i].abs(), format!("s[{i}] for the update"));
        }
        let below = if j > 0 { beta * s_used[j - 1] } else { 0.0 };
        let scale = (mu.abs() + below.abs()) / beta;
        close(got[slots.hessenberg + h_at(j, j)], (mu - below) / beta, scale, format!("H[{j}, {j}]"));
    }

    /// BiCGSTAB's replacement rule: the check keeps the largest norm in the peak slot (from 0)
    /// and asks for a replacement, leaving the peak as it was, exactly when the norm is below
    /// 1% of it; never once the solve has stopped, and nothing is asked at the start.
    #[test]
    fn replacement_is_asked_below_a_hundredth_of_the_peak() {
        let ctx = Context::new_blocking(ContextOptions::from_env().unwrap()).unwrap();
        let steps = Steps::<f32>::new(&ctx, 4, slot::FIRST_FREE + 2, 16, 100).unwrap();
        let (norm, peak) = (slot::FIRST_FREE, slot::FIRST_FREE + 1);
        let word = |steps: &Steps<f32>| steps.status.read_blocking().unwrap()[SKIP_REPLACE];
        let check = |value: f32| {
            steps.set(norm, value).unwrap();
            let mut batch = ctx.batch();
            steps.check_replacing(&mut batch.recorder(), norm, 0, peak).unwrap();
            batch.submit().unwrap();
            (word(&steps), steps.state.read_blocking().unwrap()[peak])
        };
        steps.reset(0.0, 0.0).unwrap();
        assert_eq!(word(&steps), 1, "nothing asked at the start");
        // (norm, the word wanted, the peak after)
        for (value, skip, after) in
            [(5.0, 1, 5.0), (80.0, 1, 80.0), (0.81, 1, 80.0), (0.79, 0, 80.0), (2.0, 1, 80.0), (1e-3, 0, 80.0)]
        {
            assert_eq!(check(value), (skip, after), "norm {value}");
        }
        // Asked, then stopped (a non-finite norm): the ask is withdrawn, and stays so.
        steps.set(peak, 80.0).unwrap();
        assert_eq!(check(f32::NAN).0, 1, "stopped: no replacement");
        assert_eq!(check(1e-3).0, 1, "stopped: none asked");
    }

    /// The threshold is max(rtol·‖b‖, atol), from ‖b‖ computed on the device; a zero or
    /// non-finite b stops the solve with its own word, and a good one leaves it running.
    #[test]
    fn threshold_from_b_on_the_device() {
        let ctx = Context::new_blocking(ContextOptions::from_env().unwrap()).unwrap();
        let b = [3.0f32, 0.0, -4.0, 0.0, 12.0];
        // (b, rtol, atol, the threshold wanted (NaN: none, b is not finite), the stop wanted)
        type Case<'a> = (&'a [f32], f64, f64, f64, Option<Stop>);
        let cases: [Case; 5] = [
            (&b, 1e-3, 0.0, 13e-3, None),
            (&b, 1e-3, 0.5, 0.5, None),
            (&b, 0.0, 0.0, 0.0, None),
            (&[0.0; 5], 1e-6, 0.0, 0.0, Some(Stop::ZeroRhs)),
            (&[1.0, f32::NAN, 0.0, 0.0, 0.0], 1e-6, 0.0, f64::NAN, Some(Stop::NonFinite)),
        ];
        let steps = Steps::<f32>::new(&ctx, 5, slot::FIRST_FREE, 1, 100).unwrap();
        for (values, rtol, atol, want, stop) in cases {
            let b = ctx.upload(values).unwrap();
            steps.reset(rtol, atol).unwrap();
            let mut batch = ctx.batch();
            steps.threshold(&mut batch.recorder(), &b).unwrap();
            let tickets = steps.read_status(&mut batch, true).unwrap();
            batch.submit().unwrap();
            let status = tickets.wait().unwrap();
            let scalars = status.scalars.unwrap();
            let what = format!("b {values:?}, rtol {rtol}, atol {atol}");
            assert_eq!(status.stop, stop, "{what}");
            if want.is_nan() {
                assert!(scalars[slot::B_NORM].is_nan(), "{what}: ‖b‖ {}", scalars[slot::B_NORM]);
            } else {
                let norm: f64 = values.iter().map(|&v| (v as f64).powi(2)).sum::<f64>().sqrt();
                assert!((scalars[slot::B_NORM] - norm).abs() <= 1e-6 * norm, "{what}: ‖b‖ {}", scalars[slot::B_NORM]);
                let threshold = scalars[slot::THRESHOLD];
                assert!((threshold - want).abs() <= 1e-6 * want, "{what}: threshold {threshold} vs {want}");
            }
        }
    }

    /// A step adds its partials up (any count, whatever the subgroups) before its op, which
    /// sees the sum: a ratio of it, a check of its root.
    fn sums_before_the_op<T: Scalar>() {
        let tolerance = crate::solvers::test_support::tolerance::<T>();
        for (subgroups, ctx) in crate::solvers::test_support::contexts::<T>() {
            let steps = Steps::<T>::new(&ctx, 4, slot::FIRST_FREE + 4, 1, 100).unwrap();
            let (sum_at, two, out, norm) =
                (slot::FIRST_FREE, slot::FIRST_FREE + 1, slot::FIRST_FREE + 2, slot::FIRST_FREE + 3);
            // Around the workgroup and the lanes' load batches (8 × 256); the buffer goes on
            // past `count` with NaN, which must not be read.
            for count in [1, 255, 256, 257, 1000, 2047, 2048, 2049, 4097, 16385] {
                let what = format!("{} subgroups {subgroups}, {count} partials", T::KIND.name());
                let mut host: Vec<[T; 2]> = crate::generate::random_vector(count, count as u64)
                    .into_iter()
                    .map(|v| [T::from_f64(v.abs() as f64), T::from_f64(f64::NAN)])
                    .collect();
                let want: f64 = host.iter().map(|p| p[0].to_f64()).sum();
                host.extend([[T::from_f64(f64::NAN); 2]; 3]);
                let buffer = ctx.upload(&host).unwrap();
                steps.reset(0.0, 0.0).unwrap();
                steps.set(two, T::from_f64(2.0)).unwrap();
                steps.set(slot::THRESHOLD, T::from_f64(-1.0)).unwrap();
                let partials = Partials { buffer: &buffer, count, second: false };
                let mut batch = ctx.batch();
                {
                    let mut rec = batch.recorder();
                    let half = Ratio::quotient(sum_at, two, out, None);
                    steps.ratio_after(&mut rec, Some(Sum { partials, into: sum_at, root: None }), half).unwrap();
                    steps
                        .check_after(
                            &mut rec,
                            Some(Sum { partials, into: sum_at, root: Some(norm) }),
                            norm,
                            Some(0),
                            AfterStop::Run,
                        )
                        .unwrap();
                }
                batch.submit().unwrap();
                let state: Vec<f64> = steps.state.read_blocking().unwrap().iter().map(|v| v.to_f64()).collect();
                assert!((state[sum_at] - want).abs() <= tolerance * want, "{what}: sum {} vs {want}", state[sum_at]);
                assert!((state[out] - want / 2.0).abs() <= tolerance * want, "{what}: the ratio saw {}", state[out]);
                assert!((state[norm] - want.sqrt()).abs() <= tolerance * want.sqrt(), "{what}: root");
                let history = steps.history.read_blocking().unwrap()[0].to_f64();
                assert_eq!(history, state[norm], "{what}: the check saw the root");
            }
            let empty = Partials { buffer: steps.reduce.partials(), count: 0, second: false };
            let mut batch = ctx.batch();
            let refused = steps.sum(&mut batch.recorder(), Sum { partials: empty, into: 5, root: None });
            assert!(matches!(refused, Err(Error::InvalidArgument(_))), "a sum of nothing");
        }
    }

    #[test]
    fn sums_before_the_op_f32() {
        sums_before_the_op::<f32>();
    }

    #[test]
    fn sums_before_the_op_f64() {
        sums_before_the_op::<f64>();
    }
}
