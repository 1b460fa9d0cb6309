//! Sampled dense × dense: `C ← α·(A ⊙ (B1·B2ᵀ)) + β·C` with A sparse (CSR, m × n), B1
//! dense m × k, B2 dense n × k (both row-major), and C with A's pattern: for every stored
//! (i, j) of A, C's value there becomes `α·(a_ij·dot(B1[i,:], B2[j,:])) + β·c_ij` — the
//! attention scores of a graph network, for instance. f32 or f64, any k ≥ 1.
//!
//! BLAS conventions: C's values are not read when β = 0 (NaN there does not survive), the
//! products are not used when α = 0. Every entry's output is computed by one group of
//! lanes in a fixed order, so the result is deterministic.
//!
//! RoDe's row decomposition (seed 002, [`SddmmAlgorithm::Rode`]) balances the work: rows
//! longer than a chunk are cut into chunks processed like rows. `shaders/sddmm_csr.wgsl`
//! says how the lanes share an entry's dot product. [`SddmmAlgorithm::Entries`] takes one
//! entry per group of lanes whatever its row (`shaders/shared/sddmm_entries_body.wgsl`):
//! `Auto` uses it except at k ≤ 64 on many rows of about one length.

use std::sync::Arc;

use super::blas1;
use super::common::{
    block_split, check_len, check_row_major, check_width, row_blocks, Gathered, Operands, RowBlock, ScalarBinds,
    TileShape, MIN_TASKS,
};
use crate::analysis::row_split::RowSplit;
use crate::context::Context;
use crate::element::{ElementKind, Scalar};
use crate::gpu::{GpuVec, ScalarArg};
use crate::kernel::shaders::structs::Chunk;
use crate::kernel::shaders::{sddmm_csr as kernel, sddmm_entries, sddmm_entries_scalar};
use crate::kernel::Kernel;
use crate::matrix::{Format, GpuDense, GpuSparse, PanelStorage};
use crate::record::Recorder;
use crate::{Error, Result};

/// Which kernel computes the product.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum SddmmAlgorithm {
    /// [`SddmmAlgorithm::Entries`], except at k ≤ 64 on a matrix of many rows (at least
    /// 8,192 of RoDe's tasks: rows plus nnz / `chunk_len`) whose lengths vary little
    /// (standard deviation at most half the mean), and wherever [`SddmmOptions::chunk_len`]
    /// is set: [`SddmmAlgorithm::Rode`].
    Auto,
    /// The baseline: a slot of lanes per row, however long the row.
    RowGroup,
    /// RoDe's row decomposition: rows longer than [`SddmmOptions::chunk_len`] are cut into
    /// chunks processed like rows.
    Rode,
    /// A group of lanes per entry, whatever its row (found by a search of the row
    /// offsets): every task one dot product, and enough of them on a matrix of a few
    /// thousand rows. B1 and B2 are read as vec4 where k is a multiple of 4. No
    /// decomposition is stored; [`SddmmOptions::lanes`] sets the group.
    Entries,
}

impl SddmmAlgorithm {
    /// Every concrete algorithm, in the order reports list them.
    pub const ALL: [SddmmAlgorithm; 3] = [SddmmAlgorithm::RowGroup, SddmmAlgorithm::Rode, SddmmAlgorithm::Entries];

    /// Short name used in reports and on the command line.
    pub fn name(self) -> &'static str {
        match self {
            SddmmAlgorithm::Auto => "auto",
            SddmmAlgorithm::RowGroup => "row-group",
            SddmmAlgorithm::Rode => "rode",
            SddmmAlgorithm::Entries => "entries",
        }
    }

    /// Parses [`SddmmAlgorithm::name`].
    pub fn from_name(name: &str) -> Option<Self> {
        std::iter::once(SddmmAlgorithm::Auto).chain(Self::ALL).find(|a| a.name() == name)
    }
}

/// Tuning knobs of the SDDMM kernels.
pub type SddmmOptions = super::TileOptions;

/// A planned SDDMM for one pattern and one k, recorded many times.
pub struct Sddmm<T: Scalar> {
    ctx: Context,
    matrix: GpuSparse<T>,
    algorithm: SddmmAlgorithm,
    k: usize,
    shape: TileShape,
    kernel: SddmmKernel<T>,
    /// Whether B2 is in more than one panel (the kernel's GATHER_PANELS variant).
    paneled_b2: bool,
    blocks: Vec<(RowBlock, Option<Arc<RowSplit>>)>,
    /// Bound where a block has no decomposition.
    no_chunks: GpuVec<Chunk>,
}

/// The kernel a plan dispatches: slots of lanes per row or chunk (row-group, RoDe), or
/// groups of lanes per entry reading units of 4 columns or of 1 (entries).
enum SddmmKernel<T: Scalar> {
    Rows(Kernel<kernel::Shader, T>),
    EntriesVec4(Kernel<sddmm_entries::Shader, T>),
    EntriesScalar(Kernel<sddmm_entries_scalar::Shader, T>),
}

impl<T: Scalar> std::fmt::Debug for Sddmm<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sddmm")
            .field("algorithm", &self.algorithm)
            .field("k", &self.k)
            .field("matrix", &self.matrix)
            .finish()
    }
}

impl<T: Scalar> Sddmm<T> {
    /// Plans `C ← α·(A ⊙ (B1·B2ᵀ)) + β·C` for the pattern of `a` (CSR) and B1, B2 of `k`
    /// columns.
    pub fn new(ctx: &Context, a: &GpuSparse<T>, k: usize, algorithm: SddmmAlgorithm) -> Result<Self> {
        Self::with_options(ctx, a, k, algorithm, &SddmmOptions::default())
    }

    /// [`Sddmm::new`] with tuning knobs.
    pub fn with_options(
        ctx: &Context,
        a: &GpuSparse<T>,
        k: usize,
        algorithm: SddmmAlgorithm,
        options: &SddmmOptions,
    ) -> Result<Self> {
        Operands::new(ctx, "sddmm")?.owned("the matrix", a.device_id())?;
        check_width("SDDMM", k)?;
        if a.format() != Format::Csr {
            return Err(Error::InvalidArgument(format!("SDDMM reads CSR matrices, this one is {}", a.format().name())));
        }
        if options.group_rows.is_some() {
            return Err(Error::InvalidArgument("SddmmOptions: group_rows is SpMM's".into()));
        }
        if options.row_parts.is_some() {
            return Err(Error::InvalidArgument("SddmmOptions: row_parts is SpMM's".into()));
        }
        if options.transposed_reads.is_some() {
            return Err(Error::InvalidArgument("SddmmOptions: transposed_reads is SpMM's with Aᵀ".into()));
        }
        // N_S = 512, or shorter chunks on small matrices, so that nnz/N_S leaves MIN_TASKS
        // tasks (an entry's output is its own: chunks cost no combine). At least 64 entries in
        // f32 and 32 in f64: the decomposition (12 B a chunk, 8 B a long row) then stays under
        // 10% of A's bytes even when every long row is one entry past a chunk.
        let min_chunk = match T::KIND {
            ElementKind::F32 => 64,
            ElementKind::F64 => 32,
        };
        let default_chunk = (a.nnz() as u64).div_ceil(MIN_TASKS as u64).next_multiple_of(32).clamp(min_chunk, 512);
        // Still fewer than half MIN_TASKS tasks: one column a lane (up to 32) shortens each
        // lane's chain of loads. H100, k = 32 (`…-spmm-sddmm-small-variants.md`,
        // `…-sddmm-wide-slots.md`): 494_bus (547 tasks) 14.1 → 11.0 µs, bcsstk13 (~2,700)
        // 30.4 → 25.2; with this below MIN_TASKS, Pd (~8,500) unchanged and Franz6 (~12,100)
        // 12.5 → 15.0; on the suite's millions of rows 1.3–3× slower.
        let tasks = a.rows() as u64 + (a.nnz() as u64).div_ceil(default_chunk);
        let few_tasks = options.chunk_len.is_none() && tasks < MIN_TASKS as u64 / 2;
        // Auto: a group per entry, except at k ≤ 64 on a matrix of many rows of about one
        // length, where RoDe's rows read each B1 row once and were faster (H100,
        // `…-sddmm-entries-vec4-suite.md`, k = 32: lap2d 1039 µs against 1121, lap3d 1244
        // against 1476, uniform 5192 against 5937). Entries elsewhere: at k = 128 on every
        // suite matrix (lap2d 3199 against 5589), on R-MAT and the dense row at k = 32 (1808
        // against 2974, 854 against 1288), and on every file of a few thousand rows
        // (`…-sddmm-entries-vec4-mtx.md`: bcsstk13 11.4 against 31.7 µs), where RoDe's few
        // row tasks are chains of loads. (k = 64 is not measured.) A caller who sets RoDe's
        // chunk length gets RoDe.
        let stats = a.stats();
        let regular_rows = stats.std_dev <= 0.5 * stats.mean;
        let algorithm = match algorithm {
            SddmmAlgorithm::Auto if options.chunk_len.is_some() => SddmmAlgorithm::Rode,
            SddmmAlgorithm::Auto if k <= 64 && !few_tasks && regular_rows => SddmmAlgorithm::Rode,
            SddmmAlgorithm::Auto => SddmmAlgorithm::Entries,
            chosen => chosen,
        };
        let shape = match algorithm {
            SddmmAlgorithm::Entries => {
                // Lanes per entry: units/8, 2 to 4 (H100: 2 at k = 32, 4 at k = 128 were the
                // best or within 10% on every file and suite matrix but uniform_4M_16 at
                // 128), no more than the units.
                let units = if k.is_multiple_of(4) { k / 4 } else { k }.max(1) as u32;
                let smallest_subgroup = ctx.subgroup_size_range().map_or(32, |r| r.0);
                let lanes = (units / 8).next_power_of_two().clamp(2, 4).min(units.next_power_of_two());
                // No chunks: chunk_len is RoDe's, and ignored here.
                let options = SddmmOptions {
                    lanes: options.lanes.or(Some(lanes.min(smallest_subgroup))),
                    chunk_len: None,
                    ..*options
                };
                TileShape::resolve(ctx, "SddmmOptions", &options, k, 512, false)?
            }
            _ => TileShape::resolve(ctx, "SddmmOptions", options, k, default_chunk, few_tasks)?,
        };
        if matches!(algorithm, SddmmAlgorithm::RowGroup | SddmmAlgorithm::Rode) {
            // A slot walks its row (row-group) or chunk (RoDe), ⌈k / lanes⌉ steps an entry.
            let longest = stats.max_len as u64;
            let segment = match algorithm {
                SddmmAlgorithm::Rode => longest.min(shape.chunk_len as u64),
                _ => longest,
            };
            let per_entry = (k as u64).div_ceil(shape.lanes as u64) + 3;
            let what = || format!("SDDMM ({}) at k = {k} on segments of {segment} entries", algorithm.name());
            ctx.check_loop_iterations(what, segment.saturating_mul(per_entry).saturating_add(64))?;
        }
        let b1_panel_rows = GpuDense::<T>::panel_rows_for(ctx, k)?;
        let paneled_b2 = b1_panel_rows < a.cols();
        let blocks = row_blocks(a, b1_panel_rows)
            .into_iter()
            .map(|rows| {
                let split = match algorithm {
                    SddmmAlgorithm::RowGroup | SddmmAlgorithm::Entries => None,
                    _ => Some(block_split(ctx, a, &rows, shape.chunk_len, shape.chunk_len)?),
                };
                Ok((rows, split))
            })
            .collect::<Result<_>>()?;
        let (wg_size, lanes) = (shape.workgroup_size, shape.lanes);
        let kernel = match algorithm {
            SddmmAlgorithm::Entries if k > 0 && k.is_multiple_of(4) => SddmmKernel::EntriesVec4(ctx.kernel(
                sddmm_entries::Flags { gather_panels: paneled_b2 },
                sddmm_entries::Overrides { wg_size, group: lanes },
            )?),
            SddmmAlgorithm::Entries => SddmmKernel::EntriesScalar(ctx.kernel(
                sddmm_entries_scalar::Flags { gather_panels: paneled_b2 },
                sddmm_entries_scalar::Overrides { wg_size, group: lanes },
            )?),
            _ => SddmmKernel::Rows(
                ctx.kernel(kernel::Flags { gather_panels: paneled_b2 }, kernel::Overrides { wg_size, lanes })?,
            ),
        };
        Ok(Sddmm {
            kernel,
            ctx: ctx.clone(),
            matrix: a.clone(),
            algorithm,
            k,
            shape,
            paneled_b2,
            blocks,
            no_chunks: ctx.zeros(1)?,
        })
    }

    /// The algorithm in use (never `Auto`).
    pub fn algorithm(&self) -> SddmmAlgorithm {
        self.algorithm
    }

    /// Device bytes this plan allocated beyond A, B1, B2 and C (shared analyses included).
    pub fn extra_bytes(&self) -> u64 {
        let splits: u64 = self
            .blocks
            .iter()
            .filter_map(|(_, s)| s.as_ref())
            .map(|s| crate::matrix::Analysis::device_bytes(&**s))
            .sum();
        splits + self.no_chunks.byte_len()
    }

    /// Records `C ← α·(A ⊙ (B1·B2ᵀ)) + β·C`; `c` must have the plan's pattern
    /// ([`GpuSparse::has_pattern_of`]; make one with [`GpuSparse::zeros_like`]). α and β are
    /// host values or device scalars. Everything is checked before anything is recorded.
    pub fn record<'s>(
        &self,
        rec: &mut Recorder<'_, '_>,
        alpha: impl Into<ScalarArg<'s, T>>,
        b1: &GpuDense<T>,
        b2: &GpuDense<T>,
        beta: impl Into<ScalarArg<'s, T>>,
        c: &mut GpuSparse<T>,
    ) -> Result<()> {
        let (alpha, beta) = (alpha.into(), beta.into());
        let mut operands = Operands::new(rec.context(), "sddmm")?
            .owned("the plan", self.ctx.id())?
            .owned("C", c.device_id())?
            .scalar("alpha", &alpha)?
            .scalar("beta", &beta)?
            .dense_input("B1", b1)?
            .dense_input("B2", b2)?;
        if !c.has_pattern_of(&self.matrix) {
            return Err(Error::InvalidArgument("sddmm: C does not have the pattern and panels of A".into()));
        }
        for (a_panel, c_panel) in self.matrix.panels().iter().zip(c.panels()) {
            if let (PanelStorage::Csr(a), PanelStorage::Csr(c)) = (a_panel.storage(), c_panel.storage()) {
                operands = operands.input("A", a.values())?.output("C", c.values())?;
            }
        }
        check_len("sddmm", "B1 rows", self.matrix.rows(), b1.rows())?;
        check_len("sddmm", "B2 rows", self.matrix.cols(), b2.rows())?;
        check_len("sddmm", "B1 columns", self.k, b1.cols())?;
        check_len("sddmm", "B2 columns", self.k, b2.cols())?;
        check_row_major("sddmm", "B1", b1)?;
        check_row_major("sddmm", "B2", b2)?;
        let gathered = Gathered::of("sddmm", b2)?;
        if gathered.paneled != self.paneled_b2 {
            return Err(Error::InvalidArgument("sddmm: B2's panels are not those of the plan's device".into()));
        }
        let ctx = rec.context().clone();
        let scaling = ScalarBinds::new(&ctx, alpha, beta)?;
        for (rows, split) in &self.blocks {
            let (PanelStorage::Csr(a), PanelStorage::Csr(c)) =
                (self.matrix.panels()[rows.panel].storage(), c.panels()[rows.panel].storage())
            else {
                return Err(Error::Validation("sddmm: a panel that is not CSR".into()));
            };
            // The block's entries, in the panel's value arrays.
            if scaling.host_alpha() == Some(T::default()) {
                // C ← β·C on the whole panel, once (at its first block).
                if rows.local.start == 0 {
                    blas1::scale_range(rec, &scaling.beta_as_alpha(), c.values().bind(), c.nnz(), blas1::Fill::Scale)?;
                }
                continue;
            }
            let [gather0, gather1, gather2, gather3] = gathered.panels;
            let row_offsets = a.row_offsets().bind_range(rows.local.start..rows.local.end + 1);
            let b1_rows = b1.bind_rows(rows.rows.clone());
            let kernel = match &self.kernel {
                SddmmKernel::Rows(kernel) => kernel,
                entries => {
                    // A group per entry the block can hold: at most the panel's entries and
                    // the block's rows times the longest row (the host does not know a
                    // block's entries; the shader skips those past them), in at most the grid
                    // the device allows, each group taking every run_stride-th entry.
                    let max = (ctx.limits().max_compute_workgroups_per_dimension as u64).pow(2);
                    let capacity = (a.nnz() as u64).min((rows.local.len() * self.matrix.stats().max_len) as u64);
                    let workgroups = self.shape.workgroups(capacity).min(max);
                    if workgroups == 0 {
                        // No entries (and B1, B2 may be empty: no whole vec4 to bind).
                        continue;
                    }
                    let run_stride = u32::try_from(workgroups * self.shape.slots())
                        .map_err(|_| Error::Validation("sddmm: more groups than u32 indexes".into()))?;
                    macro_rules! entries_dispatch {
                        ($module:ident, $kernel:expr, $units:expr, $unit:ident) => {
                            rec.dispatch(
                                $kernel,
                                $module::Params {
                                    rows: rows.local.len() as u32,
                                    k: $units as u32,
                                    run_stride,
                                    gather_panel_rows: gathered.panel_rows,
                                    scaling: scaling.params,
                                },
                                $module::Bindings {
                                    row_offsets,
                                    col_indices: a.col_indices().bind(),
                                    values: a.values().bind(),
                                    b1: b1_rows.$unit(),
                                    gather0: gather0.$unit(),
                                    gather1: gather1.$unit(),
                                    gather2: gather2.$unit(),
                                    gather3: gather3.$unit(),
                                    alpha_dev: scaling.alpha_dev,
                                    beta_dev: scaling.beta_dev,
                                    c_values: c.values().bind(),
                                },
                                workgroups,
                            )?
                        };
                    }
                    match entries {
                        SddmmKernel::EntriesVec4(k) => entries_dispatch!(sddmm_entries, k, self.k / 4, as_vec4),
                        SddmmKernel::EntriesScalar(k) => entries_dispatch!(sddmm_entries_scalar, k, self.k, into),
                        SddmmKernel::Rows(_) => unreachable!("matched above"),
                    }
                    continue;
                }
            };
            let chunks = split.as_ref().map_or(0, |s| s.chunk_count());
            let chunk_workgroups = self.shape.workgroups(chunks as u64);
            let row_workgroups = self.shape.workgroups(rows.local.len() as u64);
            let max_len = if split.is_some() { self.shape.chunk_len } else { u32::MAX };
            rec.dispatch(
                kernel,
                kernel::Params {
                    rows: rows.local.len() as u32,
                    k: self.k as u32,
                    max_len,
                    chunk_len: max_len,
                    chunks: chunks as u32,
                    chunk_workgroups: chunk_workgroups as u32,
                    gather_panel_rows: gathered.panel_rows,
                    scaling: scaling.params,
                },
                kernel::Bindings {
                    row_offsets,
                    col_indices: a.col_indices().bind(),
                    values: a.values().bind(),
                    b1: b1_rows,
                    gather0,
                    gather1,
                    gather2,
                    gather3,
                    chunks: split.as_ref().map_or(self.no_chunks.bind(), |s| s.chunks.bind()),
                    alpha_dev: scaling.alpha_dev,
                    beta_dev: scaling.beta_dev,
                    c_values: c.values().bind(),
                },
                chunk_workgroups + row_workgroups,
            )?;
        }
        Ok(())
    }

    /// Records and submits the product; returns without waiting for the GPU.
    pub fn run<'s>(
        &self,
        alpha: impl Into<ScalarArg<'s, T>>,
        b1: &GpuDense<T>,
        b2: &GpuDense<T>,
        beta: impl Into<ScalarArg<'s, T>>,
        c: &mut GpuSparse<T>,
    ) -> Result<()> {
        let mut batch = self.ctx.batch();
        self.record(&mut batch.recorder(), alpha, b1, b2, beta, c)?;
        batch.submit()
    }
}
