//! The iterative solvers (ops `cg`, `bicgstab`, `gmres`) on `A·x = b`, b = 1, x0 = 0, the
//! operator an `Auto` SpMV plan of A. Algorithm `auto` has no preconditioner (the peer's
//! CuPy solvers have none); `ilu0`/`ic0` and their `-sweeps` forms precondition with
//! [`IncompleteLu`] (IC(0) for CG), factorization inside the one-shot time, against the same
//! unpreconditioned peer: what the incomplete factorizations gain or lose end to end.
//!
//! f64 rows solve to `rtol = 1e-6` (the time to tolerance). f32 rows run a fixed
//! [`F32_ITERATIONS`] on both sides instead: with b = 1 the suite's Laplacians have solutions
//! up to 3·10⁵ (lap2d 2048²), whose rounding to f32 alone leaves a true residual near 10⁻²
//! of ‖b‖, so no f32 solver reaches 1e-6 by the true residual; the f32 figure is the time
//! per iteration.
//!
//! A row's times: GPU µs is one iteration recorded ungated (`record_iteration`: the sum of an
//! iteration's kernels); one-shot µs the wall clock from planning (the SpMV plan and the
//! solver) to the solution on the device, which `peer.speedup` compares with the CuPy call;
//! the solve's iterations, its wall clock per iteration and the residual history go to the
//! JSON and the convergence plot. The check is the true relative residual `‖b − A·x‖/‖b‖`
//! recomputed in f64 on the host: f64 rows that report convergence must have it ≤ rtol (a
//! solve that reports a breakdown or the budget spent is skipped, with its reason); f32 rows must
//! be within 10% of the f64 twin's after the same iterations (plus f32 rounding of `A·x`), or
//! below [`F32_FLOOR`].
//!
//! Systems of at most [`SEVERAL_ROWS`] rows also run a case `k` = [`SYSTEMS`] (2 with
//! `--quick`): that many
//! right-hand sides (system i's b from [`right_hand_side`], b = 1 for the first) solved
//! together by `solve_many`, against the peer's solves of them one after another. Its one-shot
//! time is for all of them; its iterations and µs per iteration count every system's
//! iterations; its history is the first system's.

use std::marker::PhantomData;
use std::sync::Arc;
use std::time::Instant;

use wgsparse::format::EllOptions;
use wgsparse::generate;
use wgsparse::ops::{blas1, preferred_conversion, Spmv, SpmvAlgorithm};
use wgsparse::record::Recorder;
use wgsparse::reference::{self, TwinPreconditioner};
use wgsparse::solvers::{
    BiCgStab, Cg, FactorForm, Factorization, Gmres, IncompleteLu, IncompleteOptions, Operator, Orthogonalization,
    SolverOptions, SolverReport, StopReason, TriangularApply,
};
use wgsparse::{Context, Conversion, CsrMatrix, ElementKind, Format, GpuSparse, GpuVec, Scalar};

use super::cost::{self, Cost, Model, Shape};
use super::tiles;
use super::{Inputs, OneShot, Op, OpError, Prepared, SolveFigures, K};
use crate::suite::{BenchMatrix, DenseShape, Scale};

/// Iterations of an f32 row, on both sides (a multiple of GMRES's restart length, so that
/// CuPy's GMRES, which tests convergence once a cycle, runs as many).
pub const F32_ITERATIONS: usize = 120;
/// An f32 row whose system converged within its iterations goes on at f32's attainable
/// accuracy, where BiCGSTAB's true residual drifts (to 4.5e-4 on convdiff_32 on the H100):
/// below this, an f32 row passes whatever the twin reached.
const F32_FLOOR: f64 = 1e-3;
/// The tolerance of f64 rows.
pub const RTOL: f64 = 1e-6;
/// The iteration budget of f64 rows.
pub const MAX_ITERATIONS: usize = 20_000;
/// Right-hand sides of the several-systems case (`k`), and the largest system that has one.
pub const SYSTEMS: usize = 8;
pub const SEVERAL_ROWS: usize = 1 << 18;

/// System `i`'s right-hand side: `b[j] = 1 + ((j·i) mod 7)/7` (b = 1 for the first), computed
/// in f64 and rounded once, as the peer computes it.
pub fn right_hand_side<T: Scalar>(rows: usize, i: usize) -> Vec<T> {
    (0..rows).map(|j| T::from_f64(1.0 + ((j * i) % 7) as f64 / 7.0)).collect()
}

/// GMRES's restart length, CuPy's too.
pub const RESTART: usize = 30;
/// The convection–diffusion matrix's wind (grid units): clearly non-symmetric, and still one
/// where unpreconditioned BiCGSTAB is reliable. At 0.5 and above its recurrence drifts away
/// from the true residual on every implementation (the f64 twin on 256² "converges" with true
/// relative residuals of 3·10⁻² to 10²; ours reports it, Stagnated or Breakdown); at 0.2 the
/// twin's true residual stays within 1e-6.
const WIND: f32 = 0.2;

/// Jacobi sweeps per triangle of the `-sweeps` preconditioned algorithms.
const APPLY_SWEEPS: u32 = 2;

/// The preconditioner of an algorithm: `auto`, `cgs` and `uncoded` (`auto` with A's values
/// in place where `auto` codes them into a table) have none (as the peer's solvers);
/// `ilu0` (IC(0) for CG, `ic0`) applies its factors exactly, `ilu0-sweeps` (`ic0-sweeps`) by
/// [`APPLY_SWEEPS`] Jacobi sweeps per triangle (`ic0-sweeps1`: one, when named), in the
/// diagonal form where the pattern allows (`-full` at the end: the full factor always).
/// Factored by the default three sweeps, inside the timed one-shot.
fn preconditioner(algorithm: &str) -> Option<Option<IncompleteOptions>> {
    let (algorithm, form) = match algorithm.strip_suffix("-full") {
        Some(rest) => (rest, FactorForm::Full),
        None => (algorithm, FactorForm::Auto),
    };
    let apply = match algorithm {
        "auto" | "cgs" | "uncoded" if form == FactorForm::Auto => return Some(None),
        "ilu0" | "ic0" => TriangularApply::Exact,
        "ilu0-sweeps" | "ic0-sweeps" => TriangularApply::Sweeps(APPLY_SWEEPS),
        // `ic0-sweeps1`, `ilu0-sweeps3`: another sweep count, when named.
        _ => {
            let count = algorithm.strip_prefix("ilu0-sweeps").or_else(|| algorithm.strip_prefix("ic0-sweeps"))?;
            TriangularApply::Sweeps(count.parse().ok().filter(|&s: &u32| s <= 8)?)
        }
    };
    Some(Some(IncompleteOptions { apply, form, ..Default::default() }))
}

/// Which method.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    Cg,
    BiCgStab,
    Gmres,
}

/// An iterative solver for values of type `T`.
pub struct SolverOp<T> {
    method: Method,
    values: PhantomData<T>,
}

impl<T> SolverOp<T> {
    pub fn new(method: Method) -> Self {
        SolverOp { method, values: PhantomData }
    }
}

/// The 2-D convection–diffusion case of BiCGSTAB and GMRES at `scale`.
fn convection_diffusion(scale: Scale) -> DenseShape {
    let side = match scale {
        Scale::Quick => 32,
        Scale::Small => 128,
        Scale::Large => 2048,
    };
    DenseShape { family: "convdiff", batch: 1, rows: side * side, cols: side * side }
}

/// The bench matrix of a `convdiff` shape.
pub fn generate(shape: DenseShape) -> CsrMatrix<f32> {
    let side = (shape.rows as f64).sqrt().round() as usize;
    generate::convection_diffusion_2d(side, WIND)
}

/// Whether A equals Aᵀ, values included, with a positive diagonal: a CG case (positive
/// definiteness is CG's to find out: it reports an indefinite operator).
fn symmetric_positive_diagonal(a: &CsrMatrix<f32>) -> bool {
    let mut sorted = a.clone();
    sorted.sort_columns();
    let t = sorted.transpose();
    let same = sorted.row_offsets() == t.row_offsets()
        && sorted.col_indices() == t.col_indices()
        && sorted.values() == t.values();
    same && diagonal(a).is_some_and(|d| d.iter().all(|&v| v > 0.0))
}

/// The diagonal, if every row has a nonzero one.
fn diagonal(a: &CsrMatrix<f32>) -> Option<Vec<f32>> {
    (0..a.rows())
        .map(|i| {
            let (cols, values) = a.row(i);
            cols.iter().zip(values).find(|(&j, _)| j as usize == i).map(|(_, &v)| v).filter(|&v| v != 0.0)
        })
        .collect()
}

impl<T: Scalar> Op for SolverOp<T> {
    fn name(&self) -> &'static str {
        match self.method {
            Method::Cg => "cg",
            Method::BiCgStab => "bicgstab",
            Method::Gmres => "gmres",
        }
    }

    /// The default rows; the exact application (`ic0`, `ilu0`) runs when named with
    /// `--algorithms` ([`Op::accepts`]): its triangular solves are latency-bound, minutes per
    /// row on the suite's 2048² grids. So does `uncoded`, a comparison of A's encodings.
    fn algorithms(&self) -> Vec<&'static str> {
        match self.method {
            // One sweep: IC(0)-CG's fastest on the Laplacians (NOTES, session 38).
            Method::Cg => vec!["ic0-sweeps1", "auto"],
            Method::BiCgStab => vec!["ilu0-sweeps", "auto"],
            Method::Gmres => vec!["ilu0-sweeps", "cgs", "auto"],
        }
    }

    fn accepts(&self, algorithm: &str) -> bool {
        let exact = match self.method {
            Method::Cg => "ic0",
            Method::BiCgStab | Method::Gmres => "ilu0",
        };
        let counted = algorithm.strip_prefix(exact).is_some_and(|rest| rest.starts_with("-sweeps"));
        algorithm == exact
            || algorithm == "uncoded"
            || self.algorithms().contains(&algorithm)
            || (counted && preconditioner(algorithm).is_some())
    }

    /// A is uploaded in the format an `Auto` SpMV reads fastest (the label names it); the
    /// factorizations take a CSR copy.
    fn format(&self, _algorithm: &str) -> &'static str {
        "auto"
    }

    fn cases(&self, m: &BenchMatrix, scale: Scale) -> Vec<K> {
        let a = &m.csr;
        let takes = a.rows() == a.cols()
            && a.rows() > 0
            && match self.method {
                Method::Cg => symmetric_positive_diagonal(a),
                // The suite's own non-symmetric case, and files with a full diagonal.
                Method::BiCgStab | Method::Gmres => m.dense.is_some() || diagonal(a).is_some(),
            };
        if takes && a.rows() <= SEVERAL_ROWS {
            // --quick (a smoke test, also `cargo xtask test`'s) runs two.
            vec![None, Some(if scale == Scale::Quick { 2 } else { SYSTEMS })]
        } else if takes {
            vec![None]
        } else {
            Vec::new()
        }
    }

    fn dense_shapes(&self, scale: Scale) -> Vec<DenseShape> {
        match self.method {
            // CG runs on the suite's Laplacians.
            Method::Cg => Vec::new(),
            Method::BiCgStab | Method::Gmres => vec![convection_diffusion(scale)],
        }
    }

    fn model(&self) -> Model {
        match self.method {
            Method::Cg => cost::CG,
            Method::BiCgStab => cost::BICGSTAB,
            Method::Gmres => cost::GMRES,
        }
    }

    fn dtype(&self) -> ElementKind {
        T::KIND
    }

    fn cost(&self, m: &BenchMatrix, _k: K) -> Cost {
        let a = &m.csr;
        let shape = Shape { rows: a.rows() as u64, cols: a.cols() as u64, nnz: a.nnz() as u64 };
        let v = T::KIND.size();
        match self.method {
            Method::Cg => cost::cg(shape, v),
            Method::BiCgStab => cost::bicgstab(shape, v),
            Method::Gmres => cost::gmres(shape, v, RESTART as u64),
        }
    }

    fn peer_op(&self) -> Option<&'static str> {
        Some(self.name())
    }

    fn inputs<'a>(&self, m: &'a BenchMatrix, k: K, _seed: u64) -> Box<dyn Inputs + 'a> {
        let a: CsrMatrix<T> = tiles::values_as(&m.csr);
        let b = (0..k.unwrap_or(1)).map(|i| right_hand_side(a.rows(), i)).collect();
        let options = match T::KIND {
            ElementKind::F64 => {
                SolverOptions { rtol: RTOL, max_iterations: MAX_ITERATIONS, restart: RESTART, ..Default::default() }
            }
            ElementKind::F32 => {
                SolverOptions { rtol: 0.0, max_iterations: F32_ITERATIONS, restart: RESTART, ..Default::default() }
            }
        };
        Box::new(SolverInputs { method: self.method, a, b, options })
    }
}

impl Method {
    fn factorization(self) -> Factorization {
        match self {
            Method::Cg => Factorization::Ic0,
            Method::BiCgStab | Method::Gmres => Factorization::Ilu0,
        }
    }
}

impl<T: Scalar> SolverInputs<T> {
    /// For f32 rows, the f64 twin's (residual, scale) after [`F32_ITERATIONS`] with the same
    /// preconditioner: what bounds ours. BiCGSTAB's residual is not monotone, and on the
    /// convection–diffusion case it jumps by 5× from one iteration to the next while rounding
    /// grows ~10× a step (NOTES, session 34): an f32 run's 120th iterate need not be near the
    /// f64 twin's 120th, only within the band the twin's residual occupies late in the run,
    /// so its residual here is the largest over the twin's last half.
    fn twin_residual(&self, options: &SolverOptions, apply: Option<IncompleteOptions>, b: &[T]) -> Option<(f64, f64)> {
        (T::KIND == ElementKind::F32).then(|| {
            let a = &self.a;
            let x0 = vec![T::default(); a.rows()];
            let m = match apply {
                None => TwinPreconditioner::Identity,
                Some(options) => TwinPreconditioner::Incomplete {
                    cholesky: self.method.factorization() == Factorization::Ic0,
                    sweeps: options.sweeps,
                    apply: options.apply,
                    form: options.form,
                },
            };
            let twin = match self.method {
                Method::Cg => reference::cg(a, m, b, &x0, 0.0, 0.0, F32_ITERATIONS),
                Method::BiCgStab => reference::bicgstab(a, m, b, &x0, 0.0, 0.0, F32_ITERATIONS, options.shadow),
                Method::Gmres => {
                    let o = options.orthogonalization;
                    reference::gmres(a, m, b, &x0, 0.0, 0.0, F32_ITERATIONS, RESTART, o)
                }
            };
            let (residual, scale) = true_residual(a, b, &twin.x);
            let late = if self.method == Method::BiCgStab { &twin.history[twin.history.len() / 2..] } else { &[] };
            (late.iter().fold(residual, |m, &v| m.max(v)), scale)
        })
    }

    /// A on the device for the operator, in the format an `Auto` SpMV reads fastest (ELL
    /// with 16-bit diagonal offsets and, unless `algorithm` is `uncoded`, its values as codes
    /// into a table for the stencils), and for the factorization when `apply` asks for a
    /// preconditioner: the same matrix where the factor has the diagonal form (the form reads
    /// A's own storage, on the stencils coded ELL), else a CSR copy.
    fn upload(
        &self,
        ctx: &Context,
        apply: Option<IncompleteOptions>,
        algorithm: &str,
    ) -> Result<(GpuSparse<T>, Option<GpuSparse<T>>), OpError> {
        let conversion = match preferred_conversion(&self.a) {
            Conversion::Ell(ell) if algorithm == "uncoded" => {
                Conversion::Ell(EllOptions { value_table_limit: 0, ..ell })
            }
            conversion => conversion,
        };
        let operator = GpuSparse::from_csr(ctx, &self.a, conversion)?;
        let diagonal = |options: IncompleteOptions| {
            options.form == FactorForm::Auto
                && matches!(options.apply, TriangularApply::Sweeps(_))
                && reference::has_diagonal_form(&self.a, self.method.factorization() == Factorization::Ic0)
        };
        let factored = match apply {
            Some(_) if operator.format() == Format::Csr => Some(operator.clone()),
            Some(options) if diagonal(options) => Some(operator.clone()),
            Some(_) => Some(GpuSparse::from_csr(ctx, &self.a, Conversion::Csr)?),
            None => None,
        };
        Ok((operator, factored))
    }

    /// The preconditioner of `apply` (none for `None`), factored from the CSR copy; a matrix
    /// it cannot factor is refused (the row is skipped with the reason).
    fn preconditioner(
        &self,
        ctx: &Context,
        matrix: Option<&GpuSparse<T>>,
        apply: Option<IncompleteOptions>,
    ) -> Result<Option<Arc<IncompleteLu<T>>>, OpError> {
        let (Some(options), Some(matrix)) = (apply, matrix) else { return Ok(None) };
        match IncompleteLu::new(ctx, matrix, self.method.factorization(), options) {
            Ok(m) => Ok(Some(Arc::new(m))),
            Err(e @ wgsparse::Error::NotSolvable { .. }) => Err(OpError { refused: true, message: e.to_string() }),
            Err(e) => Err(e.into()),
        }
    }
}

/// `‖b − A·x‖₂ / ‖b‖₂` in f64, and `‖|A|·|x|‖₂ / ‖b‖₂` (the scale of A·x's rounding).
fn true_residual<T: Scalar, X: Scalar>(a: &CsrMatrix<T>, b: &[T], x: &[X]) -> (f64, f64) {
    let (mut residual, mut scale, mut b_norm) = (0.0, 0.0, 0.0);
    for (i, bi) in b.iter().enumerate() {
        let (cols, values) = a.row(i);
        let (mut ax, mut abs) = (0.0, 0.0);
        for (&j, &v) in cols.iter().zip(values) {
            let term = v.to_f64() * x[j as usize].to_f64();
            ax += term;
            abs += term.abs();
        }
        residual += (bi.to_f64() - ax).powi(2);
        scale += abs * abs;
        b_norm += bi.to_f64().powi(2);
    }
    let b_norm = b_norm.sqrt();
    (residual.sqrt() / b_norm, scale.sqrt() / b_norm)
}

/// A, the right-hand sides (one a system) and the options.
struct SolverInputs<T: Scalar> {
    method: Method,
    a: CsrMatrix<T>,
    b: Vec<Vec<T>>,
    options: SolverOptions,
}

impl<T: Scalar> Inputs for SolverInputs<T> {
    fn prepare(&self, ctx: &Context, algorithm: &str) -> Result<Box<dyn Prepared + '_>, OpError> {
        let Some(apply) = preconditioner(algorithm) else {
            return Err(OpError::failed(format!("unknown solver algorithm {algorithm:?}")));
        };
        let (matrix, factored) = self.upload(ctx, apply, algorithm)?;
        let spmv = Arc::new(Spmv::new(ctx, &matrix, SpmvAlgorithm::Auto)?);
        let precond = self.preconditioner(ctx, factored.as_ref(), apply)?;
        // `cgs`: GMRES by one classical Gram–Schmidt pass, as CuPy's.
        let orthogonalization =
            if algorithm == "cgs" { Orthogonalization::Classical } else { Orthogonalization::Reorthogonalized };
        let options = SolverOptions { orthogonalization, ..self.options };
        let mut solver = AnySolver::new(ctx, self.method, spmv.clone(), precond.clone(), options)?;
        let b = self.b.iter().map(|b| ctx.upload(b)).collect::<wgsparse::Result<Vec<_>>>()?;
        let mut x = self.b.iter().map(|b| ctx.zeros(b.len())).collect::<wgsparse::Result<Vec<_>>>()?;
        // The GPU time per iteration is taken first, on the solver's state: a solve's, not a
        // fresh solver's zeros, where CG's α = 0 skips the reads of q and x (~1/4 of the
        // vector bytes). One solve more per row (seconds for f64 GMRES, minutes for exact
        // triangular solves, which run only when named).
        solver.solve(&b, &mut x)?;
        let twin_residual = self.b.iter().map(|b| self.twin_residual(&options, apply, b)).collect();
        Ok(Box::new(SolverRuns {
            ctx: ctx.clone(),
            inputs: self,
            algorithm: algorithm.to_string(),
            apply,
            precond,
            twin_residual,
            options,
            b,
            x,
            spmv,
            matrix,
            solver,
            output: Vec::new(),
            last: None,
            solve_times: Vec::new(),
        }))
    }
}

/// One of the three solvers, owning its operator.
enum AnySolver<T: Scalar> {
    Cg(Cg<'static, T>),
    BiCgStab(BiCgStab<'static, T>),
    Gmres(Gmres<'static, T>),
}

impl<T: Scalar> AnySolver<T> {
    fn new(
        ctx: &Context,
        method: Method,
        op: Arc<Spmv<T>>,
        precond: Option<Arc<IncompleteLu<T>>>,
        options: SolverOptions,
    ) -> wgsparse::Result<Self> {
        let m = precond.map(Operator::from);
        Ok(match method {
            Method::Cg => AnySolver::Cg(Cg::new(ctx, op, m, options)?),
            Method::BiCgStab => AnySolver::BiCgStab(BiCgStab::new(ctx, op, m, options)?),
            Method::Gmres => AnySolver::Gmres(Gmres::new(ctx, op, m, options)?),
        })
    }

    /// `solve_many` on every system (with one, what `solve` does).
    fn solve(&mut self, b: &[GpuVec<T>], x: &mut [GpuVec<T>]) -> wgsparse::Result<Vec<SolverReport>> {
        let b: Vec<&GpuVec<T>> = b.iter().collect();
        let mut x: Vec<&mut GpuVec<T>> = x.iter_mut().collect();
        match self {
            AnySolver::Cg(s) => s.solve_many(&b, &mut x),
            AnySolver::BiCgStab(s) => s.solve_many(&b, &mut x),
            AnySolver::Gmres(s) => s.solve_many(&b, &mut x),
        }
    }

    fn record_iteration(
        &mut self,
        rec: &mut Recorder<'_, '_>,
        b: &GpuVec<T>,
        x: &mut GpuVec<T>,
    ) -> wgsparse::Result<()> {
        match self {
            AnySolver::Cg(s) => s.record_iteration(rec, b, x),
            AnySolver::BiCgStab(s) => s.record_iteration(rec, b, x),
            AnySolver::Gmres(s) => s.record_iteration(rec, b, x),
        }
    }

    fn extra_bytes(&self) -> u64 {
        match self {
            AnySolver::Cg(s) => s.extra_bytes(),
            AnySolver::BiCgStab(s) => s.extra_bytes(),
            AnySolver::Gmres(s) => s.extra_bytes(),
        }
    }
}

struct SolverRuns<'a, T: Scalar> {
    ctx: Context,
    inputs: &'a SolverInputs<T>,
    algorithm: String,
    /// The preconditioner's application (`None`: no preconditioner).
    apply: Option<IncompleteOptions>,
    precond: Option<Arc<IncompleteLu<T>>>,
    /// For f32 rows: the twin's (residual, scale) after as many iterations, same
    /// preconditioner, a system each.
    twin_residual: Option<Vec<(f64, f64)>>,
    /// The solver's options for this algorithm.
    options: SolverOptions,
    matrix: GpuSparse<T>,
    spmv: Arc<Spmv<T>>,
    solver: AnySolver<T>,
    /// A system each; the GPU time per iteration is the first's.
    b: Vec<GpuVec<T>>,
    x: Vec<GpuVec<T>>,
    /// The last x read back, for the check.
    output: Vec<Vec<T>>,
    /// The last solve's reports.
    last: Option<Vec<SolverReport>>,
    /// The solve's own wall clock in every one-shot run (the same iterations each time):
    /// µs per iteration is their median's, as the one-shot time is a median.
    solve_times: Vec<std::time::Duration>,
}

/// How long a one-shot row keeps the GPU busy between A's upload and the clock's start.
const WARM_AFTER_UPLOAD: std::time::Duration = std::time::Duration::from_millis(600);

impl<T: Scalar> SolverRuns<'_, T> {
    /// Runs ungated iterations on the prepared solver, batch after batch, for `time` (x is
    /// left changed).
    fn keep_busy(&mut self, time: std::time::Duration) -> Result<(), OpError> {
        let start = Instant::now();
        while start.elapsed() < time {
            let mut batch = self.ctx.batch();
            for _ in 0..8 {
                self.solver.record_iteration(&mut batch.recorder(), &self.b[0], &mut self.x[0])?;
            }
            batch.submit()?;
            self.ctx.synchronize()?;
        }
        Ok(())
    }

    /// x ← 0, done on the device before a timed solve starts.
    /// Every system's x, read back.
    fn read_x(&self) -> Result<Vec<Vec<T>>, OpError> {
        let mut batch = self.ctx.batch();
        let tickets = self.x.iter().map(|x| batch.read_back(x)).collect::<wgsparse::Result<Vec<_>>>()?;
        batch.submit()?;
        let mut output = Vec::with_capacity(tickets.len());
        for ticket in tickets {
            output.push(ticket.wait_view()?.to_vec());
        }
        Ok(output)
    }

    fn zero_x(&mut self) -> Result<(), OpError> {
        let mut batch = self.ctx.batch();
        for x in &mut self.x {
            blas1::fill(&mut batch.recorder(), T::default(), x)?;
        }
        batch.submit()?;
        Ok(self.ctx.synchronize()?)
    }
}

impl<T: Scalar> Prepared for SolverRuns<'_, T> {
    fn label(&self) -> String {
        let apply = match self.apply.map(|o| o.apply) {
            None => String::new(),
            Some(TriangularApply::Exact) => "exact triangular solves, ".into(),
            Some(TriangularApply::Sweeps(1)) => "1 jacobi sweep per triangle, ".into(),
            Some(TriangularApply::Sweeps(s)) => format!("{s} jacobi sweeps per triangle, "),
        };
        let form = match self.precond.as_ref().map(|m| m.form()) {
            Some(FactorForm::Auto) => "diagonal form, ",
            _ => "",
        };
        let apply = format!("{apply}{form}");
        let indices = super::spmv::encoding_label(self.matrix.index_bits(), self.matrix.value_bits());
        let systems = match self.b.len() {
            1 => String::new(),
            k => format!(", {k} systems together"),
        };
        format!("{} ({apply}spmv {}{indices}{systems})", self.algorithm, self.spmv.algorithm().name())
    }

    fn extra_bytes(&self) -> u64 {
        self.solver.extra_bytes() + self.spmv.extra_bytes() + self.precond.as_ref().map_or(0, |m| m.extra_bytes())
    }

    fn working_set_bytes(&self) -> u64 {
        let vectors = self.b.iter().chain(&self.x).map(|v| v.byte_len()).sum::<u64>();
        self.matrix.device_bytes() + vectors
    }

    fn copies(&self) -> usize {
        1
    }

    fn add_copy(&mut self) -> Result<(), OpError> {
        // A solve iterates on its own vectors: one copy (the timing loop stops asking).
        Err(OpError { refused: true, message: "solvers run on one copy".into() })
    }

    fn record(&mut self, rec: &mut Recorder<'_, '_>, _copy: usize) -> Result<(), OpError> {
        Ok(self.solver.record_iteration(rec, &self.b[0], &mut self.x[0])?)
    }

    fn poison(&mut self, _copy: usize) -> Result<(), OpError> {
        for x in &self.x {
            x.write(&vec![T::from_f64(f64::NAN); x.len()])?;
        }
        Ok(self.ctx.synchronize()?)
    }

    /// A solve from x0 = 0 (written after the poison, before the clock starts) with x read back.
    fn run_and_read(&mut self, _copy: usize) -> Result<std::time::Duration, OpError> {
        self.zero_x()?;
        let start = Instant::now();
        let reports = self.solver.solve(&self.b, &mut self.x)?;
        // A solve to tolerance that reports it did not get there (a breakdown, max iterations)
        // has done its job: the row says so and is skipped. One that claims convergence is
        // checked against the true residual.
        if let (None, Some((system, report))) =
            (&self.twin_residual, reports.iter().enumerate().find(|(_, r)| !r.converged()))
        {
            let why =
                format!("system {system} did not converge: {:?} after {} iterations", report.reason, report.iterations);
            return Err(OpError { refused: true, message: why });
        }
        self.output = self.read_x()?;
        let took = start.elapsed();
        self.last = Some(reports);
        Ok(took)
    }

    /// The excess of the true relative residual over what the row must meet (0 when it
    /// meets it); a non-finite x or a solve that should have converged and did not is ∞.
    fn check(&self) -> f64 {
        let inputs = self.inputs;
        let Some(reports) = &self.last else { return f64::INFINITY };
        if self.output.len() != inputs.b.len() || reports.len() != inputs.b.len() {
            return f64::INFINITY;
        }
        let excess = |system: usize| {
            let (report, x) = (&reports[system], &self.output[system]);
            let (residual, _) = true_residual(&inputs.a, &inputs.b[system], x);
            if !residual.is_finite() {
                return f64::INFINITY;
            }
            match &self.twin_residual {
                Some(twins) => {
                    let (twin, scale) = twins[system];
                    let bound = (1.1 * twin + 16.0 * f32::EPSILON as f64 * scale).max(F32_FLOOR);
                    (residual - bound).max(0.0)
                }
                None if report.reason == StopReason::Converged => (residual - inputs.options.rtol).max(0.0),
                None => f64::INFINITY,
            }
        };
        (0..reports.len()).map(excess).fold(0.0, f64::max)
    }

    /// From planning (the SpMV plan, the preconditioner's factorization and the solver, as
    /// the CuPy call makes its own) to the solution on the device.
    fn one_shot(&mut self) -> Result<Option<OneShot>, OpError> {
        let inputs = self.inputs;
        // A fresh upload (before the clock): no analyses kept from earlier plans of A, so the
        // time includes every one this solve builds (the level sets of exact application).
        let (matrix, factored) = inputs.upload(&self.ctx, self.apply, &self.algorithm)?;
        // The host's conversion idles the GPU for up to a second, after which the H100 runs
        // at ~60% of its bandwidth until it has been busy for ~0.4 s (NOTES, "Idle devices
        // start slow"): the peer's call finds it busy, so ours must too.
        self.keep_busy(WARM_AFTER_UPLOAD)?;
        self.zero_x()?;
        let start = Instant::now();
        let spmv = Arc::new(Spmv::new(&self.ctx, &matrix, SpmvAlgorithm::Auto)?);
        let precond = inputs.preconditioner(&self.ctx, factored.as_ref(), self.apply)?;
        let mut solver = AnySolver::new(&self.ctx, inputs.method, spmv, precond, self.options)?;
        let solving = Instant::now();
        let reports = solver.solve(&self.b, &mut self.x)?;
        let time = start.elapsed();
        let solve = solving.elapsed();
        self.solve_times.push(solve);
        // The timed solve's own x, read after the clock, is what `check` verifies next.
        self.output = self.read_x()?;
        self.last = Some(reports);
        Ok(Some(OneShot { time, levels: None, relaunches: 0 }))
    }

    /// Several systems: iterations (and the time per iteration) of all of them, the reason
    /// of the first that did not converge (else the first's), the first's history.
    fn solve_figures(&self) -> Option<SolveFigures> {
        let reports = self.last.as_ref()?;
        let first = reports.first()?;
        let mut times: Vec<f64> = self.solve_times.iter().map(|t| t.as_secs_f64() * 1e6).collect();
        times.sort_by(f64::total_cmp);
        let solve = *times.get(times.len() / 2)?;
        let iterations = reports.iter().map(|r| r.iterations).sum::<usize>();
        let reason = reports.iter().find(|r| !r.converged()).unwrap_or(first).reason;
        Some(SolveFigures {
            iterations,
            reason: format!("{reason:?}"),
            per_iteration_us: solve / iterations.max(1) as f64,
            history: first.history.clone(),
        })
    }
}
