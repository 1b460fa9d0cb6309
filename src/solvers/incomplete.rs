//! Incomplete factorizations as preconditioners: ILU(0) (`A ≈ L·U`, L unit lower) and IC(0)
//! (`A ≈ L·Lᵀ`, for symmetric positive definite A), with A's sparsity pattern.
//!
//! **Factored on the GPU by fine-grained sweeps** (Chow & Patel 2015, `shaders/ilu_sweep.wgsl`):
//! every entry of the factor is recomputed from the previous sweep's, all in parallel, one
//! dispatch per sweep. We chose this over a level-scheduled factorization because the suite's
//! stencils are deep: a 2048² grid has 4095 levels, so level scheduling is 4095 dependent
//! dispatches of about a thousand rows each, latency-bound, while a few sweeps give nearly
//! the exact factors' preconditioning (they converge to them: the exact factors are the
//! sweeps' fixed point, reached after finitely many sweeps, 20 on a 6² grid). The sweep
//! count is an option; [`crate::reference::incomplete_factor`] runs the same sweeps on the
//! host.
//!
//! The factor is kept as one CSR matrix with A's pattern (L's strict part below the
//! diagonal, U, or for IC(0) Lᵀ, on and above it). `z ← M⁻¹·r` is two triangular solves,
//! applied either exactly by the sync-free triangular solve (level sets captured once, at
//! construction, and reused by every application) or approximately by a few Jacobi sweeps
//! per triangle (`shaders/triangle_sweep.wgsl`: no dependencies between rows, a pass over
//! one triangle each, kept in CSR arrays of its own), see [`TriangularApply`].

use super::LinOp;
use crate::analysis::scan::Scan;
use crate::element::Scalar;
use crate::error::SolveProblem;
use crate::gpu::GpuVec;
use crate::kernel::shaders::{ilu_sweep, incomplete_split, triangle_sweep};
use crate::kernel::Kernel;
use crate::matrix::{Format, PanelStorage};
use crate::ops::common::{check_len, Operands};
use crate::ops::sptrsv::{Diagonal, SptrsvAlgorithm, SptrsvOptions, Triangle, TriangularSolve};
use crate::record::Recorder;
use crate::{Context, Error, GpuSparse, Result};

/// Which incomplete factorization.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Factorization {
    /// ILU(0): `A ≈ L·U`, L unit lower triangular.
    Ilu0,
    /// IC(0): `A ≈ L·Lᵀ`, for symmetric positive definite A (its lower triangle is what the
    /// factorization reads; the pattern must be symmetric). Symmetric, so CG can use it.
    Ic0,
}

/// How `z ← M⁻¹·r` solves with the two triangular factors.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TriangularApply {
    /// The sync-free triangular solve: exact, but as many dependent steps as the triangle has
    /// levels (4095 on a 2048² grid). Recorded with 4 relaunch rounds; rows a bound still left
    /// unsolved come out NaN, which the solver reports as non-finite.
    Exact,
    /// `y ← D⁻¹·b`, then this many Jacobi sweeps `y ← D⁻¹·(b − T_strict·y)` per triangle: an
    /// approximation (a fixed polynomial in the factors, so still a linear operator, and
    /// symmetric for IC(0)) with no dependency chain. Run on the factors' unit-diagonal
    /// form, split into one CSR matrix per strict triangle, each sweep is one pass over its
    /// triangle's entries alone (the starting `D⁻¹·b` folds into the first, the diagonal
    /// scaling into the lower triangle's last): s passes per triangle (one for s = 0).
    Sweeps(u32),
}

/// Options of an incomplete factorization.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IncompleteOptions {
    /// Fine-grained factorization sweeps, at least 1 (1: the starting guess, from A alone).
    pub sweeps: u32,
    /// How the factors are applied.
    pub apply: TriangularApply,
}

impl Default for IncompleteOptions {
    /// Three factorization sweeps (Chow & Patel find that three give nearly the exact
    /// factors' iteration counts on Laplacians), applied exactly.
    fn default() -> Self {
        IncompleteOptions { sweeps: 3, apply: TriangularApply::Exact }
    }
}

/// An ILU(0) or IC(0) preconditioner, factored on the GPU: a [`LinOp`] applying
/// `z ← (L·U)⁻¹·r` (or `(L·Lᵀ)⁻¹·r`).
pub struct IncompleteLu<T: Scalar> {
    factorization: Factorization,
    options: IncompleteOptions,
    factor: GpuSparse<T>,
    apply: Apply<T>,
    /// Between the two triangular solves.
    middle: GpuVec<T>,
}

enum Apply<T: Scalar> {
    Exact { lower: Box<TriangularSolve<T>>, upper: Box<TriangularSolve<T>> },
    Sweeps(Box<Sweeps<T>>),
}

/// Jacobi-sweep application on the unit-diagonal form of the factor, split by triangle
/// (`shaders/incomplete_split.wgsl`): `M⁻¹ = U₁⁻¹·S·L₁⁻¹` with both triangles unit and the
/// diagonals in S, so no sweep divides, none is spent on `y = D⁻¹·b`, and each streams only
/// its own triangle's entries.
struct Sweeps<T: Scalar> {
    sweeps: u32,
    kernel: Kernel<triangle_sweep::Shader, T>,
    /// The strict lower triangle of the unit form (L₁), then the strict upper (U₁ or L₁ᵀ).
    lower: TriangleCsr<T>,
    upper: TriangleCsr<T>,
    /// S: D⁻¹ (ILU(0)) or D⁻² (IC(0)).
    scale: GpuVec<T>,
    /// The sweeps alternate between this and their target.
    spare: GpuVec<T>,
}

/// One strict triangle in CSR arrays of its own.
struct TriangleCsr<T: Scalar> {
    offsets: GpuVec<u32>,
    cols: GpuVec<u32>,
    values: GpuVec<T>,
}

impl<T: Scalar> TriangleCsr<T> {
    fn new(ctx: &Context, rows: usize, entries: usize) -> Result<Self> {
        Ok(TriangleCsr {
            offsets: ctx.zeros(rows + 1)?,
            cols: ctx.zeros(entries.max(1))?,
            values: ctx.zeros(entries.max(1))?,
        })
    }

    fn bytes(&self) -> u64 {
        self.offsets.byte_len() + self.cols.byte_len() + self.values.byte_len()
    }
}

impl<T: Scalar> IncompleteLu<T> {
    /// ILU(0) of `a` with default options.
    pub fn ilu0(ctx: &Context, a: &GpuSparse<T>) -> Result<Self> {
        Self::new(ctx, a, Factorization::Ilu0, IncompleteOptions::default())
    }

    /// IC(0) of `a` with default options.
    pub fn ic0(ctx: &Context, a: &GpuSparse<T>) -> Result<Self> {
        Self::new(ctx, a, Factorization::Ic0, IncompleteOptions::default())
    }

    /// Factors `a` (CSR, square, one row panel, sorted columns, a diagonal entry in every
    /// row) and plans the application. A row without a diagonal entry, or whose pivot comes
    /// out zero or not finite (for IC(0): not positive, so A is not positive definite), is
    /// refused as [`Error::NotSolvable`] with the first such row. Exact application solves
    /// once with each factor here, to capture its level sets.
    pub fn new(
        ctx: &Context,
        a: &GpuSparse<T>,
        factorization: Factorization,
        options: IncompleteOptions,
    ) -> Result<Self> {
        let op = match factorization {
            Factorization::Ilu0 => "ilu0",
            Factorization::Ic0 => "ic0",
        };
        Operands::new(ctx, op)?.owned("the matrix", a.device_id())?;
        ctx.check_element::<T>()?;
        check_len(op, "matrix columns (a square matrix)", a.rows(), a.cols())?;
        if a.format() != Format::Csr {
            return Err(Error::InvalidArgument(format!("{op}: the matrix must be CSR, not {}", a.format().name())));
        }
        if !a.columns_sorted() {
            return Err(Error::InvalidArgument(format!("{op}: the matrix's columns must be sorted within rows")));
        }
        if a.panel_count() > 1 {
            return Err(Error::LimitExceeded {
                what: format!("{op} of a matrix in {} row panels", a.panel_count()),
                limit: "max_storage_buffer_binding_size",
                requested: a.device_bytes(),
                max: ctx.limits().max_storage_buffer_binding_size,
            });
        }
        if options.sweeps == 0 {
            return Err(Error::InvalidArgument(format!("{op}: at least one factorization sweep")));
        }
        let factor = a.zeros_like(ctx)?;
        factor_sweeps(ctx, a, &factor, factorization == Factorization::Ic0, options.sweeps, op)?;
        let n = a.rows();
        let apply = match options.apply {
            TriangularApply::Exact => {
                let plan = |triangle, diagonal| {
                    let options =
                        SptrsvOptions { ignore_other_triangle: true, relaunch_rounds: 4, ..Default::default() };
                    TriangularSolve::with_options(ctx, &factor, triangle, diagonal, SptrsvAlgorithm::Auto, options)
                };
                let lower_diagonal = match factorization {
                    Factorization::Ilu0 => Diagonal::Unit,
                    Factorization::Ic0 => Diagonal::NonUnit,
                };
                let (lower, upper) =
                    (plan(Triangle::Lower, lower_diagonal)?, plan(Triangle::Upper, Diagonal::NonUnit)?);
                // The first solves capture the level sets every recorded one reuses.
                let (ones, mut out) = (ctx.upload(&vec![T::from_f64(1.0); n])?, ctx.zeros::<T>(n)?);
                lower.solve(&ones, &mut out)?;
                upper.solve(&ones, &mut out)?;
                Apply::Exact { lower: Box::new(lower), upper: Box::new(upper) }
            }
            TriangularApply::Sweeps(sweeps) => {
                Apply::Sweeps(Box::new(Sweeps::new(ctx, &factor, factorization, sweeps)?))
            }
        };
        Ok(IncompleteLu { factorization, options, factor, apply, middle: ctx.zeros(n)? })
    }

    /// Which factorization this is.
    pub fn factorization(&self) -> Factorization {
        self.factorization
    }

    /// The options it was made with.
    pub fn options(&self) -> IncompleteOptions {
        self.options
    }

    /// The factor, with A's pattern: for ILU(0), L's strict part below the diagonal (its unit
    /// diagonal not stored) and U on and above it; for IC(0), L on and below the diagonal and
    /// Lᵀ above it.
    pub fn factor(&self) -> &GpuSparse<T> {
        &self.factor
    }

    /// Device bytes beyond A: the factor and the application's vectors and plans.
    pub fn extra_bytes(&self) -> u64 {
        let plans = match &self.apply {
            Apply::Exact { lower, upper } => {
                lower.extra_bytes() + upper.extra_bytes() + lower.level_sets_bytes() + upper.level_sets_bytes()
            }
            Apply::Sweeps(w) => w.lower.bytes() + w.upper.bytes() + w.scale.byte_len() + w.spare.byte_len(),
        };
        self.factor.device_bytes() + self.middle.byte_len() + plans
    }
}

impl<T: Scalar> Sweeps<T> {
    fn new(ctx: &Context, factor: &GpuSparse<T>, factorization: Factorization, sweeps: u32) -> Result<Self> {
        let n = factor.rows();
        let kernel = ctx.kernel(Default::default(), Default::default())?;
        let (scale, spare) = (ctx.zeros(n.max(1))?, ctx.zeros(n.max(1))?);
        if n == 0 {
            let (lower, upper) = (TriangleCsr::new(ctx, 0, 0)?, TriangleCsr::new(ctx, 0, 0)?);
            return Ok(Sweeps { sweeps, kernel, lower, upper, scale, spare });
        }
        let PanelStorage::Csr(csr) = factor.panels()[0].storage() else {
            return Err(Error::Validation("incomplete factor: a panel that is not CSR".into()));
        };
        let split = ctx.kernel::<incomplete_split::Shader, T>(Default::default(), Default::default())?;
        let params = |phase| incomplete_split::Params {
            rows: n as u32,
            cholesky: (factorization == Factorization::Ic0) as u32,
            phase,
        };
        // Lower counts scanned into the lower triangle's offsets; its size read back, so that
        // each triangle gets its own (not the strict part's whole, as a non-symmetric
        // pattern may split it unevenly).
        let mut lower = TriangleCsr::new(ctx, n, 0)?;
        let placeholder = TriangleCsr::new(ctx, 0, 0)?;
        let scan = Scan::new(ctx, n + 1)?;
        let total = ctx.zeros::<u32>(1)?;
        let mut batch = ctx.batch();
        {
            let mut rec = batch.recorder();
            rec.dispatch_items(&split, params(0), split_bindings(csr, &lower, &placeholder, &scale), n as u64 + 1)?;
            scan.record(&mut rec, &lower.offsets, n + 1, &total)?;
        }
        let ticket = batch.read_back(&total)?;
        batch.submit()?;
        let lower_len = ticket.wait()?[0] as usize;
        // Every row has its diagonal (the factorization checked): n + strict entries.
        let upper_len = factor.nnz().saturating_sub(n + lower_len);
        lower.cols = ctx.zeros(lower_len.max(1))?;
        lower.values = ctx.zeros(lower_len.max(1))?;
        let upper = TriangleCsr::new(ctx, n, upper_len)?;
        let mut batch = ctx.batch();
        batch.recorder().dispatch_items(&split, params(1), split_bindings(csr, &lower, &upper, &scale), n as u64)?;
        batch.submit()?;
        Ok(Sweeps { sweeps, kernel, lower, upper, scale, spare })
    }

    /// `y ← T₁⁻¹·b` by the sweeps on one triangle (the lower's result times S), alternating
    /// between `y` and the spare so that the last writes `y`.
    fn record(&self, rec: &mut Recorder<'_, '_>, triangle: Triangle, b: &GpuVec<T>, y: &GpuVec<T>) -> Result<()> {
        let n = y.len();
        let sweeps = self.sweeps;
        let storage = match triangle {
            Triangle::Lower => &self.lower,
            Triangle::Upper => &self.upper,
        };
        let target = |t: u32| if (sweeps - t).is_multiple_of(2) { y } else { &self.spare };
        // Zero sweeps: one pass that copies b (times S for the lower triangle).
        for t in 1.min(sweeps)..=sweeps {
            let params = triangle_sweep::Params {
                rows: n as u32,
                first: (t == 1) as u32,
                copy: (sweeps == 0) as u32,
                scaled: (triangle == Triangle::Lower && t == sweeps) as u32,
            };
            // The first pass reads b, not y_old: b stands in (read-only bindings may alias).
            let previous = if t <= 1 { b } else { target(t - 1) };
            let bindings = triangle_sweep::Bindings {
                offsets: storage.offsets.bind(),
                cols: storage.cols.bind(),
                values: storage.values.bind(),
                scale: self.scale.bind(),
                b: b.bind(),
                y_old: previous.bind(),
                y_new: target(t).bind(),
            };
            rec.dispatch_items(&self.kernel, params, bindings, n as u64)?;
        }
        Ok(())
    }
}

/// `incomplete_split.wgsl`'s bindings: the factor, the triangles it fills, the scale.
fn split_bindings<'a, T: Scalar>(
    csr: &'a crate::matrix::GpuCsr<T>,
    lower: &'a TriangleCsr<T>,
    upper: &'a TriangleCsr<T>,
    scale: &'a GpuVec<T>,
) -> incomplete_split::Bindings<'a, T> {
    incomplete_split::Bindings {
        row_offsets: csr.row_offsets().bind(),
        col_indices: csr.col_indices().bind(),
        factor: csr.values().bind(),
        lower_offsets: lower.offsets.bind(),
        lower_cols: lower.cols.bind(),
        lower_values: lower.values.bind(),
        upper_offsets: upper.offsets.bind(),
        upper_cols: upper.cols.bind(),
        upper_values: upper.values.bind(),
        scale: scale.bind(),
    }
}

/// Runs the factorization's sweeps into `factor`'s values and checks the pivots.
fn factor_sweeps<T: Scalar>(
    ctx: &Context,
    a: &GpuSparse<T>,
    factor: &GpuSparse<T>,
    cholesky: bool,
    sweeps: u32,
    op: &'static str,
) -> Result<()> {
    let n = a.rows();
    if n == 0 {
        return Ok(());
    }
    let (PanelStorage::Csr(a_csr), PanelStorage::Csr(f_csr)) = (a.panels()[0].storage(), factor.panels()[0].storage())
    else {
        return Err(Error::Validation(format!("{op}: a panel that is not CSR")));
    };
    let kernel = ctx.kernel::<ilu_sweep::Shader, T>(Default::default(), Default::default())?;
    let spare = ctx.zeros::<T>(a.nnz().max(1))?;
    let problems = ctx.upload(&[u32::MAX; 3])?;
    // Sweep t writes the factor's values when sweeps − 1 − t is even, else the spare: the last
    // writes the factor.
    let target = |t: u32| if (sweeps - 1 - t).is_multiple_of(2) { f_csr.values() } else { &spare };
    let other = |t: u32| if (sweeps - 1 - t).is_multiple_of(2) { &spare } else { f_csr.values() };
    let mut batch = ctx.batch();
    {
        let mut rec = batch.recorder();
        for t in 0..sweeps {
            let params = ilu_sweep::Params {
                rows: n as u32,
                cholesky: cholesky as u32,
                initial: (t == 0) as u32,
                check: (t + 1 == sweeps) as u32,
            };
            let bindings = ilu_sweep::Bindings {
                row_offsets: a_csr.row_offsets().bind(),
                col_indices: a_csr.col_indices().bind(),
                a: a_csr.values().bind(),
                previous: other(t).bind(),
                next: target(t).bind(),
                problems: problems.bind(),
            };
            rec.dispatch_items(&kernel, params, bindings, n as u64)?;
        }
    }
    let ticket = batch.read_back(&problems)?;
    batch.submit()?;
    let found = ticket.wait()?;
    let refuse = |row: u32, problem| Err(Error::NotSolvable { op, row: row as usize, problem });
    if found[2] != u32::MAX {
        return Err(Error::InvalidArgument(format!(
            "{op}: the pattern is not symmetric (row {} stores an entry whose mirror is missing)",
            found[2]
        )));
    }
    match (found[0], found[1]) {
        (u32::MAX, u32::MAX) => Ok(()),
        (missing, _) if missing != u32::MAX => refuse(missing, SolveProblem::MissingDiagonal),
        (_, pivot) if cholesky => refuse(pivot, SolveProblem::NotPositiveDefinite),
        (_, pivot) => refuse(pivot, SolveProblem::ZeroPivot),
    }
}

impl<T: Scalar> LinOp<T> for IncompleteLu<T> {
    fn shape(&self) -> (usize, usize) {
        (self.factor.rows(), self.factor.cols())
    }

    fn apply(&self, rec: &mut Recorder<'_, '_>, x: &GpuVec<T>, y: &mut GpuVec<T>) -> Result<()> {
        let op = match self.factorization {
            Factorization::Ilu0 => "ilu0",
            Factorization::Ic0 => "ic0",
        };
        Operands::new(rec.context(), op)?
            .owned("the preconditioner", self.factor.device_id())?
            .input("r", x)?
            .output("z", y)?;
        check_len(op, "r length", self.factor.rows(), x.len())?;
        check_len(op, "z length", self.factor.rows(), y.len())?;
        if self.factor.rows() == 0 {
            return Ok(());
        }
        match &self.apply {
            Apply::Exact { lower, upper } => {
                lower.record_into_scratch(rec, x, &self.middle)?;
                upper.record(rec, &self.middle, y)
            }
            Apply::Sweeps(sweeps) => {
                sweeps.record(rec, Triangle::Lower, x, &self.middle)?;
                sweeps.record(rec, Triangle::Upper, &self.middle, y)
            }
        }
    }
}
