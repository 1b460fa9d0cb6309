//! Sparse matrix × vector: `y ← α·A·x + β·y` for every device format.
//!
//! One rule for every algorithm and format, IEEE arithmetic included: row `i` of the result
//! is `α·s_i + β·y_i` where `s_i` is the row's sum of `a_ij·x_j` (0 for an empty row), with
//! `y` not read when `β = 0` (NaN already in `y` does not survive) and `s` not computed when
//! `α = 0` (a NaN in `A` or `x` does not leak into `y ← β·y`). Where the f64 twin gives NaN
//! or ±Inf for an element because an input was not finite, so does every algorithm: α
//! multiplies each row's complete sum, never pieces of it (the algorithms that cut rows into
//! pieces add the pieces first and scale once), so `α = NaN` gives NaN in every row, empty
//! rows included.
//!
//! Every algorithm is deterministic (the result does not depend on scheduling), and every
//! one records a single dispatch per row panel: where a row is cut into pieces summed by
//! different workgroups (csr-split, csr-merge, COO, HYB's tail), the workgroup that finishes
//! the row's last piece adds the pieces in a fixed order (`shaders/shared/ready_sums.wgsl`).
//!
//! One file per algorithm: `plan` (kernels, scratch and the analyses it needs) and a
//! `PanelKernel` that records a run on one row panel.

mod coo_segmented;
mod csr_merge;
mod csr_split;
mod csr_thread;
mod csr_vector;
pub(crate) mod ell;
mod hyb;
#[cfg(test)]
mod tests;

use super::blas1;
use super::common::{check_len, Operands, ScalarBinds};
use crate::context::Context;
use crate::element::Scalar;
use crate::format::{CsrMatrix, EllOptions};
use crate::gpu::{Bind, GpuVec, ScalarArg};
use crate::matrix::{Conversion, Format, GpuSparse, PanelStorage, RowStats};
use crate::record::Recorder;
use crate::{Error, Result};

/// The largest `coo_steps` and `chunk_steps`: intervals and chunks stay far within u32.
const MAX_STEPS: u32 = 1 << 16;
/// The entries of a COO matrix for which `SpmvOptions::coo_steps`'s default adds a step to
/// each interval: the intervals' lanes, about what a large GPU keeps busy at once (H200:
/// the step count at which an interval's chain and the throughput balance was 1 at ~0.3 M
/// entries, 4 at ~0.8 M, 32 past ~4 M; benches/NOTES.md, session 68).
const COO_BUSY_LANES: usize = 1 << 17;
/// `Auto` takes `CsrVector` for regular rows of up to this many entries where the matrix
/// has fewer than [`VECTOR_FEWER_ROWS`] rows (a subgroup of 32 lanes walks at most 4 steps).
const VECTOR_LONGEST: usize = 128;
/// Rows below which one lane a row leaves most of a large GPU idle (H200: csr-thread beat
/// csr-vector from 65,536 rows of 24 and 48 entries, lost at 16,384 rows of 48).
const VECTOR_FEWER_ROWS: usize = 1 << 15;
/// Rows from which `Ell` takes workgroups of 1024 by default, and 256 below: a small ELL
/// in 1024s leaves most of the GPU idle (H200, 4,096 and 16,384 rows of 48: 12.6 → 10.6 and
/// 14.9 → 11.8 µs at 256), a large one loses a little in 256s (65,536 rows of 48: 19.1 →
/// 21.4; benches/NOTES.md, session 68).
const ELL_WIDE_FROM: usize = 1 << 16;
/// The same for `CsrSplit` (H200, 256 against 1024: R-MAT of 16,384 rows 18.6 → 13.6 µs,
/// 65,536 rows of 48 45.6 → 29.9, 262,144 rows of 12 35.0 either way).
const SPLIT_WIDE_FROM: usize = 1 << 18;
/// The most steps `SpmvOptions::coo_steps`'s default gives an interval (H100 sweep on
/// matrices of 20–67 M entries: 32 within 2% of the best).
const COO_STEPS_MOST: u32 = 32;

/// The conversion `Auto` would like a host matrix uploaded in, from its row lengths: ELL
/// when rows are nearly uniform (ELL slots at most 1.25 × the entries and no row longer than
/// 64), since its column-major layout makes every load coalesced — with 16-bit diagonal
/// offsets for banded matrices (see [`EllOptions::compact_indices`]); CSR otherwise.
pub fn preferred_conversion<T: Scalar>(a: &CsrMatrix<T>) -> Conversion {
    let stats = RowStats::from_offsets(a.row_offsets());
    let slots = stats.max_len as f64 * stats.rows as f64;
    if stats.max_len <= 64 && slots <= 1.25 * stats.nnz as f64 {
        Conversion::Ell(EllOptions::default())
    } else {
        Conversion::Csr
    }
}

/// Which kernel computes the product.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum SpmvAlgorithm {
    /// Chosen from the matrix's format and row statistics: see [`SpmvAlgorithm::auto_for`].
    Auto,
    /// CSR, one invocation per row: short rows of similar length.
    CsrThread,
    /// CSR, a group of lanes per row (up to a subgroup, sized from the mean row length),
    /// reduced by subgroup shuffles or workgroup memory: long rows.
    CsrVector,
    /// CSR, row split: rows up to a threshold one invocation each, longer rows cut into
    /// chunks for groups of lanes (RoDe's decomposition). Deterministic.
    CsrSplit,
    /// CSR, merge path: equal work per workgroup whatever the row lengths; rows cut by
    /// tile boundaries are added up in a fixed order by the workgroup that finishes their
    /// last piece. Needs 24 bytes per tile of 1,536 merge items (rows + nnz) for its scratch
    /// and partition (f32; 56 in f64).
    CsrMerge,
    /// COO, segmented reduction by row with carries between intervals (seed 000), the
    /// carries added up by the group that finishes a row's last piece. Needs a bit per row
    /// and 28 bytes per interval of 1,024 entries (32-lane subgroups; f32, 60 in f64).
    CooSegmented,
    /// ELL, one invocation per row over the padded columns.
    Ell,
    /// HYB: the ELL part one invocation per row, the tail by COO's segmented walk, in one
    /// dispatch. Needs what `CooSegmented` needs for the tail.
    Hyb,
}

impl SpmvAlgorithm {
    /// Every concrete algorithm, in the order reports list them.
    pub const ALL: [SpmvAlgorithm; 7] = [
        SpmvAlgorithm::CsrThread,
        SpmvAlgorithm::CsrVector,
        SpmvAlgorithm::CsrSplit,
        SpmvAlgorithm::CsrMerge,
        SpmvAlgorithm::CooSegmented,
        SpmvAlgorithm::Ell,
        SpmvAlgorithm::Hyb,
    ];

    /// Short name used in reports and on the command line.
    pub fn name(self) -> &'static str {
        match self {
            SpmvAlgorithm::Auto => "auto",
            SpmvAlgorithm::CsrThread => "csr-thread",
            SpmvAlgorithm::CsrVector => "csr-vector",
            SpmvAlgorithm::CsrSplit => "csr-split",
            SpmvAlgorithm::CsrMerge => "csr-merge",
            SpmvAlgorithm::CooSegmented => "coo-segmented",
            SpmvAlgorithm::Ell => "ell",
            SpmvAlgorithm::Hyb => "hyb",
        }
    }

    /// Parses [`SpmvAlgorithm::name`].
    pub fn from_name(name: &str) -> Option<Self> {
        std::iter::once(SpmvAlgorithm::Auto).chain(Self::ALL).find(|a| a.name() == name)
    }

    /// The device format the algorithm reads (`None` for `Auto`, which reads any).
    pub fn format(self) -> Option<Format> {
        Some(match self {
            SpmvAlgorithm::Auto => return None,
            SpmvAlgorithm::CsrThread | SpmvAlgorithm::CsrVector | SpmvAlgorithm::CsrSplit | SpmvAlgorithm::CsrMerge => {
                Format::Csr
            }
            SpmvAlgorithm::CooSegmented => Format::Coo,
            SpmvAlgorithm::Ell => Format::Ell,
            SpmvAlgorithm::Hyb => Format::Hyb,
        })
    }

    /// Whether the result is independent of GPU scheduling: true of every SpMV algorithm.
    pub fn deterministic(self) -> bool {
        true
    }

    /// Whether the algorithm exists for element type `T`: every SpMV algorithm has f32 and
    /// f64 kernels.
    pub fn supports<T: Scalar>(self) -> bool {
        true
    }

    /// The algorithm `Auto` picks for `a`.
    ///
    /// The rule: the format's own deterministic kernel, and for CSR, from the row
    /// statistics taken on upload,
    /// - `CsrThread` when every row is short (at most 16 entries) and rows are regular
    ///   (standard deviation of the lengths at most the mean): one invocation per row reads
    ///   little and wastes nothing (92% of the copy bandwidth on the 2-D Laplacian, H100);
    /// - `CsrVector` when rows are regular, longer (up to 128 entries) and too few to keep
    ///   a GPU busy one lane each (under 32,768): a lane a row would walk its row alone
    ///   (H200, 1,024 to 16,384 rows of 24 and 48 entries: 7.7–13.2 µs against csr-split's
    ///   15.4–41.9 and csr-thread's 9.0–17.5; benches/NOTES.md, session 68);
    /// - `CsrSplit` otherwise: long rows go to chunks shared by groups of lanes, so a row of
    ///   a million entries or a power-law tail cannot unbalance it.
    ///
    /// Upload with [`preferred_conversion`] to let the row lengths choose the format too.
    pub fn auto_for<T: Scalar>(a: &GpuSparse<T>) -> SpmvAlgorithm {
        let stats = a.stats();
        match a.format() {
            Format::Coo => SpmvAlgorithm::CooSegmented,
            Format::Ell => SpmvAlgorithm::Ell,
            Format::Hyb => SpmvAlgorithm::Hyb,
            Format::Csr if stats.max_len <= 16 && stats.std_dev <= stats.mean => SpmvAlgorithm::CsrThread,
            Format::Csr
                if stats.max_len <= VECTOR_LONGEST && stats.std_dev <= stats.mean && stats.rows < VECTOR_FEWER_ROWS =>
            {
                SpmvAlgorithm::CsrVector
            }
            Format::Csr => SpmvAlgorithm::CsrSplit,
        }
    }
}

/// Tuning knobs of the SpMV kernels. The defaults are what `Spmv::new` uses; the benchmark
/// sweeps them. Invalid values are refused by [`Spmv::with_options`] with
/// [`Error::InvalidArgument`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct SpmvOptions {
    /// Invocations per workgroup: a power of two, at least the adapter's largest subgroup
    /// and at most its invocation limit. Default per algorithm (from the H100 and H200 sweeps
    /// in benches/NOTES.md): 1024 for `Ell` from 65,536 rows and for `CsrSplit` from 262,144,
    /// 512 for `Hyb`, 256 otherwise, capped at the device's limit
    /// ([`SpmvOptions::workgroup_size_for`]). [`Spmv::record_dot`]'s kernels cap it at
    /// [`DOT_WORKGROUP_MAX`].
    pub workgroup_size: Option<u32>,
    /// `CsrMerge`: merge items (row ends + nonzeros) per invocation. Default: 6, or fewer
    /// where workgroup memory is small.
    pub merge_items: Option<u32>,
    /// `CsrVector`: lanes per row, a power of two up to the subgroup size (32 without
    /// subgroups). Default: the mean row length rounded up, at least 4.
    pub vector_lanes: Option<u32>,
    /// `CsrSplit`: rows longer than this go to the chunk kernels. Default 64.
    pub split_threshold: u32,
    /// `CsrSplit`: entries per lane in a chunk of a long row. Default 64.
    pub chunk_steps: u32,
    /// `CooSegmented` and `Hyb`: steps per interval, a step being one entry per lane of a
    /// subgroup (of the workgroup without subgroups). `None` (the default): a step for every
    /// 2¹⁷ entries of the COO matrix (HYB's tail), from 1 to 32 ([`SpmvOptions::coo_steps_for`]).
    /// An interval's steps are a chain of dependent scans (~1.5 µs each on the H200), so few
    /// entries want short intervals, many of them; past what the GPU holds at once, each
    /// interval's fixed costs (its shape, the window step, the completion) want long ones
    /// (H100 and H200 sweeps in benches/NOTES.md, sessions 29 and 68).
    pub coo_steps: Option<u32>,
}

impl Default for SpmvOptions {
    fn default() -> Self {
        SpmvOptions {
            workgroup_size: None,
            merge_items: None,
            vector_lanes: None,
            split_threshold: 64,
            chunk_steps: 64,
            coo_steps: None,
        }
    }
}

impl SpmvOptions {
    /// Sets [`SpmvOptions::workgroup_size`].
    pub fn workgroup_size(mut self, size: u32) -> Self {
        self.workgroup_size = Some(size);
        self
    }

    /// The workgroup size `algorithm` runs with on `ctx` for a matrix (a row panel) of `rows`
    /// rows.
    pub fn workgroup_size_for(&self, ctx: &Context, algorithm: SpmvAlgorithm, rows: usize) -> u32 {
        self.workgroup_size.unwrap_or_else(|| {
            let preferred = match algorithm {
                SpmvAlgorithm::Ell if rows >= ELL_WIDE_FROM => 1024,
                SpmvAlgorithm::CsrSplit if rows >= SPLIT_WIDE_FROM => 1024,
                SpmvAlgorithm::Hyb => 512,
                _ => 256,
            };
            let limit = ctx.limits().max_compute_invocations_per_workgroup;
            preferred.min(if limit.is_power_of_two() { limit } else { limit.next_power_of_two() / 2 })
        })
    }
    /// Sets [`SpmvOptions::merge_items`].
    pub fn merge_items(mut self, items: u32) -> Self {
        self.merge_items = Some(items);
        self
    }
    /// Sets [`SpmvOptions::vector_lanes`].
    pub fn vector_lanes(mut self, lanes: u32) -> Self {
        self.vector_lanes = Some(lanes);
        self
    }
    /// Sets [`SpmvOptions::split_threshold`].
    pub fn split_threshold(mut self, len: u32) -> Self {
        self.split_threshold = len;
        self
    }
    /// Sets [`SpmvOptions::chunk_steps`].
    pub fn chunk_steps(mut self, steps: u32) -> Self {
        self.chunk_steps = steps;
        self
    }
    /// Sets [`SpmvOptions::coo_steps`].
    pub fn coo_steps(mut self, steps: u32) -> Self {
        self.coo_steps = Some(steps);
        self
    }

    /// The steps an interval of a COO matrix (or HYB tail) of `nnz` entries takes:
    /// [`SpmvOptions::coo_steps`] where set, else its default's rule.
    pub fn coo_steps_for(&self, nnz: usize) -> u32 {
        self.coo_steps.unwrap_or_else(|| nnz.div_ceil(COO_BUSY_LANES).clamp(1, COO_STEPS_MOST as usize) as u32)
    }

    fn validate<T: Scalar>(&self, ctx: &Context, algorithm: SpmvAlgorithm, rows: usize) -> Result<()> {
        let wg = self.workgroup_size_for(ctx, algorithm, rows);
        let largest_subgroup = ctx.subgroup_size_range().map_or(1, |r| r.1);
        let bad = |what: String| Err(Error::InvalidArgument(format!("SpmvOptions: {what}")));
        if !wg.is_power_of_two()
            || wg < largest_subgroup.max(32)
            || wg > ctx.limits().max_compute_invocations_per_workgroup
        {
            return bad(format!(
                "workgroup_size {wg} must be a power of two between 32, the subgroup size and the device limit"
            ));
        }
        let max_lanes = ctx.subgroup_size_range().map_or(32, |r| r.0).min(wg);
        if let Some(lanes) = self.vector_lanes {
            if !lanes.is_power_of_two() || lanes > max_lanes {
                return bad(format!("vector_lanes {lanes} must be a power of two up to {max_lanes}"));
            }
        }
        if let Some(items) = self.merge_items {
            let bytes = csr_merge::workgroup_bytes(wg, items, T::KIND.size());
            if items == 0 || bytes > ctx.limits().max_compute_workgroup_storage_size as u64 {
                return bad(format!("merge_items {items} needs {bytes} bytes of workgroup memory"));
            }
        }
        let coo_steps = self.coo_steps.unwrap_or(COO_STEPS_MOST);
        for (name, steps) in [("coo_steps", coo_steps), ("chunk_steps", self.chunk_steps)] {
            if !(1..=MAX_STEPS).contains(&steps) {
                return bad(format!("{name} {steps} must be between 1 and {MAX_STEPS}"));
            }
        }
        if matches!(algorithm, SpmvAlgorithm::CooSegmented | SpmvAlgorithm::Hyb) {
            // A group walks an interval of coo_steps steps, each a scan across the group (at
            // most the workgroup: log2 of it steps) and a few loops more.
            let walk = (coo_steps as u64 + 2) * (4 + wg.ilog2() as u64) + 64;
            ctx.check_loop_iterations(|| format!("SpmvOptions: coo_steps {coo_steps}"), walk)?;
        }
        Ok(())
    }
}

/// A planned SpMV for one matrix: kernels compiled, scratch allocated and the matrix's
/// analyses built (or shared) once, recorded many times. The plan holds its own handle to the
/// matrix, so [`GpuSparse::update_values`] reaches it.
pub struct Spmv<T: Scalar> {
    ctx: Context,
    matrix: GpuSparse<T>,
    algorithm: SpmvAlgorithm,
    /// One kernel set per row panel of the matrix.
    panels: Vec<Box<dyn PanelKernel<T>>>,
}

impl<T: Scalar> std::fmt::Debug for Spmv<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Spmv").field("algorithm", &self.algorithm).field("matrix", &self.matrix).finish()
    }
}

impl<T: Scalar> Spmv<T> {
    /// Plans `y ← α·A·x + β·y` for `a`. `algorithm` must read `a`'s format
    /// ([`SpmvAlgorithm::format`]); `Auto` always does.
    pub fn new(ctx: &Context, a: &GpuSparse<T>, algorithm: SpmvAlgorithm) -> Result<Self> {
        Self::with_options(ctx, a, algorithm, &SpmvOptions::default())
    }

    /// [`Spmv::new`] with tuning knobs.
    pub fn with_options(
        ctx: &Context,
        a: &GpuSparse<T>,
        algorithm: SpmvAlgorithm,
        options: &SpmvOptions,
    ) -> Result<Self> {
        Operands::new(ctx, "spmv")?.owned("the matrix", a.device_id())?;
        let algorithm = match algorithm {
            SpmvAlgorithm::Auto => SpmvAlgorithm::auto_for(a),
            other => other,
        };
        options.validate::<T>(ctx, algorithm, a.rows())?;
        if algorithm.format() != Some(a.format()) {
            return Err(Error::InvalidArgument(format!(
                "SpMV algorithm {} reads {} matrices, this one is {}",
                algorithm.name(),
                algorithm.format().map_or("any", Format::name),
                a.format().name()
            )));
        }
        if !algorithm.supports::<T>() {
            return Err(Error::Unsupported(format!(
                "SpMV algorithm {} has no {} kernel",
                algorithm.name(),
                T::KIND.name()
            )));
        }
        let plan: Plan<T> = match algorithm {
            SpmvAlgorithm::Auto => unreachable!("resolved above"),
            SpmvAlgorithm::CsrThread => csr_thread::plan,
            SpmvAlgorithm::CsrVector => csr_vector::plan,
            SpmvAlgorithm::CsrSplit => csr_split::plan,
            SpmvAlgorithm::CsrMerge => csr_merge::plan,
            SpmvAlgorithm::CooSegmented => coo_segmented::plan,
            SpmvAlgorithm::Ell => ell::plan,
            SpmvAlgorithm::Hyb => hyb::plan,
        };
        let panels = (0..a.panel_count()).map(|p| plan(ctx, a, p, options)).collect::<Result<_>>()?;
        Ok(Spmv { ctx: ctx.clone(), matrix: a.clone(), algorithm, panels })
    }

    /// The matrix the plan was made for.
    pub fn matrix(&self) -> &GpuSparse<T> {
        &self.matrix
    }

    /// The algorithm in use (never `Auto`).
    pub fn algorithm(&self) -> SpmvAlgorithm {
        self.algorithm
    }

    /// Device bytes this plan allocated beyond A, x and y (shared analyses included).
    pub fn extra_bytes(&self) -> u64 {
        self.panels.iter().map(|p| p.extra_bytes()).sum()
    }

    /// Records `y ← α·A·x + β·y`. α and β are host values or device scalars
    /// ([`ScalarArg`]). Everything is checked before anything is recorded: a refused call
    /// leaves the recorder as it was.
    pub fn record<'s>(
        &self,
        rec: &mut Recorder<'_, '_>,
        alpha: impl Into<ScalarArg<'s, T>>,
        x: &GpuVec<T>,
        beta: impl Into<ScalarArg<'s, T>>,
        y: &mut GpuVec<T>,
    ) -> Result<()> {
        let (alpha, beta) = (alpha.into(), beta.into());
        self.check_operands(rec, &alpha, x, &beta, y, None)?;
        let ctx = rec.context().clone();
        let scaling = ScalarBinds::new(&ctx, alpha, beta)?;
        for (panel, kernel) in self.matrix.panels().iter().zip(&self.panels) {
            let rows = panel.rows();
            let y_rows = y.bind_range(rows.clone());
            if scaling.host_alpha() == Some(T::default()) {
                blas1::scale_range(rec, &scaling.beta_as_alpha(), y_rows, rows.len(), blas1::Fill::Scale)?;
            } else {
                kernel.record(rec, panel.storage(), &Run { x: x.bind(), y: y_rows, rows: rows.len(), scaling })?;
            }
        }
        Ok(())
    }

    /// Records `y ← A·x` and, where the algorithm folds it into its pass (csr-thread or ELL on
    /// a square matrix of one panel, `partials` long enough), the partial sums of `x·y` into
    /// the first halves of `partials[..count]`: `Some(count)`. `None`: y only. The fused
    /// kernels take workgroups of the plan's size capped at [`DOT_WORKGROUP_MAX`], one
    /// partial each: `partials` needs `rows.div_ceil(min(workgroup size, 256))` entries
    /// (one per 64 rows always suffices).
    pub fn record_dot(
        &self,
        rec: &mut Recorder<'_, '_>,
        x: &GpuVec<T>,
        y: &mut GpuVec<T>,
        partials: &GpuVec<[T; 2]>,
    ) -> Result<Option<usize>> {
        let (one, zero) = (ScalarArg::Host(T::from_f64(1.0)), ScalarArg::Host(T::default()));
        self.check_operands(rec, &one, x, &zero, y, Some(partials))?;
        if self.matrix.rows() == self.matrix.cols() && self.panels.len() == 1 {
            let ctx = rec.context().clone();
            let scaling = ScalarBinds::new(&ctx, one, zero)?;
            let run = Run { x: x.bind(), y: y.bind(), rows: y.len(), scaling };
            if let Some(count) = self.panels[0].record_dot(rec, self.matrix.panels()[0].storage(), &run, partials)? {
                return Ok(Some(count));
            }
        }
        self.record(rec, one, x, zero, y)?;
        Ok(None)
    }

    fn check_operands(
        &self,
        rec: &Recorder<'_, '_>,
        alpha: &ScalarArg<'_, T>,
        x: &GpuVec<T>,
        beta: &ScalarArg<'_, T>,
        y: &GpuVec<T>,
        partials: Option<&GpuVec<[T; 2]>>,
    ) -> Result<()> {
        let operands = Operands::new(rec.context(), "spmv")?
            .owned("the plan", self.ctx.id())?
            .scalar("alpha", alpha)?
            .scalar("beta", beta)?
            .input("x", x)?
            .output("y", y)?;
        if let Some(partials) = partials {
            operands.output("partials", partials)?;
        }
        check_len("spmv", "x length", self.matrix.cols(), x.len())?;
        check_len("spmv", "y length", self.matrix.rows(), y.len())?;
        // x is bound whole by every panel: it must fit one binding (y is bound per panel).
        let max = rec.context().limits().max_storage_buffer_binding_size;
        if x.byte_len() > max {
            return Err(Error::LimitExceeded {
                what: format!("spmv: x of {} elements", x.len()),
                limit: "max_storage_buffer_binding_size",
                requested: x.byte_len(),
                max,
            });
        }
        Ok(())
    }

    /// Records and submits the product; returns without waiting for the GPU.
    pub fn run<'s>(
        &self,
        alpha: impl Into<ScalarArg<'s, T>>,
        x: &GpuVec<T>,
        beta: impl Into<ScalarArg<'s, T>>,
        y: &mut GpuVec<T>,
    ) -> Result<()> {
        let mut batch = self.ctx.batch();
        self.record(&mut batch.recorder(), alpha, x, beta, y)?;
        batch.submit()
    }
}

/// One run of an algorithm on one row panel.
#[derive(Clone, Copy)]
pub(crate) struct Run<'a, T: Scalar> {
    /// All of x.
    x: Bind<'a, T>,
    /// The panel's rows of y.
    y: Bind<'a, T>,
    /// Rows of the panel.
    rows: usize,
    scaling: ScalarBinds<'a, T>,
}

/// An algorithm planned for one row panel: records a run. Each algorithm's file has a
/// `plan(ctx, matrix, panel, options)` making one.
pub(crate) trait PanelKernel<T: Scalar>: Send + Sync {
    /// Records `y ← α·A·x + β·y` on the panel (α is not a host zero: that is a scal).
    fn record(&self, rec: &mut Recorder<'_, '_>, panel: &PanelStorage<T>, run: &Run<'_, T>) -> Result<()>;
    /// Records the run (`y ← A·x` on a square matrix's only panel) with the partial sums of
    /// `x·y` into `partials` if the algorithm has such a kernel and they fit: `Some(count)`.
    /// `None`: nothing recorded.
    fn record_dot(
        &self,
        _rec: &mut Recorder<'_, '_>,
        _panel: &PanelStorage<T>,
        _run: &Run<'_, T>,
        _partials: &GpuVec<[T; 2]>,
    ) -> Result<Option<usize>> {
        Ok(None)
    }
    /// Device bytes allocated beyond A, x and y (analyses it uses included).
    fn extra_bytes(&self) -> u64 {
        0
    }
}

/// The most rows a workgroup of [`Spmv::record_dot`]'s kernels takes (one partial of x·y
/// each), whatever [`SpmvOptions`] says for the plain product: the workgroup's reduction
/// holds all its lanes until its slowest row is done. On the H100 (lap2d, ELL coded) the
/// product with the dot took 69.9 µs in workgroups of 1024 rows, 57.7 in 512, 52.3 in 256
/// and 49.8 in 128, against 50.9 without the dot (`benches/results/
/// h100-2026-11-25-spmv-dot-wg-probe.md`); 256 keeps the partials a solver's step adds up
/// at one per 256 rows.
pub const DOT_WORKGROUP_MAX: u32 = 256;

/// The workgroup size of a row-per-invocation kernel with the dot folded in, from the plan's.
fn dot_workgroup_size(wg_size: u32) -> u32 {
    wg_size.min(DOT_WORKGROUP_MAX)
}

/// The workgroups (one partial each) of a row-per-invocation kernel with the dot folded in
/// (`shaders/shared/spmv_row_dot.wgsl`) in workgroups of `wg_size` rows (already capped by
/// [`dot_workgroup_size`]), if `partials` holds them all.
fn dot_workgroups<T: Scalar>(rows: usize, wg_size: u32, partials: &GpuVec<[T; 2]>) -> Option<usize> {
    let workgroups = rows.div_ceil(wg_size as usize);
    (workgroups > 0 && workgroups <= partials.len()).then_some(workgroups)
}

/// The signature of every algorithm's `plan`.
type Plan<T> = fn(&Context, &GpuSparse<T>, usize, &SpmvOptions) -> Result<Box<dyn PanelKernel<T>>>;

/// The panel's storage as the algorithm's format, or a wgsparse bug.
macro_rules! panel_as {
    ($panel:expr, $variant:ident) => {
        match $panel {
            crate::matrix::PanelStorage::$variant(m) => m,
            _ => {
                return Err(crate::Error::Validation(format!(
                    "a {} kernel was given another format",
                    stringify!($variant)
                )))
            }
        }
    };
}
pub(crate) use panel_as;
