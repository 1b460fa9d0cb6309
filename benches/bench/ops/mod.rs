//! The benchmarked ops behind one interface, so that the runner, the report and the peer
//! know nothing op-specific. Adding an op (SpMM, SDDMM, GEMV, triangular solve) is one new
//! module implementing [`Op`], its cost model in [`cost`], and one line in [`all`].

mod bitmap;
pub mod cost;
mod gemv;
mod lu;
mod sddmm;
mod solver;
mod spmm;
mod spmv;
mod sptrsv;
mod tiles;

use wgsparse::record::Recorder;
use wgsparse::{Context, ElementKind};

use crate::suite::{BenchMatrix, DenseShape, Scale};
pub use cost::{Cost, Model};

/// The sparse matrix of an op's own generated shape (the bitmap ops' random matrices and
/// LU batches, the solvers' convection–diffusion operator).
pub fn generated_matrix(shape: DenseShape, seed: u64) -> wgsparse::CsrMatrix<f32> {
    match shape.family {
        "convdiff" => solver::generate(shape),
        _ => bitmap::generate(shape, seed),
    }
}

/// The solver rows' settings: (GMRES restart, f64 rtol, f32 iteration count, f64 budget).
pub fn solver_settings() -> (usize, f64, usize, usize) {
    (solver::RESTART, solver::RTOL, solver::F32_ITERATIONS, solver::MAX_ITERATIONS)
}

/// The dense width of a case (K of SpMM and SDDMM); `None` for ops without one.
pub type K = Option<usize>;

/// Right-hand sides of the solvers' several-systems case (its k).
pub fn solver_systems() -> usize {
    solver::SYSTEMS
}

/// Every op the bench knows, for values of `dtype`, in report order.
pub fn all(dtype: ElementKind) -> Vec<Box<dyn Op>> {
    match dtype {
        ElementKind::F32 => vec![
            Box::new(spmv::SpmvOp::<f32>::default()),
            Box::new(spmm::SpmmOp::<f32>::plain()),
            Box::new(spmm::SpmmOp::<f32>::transposed()),
            Box::new(sddmm::SddmmOp::<f32>::default()),
            Box::new(sptrsv::SptrsvOp::<f32>::lower()),
            Box::new(sptrsv::SptrsvOp::<f32>::upper()),
            Box::new(gemv::GemvOp::<f32>::plain()),
            Box::new(gemv::GemvOp::<f32>::transposed()),
            Box::new(lu::LuOp::<f32>::default()),
            Box::new(bitmap::BitmapOp::<f32>::new(bitmap::Kind::Get)),
            Box::new(bitmap::BitmapOp::<f32>::new(bitmap::Kind::Add)),
            Box::new(bitmap::BitmapOp::<f32>::new(bitmap::Kind::Sub)),
            Box::new(bitmap::BitmapOp::<f32>::new(bitmap::Kind::Spgemm)),
            Box::new(bitmap::BitmapOp::<f32>::new(bitmap::Kind::Spmv)),
            Box::new(bitmap::BitmapOp::<f32>::new(bitmap::Kind::Lu)),
            Box::new(solver::SolverOp::<f32>::new(solver::Method::Cg)),
            Box::new(solver::SolverOp::<f32>::new(solver::Method::BiCgStab)),
            Box::new(solver::SolverOp::<f32>::new(solver::Method::Gmres)),
        ],
        ElementKind::F64 => vec![
            Box::new(spmv::SpmvOp::<f64>::default()),
            Box::new(spmm::SpmmOp::<f64>::plain()),
            Box::new(spmm::SpmmOp::<f64>::transposed()),
            Box::new(sddmm::SddmmOp::<f64>::default()),
            Box::new(sptrsv::SptrsvOp::<f64>::lower()),
            Box::new(sptrsv::SptrsvOp::<f64>::upper()),
            Box::new(gemv::GemvOp::<f64>::plain()),
            Box::new(gemv::GemvOp::<f64>::transposed()),
            Box::new(lu::LuOp::<f64>::default()),
            Box::new(bitmap::BitmapOp::<f64>::new(bitmap::Kind::Get)),
            Box::new(bitmap::BitmapOp::<f64>::new(bitmap::Kind::Add)),
            Box::new(bitmap::BitmapOp::<f64>::new(bitmap::Kind::Sub)),
            Box::new(bitmap::BitmapOp::<f64>::new(bitmap::Kind::Spgemm)),
            Box::new(bitmap::BitmapOp::<f64>::new(bitmap::Kind::Spmv)),
            Box::new(bitmap::BitmapOp::<f64>::new(bitmap::Kind::Lu)),
            Box::new(solver::SolverOp::<f64>::new(solver::Method::Cg)),
            Box::new(solver::SolverOp::<f64>::new(solver::Method::BiCgStab)),
            Box::new(solver::SolverOp::<f64>::new(solver::Method::Gmres)),
        ],
    }
}

/// One operation of the library, with all its algorithms.
pub trait Op {
    /// Name in tables, JSON, `--ops` and the peer script.
    fn name(&self) -> &'static str;
    /// Algorithm names as `--algorithms` and the table spell them, `auto` last.
    fn algorithms(&self) -> Vec<&'static str>;
    /// Whether `algorithm` names one of the op's algorithms, or a tuned variant of one.
    fn accepts(&self, algorithm: &str) -> bool {
        self.algorithms().contains(&algorithm)
    }
    /// The device format `algorithm` reads (`auto` reads CSR uploads).
    fn format(&self, algorithm: &str) -> &'static str;
    /// The cases to run on `m`: `[None]`, or the dense widths K; none where the op does not
    /// take the matrix.
    fn cases(&self, m: &BenchMatrix, scale: Scale) -> Vec<K>;
    /// Ops on dense operands run shapes of their own besides Matrix Market files: those of
    /// `scale`. Sparse ops have none.
    fn dense_shapes(&self, _scale: Scale) -> Vec<DenseShape> {
        Vec::new()
    }
    /// How bytes and flops are counted.
    fn model(&self) -> Model;
    /// The element type of the op's values.
    fn dtype(&self) -> ElementKind;
    /// Bytes and flops of one run on `m`.
    fn cost(&self, m: &BenchMatrix, k: K) -> Cost;
    /// The same op's name in the peer script, `None` when the peer lacks it.
    fn peer_op(&self) -> Option<&'static str>;
    /// An algorithm of this op whose row is the other rows' peer (the bitmap ops' CSR
    /// baselines: no vendor library has the format), timed in the same run.
    fn own_peer(&self) -> Option<&'static str> {
        None
    }
    /// Host operands and the CPU twin's result for one case, shared by all algorithms.
    fn inputs<'a>(&self, m: &'a BenchMatrix, k: K, seed: u64) -> Box<dyn Inputs + 'a>;
}

/// One case of an op on one matrix, ready to plan any algorithm.
pub trait Inputs {
    /// Uploads the operands to `ctx` in the algorithm's format and plans the op.
    fn prepare(&self, ctx: &Context, algorithm: &str) -> Result<Box<dyn Prepared + '_>, OpError>;
    /// The case timed on the CPU peers (dense ops: faer, serial and on every core).
    fn cpu_peers(&self) -> Vec<crate::cpu_peer::CpuPeerTime> {
        Vec::new()
    }
}

/// A planned op with its device operands: possibly several copies of them, which timed
/// runs rotate through so that repeated runs do not find their inputs in cache.
pub trait Prepared {
    /// The algorithm as the table shows it: `auto (csr-merge)` says what `auto` picked.
    fn label(&self) -> String;
    /// Device bytes the plan allocated beyond its inputs and outputs.
    fn extra_bytes(&self) -> u64;
    /// Device bytes of a transpose the plan runs on, kept with the matrix and reported apart
    /// from [`Prepared::extra_bytes`] (`None`: the op has none).
    fn transpose_bytes(&self) -> Option<u64> {
        None
    }
    /// Device bytes one copy of the operands (matrix, inputs, outputs) occupies.
    fn working_set_bytes(&self) -> u64;
    /// Copies uploaded so far (at least one).
    fn copies(&self) -> usize;
    /// Uploads and plans one more copy.
    fn add_copy(&mut self) -> Result<(), OpError>;
    /// Records one run on copy `copy` (α = 1, β = 0 where the op has them).
    fn record(&mut self, rec: &mut Recorder<'_, '_>, copy: usize) -> Result<(), OpError>;
    /// Fills copy `copy`'s outputs with NaN and waits until that is done, so that a run that
    /// skips an entry cannot pass [`Prepared::check`].
    fn poison(&mut self, copy: usize) -> Result<(), OpError>;
    /// The end-to-end path: one run on copy `copy` and its output in host memory (one batch:
    /// the run and the copy to a pooled staging buffer, mapped). Returns the time until the
    /// output is readable on the host; keeps a copy of it for [`Prepared::check`].
    fn run_and_read(&mut self, copy: usize) -> Result<std::time::Duration, OpError>;
    /// The relative error of the output last read back against the CPU twin.
    fn check(&self) -> f64;
    /// Host ↔ device transfer of the inputs, measured once while preparing (dense ops, whose
    /// operands a user uploads for each product), reported apart from the kernel time.
    fn transfer(&self) -> Option<std::time::Duration> {
        None
    }
    /// For ops whose first run on a matrix does more than later ones (the triangular solve
    /// captures levels): one such run from scratch, waited for. `None`: the op has none.
    fn one_shot(&mut self) -> Result<Option<OneShot>, OpError> {
        Ok(None)
    }
    /// For the solvers: what the last one-shot solve did. `None` for other ops.
    fn solve_figures(&self) -> Option<SolveFigures> {
        None
    }
}

/// What a solve did ([`Prepared::solve_figures`]).
#[derive(Debug, Clone)]
pub struct SolveFigures {
    /// Iterations to the tolerance (or the fixed count).
    pub iterations: usize,
    /// Why it stopped.
    pub reason: String,
    /// The solve's wall clock (planning excluded) per iteration, µs.
    pub per_iteration_us: f64,
    /// The recurrence's relative residual after each iteration.
    pub history: Vec<f64>,
}

/// One run of an op from scratch ([`Prepared::one_shot`]).
#[derive(Debug, Clone, Copy)]
pub struct OneShot {
    /// Wall clock from planning to the result (and every analysis) done on the device.
    pub time: std::time::Duration,
    /// Levels of the triangular solve.
    pub levels: Option<usize>,
    /// Relaunches the solve needed.
    pub relaunches: u32,
}

/// Why a row has no measurement.
#[derive(Debug, Clone)]
pub struct OpError {
    /// The library declined the case (format conversion, device limits, memory): the row is
    /// skipped. Otherwise something broke and the row FAILED.
    pub refused: bool,
    /// What happened.
    pub message: String,
}

impl OpError {
    /// A failure that is not a refusal.
    pub fn failed(message: impl Into<String>) -> Self {
        OpError { refused: false, message: message.into() }
    }
}

impl From<wgsparse::Error> for OpError {
    fn from(e: wgsparse::Error) -> Self {
        use wgsparse::Error::*;
        // Refusals are the library doing its job on a case it does not take; anything else
        // (validation, device loss, readback) is a bug to flag.
        let refused = matches!(e, Format(_) | LimitExceeded { .. } | OutOfMemory(_) | InvalidArgument(_));
        OpError { refused, message: e.to_string() }
    }
}

impl From<wgsparse::FormatError> for OpError {
    fn from(e: wgsparse::FormatError) -> Self {
        wgsparse::Error::from(e).into()
    }
}
