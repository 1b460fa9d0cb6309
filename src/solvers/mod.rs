//! Iterative solvers of `A·x = b` on the GPU: conjugate gradients ([`Cg`]), BiCGSTAB
//! ([`BiCgStab`]) and restarted GMRES ([`Gmres`]), with any [`LinOp`] as the operator and as
//! the preconditioner ([`Jacobi`], ILU(0) and IC(0) as [`IncompleteLu`], or the caller's
//! own).
//!
//! A solve never visits the host per iteration: iterations are recorded `k` at a time into
//! one batch, their coefficients (α, β, ω, norms) stay in a device vector of scalars, and
//! the convergence test writes a device flag that turns the rest of the batch into
//! zero-sized dispatches ([`crate::Batch::gate`]). Two rounds of iterations are in flight
//! at once, so the GPU does not wait for the host to read a round's status (a few words and
//! the residual history of its iterations) before the next one starts; a round is one
//! batch, or on systems below 2²⁰ rows several, which encoder threads finish in parallel,
//! since there the host's encoding, not the GPU, sets the pace. Several systems (`solve_many`) share the
//! batches, each gated by its own flag. At the end, the true
//! residual `‖b − A·x‖` is recomputed; if the recurrence claimed convergence that the true
//! residual does not confirm, the solve restarts from `x` (at most [`MAX_RESTARTS`] times).

/// `solve`, `solve_with`, `solve_many`, `solve_many_with`, `record_iteration` and
/// `extra_bytes` of a solver type whose `common` field holds its options and vectors, whose
/// `more_systems` field holds the solvers of `solve_many`'s second and later systems, and
/// which implements `Method`.
macro_rules! solve_entry_points {
    () => {
        /// Device bytes of the work vectors, scalars and reduction partials (those of
        /// [`solve_many`](Self::solve_many)'s further systems included).
        pub fn extra_bytes(&self) -> u64 {
            self.common.extra_bytes() + self.more_systems.iter().map(|s| s.extra_bytes()).sum::<u64>()
        }

        /// Solves `A·x = b` from the x given; see [`SolverReport`](super::SolverReport) for what
        /// comes back.
        pub fn solve(&mut self, b: &GpuVec<T>, x: &mut GpuVec<T>) -> Result<super::SolverReport> {
            self.solve_with(b, x, |_| {})
        }

        /// `solve`, calling `progress` after each batch of iterations.
        pub fn solve_with(
            &mut self,
            b: &GpuVec<T>,
            x: &mut GpuVec<T>,
            progress: impl FnMut(super::Progress),
        ) -> Result<super::SolverReport> {
            let options = self.common.options;
            let mut reports = super::drive(vec![(self, b, x)], &options, progress)?;
            Ok(reports.pop().expect("one report a system"))
        }

        /// Solves the systems `A·x[i] = b[i]` together, each from its x given, with one
        /// report each: their iterations share the batches (their submissions and the wait
        /// for them; each system reads back its own status), each gated by its own
        /// convergence flag, so a system that has stopped costs only zero-sized dispatches
        /// until the last one stops.
        /// The GPU work of an iteration is each system's own (A is read once a system),
        /// which pays off where a solve is short of work for the GPU: small systems, many of
        /// them. The second and later systems get solvers of their own (work vectors and
        /// scalars, as [`extra_bytes`](Self::extra_bytes) counts them), made by the first
        /// call that needs them and kept for the next.
        pub fn solve_many(&mut self, b: &[&GpuVec<T>], x: &mut [&mut GpuVec<T>]) -> Result<Vec<super::SolverReport>> {
            self.solve_many_with(b, x, |_| {})
        }

        /// `solve_many`, calling `progress` after each batch of iterations of each system
        /// ([`Progress::system`](super::Progress::system) says which).
        pub fn solve_many_with(
            &mut self,
            b: &[&GpuVec<T>],
            x: &mut [&mut GpuVec<T>],
            progress: impl FnMut(super::Progress),
        ) -> Result<Vec<super::SolverReport>> {
            let what = self.common.what;
            crate::ops::common::check_len(what, "solutions (one for each right-hand side)", b.len(), x.len())?;
            // Refused before the further systems' solvers are made.
            let ctx = self.common.steps.context().clone();
            for (b, x) in b.iter().zip(x.iter()) {
                super::check_operands(&*self, &ctx, b, x)?;
            }
            while self.more_systems.len() + 1 < b.len() {
                let common = &self.common;
                let ctx = common.steps.context();
                let solver = Self::new(ctx, common.op.clone(), common.precond.clone(), common.options)?;
                self.more_systems.push(solver);
            }
            let options = self.common.options;
            let mut more = std::mem::take(&mut self.more_systems);
            let methods = std::iter::once(&mut *self).chain(more.iter_mut());
            let systems = methods.zip(b).zip(x.iter_mut()).map(|((m, b), x)| (m, *b, &mut **x)).collect();
            let reports = super::drive(systems, &options, progress);
            self.more_systems = more;
            reports
        }

        /// Records one iteration on the solver's current state into `rec`, with no convergence
        /// gate: for profiling what an iteration costs on the GPU (the bench's GPU time per
        /// iteration). Solving goes through [`Self::solve`]; the state an iteration starts
        /// from is the last solve's. Profile after a solve: on a fresh solver's zeros the
        /// kernels skip what a zero step does not need (CG's α = 0 reads neither q nor x).
        /// BiCGSTAB's residual replacement, which a solve runs only when the device asks for
        /// it (a few times in all), is left out.
        pub fn record_iteration(
            &mut self,
            rec: &mut crate::record::Recorder<'_, '_>,
            b: &GpuVec<T>,
            x: &mut GpuVec<T>,
        ) -> Result<()> {
            super::check_operands(self, rec.context(), b, x)?;
            super::Method::iteration(self, &mut super::Ungated(rec), b, x, 0)
        }
    };
}

mod bicgstab;
mod cg;
mod gmres;
mod gram_schmidt;
mod incomplete;
mod jacobi;
mod steps;
#[cfg(test)]
mod test_support;

pub use bicgstab::BiCgStab;
pub use cg::Cg;
pub use gmres::Gmres;
pub use incomplete::{FactorForm, Factorization, IncompleteLu, IncompleteOptions, TriangularApply};
pub use jacobi::Jacobi;

use crate::element::Scalar;
use crate::gpu::GpuVec;
use crate::matrix::GpuDense;
use crate::ops::bitmap::BitmapSpmv;
use crate::ops::blas1;
use crate::ops::{Gemv, Spmv};
use crate::record::{Pipeline, Recorder};
use std::sync::Arc;

use crate::{Batch, Context, Error, Result};
use steps::{slot, Status, StatusTickets, Steps, Stop};

/// A linear operator `y ← A·x` that records into a batch: what the solvers are written
/// against, so that one solver serves every SpMV format and algorithm, dense GEMV, a
/// preconditioner (`z ← M⁻¹·r`) and a caller's own operator.
///
/// A caller's operator records its own dispatches through [`Recorder::raw_pass`]; inside a
/// solver's gated section those run unconditionally (only wgsparse's dispatches can be
/// zeroed by the convergence flag), which costs time after convergence, not correctness, as
/// long as the operator only writes `y`.
pub trait LinOp<T: Scalar> {
    /// Rows and columns of the operator.
    fn shape(&self) -> (usize, usize);

    /// Records `y ← A·x`. x may be a vector of a block that shares one buffer (GMRES's
    /// basis): an operator that binds it itself binds bytes
    /// [`byte_offset()`](GpuVec::byte_offset)`..+`[`byte_len()`](GpuVec::byte_len).
    fn apply(&self, rec: &mut Recorder<'_, '_>, x: &GpuVec<T>, y: &mut GpuVec<T>) -> Result<()>;

    /// Records `y ← A·x` and, where the operator can fold it into its own pass, partial sums
    /// of `x·y` into the first halves of `partials[..count]` (their total is `x·y`):
    /// `Some(count)` with `1 ≤ count ≤ partials.len()`, writing nothing but y and those
    /// halves. `None` (the default): y only, and the caller reduces `x·y` itself. CG asks for
    /// `p·A·p` this way; the CSR one-row-per-invocation and ELL SpMVs fold it in.
    fn apply_dot(
        &self,
        rec: &mut Recorder<'_, '_>,
        x: &GpuVec<T>,
        y: &mut GpuVec<T>,
        _partials: &GpuVec<[T; 2]>,
    ) -> Result<Option<usize>> {
        self.apply(rec, x, y)?;
        Ok(None)
    }

    /// As CG's preconditioner, its updates folded into this operator's passes where it can
    /// ([`CgFolding`]); `None` (the default): CG runs its own passes.
    fn cg_folding(&self) -> Option<CgFolding<'_, T>> {
        None
    }
}

/// CG's residual and direction updates folded into a preconditioner's own passes, which read
/// those rows anyway: what [`LinOp::cg_folding`] hands CG where the preconditioner can
/// (wgsparse's IC(0) in diagonal form with one sweep a triangle). `r ← r − α·q` rides on the
/// lower pass (r double-buffered: neighbours' rows are recomputed, not read back) and
/// `x += α·p; p ← z + β·p` on the upper pass (z is never stored): two dispatches and three
/// vectors' traffic fewer an iteration, the same iterates bit for bit. (On an H200 the
/// kernels took as long as before: the sweeps are bound by their neighbour reads; the gain
/// was the dispatches.) Made by wgsparse only.
pub struct CgFolding<'a, T: Scalar>(pub(crate) &'a IncompleteLu<T>);

/// The operator (or preconditioner) a solver applies: borrowed for the solver's lifetime, or
/// shared through an `Arc`, so that a solver can be kept beside its matrix in a caller's
/// struct. `&spmv`, `&jacobi as &dyn LinOp<T>` and `Arc::new(spmv)` all convert into one.
#[derive(Clone)]
pub enum Operator<'a, T: Scalar> {
    /// Borrowed from the caller.
    Borrowed(&'a dyn LinOp<T>),
    /// Shared with the caller.
    Shared(Arc<dyn LinOp<T> + 'a>),
}

impl<'a, T: Scalar> std::ops::Deref for Operator<'a, T> {
    type Target = dyn LinOp<T> + 'a;

    fn deref(&self) -> &Self::Target {
        match self {
            Operator::Borrowed(op) => *op,
            Operator::Shared(op) => op.as_ref(),
        }
    }
}

impl<'a, T: Scalar, L: LinOp<T> + 'a> From<&'a L> for Operator<'a, T> {
    fn from(op: &'a L) -> Self {
        Operator::Borrowed(op)
    }
}

impl<'a, T: Scalar> From<&'a dyn LinOp<T>> for Operator<'a, T> {
    fn from(op: &'a dyn LinOp<T>) -> Self {
        Operator::Borrowed(op)
    }
}

impl<'a, T: Scalar, L: LinOp<T> + 'a> From<Arc<L>> for Operator<'a, T> {
    fn from(op: Arc<L>) -> Self {
        Operator::Shared(op)
    }
}

impl<'a, T: Scalar> From<Arc<dyn LinOp<T> + 'a>> for Operator<'a, T> {
    fn from(op: Arc<dyn LinOp<T> + 'a>) -> Self {
        Operator::Shared(op)
    }
}

impl<T: Scalar> LinOp<T> for Spmv<T> {
    fn shape(&self) -> (usize, usize) {
        (self.matrix().rows(), self.matrix().cols())
    }

    fn apply(&self, rec: &mut Recorder<'_, '_>, x: &GpuVec<T>, y: &mut GpuVec<T>) -> Result<()> {
        self.record(rec, T::from_f64(1.0), x, T::default(), y)
    }

    fn apply_dot(
        &self,
        rec: &mut Recorder<'_, '_>,
        x: &GpuVec<T>,
        y: &mut GpuVec<T>,
        partials: &GpuVec<[T; 2]>,
    ) -> Result<Option<usize>> {
        self.record_dot(rec, x, y, partials)
    }
}

/// A dense matrix with its GEMV plan, as an operator.
pub struct DenseOp<'a, T: Scalar> {
    /// The plan (made for `matrix`, not transposed: `y ← A·x`).
    pub gemv: &'a Gemv<T>,
    /// The matrix.
    pub matrix: &'a GpuDense<T>,
}

impl<T: Scalar> LinOp<T> for DenseOp<'_, T> {
    fn shape(&self) -> (usize, usize) {
        (self.matrix.rows(), self.matrix.cols())
    }

    fn apply(&self, rec: &mut Recorder<'_, '_>, x: &GpuVec<T>, y: &mut GpuVec<T>) -> Result<()> {
        self.gemv.record(rec, T::from_f64(1.0), self.matrix, x, T::default(), y)
    }
}

/// A bitmap matrix with its SpMV plan, as an operator.
pub struct BitmapOp<'a, T: Scalar> {
    /// The plan, made for `matrix`.
    pub spmv: &'a BitmapSpmv<T>,
    /// The matrix.
    pub matrix: &'a crate::matrix::GpuBitmap<T>,
}

impl<T: Scalar> LinOp<T> for BitmapOp<'_, T> {
    fn shape(&self) -> (usize, usize) {
        (self.matrix.rows(), self.matrix.cols())
    }

    fn apply(&self, rec: &mut Recorder<'_, '_>, x: &GpuVec<T>, y: &mut GpuVec<T>) -> Result<()> {
        self.spmv.record(rec, T::from_f64(1.0), self.matrix, x, T::default(), y)
    }
}

/// When a solve stops, and how the iterations are batched.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SolverOptions {
    /// Stop when `‖b − A·x‖ ≤ max(rtol·‖b‖, atol)`.
    pub rtol: f64,
    /// See `rtol`.
    pub atol: f64,
    /// Iterations at most (GMRES: inner iterations, all cycles together).
    pub max_iterations: usize,
    /// Iterations recorded per batch; `None` starts at 4 and doubles up to 32, so that easy
    /// systems stop soon and long solves read their status rarely.
    pub batch: Option<usize>,
    /// GMRES: the restart length m (the Krylov basis holds m vectors).
    pub restart: usize,
    /// GMRES: how each new vector is made orthogonal to the basis.
    pub orthogonalization: Orthogonalization,
    /// BiCGSTAB: the shadow residual r̂ that every ρ = r̂·r is taken against.
    pub shadow: Shadow,
}

impl Default for SolverOptions {
    fn default() -> Self {
        SolverOptions {
            rtol: 1e-6,
            atol: 0.0,
            max_iterations: 10_000,
            batch: None,
            restart: 30,
            orthogonalization: Orthogonalization::default(),
            shadow: Shadow::default(),
        }
    }
}

/// BiCGSTAB's shadow residual r̂, set at the start of a solve (and again at a restart after
/// a false convergence: the same vector when hashed, the new residual otherwise).
///
/// With r̂ = r₀ (SciPy's and CuPy's choice) and b = 1 on the 2-D convection–diffusion grid,
/// ρ = r̂·r changes sign from step to step and the residual peaks at 5·10⁸·‖b‖ (512², exact
/// ILU(0)): the recurrence then drifts from b − A·x, and at 2048² the solve breaks down. A
/// pseudo-random r̂ has no relation to the Krylov vectors' smooth shapes: the same case
/// peaks at 1.6·10³·‖b‖ and converges in 239 iterations (`benches/NOTES.md`, session 34).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Shadow {
    /// `r̂[i] = h(i, seed)`, values in [−½, ½) hashed from the index on the device
    /// ([`blas1::fill_hashed`]; [`generate::hashed_value`](crate::generate::hashed_value) on
    /// the host): the default, with seed [`Shadow::SEED`].
    Hashed(u32),
    /// `r̂ = r₀ = b − A·x₀`, as SciPy and CuPy.
    Residual,
}

impl Shadow {
    /// The default stream of [`Shadow::Hashed`].
    pub const SEED: u32 = 0x5eed;
}

impl Default for Shadow {
    fn default() -> Self {
        Shadow::Hashed(Shadow::SEED)
    }
}

/// How GMRES makes each new vector orthogonal to its basis V. Both use classical
/// Gram–Schmidt, `h = Vᵀ·w` then `w −= V·h`, with the normalization and the second
/// projection delayed into the next column (Świrydowicz, Langou, Ananthan, Yang and Thomas,
/// 2020): a column reads the basis twice, once for the dots of both vectors and once to
/// update both, where modified Gram–Schmidt takes one dot and one axpy per basis vector.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Orthogonalization {
    /// Classical Gram–Schmidt twice (CGS2, delayed: DCGS2), as stable as modified
    /// Gram–Schmidt, at the passes of one projection.
    #[default]
    Reorthogonalized,
    /// One classical Gram–Schmidt projection (the default of CuPy and PETSc), for
    /// comparison: it takes the same passes here, and orthogonality is lost as the Krylov
    /// vectors line up: in f32, GMRES(256) on diag(10⁻³ … 1) takes 323 iterations instead
    /// of 144.
    Classical,
}

impl SolverOptions {
    fn validate(&self, what: &str) -> Result<()> {
        let bad = |why: String| Err(Error::InvalidArgument(format!("{what}: {why}")));
        if !(self.rtol >= 0.0 && self.atol >= 0.0 && self.rtol.is_finite() && self.atol.is_finite()) {
            return bad(format!("tolerances must be finite and ≥ 0 (rtol {}, atol {})", self.rtol, self.atol));
        }
        if self.max_iterations > u32::MAX as usize - 1 {
            return bad(format!("max_iterations {} past u32", self.max_iterations));
        }
        if self.batch == Some(0) || self.batch.is_some_and(|k| k > MAX_BATCH) {
            return bad(format!("batch {:?} outside 1..={MAX_BATCH}", self.batch));
        }
        if self.restart == 0 || self.restart > MAX_RESTART {
            return bad(format!("restart {} outside 1..={MAX_RESTART}", self.restart));
        }
        Ok(())
    }
}

/// Iterations per batch at most.
pub const MAX_BATCH: usize = 1024;
/// GMRES restart length at most (its Hessenberg matrix is worked on by one invocation).
pub const MAX_RESTART: usize = 256;
/// Restarts from the current `x` when the recurrence converged but the true residual did not.
pub const MAX_RESTARTS: usize = 3;

/// Why a solve stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum StopReason {
    /// The true residual met the tolerance.
    Converged,
    /// `max_iterations` ran out first.
    MaxIterations,
    /// A coefficient's denominator was zero (BiCGSTAB's `r̂·v` or `ρ`, a zero pivot of
    /// GMRES's least squares): the method cannot go on from here.
    Breakdown,
    /// A NaN or an infinity appeared (in b, A, x0, or on the way).
    NonFinite,
    /// CG found `p·A·p ≤ 0`: A (or the preconditioner) is not positive definite.
    Indefinite,
    /// The recurrence converged, but the true residual stayed above the tolerance through
    /// [`MAX_RESTARTS`] restarts (the precision of the element type is reached).
    Stagnated,
}

/// What a solve did.
#[derive(Debug, Clone, PartialEq)]
pub struct SolverReport {
    /// Why it stopped.
    pub reason: StopReason,
    /// Iterations done (all restarts together).
    pub iterations: usize,
    /// The true relative residual `‖b − A·x‖ / ‖b‖` at the end, computed on the device in
    /// the element type (0 when b = 0).
    pub residual: f64,
    /// The relative residual norm of the recurrence after each iteration (GMRES: its
    /// least-squares estimate), in order.
    pub history: Vec<f64>,
    /// Rounds of batches this system took part in (a round is one batch, or on systems
    /// below 2²⁰ rows several, shared with `solve_many`'s other systems), its closing one
    /// included.
    pub batches: usize,
    /// Restarts from the true residual.
    pub restarts: usize,
}

impl SolverReport {
    /// Whether the solve converged.
    pub fn converged(&self) -> bool {
        self.reason == StopReason::Converged
    }
}

/// Progress after each batch of iterations, for [`Cg::solve_with`] and the others.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct Progress {
    /// Which system: its index in `solve_many`'s lists (0 for `solve`).
    pub system: usize,
    /// Iterations done so far.
    pub iterations: usize,
    /// The latest relative residual norm of the recurrence.
    pub residual: f64,
}

/// What a method records: the driver calls `start` (the residual of the current x), then
/// `iteration` for each iteration index in order, and `finish` before the true residual.
trait Method<T: Scalar> {
    /// The operators, scalars and options every method has.
    fn common(&self) -> &Common<'_, T>;
    fn name(&self) -> &'static str {
        self.common().what
    }
    fn steps(&self) -> &Steps<T> {
        &self.common().steps
    }
    /// Records the start (or a restart) from the current x: the residual, its norm checked
    /// against the threshold (without counting an iteration).
    fn start(&mut self, batch: &mut Batch<'_>, b: &GpuVec<T>, x: &mut GpuVec<T>) -> Result<()>;
    /// Records the next iteration, checking its norm into history entry `history_at` of its
    /// batch.
    fn iteration<'p>(
        &mut self,
        sink: &mut impl Sink<'p>,
        b: &GpuVec<T>,
        x: &mut GpuVec<T>,
        history_at: usize,
    ) -> Result<()>;
    /// Records what must follow the last recorded iteration (GMRES's pending update).
    fn finish(&mut self, _batch: &mut Batch<'_>, _x: &mut GpuVec<T>) -> Result<()> {
        Ok(())
    }
    /// Records `state[TRUE_NORM] ← ‖b − A·x‖` using the method's work vectors.
    fn true_residual(&mut self, batch: &mut Batch<'_>, b: &GpuVec<T>, x: &GpuVec<T>) -> Result<()>;
}

/// Where a method records an iteration: a batch, whose gated sections the convergence flag
/// turns into no-ops, or a caller's recorder ([`Ungated`]), for profiling one iteration.
trait Sink<'p> {
    /// A recorder into the current pass.
    fn rec(&mut self) -> Recorder<'_, 'p>;
    /// Gates what follows on `flag[index]` being zero.
    fn gate(&mut self, flag: &GpuVec<u32>, index: usize) -> Result<()>;
    /// Whether this is a solve's batch (gated), not a profiled iteration.
    fn gated(&self) -> bool;
}

impl Sink<'static> for Batch<'_> {
    fn rec(&mut self) -> Recorder<'_, 'static> {
        self.recorder()
    }

    fn gate(&mut self, flag: &GpuVec<u32>, index: usize) -> Result<()> {
        Batch::gate(self, flag, index)
    }

    fn gated(&self) -> bool {
        true
    }
}

/// A caller's recorder: what is recorded runs whatever the flags say.
struct Ungated<'a, 'r, 'p>(&'a mut Recorder<'r, 'p>);

impl<'p> Sink<'p> for Ungated<'_, '_, 'p> {
    fn rec(&mut self) -> Recorder<'_, 'p> {
        self.0.reborrow()
    }

    fn gate(&mut self, _flag: &GpuVec<u32>, _index: usize) -> Result<()> {
        Ok(())
    }

    fn gated(&self) -> bool {
        false
    }
}

/// b and x belong to `ctx` (the solver's too) and have the operator's length.
fn check_operands<T: Scalar, M: Method<T>>(method: &M, ctx: &Context, b: &GpuVec<T>, x: &GpuVec<T>) -> Result<()> {
    let what = method.name();
    crate::ops::common::Operands::new(ctx, what)?
        .owned("the solver", method.steps().context().id())?
        .input("b", b)?
        .output("x", x)?;
    let n = method.steps().rows();
    crate::ops::common::check_len(what, "b length", n, b.len())?;
    crate::ops::common::check_len(what, "x length", n, x.len())
}

/// The vectors and plans every method shares: the operators, a reduction, the scalars.
struct Common<'a, T: Scalar> {
    what: &'static str,
    /// Work vectors the method allocated through [`Common::vector`].
    vectors: std::cell::Cell<u64>,
    op: Operator<'a, T>,
    precond: Option<Operator<'a, T>>,
    steps: Steps<T>,
    options: SolverOptions,
}

impl<'a, T: Scalar> Common<'a, T> {
    fn new(
        ctx: &Context,
        what: &'static str,
        op: Operator<'a, T>,
        precond: Option<Operator<'a, T>>,
        options: SolverOptions,
        slots: usize,
    ) -> Result<Self> {
        ctx.check_element::<T>()?;
        options.validate(what)?;
        let (rows, cols) = op.shape();
        if rows != cols {
            return Err(Error::dimension(what, "operator columns (a square operator)", rows, cols));
        }
        if let Some(m) = &precond {
            let (r, c) = m.shape();
            if (r, c) != (rows, cols) {
                return Err(Error::dimension(what, "preconditioner rows", rows, r));
            }
        }
        // One entry more than a batch's iterations: GMRES checks a column in the iteration
        // after it, so a batch that ends a cycle may check one column more than it ran.
        let history = options.batch.unwrap_or(AUTO_BATCH_MAX) + 1;
        Ok(Common {
            what,
            vectors: std::cell::Cell::new(0),
            op,
            precond,
            steps: Steps::new(ctx, rows, slots, history, options.max_iterations)?,
            options,
        })
    }

    /// A work vector of the operator's length, counted in [`Common::extra_bytes`].
    fn vector(&self) -> Result<GpuVec<T>> {
        let v = self.steps.context().zeros(self.steps.rows())?;
        self.count_bytes(v.byte_len());
        Ok(v)
    }

    /// Counts device bytes a method allocated itself in [`Common::extra_bytes`].
    fn count_bytes(&self, bytes: u64) {
        self.vectors.set(self.vectors.get() + bytes);
    }

    /// Device bytes of the work vectors, scalars and reduction partials.
    fn extra_bytes(&self) -> u64 {
        self.vectors.get() + self.steps.bytes()
    }

    /// `r ← b − A·x`, then `state[norm] ← ‖r‖`.
    fn residual(
        &self,
        rec: &mut Recorder<'_, '_>,
        b: &GpuVec<T>,
        x: &GpuVec<T>,
        r: &mut GpuVec<T>,
        norm: usize,
    ) -> Result<()> {
        self.op.apply(rec, x, r)?;
        blas1::axpby(rec, T::from_f64(1.0), b, T::from_f64(-1.0), r)?;
        self.steps.norm(rec, r, norm)
    }

    /// `z ← M⁻¹·r`, or `z ← r` without a preconditioner.
    fn precondition(&self, rec: &mut Recorder<'_, '_>, r: &GpuVec<T>, z: &mut GpuVec<T>) -> Result<()> {
        match &self.precond {
            Some(m) => m.apply(rec, r, z),
            None => blas1::copy(rec, r, z),
        }
    }
}

/// The largest batch `SolverOptions::batch = None` grows to.
const AUTO_BATCH_MAX: usize = 32;
const AUTO_BATCH_FIRST: usize = 4;

/// Runs each system's method on its `b` from the `x` given: batches of iterations, two in
/// flight, until each system's device flag says stop; then its true residual, and restarts
/// while it disagrees. ‖b‖ and the threshold are computed on the device with a system's
/// first batch: the host learns them from that batch's status, and no round trip precedes
/// the iterations.
///
/// Several systems share the batches: each records its iterations after the others',
/// gated by its own flag, so one that has stopped costs zero-sized dispatches until its
/// close, and the batches go on until the last has stopped.
fn drive<T: Scalar, M: Method<T>>(
    systems: Vec<(&mut M, &GpuVec<T>, &mut GpuVec<T>)>,
    options: &SolverOptions,
    mut progress: impl FnMut(Progress),
) -> Result<Vec<SolverReport>> {
    let Some((first, ..)) = systems.first() else { return Ok(Vec::new()) };
    let ctx = first.steps().context().clone();
    let mut operands = crate::ops::common::Operands::new(&ctx, first.name())?;
    for (method, b, x) in &systems {
        check_operands(*method, &ctx, b, x)?;
        // No x in another system's b or x.
        operands = operands.input("b", b)?.output("x", x)?;
    }
    for (method, ..) in &systems {
        method.steps().reset(options.rtol, options.atol)?;
    }
    let mut systems: Vec<System<'_, T, M>> = systems.into_iter().map(|(m, b, x)| System::new(m, b, x)).collect();
    // A round of batches records each system's next iterations (`System::record`), on small
    // systems cut into batches that worker threads encode (`Pipeline`); two rounds are in
    // flight. Each round's reads: (system, its status, whether the round closed its run).
    let encoders = systems.iter().any(|s| s.method.steps().rows() < CUT_BELOW_ROWS);
    Pipeline::run(&ctx, encoders, |pipeline| {
        let mut in_flight = std::collections::VecDeque::new();
        loop {
            while in_flight.len() < 2 && systems.iter().any(System::has_work) {
                let mut reads = Vec::new();
                for (index, system) in systems.iter_mut().enumerate() {
                    if let Some((tickets, closes)) = system.record(pipeline, options)? {
                        reads.push((index, tickets, closes));
                    }
                }
                pipeline.cut()?;
                in_flight.push_back(reads);
            }
            // The GPU must have every round recorded while the host waits on the oldest.
            pipeline.submit_all()?;
            let Some(reads) = in_flight.pop_front() else { break };
            for (index, tickets, closes) in reads {
                systems[index].receive(index, tickets.wait()?, closes, options, &mut progress)?;
            }
        }
        Ok(())
    })?;
    Ok(systems.into_iter().map(|system| system.report).collect())
}

/// A round of a system with fewer rows than this is cut into batches that encoder threads
/// finish in parallel: below it, encoding a dispatch on the host (~4 µs on the H100's) takes
/// longer than the GPU's pass over a vector. Above it the GPU sets the pace, and every cut
/// costs a submission (CG on lap2d 2048², f64, cut every 4 iterations: 184 µs an iteration
/// against 178; on lap2d 256² 28–32 either way; BiCGSTAB on convdiff 128² 126 against 150).
const CUT_BELOW_ROWS: usize = 1 << 20;
/// Cuts fall between iterations whose index is a multiple of this (CG's gate period; the
/// other methods gate every iteration), so that each batch opens with a gate...
const ITERATIONS_PER_CUT: usize = cg::GATE_EVERY;
/// ...once the batch holds this many dispatches (BiCGSTAB records ~30 an iteration, CG 6).
const CUT_DISPATCHES: usize = 64;

/// One system of a solve: its method (work vectors, scalars, status), b and x, and what the
/// host knows of it.
struct System<'s, T: Scalar, M> {
    method: &'s mut M,
    b: &'s GpuVec<T>,
    x: &'s mut GpuVec<T>,
    report: SolverReport,
    /// From the first status.
    b_norm: Option<f64>,
    /// The start (or a restart's) is to be recorded, with the threshold before the first.
    start_pending: bool,
    /// Iterations recorded (all runs together), and the size of the next batch of them.
    recorded: usize,
    size: usize,
    /// Why the device stopped the run, once a status has said it.
    stop: Option<Stop>,
    /// The run's close (finish and true residual) is recorded: no more iterations.
    closed: bool,
    /// The report is final.
    finished: bool,
}

impl<'s, T: Scalar, M: Method<T>> System<'s, T, M> {
    fn new(method: &'s mut M, b: &'s GpuVec<T>, x: &'s mut GpuVec<T>) -> Self {
        System {
            method,
            b,
            x,
            report: SolverReport {
                reason: StopReason::Converged,
                iterations: 0,
                residual: 0.0,
                history: Vec::new(),
                batches: 0,
                restarts: 0,
            },
            b_norm: None,
            start_pending: true,
            recorded: 0,
            size: 0,
            stop: None,
            closed: false,
            finished: false,
        }
    }

    /// Whether the next batch has something of this system to record.
    fn has_work(&self) -> bool {
        !self.finished && (self.start_pending || !self.closed || self.stop == Some(Stop::ZeroRhs))
    }

    /// Records this system's part of a round into `pipeline`'s batches: its (re)start, the
    /// next iterations, and the close where the budget is spent by them or the device has
    /// stopped the run; then the reads of its status (with the scalars in the first round
    /// and the closing one), and whether this round closes the run. The round that spends the
    /// iteration budget closes the run itself (ungated after the iterations), so that a solve
    /// stopped by `max_iterations` ends with no further round trip.
    fn record(
        &mut self,
        pipeline: &mut Pipeline<'_>,
        options: &SolverOptions,
    ) -> Result<Option<(StatusTickets<T>, bool)>> {
        if self.finished {
            return Ok(None);
        }
        if self.stop == Some(Stop::ZeroRhs) {
            // SciPy's convention: the solution of A·x = 0 is x = 0, whatever x0.
            let batch = pipeline.batch();
            batch.ungate();
            blas1::fill(&mut batch.recorder(), T::default(), self.x)?;
            self.report.batches += 1;
            self.report.residual = 0.0;
            self.finished = true;
            return Ok(None);
        }
        if self.start_pending {
            let batch = pipeline.batch();
            batch.ungate();
            if self.b_norm.is_none() {
                self.method.steps().threshold(&mut batch.recorder(), self.b)?;
            }
            self.method.start(batch, self.b, self.x)?;
            self.start_pending = false;
            self.recorded = self.report.iterations;
            self.size = options.batch.unwrap_or(AUTO_BATCH_FIRST);
        } else if self.closed {
            return Ok(None);
        }
        let budget = options.max_iterations;
        if self.stop.is_none() {
            let count = self.size.min(budget - self.recorded);
            let cuts = self.method.steps().rows() < CUT_BELOW_ROWS;
            for j in 0..count {
                if cuts && j % ITERATIONS_PER_CUT == 0 && pipeline.batch().dispatches() >= CUT_DISPATCHES {
                    pipeline.cut()?;
                }
                self.method.iteration(pipeline.batch(), self.b, self.x, j)?;
            }
            self.recorded += count;
            if options.batch.is_none() {
                self.size = (self.size * 2).min(AUTO_BATCH_MAX);
            }
        }
        self.closed = self.stop.is_some() || self.recorded >= budget;
        let batch = pipeline.batch();
        if self.closed {
            batch.ungate();
            self.method.finish(batch, self.x)?;
            batch.ungate();
            self.method.true_residual(batch, self.b, self.x)?;
        }
        let scalars = self.closed || self.report.batches == 0;
        self.report.batches += 1;
        Ok(Some((self.method.steps().read_status(batch, scalars)?, self.closed)))
    }

    /// Takes in a status of this system (`closes`: from the batch that closed its run):
    /// history, progress, the stop; at the close, the report, or a restart from x when the
    /// recurrence claimed a convergence that the true residual does not confirm.
    fn receive(
        &mut self,
        index: usize,
        status: Status,
        closes: bool,
        options: &SolverOptions,
        progress: &mut impl FnMut(Progress),
    ) -> Result<()> {
        if self.finished {
            return Ok(());
        }
        if let Some(scalars) = &status.scalars {
            self.b_norm.get_or_insert(scalars[slot::B_NORM]);
        }
        let b_norm = self.b_norm.expect("the first status reads the scalars");
        let report = &mut self.report;
        let ran = (status.iterations as usize).saturating_sub(report.iterations).min(status.history.len());
        report.history.extend(status.history[..ran].iter().map(|&v| v / b_norm));
        report.iterations += ran;
        if ran > 0 {
            let residual = *report.history.last().expect("ran > 0");
            progress(Progress { system: index, iterations: report.iterations, residual });
        }
        // The budget's batch closed the run with no stop word (defensive: the device's check
        // stops at the budget).
        let stop = match status.stop {
            Some(stop) => *self.stop.get_or_insert(stop),
            None if closes => *self.stop.get_or_insert(Stop::MaxIterations),
            None => return Ok(()),
        };
        if stop == Stop::ZeroRhs || !closes {
            // x = 0, or the close, is recorded next.
            return Ok(());
        }
        let true_norm = status.scalars.as_ref().expect("the closing batch reads the scalars")[slot::TRUE_NORM];
        let tolerance = (options.rtol * b_norm).max(options.atol) / b_norm;
        report.residual = true_norm / b_norm;
        report.reason = match stop {
            Stop::Converged if report.residual <= tolerance => StopReason::Converged,
            Stop::Converged if report.restarts < MAX_RESTARTS && report.iterations < options.max_iterations => {
                report.restarts += 1;
                self.method.steps().restart()?;
                self.start_pending = true;
                self.closed = false;
                self.stop = None;
                return Ok(());
            }
            Stop::Converged => StopReason::Stagnated,
            Stop::MaxIterations if report.residual <= tolerance => StopReason::Converged,
            Stop::MaxIterations => StopReason::MaxIterations,
            Stop::Breakdown => StopReason::Breakdown,
            Stop::NonFinite => StopReason::NonFinite,
            Stop::ZeroRhs => unreachable!("returned above"),
            Stop::Indefinite => StopReason::Indefinite,
        };
        if !report.residual.is_finite() {
            report.reason = StopReason::NonFinite;
        }
        self.finished = true;
        Ok(())
    }
}
