//! Sparse matrix × vector: `y ← α·A·x + β·y` for every device format.
//!
//! BLAS conventions: with `β = 0`, `y` is not read (NaN already in `y` does not survive);
//! with `α = 0`, `A·x` is not computed (only `y ← β·y`).
//!
//! Every algorithm is deterministic (the result does not depend on scheduling) except
//! [`SpmvAlgorithm::CooAtomic`], which adds with float atomics in whatever order the GPU
//! runs them; [`SpmvAlgorithm::CooSegmented`] is its deterministic alternative.

mod stages;

use crate::format::{EllOptions, HybSplit};
use crate::gpu::{Context, Format, GpuMatrix, GpuVec};
use crate::{Error, Result};
use stages::Stages;

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
    /// CSR, merge path: equal work per workgroup whatever the row lengths, with a
    /// deterministic carry fix-up. Needs `(rows + nnz) / 1536 × 12` bytes of scratch.
    CsrMerge,
    /// COO, segmented reduction by row with carries between intervals (seed 000).
    CooSegmented,
    /// COO, one invocation per nonzero, summed by row within a subgroup, then one float
    /// atomic add per row segment. **Not deterministic.**
    CooAtomic,
    /// ELL, one invocation per row over the padded columns.
    Ell,
    /// HYB: the ELL kernel for the regular part, the segmented COO kernel for the tail.
    Hyb,
}

impl SpmvAlgorithm {
    /// Every concrete algorithm, in the order reports list them.
    pub const ALL: [SpmvAlgorithm; 8] = [
        SpmvAlgorithm::CsrThread,
        SpmvAlgorithm::CsrVector,
        SpmvAlgorithm::CsrSplit,
        SpmvAlgorithm::CsrMerge,
        SpmvAlgorithm::CooSegmented,
        SpmvAlgorithm::CooAtomic,
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
            SpmvAlgorithm::CooAtomic => "coo-atomic",
            SpmvAlgorithm::Ell => "ell",
            SpmvAlgorithm::Hyb => "hyb",
        }
    }

    /// Parses [`SpmvAlgorithm::name`].
    pub fn from_name(name: &str) -> Option<Self> {
        std::iter::once(SpmvAlgorithm::Auto).chain(Self::ALL).find(|a| a.name() == name)
    }

    /// The device format the algorithm reads (`None` for `Auto`).
    pub fn format(self) -> Option<&'static str> {
        self.default_format().map(|f| f.name())
    }

    /// The format (with default conversion options) to upload a matrix in for this
    /// algorithm; `None` for `Auto`, which takes any.
    pub fn default_format(self) -> Option<Format> {
        Some(match self {
            SpmvAlgorithm::Auto => return None,
            SpmvAlgorithm::CsrThread | SpmvAlgorithm::CsrVector | SpmvAlgorithm::CsrSplit | SpmvAlgorithm::CsrMerge => {
                Format::Csr
            }
            SpmvAlgorithm::CooSegmented | SpmvAlgorithm::CooAtomic => Format::Coo,
            SpmvAlgorithm::Ell => Format::Ell(EllOptions::default()),
            SpmvAlgorithm::Hyb => Format::Hyb(HybSplit::Auto),
        })
    }

    /// Whether the result is independent of GPU scheduling.
    pub fn deterministic(self) -> bool {
        self != SpmvAlgorithm::CooAtomic
    }

    /// The algorithm `Auto` picks for `a`.
    ///
    /// The rule: the format's own deterministic kernel, and for CSR, from the row
    /// statistics taken on upload,
    /// - `CsrThread` when every row is short (at most 16 entries) and rows are regular
    ///   (standard deviation of the lengths at most the mean): one invocation per row reads
    ///   little and wastes nothing (92% of the copy bandwidth on the 2-D Laplacian, H100);
    /// - `CsrSplit` otherwise: long rows go to chunks shared by groups of lanes, so a row of
    ///   a million entries or a power-law tail cannot unbalance it.
    ///
    /// Upload with [`Format::Auto`] to let the row lengths choose the format too.
    pub fn auto_for(a: &GpuMatrix) -> SpmvAlgorithm {
        let stats = a.stats();
        match a.format_name() {
            "coo" => SpmvAlgorithm::CooSegmented,
            "ell" => SpmvAlgorithm::Ell,
            "hyb" => SpmvAlgorithm::Hyb,
            _ if stats.max_len <= 16 && stats.std_dev <= stats.mean => SpmvAlgorithm::CsrThread,
            _ => SpmvAlgorithm::CsrSplit,
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
    /// and at most its invocation limit. Default per algorithm (from the H100 sweeps in
    /// benches/NOTES.md): 1024 for `Ell` and `CsrSplit`, 512 for `Hyb`, 256 otherwise,
    /// capped at the device's limit.
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
    /// subgroup (of the workgroup without subgroups). Default 8.
    pub coo_steps: u32,
}

impl Default for SpmvOptions {
    fn default() -> Self {
        SpmvOptions {
            workgroup_size: None,
            merge_items: None,
            vector_lanes: None,
            split_threshold: 64,
            chunk_steps: 64,
            coo_steps: 8,
        }
    }
}

impl SpmvOptions {
    /// Sets [`SpmvOptions::workgroup_size`].
    pub fn workgroup_size(mut self, size: u32) -> Self {
        self.workgroup_size = Some(size);
        self
    }

    /// The workgroup size `algorithm` runs with on `ctx`.
    pub fn workgroup_size_for(&self, ctx: &Context, algorithm: SpmvAlgorithm) -> u32 {
        self.workgroup_size.unwrap_or_else(|| {
            let preferred = match algorithm {
                SpmvAlgorithm::Ell | SpmvAlgorithm::CsrSplit => 1024,
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
        self.coo_steps = steps;
        self
    }

    fn validate(&self, ctx: &Context, algorithm: SpmvAlgorithm) -> Result<()> {
        let wg = self.workgroup_size_for(ctx, algorithm);
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
            let bytes = stages::merge_workgroup_bytes(wg, items);
            if items == 0 || bytes > ctx.limits().max_compute_workgroup_storage_size as u64 {
                return bad(format!("merge_items {items} needs {bytes} bytes of workgroup memory"));
            }
        }
        if self.coo_steps == 0 || self.chunk_steps == 0 {
            return bad("coo_steps and chunk_steps must be at least 1".into());
        }
        Ok(())
    }
}

/// A planned SpMV for one matrix: kernels compiled and scratch allocated once, run many
/// times. The plan holds its own handles to the matrix's buffers.
#[derive(Debug)]
pub struct Spmv {
    ctx: Context,
    matrix: GpuMatrix,
    algorithm: SpmvAlgorithm,
    /// One set of stages per row panel of the matrix.
    stages: Vec<Stages>,
}

impl Spmv {
    /// Plans `y ← α·A·x + β·y` for `a`. `algorithm` must read `a`'s format
    /// ([`SpmvAlgorithm::format`]); `Auto` always does.
    pub fn new(ctx: &Context, a: &GpuMatrix, algorithm: SpmvAlgorithm) -> Result<Self> {
        Self::with_options(ctx, a, algorithm, &SpmvOptions::default())
    }

    /// [`Spmv::new`] with tuning knobs.
    pub fn with_options(ctx: &Context, a: &GpuMatrix, algorithm: SpmvAlgorithm, options: &SpmvOptions) -> Result<Self> {
        ctx.check_alive()?;
        let algorithm = match algorithm {
            SpmvAlgorithm::Auto => SpmvAlgorithm::auto_for(a),
            other => other,
        };
        options.validate(ctx, algorithm)?;
        if algorithm.format() != Some(a.format_name()) {
            return Err(Error::InvalidArgument(format!(
                "SpMV algorithm {} reads {} matrices, this one is {}",
                algorithm.name(),
                algorithm.format().unwrap_or("any"),
                a.format_name()
            )));
        }
        let stages =
            a.panels.iter().map(|p| Stages::new(ctx, &p.storage, algorithm, options)).collect::<Result<_>>()?;
        Ok(Spmv { ctx: ctx.clone(), matrix: a.clone(), algorithm, stages })
    }

    /// The algorithm in use (never `Auto`).
    pub fn algorithm(&self) -> SpmvAlgorithm {
        self.algorithm
    }

    /// Device bytes this plan allocated beyond A, x and y.
    pub fn extra_bytes(&self) -> u64 {
        self.stages.iter().map(Stages::extra_bytes).sum()
    }

    /// Records the product into `pass` (several dispatches; wgpu orders them).
    pub fn encode(
        &self,
        pass: &mut wgpu::ComputePass<'_>,
        alpha: f32,
        x: &GpuVec<f32>,
        beta: f32,
        y: &mut GpuVec<f32>,
    ) -> Result<()> {
        let (rows, cols) = (self.matrix.rows(), self.matrix.cols());
        if x.len() != cols {
            return Err(Error::dimension("spmv", "x length", cols, x.len()));
        }
        if y.len() != rows {
            return Err(Error::dimension("spmv", "y length", rows, y.len()));
        }
        self.ctx.check_alive()?;
        for (panel, stages) in self.matrix.panels.iter().zip(&self.stages) {
            let y_rows = y.slice(panel.row_start..panel.row_start + panel.storage.rows());
            if alpha == 0.0 {
                stages.encode_scale(&self.ctx, pass, beta, y_rows)?;
            } else {
                stages.encode(&self.ctx, pass, &panel.storage, alpha, x, beta, y_rows)?;
            }
        }
        Ok(())
    }

    /// Records and submits the product; returns without waiting for the GPU.
    pub fn run(&self, alpha: f32, x: &GpuVec<f32>, beta: f32, y: &mut GpuVec<f32>) -> Result<()> {
        super::submit_pass(&self.ctx, "spmv", |pass| self.encode(pass, alpha, x, beta, y))
    }
}

/// One-shot `y ← α·A·x + β·y` with the automatic choice (plans and runs; prefer [`Spmv`]
/// when the same matrix is used again).
pub fn spmv(ctx: &Context, alpha: f32, a: &GpuMatrix, x: &GpuVec<f32>, beta: f32, y: &mut GpuVec<f32>) -> Result<()> {
    Spmv::new(ctx, a, SpmvAlgorithm::Auto)?.run(alpha, x, beta, y)
}
