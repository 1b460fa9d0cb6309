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
    /// CSR, merge path: equal work per workgroup whatever the row lengths, with a
    /// deterministic carry fix-up. Needs `(rows + nnz) / 1536 × 12` bytes of scratch.
    CsrMerge,
    /// COO, segmented reduction by row with carries between intervals (seed 000).
    CooSegmented,
    /// COO, one invocation per nonzero with float atomics. **Not deterministic.**
    CooAtomic,
    /// ELL, one invocation per row over the padded columns.
    Ell,
    /// HYB: the ELL kernel for the regular part, the segmented COO kernel for the tail.
    Hyb,
}

impl SpmvAlgorithm {
    /// Every concrete algorithm, in the order reports list them.
    pub const ALL: [SpmvAlgorithm; 7] = [
        SpmvAlgorithm::CsrThread,
        SpmvAlgorithm::CsrVector,
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
        match self {
            SpmvAlgorithm::Auto => None,
            SpmvAlgorithm::CsrThread | SpmvAlgorithm::CsrVector | SpmvAlgorithm::CsrMerge => Some("csr"),
            SpmvAlgorithm::CooSegmented | SpmvAlgorithm::CooAtomic => Some("coo"),
            SpmvAlgorithm::Ell => Some("ell"),
            SpmvAlgorithm::Hyb => Some("hyb"),
        }
    }

    /// The format (with default conversion options) to upload a matrix in for this
    /// algorithm; `None` for `Auto`, which takes any.
    pub fn default_format(self) -> Option<Format> {
        Some(match self.format()? {
            "csr" => Format::Csr,
            "coo" => Format::Coo,
            "ell" => Format::Ell(EllOptions::default()),
            _ => Format::Hyb(HybSplit::Auto),
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
    ///   little and wastes nothing;
    /// - `CsrMerge` otherwise: its work per workgroup is bounded, so long, empty or skewed
    ///   rows cannot unbalance it.
    pub fn auto_for(a: &GpuMatrix) -> SpmvAlgorithm {
        match a {
            GpuMatrix::Coo(_) => SpmvAlgorithm::CooSegmented,
            GpuMatrix::Ell(_) => SpmvAlgorithm::Ell,
            GpuMatrix::Hyb(_) => SpmvAlgorithm::Hyb,
            GpuMatrix::Csr(m) if m.stats.max_len <= 16 && m.stats.std_dev <= m.stats.mean => SpmvAlgorithm::CsrThread,
            GpuMatrix::Csr(_) => SpmvAlgorithm::CsrMerge,
        }
    }
}

/// A planned SpMV for one matrix: kernels compiled and scratch allocated once, run many
/// times. The plan holds its own handles to the matrix's buffers.
#[derive(Debug)]
pub struct Spmv {
    ctx: Context,
    matrix: GpuMatrix,
    algorithm: SpmvAlgorithm,
    stages: Stages,
}

impl Spmv {
    /// Plans `y ← α·A·x + β·y` for `a`. `algorithm` must read `a`'s format
    /// ([`SpmvAlgorithm::format`]); `Auto` always does.
    pub fn new(ctx: &Context, a: &GpuMatrix, algorithm: SpmvAlgorithm) -> Result<Self> {
        ctx.check_alive()?;
        let algorithm = match algorithm {
            SpmvAlgorithm::Auto => SpmvAlgorithm::auto_for(a),
            other => other,
        };
        if algorithm.format() != Some(a.format_name()) {
            return Err(Error::InvalidArgument(format!(
                "SpMV algorithm {} reads {} matrices, this one is {}",
                algorithm.name(),
                algorithm.format().unwrap_or("any"),
                a.format_name()
            )));
        }
        let stages = Stages::new(ctx, a, algorithm)?;
        Ok(Spmv { ctx: ctx.clone(), matrix: a.clone(), algorithm, stages })
    }

    /// The algorithm in use (never `Auto`).
    pub fn algorithm(&self) -> SpmvAlgorithm {
        self.algorithm
    }

    /// Device bytes this plan allocated beyond A, x and y.
    pub fn extra_bytes(&self) -> u64 {
        self.stages.extra_bytes()
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
        if alpha == 0.0 {
            return self.stages.encode_scale(&self.ctx, pass, beta, y);
        }
        self.stages.encode(&self.ctx, pass, &self.matrix, alpha, x, beta, y)
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
