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
//! applied either exactly by the sync-free triangular solve (levels captured once, at
//! construction, sorted into level sets where its solves run by level, and reused by every
//! application) or approximately by a few Jacobi sweeps
//! per triangle (`shaders/triangle_sweep.wgsl`: no dependencies between rows, a pass over
//! one triangle each, kept in CSR arrays of its own), see [`TriangularApply`].
//!
//! **The diagonal form.** Where the elimination fills no entry of A's pattern (no k below
//! both i and j with (i, k) and (k, j) stored, for any stored (i, j): the 5- and 7-point
//! stencils, any pattern whose graph has no triangles), the factors' strict triangles are A's
//! own and only the pivots are new: `L·U = (D + L_A)·D⁻¹·(D + U_A)` with
//! `d_i = a_ii − Σ_{k<i} a_ik·a_ki/d_k` (IC(0): `L·Lᵀ` the same, for symmetric A). Then,
//! when the factors are applied by sweeps, the preconditioner keeps one vector (`1/d`,
//! swept like the factor, `shaders/diagonal_pivots.wgsl`) and sweeps with A's own storage,
//! CSR or ELL in any of its encodings (`shaders/diagonal_sweep.wgsl`): on a stencil coded as
//! ELL, 4 bytes an entry instead of the split triangles' 12 (f64), no arrays to build, and
//! the same operator (see [`FactorForm`]). The pattern is checked on the GPU in the
//! factorization's first sweep.

use super::{CgFolding, LinOp};
use crate::analysis::scan::Scan;
use crate::element::Scalar;
use crate::error::SolveProblem;
use crate::gpu::{Bind, DeviceId, GpuVec};
use crate::kernel::shaders::{
    cg_ic0_lower, cg_ic0_upper, diagonal_pivots, diagonal_sweep, ilu_sweep, incomplete_split, triangle_sweep,
};
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

/// How the factor is kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FactorForm {
    /// The diagonal form (A's own triangles and a vector of pivots, see the module's
    /// documentation) where A's pattern allows it and the factors are applied by sweeps;
    /// otherwise the full factor, which needs A in CSR. Its pivots are swept as
    /// `d_i = a_ii − Σ_{k<i} a_ik·a_ki/d_k` from `d = a_ii`, where the full form's sweeps
    /// update the factor's off-diagonal entries too: the two meet at the exact factor, but
    /// after a few sweeps they differ slightly.
    #[default]
    Auto,
    /// Always the factor with A's pattern (CSR A).
    Full,
}

/// Options of an incomplete factorization.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IncompleteOptions {
    /// Fine-grained factorization sweeps, at least 1 (1: the starting guess, from A alone).
    pub sweeps: u32,
    /// How the factors are applied.
    pub apply: TriangularApply,
    /// How the factor is kept.
    pub form: FactorForm,
}

impl Default for IncompleteOptions {
    /// Three factorization sweeps (Chow & Patel find that three give nearly the exact
    /// factors' iteration counts on Laplacians), applied exactly (so in the full form).
    fn default() -> Self {
        IncompleteOptions { sweeps: 3, apply: TriangularApply::Exact, form: FactorForm::Auto }
    }
}

/// An ILU(0) or IC(0) preconditioner, factored on the GPU: a [`LinOp`] applying
/// `z ← (L·U)⁻¹·r` (or `(L·Lᵀ)⁻¹·r`).
pub struct IncompleteLu<T: Scalar> {
    factorization: Factorization,
    options: IncompleteOptions,
    rows: usize,
    device_id: DeviceId,
    apply: Apply<T>,
    /// Between the two triangular solves.
    middle: GpuVec<T>,
}

enum Apply<T: Scalar> {
    Exact { factor: GpuSparse<T>, lower: Box<TriangularSolve<T>>, upper: Box<TriangularSolve<T>> },
    Sweeps { factor: GpuSparse<T>, sweeps: Box<Sweeps<T>> },
    Diagonal(Box<DiagonalForm<T>>),
}

/// The diagonal form (module documentation): A itself (shared, not copied), the reciprocal
/// pivots, and the sweep kernel.
struct DiagonalForm<T: Scalar> {
    a: GpuSparse<T>,
    /// 1/d in f32 whatever T (`diagonal_pivots.wgsl`).
    inverse_pivots: GpuVec<f32>,
    sweeps: u32,
    kernel: Kernel<diagonal_sweep::Shader, T>,
    /// IC(0) (symmetric: r·z from the lower triangle's pass).
    cholesky: bool,
    /// The most strict lower and upper entries of a row (where an ELL row's are).
    lower_width: u32,
    upper_width: u32,
    /// The sweeps alternate between this and their target (one element for one sweep,
    /// which needs none).
    spare: GpuVec<T>,
    /// Bound as the partials of sweeps that leave none.
    no_partials: GpuVec<[T; 2]>,
    /// CG's passes folded into this form's (IC(0) with one sweep a triangle only).
    cg: Option<CgKernels<T>>,
}

/// `cg_ic0_lower.wgsl` and `cg_ic0_upper.wgsl` for one encoding of A.
struct CgKernels<T: Scalar> {
    lower: Kernel<cg_ic0_lower::Shader, T>,
    upper: Kernel<cg_ic0_upper::Shader, T>,
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

    /// Factors `a` (square, one row panel, sorted columns, a diagonal entry in every row) and
    /// plans the application. `a` is CSR, or for the diagonal form ([`FactorForm::Auto`] with
    /// [`TriangularApply::Sweeps`]) CSR or ELL: the diagonal form keeps `a` (shared, not
    /// copied) and applies with its entries, so values written into `a` later
    /// (`update_values`) reach the triangles but not the pivots: factor again after that. An
    /// ELL `a` whose pattern the elimination fills is refused as [`Error::Unsupported`] (its
    /// full factor needs CSR). A row without a diagonal entry, or whose pivot comes out zero
    /// or not finite (for IC(0): not positive, so A is not positive definite), is refused as
    /// [`Error::NotSolvable`] with the first such row. Exact application solves once with
    /// each factor here, to capture its levels.
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
        let diagonal_form = options.form == FactorForm::Auto && matches!(options.apply, TriangularApply::Sweeps(_));
        let formats: &[Format] = if diagonal_form { &[Format::Csr, Format::Ell] } else { &[Format::Csr] };
        if !formats.contains(&a.format()) {
            let allowed = if diagonal_form { "CSR or ELL" } else { "CSR" };
            return Err(Error::InvalidArgument(format!(
                "{op}: the matrix must be {allowed} (for this form and application), not {}",
                a.format().name()
            )));
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
        check_row_walks(ctx, a, op)?;
        let n = a.rows();
        let (rows, device_id, middle) = (n, a.device_id(), ctx.zeros(n)?);
        let made = |apply| IncompleteLu { factorization, options, rows, device_id, apply, middle };
        if let TriangularApply::Sweeps(apply_sweeps) = options.apply {
            if diagonal_form {
                match DiagonalForm::new(ctx, a, factorization, options.sweeps, apply_sweeps, op)? {
                    Ok(form) => return Ok(made(Apply::Diagonal(Box::new(form)))),
                    Err(_) if a.format() == Format::Csr => {}
                    Err(NotKept::Pattern) => {
                        return Err(Error::Unsupported(format!(
                            "{op}: the elimination fills entries of this matrix's pattern (or, for IC(0), its values \
                             are not symmetric), so its factor needs the full form, which takes the matrix in CSR"
                        )))
                    }
                    Err(NotKept::PivotRange(row)) => {
                        return Err(Error::Unsupported(format!(
                            "{op}: the reciprocal of row {row}'s pivot is beyond f32's normal range, which the \
                             diagonal form keeps it in; the full form takes the matrix in CSR"
                        )))
                    }
                }
            }
        }
        let factor = a.zeros_like(ctx)?;
        factor_sweeps(ctx, a, &factor, factorization == Factorization::Ic0, options.sweeps, op)?;
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
                // The first solves capture the levels (and the level sets, where the solves
                // run by level) every recorded one reuses.
                let (ones, mut out) = (ctx.upload(&vec![T::from_f64(1.0); n])?, ctx.zeros::<T>(n)?);
                lower.solve(&ones, &mut out)?;
                upper.solve(&ones, &mut out)?;
                Apply::Exact { factor, lower: Box::new(lower), upper: Box::new(upper) }
            }
            TriangularApply::Sweeps(sweeps) => {
                let sweeps = Box::new(Sweeps::new(ctx, &factor, factorization, sweeps)?);
                Apply::Sweeps { factor, sweeps }
            }
        };
        Ok(made(apply))
    }

    /// Which factorization this is.
    pub fn factorization(&self) -> Factorization {
        self.factorization
    }

    /// The options it was made with.
    pub fn options(&self) -> IncompleteOptions {
        self.options
    }

    /// The form the factor is kept in: [`FactorForm::Auto`] for the diagonal form,
    /// [`FactorForm::Full`] for the factor with A's pattern.
    pub fn form(&self) -> FactorForm {
        match self.apply {
            Apply::Diagonal(_) => FactorForm::Auto,
            _ => FactorForm::Full,
        }
    }

    /// The full factor, with A's pattern: for ILU(0), L's strict part below the diagonal (its
    /// unit diagonal not stored) and U on and above it; for IC(0), L on and below the
    /// diagonal and Lᵀ above it. `None` in the diagonal form.
    pub fn factor(&self) -> Option<&GpuSparse<T>> {
        match &self.apply {
            Apply::Exact { factor, .. } | Apply::Sweeps { factor, .. } => Some(factor),
            Apply::Diagonal(_) => None,
        }
    }

    /// In the diagonal form, `1/d_i`, the reciprocals of the pivots (ILU(0): U's diagonal;
    /// IC(0): the squares of L's), in f32 whatever the element type; `None` in the full form.
    pub fn inverse_pivots(&self) -> Option<&GpuVec<f32>> {
        match &self.apply {
            Apply::Diagonal(form) => Some(&form.inverse_pivots),
            _ => None,
        }
    }

    /// Device bytes beyond A: the factor (or the pivots) and the application's vectors and
    /// plans.
    pub fn extra_bytes(&self) -> u64 {
        let kept = match &self.apply {
            Apply::Exact { factor, lower, upper } => {
                factor.device_bytes()
                    + lower.extra_bytes()
                    + upper.extra_bytes()
                    + lower.level_sets_bytes()
                    + upper.level_sets_bytes()
            }
            Apply::Sweeps { factor, sweeps: w } => {
                factor.device_bytes() + w.lower.bytes() + w.upper.bytes() + w.scale.byte_len() + w.spare.byte_len()
            }
            Apply::Diagonal(form) => form.inverse_pivots.byte_len() + form.spare.byte_len(),
        };
        self.middle.byte_len() + kept
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

/// Rows a workgroup of `diagonal_sweep.wgsl` takes, so a partial of r·z each.
const DIAGONAL_WORKGROUP: usize = 256;

/// A's arrays as `diagonal_pivots.wgsl` and `diagonal_sweep.wgsl` bind them (one panel, CSR
/// or ELL), and the flags of its encoding.
struct RowArrays<'a, T: Scalar> {
    /// CSR's row offsets; ELL binds its index words in their place (not read).
    row_offsets: Bind<'a, u32>,
    col_indices: Bind<'a, u32>,
    values: Bind<'a, T>,
    width: u32,
    first_row: u32,
    index_stride: u32,
    csr: bool,
    diagonal_offsets: bool,
    value_table: bool,
}

impl<'a, T: Scalar> RowArrays<'a, T> {
    fn of(a: &'a GpuSparse<T>) -> Result<Self> {
        match a.panels()[0].storage() {
            PanelStorage::Csr(csr) => Ok(RowArrays {
                row_offsets: csr.row_offsets().bind(),
                col_indices: csr.col_indices().bind(),
                values: csr.values().bind(),
                width: 0,
                first_row: 0,
                index_stride: 0,
                csr: true,
                diagonal_offsets: false,
                value_table: false,
            }),
            PanelStorage::Ell(ell) => {
                let (col_indices, first_row, index_stride) = crate::ops::spmv::ell::indices(ell);
                Ok(RowArrays {
                    row_offsets: col_indices,
                    col_indices,
                    values: ell.values().bind(),
                    width: ell.width() as u32,
                    first_row,
                    index_stride,
                    csr: false,
                    diagonal_offsets: ell.compact(),
                    value_table: ell.value_table(),
                })
            }
            _ => Err(Error::Validation("incomplete factorization: a panel that is neither CSR nor ELL".into())),
        }
    }
}

/// Why a matrix's factor cannot be kept in the diagonal form.
enum NotKept {
    /// The elimination fills entries of the pattern, or (IC(0)) A's values are not symmetric.
    Pattern,
    /// A pivot's reciprocal is beyond f32's normal range (this row).
    PivotRange(u32),
}

/// `diagonal_pivots.wgsl`'s `problems` words (atomicMin of a row, then atomicMax of counts);
/// the first three are `ilu_sweep.wgsl`'s too.
mod problem {
    pub const MISSING_DIAGONAL: usize = 0;
    pub const PIVOT: usize = 1;
    pub const MISSING_MIRROR: usize = 2;
    pub const NOT_DIAGONAL_FORM: usize = 3;
    pub const LOWER_WIDTH: usize = 4;
    pub const UPPER_WIDTH: usize = 5;
    pub const PIVOT_RANGE: usize = 6;
}

impl<T: Scalar> DiagonalForm<T> {
    /// Sweeps the pivots of `a`'s diagonal form and checks its pattern in one batch and one
    /// read back; `Ok(Err(why))` where the form does not apply.
    fn new(
        ctx: &Context,
        a: &GpuSparse<T>,
        factorization: Factorization,
        sweeps: u32,
        apply_sweeps: u32,
        op: &'static str,
    ) -> Result<std::result::Result<Self, NotKept>> {
        let n = a.rows();
        let cholesky = factorization == Factorization::Ic0;
        // Spares only where sweeps alternate: every vector of a row's size costs an
        // allocation that a one-shot solve waits for.
        let inverse_pivots = ctx.zeros::<f32>(n.max(1))?;
        let spare = ctx.zeros::<T>(if apply_sweeps >= 2 { n.max(1) } else { 1 })?;
        let pivot_spare = ctx.zeros::<f32>(if sweeps >= 2 { n.max(1) } else { 1 })?;
        if n == 0 {
            return Ok(Ok(DiagonalForm {
                a: a.clone(),
                inverse_pivots,
                sweeps: apply_sweeps,
                cholesky,
                kernel: ctx.kernel(Default::default(), Default::default())?,
                lower_width: 0,
                upper_width: 0,
                spare,
                no_partials: ctx.zeros(1)?,
                cg: None,
            }));
        }
        let arrays = RowArrays::of(a)?;
        let flags = diagonal_pivots::Flags {
            csr: arrays.csr,
            diagonal_offsets: arrays.diagonal_offsets,
            value_table: arrays.value_table,
        };
        let kernel = ctx.kernel::<diagonal_pivots::Shader, T>(flags, Default::default())?;
        let problems = ctx.upload(&[u32::MAX, u32::MAX, u32::MAX, u32::MAX, 0, 0, u32::MAX])?;
        let found = sweep_and_read(ctx, sweeps, &inverse_pivots, &pivot_spare, &problems, |rec, t, previous, next| {
            let params = diagonal_pivots::Params {
                rows: n as u32,
                width: arrays.width,
                first_row: arrays.first_row,
                index_stride: arrays.index_stride,
                cholesky: cholesky as u32,
                initial: (t == 0) as u32,
                check: (t + 1 == sweeps) as u32,
            };
            let bindings = diagonal_pivots::Bindings {
                row_offsets: arrays.row_offsets,
                col_indices: arrays.col_indices,
                values: arrays.values,
                previous: previous.bind(),
                next: next.bind(),
                problems: problems.bind(),
            };
            rec.dispatch_items(&kernel, params, bindings, n as u64)
        })?;
        // In the full form's order, with the form's own checks before the pivots'.
        check_pattern(op, &found)?;
        if found[problem::NOT_DIAGONAL_FORM] != u32::MAX {
            return Ok(Err(NotKept::Pattern));
        }
        check_pivots(op, cholesky, &found)?;
        if found[problem::PIVOT_RANGE] != u32::MAX {
            return Ok(Err(NotKept::PivotRange(found[problem::PIVOT_RANGE])));
        }
        let (lower_width, upper_width) = (found[problem::LOWER_WIDTH], found[problem::UPPER_WIDTH]);
        let flags = diagonal_sweep::Flags {
            csr: arrays.csr,
            diagonal_offsets: arrays.diagonal_offsets,
            value_table: arrays.value_table,
        };
        let batch = crate::ops::spmv::ell::batch(lower_width.max(upper_width) as usize);
        let wg_size = DIAGONAL_WORKGROUP as u32;
        let overrides = diagonal_sweep::Overrides { wg_size, batch, ..Default::default() };
        let cg = match cholesky && apply_sweeps == 1 {
            true => Some(CgKernels {
                lower: ctx.kernel(
                    cg_ic0_lower::Flags {
                        csr: arrays.csr,
                        diagonal_offsets: arrays.diagonal_offsets,
                        value_table: arrays.value_table,
                    },
                    cg_ic0_lower::Overrides { wg_size, batch, ..Default::default() },
                )?,
                upper: ctx.kernel(
                    cg_ic0_upper::Flags {
                        csr: arrays.csr,
                        diagonal_offsets: arrays.diagonal_offsets,
                        value_table: arrays.value_table,
                    },
                    cg_ic0_upper::Overrides { wg_size, batch },
                )?,
            }),
            false => None,
        };
        Ok(Ok(DiagonalForm {
            a: a.clone(),
            inverse_pivots,
            sweeps: apply_sweeps,
            cholesky,
            kernel: ctx.kernel(flags, overrides)?,
            lower_width,
            upper_width,
            spare,
            no_partials: ctx.zeros(1)?,
            cg,
        }))
    }

    /// `z ← M⁻¹·r`: the lower triangle's sweeps into `u`, the upper's into `z` (each
    /// alternating with the spare so that its last lands there), the last leaving r·z's
    /// partials when asked.
    fn record(
        &self,
        rec: &mut Recorder<'_, '_>,
        r: &GpuVec<T>,
        u: &GpuVec<T>,
        z: &GpuVec<T>,
        partials: Option<&GpuVec<[T; 2]>>,
    ) -> Result<()> {
        let arrays = RowArrays::of(&self.a)?;
        let n = self.a.rows();
        let sweeps = self.sweeps.max(1);
        for (upper, b, y) in [(false, r, u), (true, u, z)] {
            let target = |t: u32| if (sweeps - t).is_multiple_of(2) { y } else { &self.spare };
            for t in 1..=sweeps {
                // Zero sweeps is u = D⁻¹·r and z = u: one pass each that reads no neighbour.
                let params = diagonal_sweep::Params {
                    rows: n as u32,
                    width: arrays.width,
                    first_row: arrays.first_row,
                    index_stride: arrays.index_stride,
                    lower_width: if self.sweeps == 0 { 0 } else { self.lower_width },
                    upper_width: if self.sweeps == 0 { 0 } else { self.upper_width },
                    upper: upper as u32,
                    first: (t == 1) as u32,
                    // IC(0)'s r·z comes from the lower triangle's u (diagonal_sweep.wgsl).
                    dot: (upper != self.cholesky && t == sweeps && partials.is_some()) as u32,
                };
                // The first pass reads b, not y_old: b stands in (read-only bindings may alias).
                let previous = if t == 1 { b } else { target(t - 1) };
                let bindings = diagonal_sweep::Bindings {
                    row_offsets: arrays.row_offsets,
                    col_indices: arrays.col_indices,
                    values: arrays.values,
                    inverse_pivots: self.inverse_pivots.bind(),
                    b: b.bind(),
                    y_old: previous.bind(),
                    y_new: target(t).bind(),
                    dot_operand: r.bind(),
                    partials: partials.unwrap_or(&self.no_partials).bind(),
                };
                rec.dispatch(&self.kernel, params, bindings, n.div_ceil(DIAGONAL_WORKGROUP) as u64)?;
            }
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
/// Refuses a matrix whose rows are too long for the factorization's invocations (a row
/// each) where the adapter caps their loop iterations: a row's invocation walks pairs of its
/// entries (a sweep's k's for each entry; the diagonal form's look at row k for each lower
/// entry), each with a search of a row, binary in CSR and over the padded width in ELL.
fn check_row_walks<T: Scalar>(ctx: &Context, a: &GpuSparse<T>, op: &str) -> Result<()> {
    let longest = a.stats().max_len as u64;
    let search = match a.panels().first().map(|p| p.storage()) {
        Some(PanelStorage::Ell(ell)) => ell.width() as u64,
        _ => (longest + 1).next_power_of_two().trailing_zeros() as u64 + 1,
    };
    let what = || format!("{op} of a matrix whose longest row has {longest} entries");
    ctx.check_loop_iterations(what, longest * longest * (search + 2) + longest * (search + 3))
}

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
    let found = sweep_and_read(ctx, sweeps, f_csr.values(), &spare, &problems, |rec, t, previous, next| {
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
            previous: previous.bind(),
            next: next.bind(),
            problems: problems.bind(),
        };
        rec.dispatch_items(&kernel, params, bindings, n as u64)
    })?;
    check_pattern(op, &found)?;
    check_pivots(op, cholesky, &found)
}

/// Records `sweeps` factorization sweeps into one batch, sweep t from `previous` into `next`:
/// they alternate between `last` and `spare` so that the last sweep writes `last`. Submits it
/// and reads back the `problems` words the sweeps left.
fn sweep_and_read<E: crate::element::Stored>(
    ctx: &Context,
    sweeps: u32,
    last: &GpuVec<E>,
    spare: &GpuVec<E>,
    problems: &GpuVec<u32>,
    mut sweep: impl FnMut(&mut Recorder<'_, '_>, u32, &GpuVec<E>, &GpuVec<E>) -> Result<()>,
) -> Result<Vec<u32>> {
    let target = |t: u32| if (sweeps - 1 - t).is_multiple_of(2) { last } else { spare };
    let other = |t: u32| if (sweeps - 1 - t).is_multiple_of(2) { spare } else { last };
    let mut batch = ctx.batch();
    {
        let mut rec = batch.recorder();
        for t in 0..sweeps {
            sweep(&mut rec, t, other(t), target(t))?;
        }
    }
    let ticket = batch.read_back(problems)?;
    batch.submit()?;
    ticket.wait()
}

/// The first three `problems` words of `ilu_sweep.wgsl` and `diagonal_pivots.wgsl` (the
/// same layout): (IC(0)) a mirror missing, then a diagonal entry missing.
fn check_pattern(op: &'static str, found: &[u32]) -> Result<()> {
    if found[problem::MISSING_MIRROR] != u32::MAX {
        return Err(Error::InvalidArgument(format!(
            "{op}: the pattern is not symmetric (row {} stores an entry whose mirror is missing)",
            found[problem::MISSING_MIRROR]
        )));
    }
    match found[problem::MISSING_DIAGONAL] {
        u32::MAX => Ok(()),
        row => Err(Error::NotSolvable { op, row: row as usize, problem: SolveProblem::MissingDiagonal }),
    }
}

/// The pivots' word: zero or not finite (IC(0): not positive).
fn check_pivots(op: &'static str, cholesky: bool, found: &[u32]) -> Result<()> {
    let kind = if cholesky { SolveProblem::NotPositiveDefinite } else { SolveProblem::ZeroPivot };
    match found[problem::PIVOT] {
        u32::MAX => Ok(()),
        row => Err(Error::NotSolvable { op, row: row as usize, problem: kind }),
    }
}

impl<T: Scalar> IncompleteLu<T> {
    /// Checks `z ← M⁻¹·r`'s operands (and the partials of r·z); `false` when there are no
    /// rows (nothing to record).
    fn check_apply(
        &self,
        rec: &Recorder<'_, '_>,
        x: &GpuVec<T>,
        y: &GpuVec<T>,
        partials: Option<&GpuVec<[T; 2]>>,
    ) -> Result<bool> {
        let op = match self.factorization {
            Factorization::Ilu0 => "ilu0",
            Factorization::Ic0 => "ic0",
        };
        let operands = Operands::new(rec.context(), op)?
            .owned("the preconditioner", self.device_id)?
            .input("r", x)?
            .output("z", y)?;
        if let Some(partials) = partials {
            operands.output("partials", partials)?;
        }
        check_len(op, "r length", self.rows, x.len())?;
        check_len(op, "z length", self.rows, y.len())?;
        Ok(self.rows > 0)
    }
}

/// The folded passes' name in errors.
const CG_PASS: &str = "ic0 folded into cg";

/// CG's passes folded into IC(0)'s in diagonal form with one sweep a triangle
/// ([`CgFolding`]): `cg_ic0_lower.wgsl` and `cg_ic0_upper.wgsl`.
impl<T: Scalar> IncompleteLu<T> {
    fn cg_form(&self) -> Option<(&DiagonalForm<T>, &CgKernels<T>)> {
        match &self.apply {
            Apply::Diagonal(form) if self.rows > 0 => form.cg.as_ref().map(|cg| (form.as_ref(), cg)),
            _ => None,
        }
    }

    /// Checks a folded pass's operands: the preconditioner's device, no output sharing a
    /// buffer with another operand, every vector of length n (`state` is CG's scalar slots).
    fn check_cg<'r>(
        &self,
        rec: &'r Recorder<'_, '_>,
        state: &GpuVec<T>,
        reads: &[(&'static str, &GpuVec<T>)],
        writes: &[(&'static str, &GpuVec<T>)],
    ) -> Result<Operands<'r>> {
        let mut operands = Operands::new(rec.context(), CG_PASS)?
            .owned("the preconditioner", self.device_id)?
            .input("state", state)?;
        for &(name, v) in reads {
            operands = operands.input(name, v)?;
            check_len(CG_PASS, name, self.rows, v.len())?;
        }
        for &(name, v) in writes {
            operands = operands.output(name, v)?;
            check_len(CG_PASS, name, self.rows, v.len())?;
        }
        Ok(operands)
    }

    /// `r_new ← r − α·q` (α = state[alpha]) and the lower pass of `M⁻¹·r_new` into the
    /// preconditioner's middle vector, leaving per 256 rows the partial sums of r_new·z (first
    /// halves) and r_new·r_new (second): their count.
    pub(super) fn record_cg_lower(
        &self,
        rec: &mut Recorder<'_, '_>,
        state: &GpuVec<T>,
        alpha: usize,
        vectors: (&GpuVec<T>, &GpuVec<T>, &mut GpuVec<T>),
        partials: &GpuVec<[T; 2]>,
    ) -> Result<usize> {
        let (q, r, r_new) = vectors;
        let (form, cg) = self.cg_form().ok_or_else(|| Error::InvalidArgument(format!("{CG_PASS}: not offered")))?;
        self.check_cg(rec, state, &[("q", q), ("r", r)], &[("r_new", r_new)])?.output("partials", partials)?;
        let count = self.rows.div_ceil(DIAGONAL_WORKGROUP);
        if count > partials.len() || alpha >= state.len() {
            return Err(Error::InvalidArgument(format!(
                "{CG_PASS}: {count} partials into {}, α at slot {alpha} of {}",
                partials.len(),
                state.len()
            )));
        }
        let arrays = RowArrays::of(&form.a)?;
        let params = cg_ic0_lower::Params {
            rows: self.rows as u32,
            width: arrays.width,
            first_row: arrays.first_row,
            index_stride: arrays.index_stride,
            lower_width: form.lower_width,
            upper_width: form.upper_width,
            alpha: alpha as u32,
        };
        let bindings = cg_ic0_lower::Bindings {
            row_offsets: arrays.row_offsets,
            col_indices: arrays.col_indices,
            values: arrays.values,
            inverse_pivots: form.inverse_pivots.bind(),
            state: state.bind(),
            r: r.bind(),
            q: q.bind(),
            r_new: r_new.bind(),
            u: self.middle.bind(),
            partials: partials.bind(),
        };
        rec.dispatch(&cg.lower, params, bindings, count as u64)?;
        Ok(count)
    }

    /// The upper pass of `M⁻¹·r` from the middle vector ([`Self::record_cg_lower`]'s), folded
    /// into `x ← x + α·p; p ← z + β·p` (α = state[alpha], β = state[rho_new] / state[rho]).
    pub(super) fn record_cg_upper(
        &self,
        rec: &mut Recorder<'_, '_>,
        state: &GpuVec<T>,
        slots: [usize; 3],
        x: &mut GpuVec<T>,
        p: &mut GpuVec<T>,
    ) -> Result<()> {
        let [alpha, rho_new, rho] = slots;
        let (form, cg) = self.cg_form().ok_or_else(|| Error::InvalidArgument(format!("{CG_PASS}: not offered")))?;
        self.check_cg(rec, state, &[], &[("x", x), ("p", p)])?;
        if slots.iter().any(|&s| s >= state.len()) {
            return Err(Error::InvalidArgument(format!("{CG_PASS}: slots {slots:?} of {}", state.len())));
        }
        let arrays = RowArrays::of(&form.a)?;
        let params = cg_ic0_upper::Params {
            rows: self.rows as u32,
            width: arrays.width,
            first_row: arrays.first_row,
            index_stride: arrays.index_stride,
            lower_width: form.lower_width,
            upper_width: form.upper_width,
            alpha: alpha as u32,
            rho_new: rho_new as u32,
            rho: rho as u32,
        };
        let bindings = cg_ic0_upper::Bindings {
            row_offsets: arrays.row_offsets,
            col_indices: arrays.col_indices,
            values: arrays.values,
            inverse_pivots: form.inverse_pivots.bind(),
            state: state.bind(),
            u: self.middle.bind(),
            x: x.bind(),
            p: p.bind(),
        };
        rec.dispatch(&cg.upper, params, bindings, self.rows.div_ceil(DIAGONAL_WORKGROUP) as u64)
    }
}

impl<T: Scalar> LinOp<T> for IncompleteLu<T> {
    fn shape(&self) -> (usize, usize) {
        (self.rows, self.rows)
    }

    fn apply(&self, rec: &mut Recorder<'_, '_>, x: &GpuVec<T>, y: &mut GpuVec<T>) -> Result<()> {
        if !self.check_apply(rec, x, y, None)? {
            return Ok(());
        }
        match &self.apply {
            Apply::Exact { lower, upper, .. } => {
                lower.record_into_scratch(rec, x, &self.middle)?;
                upper.record(rec, &self.middle, y)
            }
            Apply::Sweeps { sweeps, .. } => {
                sweeps.record(rec, Triangle::Lower, x, &self.middle)?;
                sweeps.record(rec, Triangle::Upper, &self.middle, y)
            }
            Apply::Diagonal(form) => form.record(rec, x, &self.middle, y, None),
        }
    }

    /// IC(0) in diagonal form with one sweep a triangle folds CG's updates into its passes.
    fn cg_folding(&self) -> Option<CgFolding<'_, T>> {
        self.cg_form().map(|_| CgFolding(self))
    }

    /// The diagonal form leaves `r·z`'s partials from its last sweep (CG's ρ without a pass
    /// of its own); the full form reduces nothing.
    fn apply_dot(
        &self,
        rec: &mut Recorder<'_, '_>,
        x: &GpuVec<T>,
        y: &mut GpuVec<T>,
        partials: &GpuVec<[T; 2]>,
    ) -> Result<Option<usize>> {
        match &self.apply {
            Apply::Diagonal(form) if self.rows > 0 && self.rows.div_ceil(DIAGONAL_WORKGROUP) <= partials.len() => {
                self.check_apply(rec, x, y, Some(partials))?;
                form.record(rec, x, &self.middle, y, Some(partials))?;
                Ok(Some(self.rows.div_ceil(DIAGONAL_WORKGROUP)))
            }
            _ => {
                self.apply(rec, x, y)?;
                Ok(None)
            }
        }
    }
}
