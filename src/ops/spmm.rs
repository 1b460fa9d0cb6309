//! Sparse × dense: `C ← α·A·B + β·C` with A sparse (CSR, m × n), B dense n × k and C dense
//! m × k, both row-major, any k ≥ 1, f32 or f64; or `C ← α·Aᵀ·B + β·C` (B m × k, C n × k)
//! on A's transpose, built once on the GPU and kept with A's analyses
//! ([`Spmm::transposed`]).
//!
//! Semantics as SpMV's, row by row and column by column: `C[i, c] = α·s + β·C[i, c]` where
//! `s` is the sum over row i's entries of `a_ij·B[j, c]` (0 for an empty row); C is not read
//! when β = 0 (NaN already there does not survive), and `A·B` is not computed when α = 0 (a
//! NaN in A or B does not leak into `C ← β·C`). α multiplies complete row sums, never
//! pieces of them.
//!
//! The kernels follow RoDe's row decomposition (seed 002, [`SpmmAlgorithm::Rode`]): rows
//! longer than a chunk are cut into chunks processed like independent rows; each slot of
//! lanes takes one row or chunk, stages its entries in tiles (the next loaded while the
//! current one is used), and its lanes split C's columns. `shaders/spmm_csr.wgsl` says how.

use std::sync::Arc;

use super::blas1;
use super::common::{
    block_split, blocks_of, check_len, check_row_major, check_width, row_blocks, transpose_split, Gathered, Operands,
    RowBlock, ScalarBinds, TileShape, MIN_TASKS,
};
use super::tile_options::TransposedReads;
use crate::analysis::row_split::RowSplit;
use crate::analysis::transpose::{InversePermutation, Transpose};
use crate::context::Context;
use crate::element::{ElementKind, Scalar};
use crate::gpu::{GpuVec, ScalarArg};
use crate::kernel::shaders::spmm_csr as kernel;
use crate::kernel::shaders::structs::{Chunk, LongRow};
use crate::kernel::shaders::transposed_values;
use crate::kernel::Kernel;
use crate::matrix::{Format, GpuDense, GpuSparse, PanelStorage, RowStats};
use crate::record::Recorder;
use crate::{Error, Result};
/// Which kernel computes the product.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum SpmmAlgorithm {
    /// [`SpmmAlgorithm::Rode`]: deterministic, balanced whatever the row lengths.
    Auto,
    /// The baseline: a slot of lanes per row, however long the row. Deterministic.
    RowGroup,
    /// RoDe's row decomposition: rows longer than [`SpmmOptions::chunk_len`] are cut into
    /// chunks processed like independent rows, each writing its sums to scratch, added in
    /// chunk order by a second pass. Deterministic. Needs `chunks × k` elements of scratch.
    Rode,
    /// RoDe with the chunks of a long row combined by float atomics (a compare-exchange loop
    /// on the f32 bits), as the paper does. **Not deterministic.** f32 only. Needs
    /// `long rows × k` elements of scratch.
    RodeAtomic,
}

impl SpmmAlgorithm {
    /// Every concrete algorithm, in the order reports list them.
    pub const ALL: [SpmmAlgorithm; 3] = [SpmmAlgorithm::RowGroup, SpmmAlgorithm::Rode, SpmmAlgorithm::RodeAtomic];

    /// Short name used in reports and on the command line.
    pub fn name(self) -> &'static str {
        match self {
            SpmmAlgorithm::Auto => "auto",
            SpmmAlgorithm::RowGroup => "row-group",
            SpmmAlgorithm::Rode => "rode",
            SpmmAlgorithm::RodeAtomic => "rode-atomic",
        }
    }

    /// Parses [`SpmmAlgorithm::name`].
    pub fn from_name(name: &str) -> Option<Self> {
        std::iter::once(SpmmAlgorithm::Auto).chain(Self::ALL).find(|a| a.name() == name)
    }

    /// Whether the result is independent of GPU scheduling.
    pub fn deterministic(self) -> bool {
        self != SpmmAlgorithm::RodeAtomic
    }

    /// Whether the algorithm exists for element type `T` (`RodeAtomic` is f32 only).
    pub fn supports<T: Scalar>(self) -> bool {
        self != SpmmAlgorithm::RodeAtomic || T::KIND == ElementKind::F32
    }
}

/// Tuning knobs of the SpMM kernels.
pub type SpmmOptions = super::TileOptions;

/// A planned SpMM for one matrix and one k: kernels compiled, the row decomposition built
/// (or shared) and scratch allocated once, recorded many times.
pub struct Spmm<T: Scalar> {
    ctx: Context,
    matrix: GpuSparse<T>,
    /// A's transpose, when the plan computes `Aᵀ·B`.
    transpose: Option<TransposedA<T>>,
    algorithm: SpmmAlgorithm,
    k: usize,
    shape: TileShape,
    /// Tiles of C's columns (4 per lane of a slot) each row is cut into.
    col_tiles: u32,
    /// Slots sharing each row ([`SpmmOptions::row_parts`]).
    row_parts: u32,
    main: Kernel<kernel::Shader, T>,
    finish: Kernel<kernel::Shader, T>,
    /// Whether B is in more than one panel (the kernels' GATHER_PANELS variant).
    paneled_b: bool,
    blocks: Vec<Block>,
    /// Partial sums of chunks (deterministic) or the long rows' accumulators (atomic),
    /// shared by the blocks, which run one after the other.
    scratch: GpuVec<T>,
    /// Bound in place of what a block or an algorithm does not use.
    unused: Unused<T>,
}

/// One-element stand-ins for the bindings a dispatch does not use (each its own buffer, as
/// writable bindings must not alias).
struct Unused<T: Scalar> {
    chunks: GpuVec<Chunk>,
    long_rows: GpuVec<LongRow>,
    partials: GpuVec<T>,
    sums: GpuVec<u32>,
    perm: GpuVec<u32>,
    /// A's values, for the transpose of a matrix with no rows (hence no panels).
    values: GpuVec<T>,
}

impl<T: Scalar> Unused<T> {
    fn new(ctx: &Context) -> Result<Self> {
        Ok(Unused {
            chunks: ctx.zeros(1)?,
            long_rows: ctx.zeros(1)?,
            partials: ctx.zeros(1)?,
            sums: ctx.zeros(1)?,
            perm: ctx.zeros(1)?,
            values: ctx.zeros(1)?,
        })
    }

    fn byte_len(&self) -> u64 {
        self.chunks.byte_len()
            + self.long_rows.byte_len()
            + self.partials.byte_len()
            + self.sums.byte_len()
            + self.perm.byte_len()
            + self.values.byte_len()
    }
}

/// A's transpose, for a plan of `Aᵀ·B`, and how the product reads A's values on it.
struct TransposedA<T: Scalar> {
    /// The pattern, kept with A's analyses.
    pattern: Arc<Transpose>,
    /// The plan's copy of A's values in the transpose's order ([`TransposedReads::Ordered`]);
    /// `None`: the product reads A's values through the permutation.
    ordered: Option<OrderedValues<T>>,
}

impl<T: Scalar> TransposedA<T> {
    fn reads(&self) -> TransposedReads {
        match self.ordered {
            Some(_) => TransposedReads::Ordered,
            None => TransposedReads::Permuted,
        }
    }
}

/// A's values in the order of its transpose's entries, for a plan of `Aᵀ·B` that reads
/// them so ([`TransposedReads::Ordered`]): the kernels read them in order, where reading A's
/// through the permutation costs a scattered load per entry at every run (on the H100 about
/// 2 ms of 5.45 on the 4M-row uniform matrix at k = 32; 3.61 with this copy when the values
/// did not change, benches/NOTES.md). A pass
/// before every run (`shaders/transposed_values.wgsl`) compares A's values with the ones
/// it last copied, in order, and copies only what changed, so the product always sees A's
/// values as they are when it runs, whoever wrote them (an op, `update_values`, the
/// caller's own writes to the buffer), and a batch dropped unsubmitted leaves nothing
/// stale. A run after all of A's values changed pays a scattered write per value instead,
/// more than the permuted reads cost (the H100, k = 32, the product after all values
/// changed: ~8.4 ms against 5.45 on the uniform matrix, benches/NOTES.md session 32).
struct OrderedValues<T: Scalar> {
    /// The pass, compiled with the plan so that recording it cannot fail on compilation.
    sync: Kernel<transposed_values::Shader>,
    /// The transpose's entry of each of A's entries (kept with A's analyses).
    inverse: Arc<InversePermutation>,
    /// A's values as the last run copied them, in A's order.
    seen: GpuVec<T>,
    /// The same values in the transpose's order.
    ordered: GpuVec<T>,
}

impl<T: Scalar> OrderedValues<T> {
    fn new(ctx: &Context, a: &GpuSparse<T>, transpose: &Transpose) -> Result<Self> {
        let inverse = InversePermutation::of(ctx, a, transpose)?;
        Ok(OrderedValues {
            sync: ctx.plain_kernel(Default::default(), Default::default())?,
            inverse,
            seen: ctx.zeros(a.nnz())?,
            ordered: ctx.zeros(a.nnz())?,
        })
    }

    fn byte_len(&self) -> u64 {
        crate::matrix::Analysis::device_bytes(&*self.inverse) + self.seen.byte_len() + self.ordered.byte_len()
    }

    /// Records the pass that brings `ordered` up to A's values.
    fn record_sync(&self, rec: &mut Recorder<'_, '_>, a: &GpuSparse<T>) -> Result<()> {
        let Some(panel) = a.panels().first() else {
            return Ok(());
        };
        let PanelStorage::Csr(csr) = panel.storage() else {
            return Err(Error::Validation("spmm: a panel that is not CSR".into()));
        };
        let words_per_value = (T::KIND.size() / 4) as u32;
        let (words, bytes) = (csr.nnz() as u64 * words_per_value as u64, csr.nnz() as u64 * T::KIND.size());
        if words == 0 {
            return Ok(());
        }
        let bindings = transposed_values::Bindings {
            values: csr.values().bind().reinterpret(bytes),
            inverse: self.inverse.inverse.bind(),
            seen: self.seen.bind().reinterpret(bytes),
            ordered: self.ordered.bind().reinterpret(bytes),
        };
        let params = transposed_values::Params { words: words as u32, words_per_value };
        rec.dispatch_items(&self.sync, params, bindings, words)
    }
}

/// A block of rows with its decomposition (`None` for the row-group baseline) and the rows
/// each slot takes (more than one only where no row is split).
struct Block {
    rows: RowBlock,
    split: Option<Arc<RowSplit>>,
    group_rows: u32,
}

impl<T: Scalar> std::fmt::Debug for Spmm<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Spmm")
            .field("algorithm", &self.algorithm)
            .field("transposed", &self.transpose.is_some())
            .field("k", &self.k)
            .field("row_parts", &self.row_parts)
            .field("matrix", &self.matrix)
            .finish()
    }
}

impl<T: Scalar> Spmm<T> {
    /// Plans `C ← α·A·B + β·C` for `a` (CSR) and B, C of `k` columns.
    pub fn new(ctx: &Context, a: &GpuSparse<T>, k: usize, algorithm: SpmmAlgorithm) -> Result<Self> {
        Self::with_options(ctx, a, k, algorithm, &SpmmOptions::default())
    }

    /// [`Spmm::new`] with tuning knobs.
    pub fn with_options(
        ctx: &Context,
        a: &GpuSparse<T>,
        k: usize,
        algorithm: SpmmAlgorithm,
        options: &SpmmOptions,
    ) -> Result<Self> {
        Self::plan(ctx, a, false, k, algorithm, options)
    }

    /// Plans `C ← α·Aᵀ·B + β·C` for `a` (CSR, m × n), B m × k and C n × k. The first plan
    /// on a pattern builds its transpose on the GPU (a stable sort of the entries by column:
    /// each row of the transpose keeps A's row order, so the sums are deterministic) and
    /// keeps it with A's analyses, pattern only. Every run sees A's values as they are when
    /// it runs, however they were written; [`SpmmOptions::transposed_reads`] says how they
    /// are read. On a small matrix (values up to 4 MiB) the product reads them through the
    /// transpose's permutation. On a larger one the plan keeps them in the transpose's
    /// order, brought up to date before every run by a pass that reads A's values in order
    /// and copies only those that changed (bit for bit): unchanged values cost that pass two
    /// ordered reads, a changed value a scattered write. The transpose's bytes and those
    /// copies' (an index and two values an entry) are [`Spmm::transpose_bytes`]. A in more
    /// than one panel is refused ([`Error::LimitExceeded`]).
    pub fn transposed(ctx: &Context, a: &GpuSparse<T>, k: usize, algorithm: SpmmAlgorithm) -> Result<Self> {
        Self::transposed_with_options(ctx, a, k, algorithm, &SpmmOptions::default())
    }

    /// [`Spmm::transposed`] with tuning knobs.
    pub fn transposed_with_options(
        ctx: &Context,
        a: &GpuSparse<T>,
        k: usize,
        algorithm: SpmmAlgorithm,
        options: &SpmmOptions,
    ) -> Result<Self> {
        Self::plan(ctx, a, true, k, algorithm, options)
    }

    fn plan(
        ctx: &Context,
        a: &GpuSparse<T>,
        transposed: bool,
        k: usize,
        algorithm: SpmmAlgorithm,
        options: &SpmmOptions,
    ) -> Result<Self> {
        Operands::new(ctx, "spmm")?.owned("the matrix", a.device_id())?;
        check_width("SpMM", k)?;
        if a.format() != Format::Csr {
            return Err(Error::InvalidArgument(format!("SpMM reads CSR matrices, this one is {}", a.format().name())));
        }
        let algorithm = if algorithm == SpmmAlgorithm::Auto { SpmmAlgorithm::Rode } else { algorithm };
        if !algorithm.supports::<T>() {
            return Err(Error::Unsupported(format!(
                "SpMM algorithm {} has no {} kernel",
                algorithm.name(),
                T::KIND.name()
            )));
        }
        // A plan of Aᵀ·B sizes its chunks by A's columns once every option is checked (below).
        let chunk_len = if transposed { longest_chunk(k) } else { default_chunk_len(a.stats(), k) };
        let mut shape = TileShape::resolve(ctx, "SpmmOptions", options, k, chunk_len, false)?;
        let col_tiles = k.div_ceil(4 * shape.lanes as usize).max(1) as u32;
        let chunked = algorithm != SpmmAlgorithm::RowGroup;
        // Every option is checked before any work on the GPU.
        if let Some(r) = options.group_rows.filter(|r| !(1..=1024).contains(r)) {
            return Err(Error::InvalidArgument(format!("SpmmOptions: group_rows {r} must be 1 to 1024")));
        }
        if !transposed && options.transposed_reads.is_some() {
            return Err(Error::InvalidArgument("SpmmOptions: transposed_reads is for plans of Aᵀ·B".into()));
        }
        check_row_parts::<T>(ctx, options, &shape, chunked)?;
        if transposed && options.chunk_len.is_none() {
            let chunk_len = transposed_chunk_len(ctx, a, k)?;
            shape = TileShape::resolve(ctx, "SpmmOptions", options, k, chunk_len, false)?;
        }
        let (op_rows, op_cols) = op_shape(a, transposed);
        let group_rows = match (options.group_rows, options.row_parts) {
            (Some(r), _) => r,
            // Rows shared by slots are one-row groups.
            (None, Some(parts)) if parts > 1 => 1,
            // Two tiles of entries per group, at the mean row length, while the groups are
            // enough to fill a large GPU (a group's rows run one after another: on small
            // matrices grouping cost 2–4×, H100, `494_bus`, `Pd`, `bcsstk13` at k = 128).
            (None, _) => {
                let mean = a.nnz() as f64 / op_rows.max(1) as f64;
                let by_length = (2.0 * shape.lanes as f64 / mean.max(1.0)).round().clamp(1.0, 64.0);
                by_length.min((op_rows / MIN_TASKS).max(1) as f64) as u32
            }
        };
        // A slot walks its segment (a group's rows, or a chunk), a tile of `lanes` entries a
        // round in steps of four, and steps past each of its rows (where the adapter caps
        // that, refused before any work on the GPU).
        let longest = if transposed { a.rows() } else { a.stats().max_len } as u64;
        let row_len = if chunked { longest.min(shape.chunk_len as u64) } else { longest };
        let (most_rows, lanes) = (group_rows as u64, shape.lanes as u64);
        let segment = (most_rows * row_len).min(a.nnz() as u64);
        let walk = segment.div_ceil(lanes) * (2 + lanes.div_ceil(4)) + most_rows + 8;
        let what = || format!("SpMM ({}) on segments of {most_rows} rows of up to {row_len} entries", algorithm.name());
        ctx.check_loop_iterations(what, walk)?;
        let transpose = match transposed {
            true => {
                let pattern = Transpose::of(ctx, a)?;
                let value_bytes = a.nnz() as u64 * T::KIND.size();
                let ordered = match options.transposed_reads.unwrap_or(TransposedReads::default_for(value_bytes)) {
                    TransposedReads::Ordered => Some(OrderedValues::new(ctx, a, &pattern)?),
                    TransposedReads::Permuted => None,
                };
                Some(TransposedA { pattern, ordered })
            }
            false => None,
        };
        // B and C have k columns: the same panels.
        let c_panel_rows = GpuDense::<T>::panel_rows_for(ctx, k)?;
        let paneled_b = c_panel_rows < op_cols;
        let mut blocks = Vec::new();
        let mut scratch_len = 1;
        let row_blocks = match transpose {
            Some(_) => blocks_of(0, 0..op_rows, c_panel_rows),
            None => row_blocks(a, c_panel_rows),
        };
        for rows in row_blocks {
            let split = if chunked {
                let (max_len, chunk_len) = (shape.chunk_len, shape.chunk_len);
                let split = match &transpose {
                    Some(t) => transpose_split(ctx, a, &t.pattern, &rows, max_len, chunk_len)?,
                    None => block_split(ctx, a, &rows, max_len, chunk_len)?,
                };
                let per_k = match algorithm {
                    SpmmAlgorithm::RodeAtomic => split.long_row_count(),
                    _ => split.chunk_count(),
                };
                scratch_len = scratch_len.max(per_k * k);
                Some(split)
            } else {
                None
            };
            let group_rows = match &split {
                Some(split) if split.long_row_count() == 0 => group_rows,
                _ => 1,
            };
            blocks.push(Block { rows, split, group_rows });
        }
        let grouped = blocks.iter().any(|b| b.group_rows > 1);
        let row_parts = match options.row_parts {
            Some(parts) => parts,
            None if chunked && !grouped => default_row_parts::<T>(ctx, &shape, a.nnz(), op_rows, col_tiles as usize),
            None => 1,
        };
        let overrides = kernel::Overrides { wg_size: shape.workgroup_size, lanes: shape.lanes, parts: row_parts };
        let flags = |finish| kernel::Flags {
            atomic: algorithm == SpmmAlgorithm::RodeAtomic,
            finish,
            gather_panels: paneled_b,
            permuted: transpose.as_ref().is_some_and(|t| t.ordered.is_none()),
            grouped,
            split_rows: row_parts > 1,
        };
        Ok(Spmm {
            main: ctx.kernel::<kernel::Shader, T>(flags(false), overrides)?,
            finish: ctx.kernel::<kernel::Shader, T>(flags(true), overrides)?,
            ctx: ctx.clone(),
            matrix: a.clone(),
            transpose,
            algorithm,
            k,
            shape,
            col_tiles,
            row_parts,
            paneled_b,
            blocks,
            scratch: ctx.zeros(scratch_len)?,
            unused: Unused::new(ctx)?,
        })
    }

    /// The algorithm in use (never `Auto`).
    pub fn algorithm(&self) -> SpmmAlgorithm {
        self.algorithm
    }

    /// Slots that share each row ([`SpmmOptions::row_parts`]; 1: a slot per row).
    pub fn row_parts(&self) -> u32 {
        self.row_parts
    }

    /// Whether the plan computes `Aᵀ·B`.
    pub fn is_transposed(&self) -> bool {
        self.transpose.is_some()
    }

    /// How a plan of `Aᵀ·B` reads A's values (`None` for a plan of `A·B`).
    pub fn transposed_reads(&self) -> Option<TransposedReads> {
        self.transpose.as_ref().map(TransposedA::reads)
    }

    /// Device bytes of the transpose a transposed plan runs on: its pattern (kept with A's
    /// analyses, shared by every transposed plan of the pattern) and, where the plan reads
    /// A's values from its ordered copy ([`TransposedReads::Ordered`]), the inverse
    /// permutation (kept with A's analyses too) and the plan's two copies of the values:
    /// 4 + 2·size bytes an entry more. 0 for a plan of `A·B`. Not counted in
    /// [`Spmm::extra_bytes`].
    pub fn transpose_bytes(&self) -> u64 {
        self.transpose.as_ref().map_or(0, |t| {
            crate::matrix::Analysis::device_bytes(&*t.pattern) + t.ordered.as_ref().map_or(0, OrderedValues::byte_len)
        })
    }

    /// Device bytes this plan allocated beyond A, B, C and A's transpose (shared analyses
    /// included).
    pub fn extra_bytes(&self) -> u64 {
        let splits: u64 = self
            .blocks
            .iter()
            .filter_map(|b| b.split.as_ref())
            .map(|s| crate::matrix::Analysis::device_bytes(&**s))
            .sum();
        splits + self.scratch.byte_len() + self.unused.byte_len()
    }

    /// Records `C ← α·A·B + β·C`. α and β are host values or device scalars. Everything is
    /// checked before anything is recorded: a refused call leaves the recorder as it was.
    pub fn record<'s>(
        &self,
        rec: &mut Recorder<'_, '_>,
        alpha: impl Into<ScalarArg<'s, T>>,
        b: &GpuDense<T>,
        beta: impl Into<ScalarArg<'s, T>>,
        c: &mut GpuDense<T>,
    ) -> Result<()> {
        let (alpha, beta) = (alpha.into(), beta.into());
        Operands::new(rec.context(), "spmm")?
            .owned("the plan", self.ctx.id())?
            .scalar("alpha", &alpha)?
            .scalar("beta", &beta)?
            .dense_input("B", b)?
            .dense_output("C", c)?;
        let (op_rows, op_cols) = op_shape(&self.matrix, self.transpose.is_some());
        check_len("spmm", "B rows", op_cols, b.rows())?;
        check_len("spmm", "B columns", self.k, b.cols())?;
        check_len("spmm", "C rows", op_rows, c.rows())?;
        check_len("spmm", "C columns", self.k, c.cols())?;
        check_row_major("spmm", "B", b)?;
        check_row_major("spmm", "C", c)?;
        let gathered = Gathered::of("spmm", b)?;
        if gathered.paneled != self.paneled_b {
            return Err(Error::InvalidArgument("spmm: B's panels are not those of the plan's device".into()));
        }
        if self.k == 0 {
            return Ok(());
        }
        let ctx = rec.context().clone();
        let scaling = ScalarBinds::new(&ctx, alpha, beta)?;
        let ordered = self.transpose.as_ref().and_then(|t| t.ordered.as_ref());
        if let (Some(ordered), false) = (ordered, scaling.host_alpha() == Some(T::default())) {
            ordered.record_sync(rec, &self.matrix)?;
        }
        for block in &self.blocks {
            let rows = &block.rows;
            let c_rows = c.bind_rows(rows.rows.clone());
            if scaling.host_alpha() == Some(T::default()) {
                blas1::scale_range(
                    rec,
                    &scaling.beta_as_alpha(),
                    c_rows,
                    rows.rows.len() * self.k,
                    blas1::Fill::Scale,
                )?;
                continue;
            }
            let source = self.rows_of(rows)?;
            let (chunks, long_rows) = match &block.split {
                Some(s) => (s.chunk_count(), s.long_row_count()),
                None => (0, 0),
            };
            let chunk_tasks = (chunks * self.col_tiles as usize) as u64;
            let chunk_workgroups = self.shape.workgroups(chunk_tasks);
            let groups = rows.local.len().div_ceil(block.group_rows as usize);
            let row_workgroups =
                self.shape.workgroups((groups * self.col_tiles as usize) as u64 * self.row_parts as u64);
            let (max_len, chunk_len) = match block.split {
                Some(_) => (self.shape.chunk_len, self.shape.chunk_len),
                None => (u32::MAX, u32::MAX),
            };
            let params = kernel::Params {
                rows: rows.local.len() as u32,
                k: self.k as u32,
                max_len,
                chunk_len,
                chunks: chunks as u32,
                chunk_workgroups: chunk_workgroups as u32,
                col_tiles: self.col_tiles,
                long_rows: long_rows as u32,
                gather_panel_rows: gathered.panel_rows,
                group_rows: block.group_rows,
                scaling: scaling.params,
            };
            let [gather0, gather1, gather2, gather3] = gathered.panels;
            let atomic = self.algorithm == SpmmAlgorithm::RodeAtomic;
            let bindings = kernel::Bindings {
                row_offsets: source.row_offsets.bind_range(rows.local.start..rows.local.end + 1),
                col_indices: source.col_indices.bind(),
                values: source.values.bind(),
                perm: source.perm.bind(),
                gather0,
                gather1,
                gather2,
                gather3,
                chunks: block.split.as_ref().map_or(self.unused.chunks.bind(), |s| s.chunks.bind()),
                long_rows: block.split.as_ref().map_or(self.unused.long_rows.bind(), |s| s.long_rows.bind()),
                alpha_dev: scaling.alpha_dev,
                beta_dev: scaling.beta_dev,
                c: c_rows,
                partials: if atomic { self.unused.partials.bind() } else { self.scratch.bind() },
                sums: if atomic {
                    self.scratch.bind().reinterpret(self.scratch.byte_len())
                } else {
                    self.unused.sums.bind()
                },
            };
            if atomic && long_rows > 0 {
                let zero = ScalarBinds::new(&ctx, ScalarArg::Host(T::default()), ScalarArg::Host(T::default()))?;
                blas1::scale_range(rec, &zero, self.scratch.bind(), long_rows * self.k, blas1::Fill::Value)?;
            }
            rec.dispatch(&self.main, params, bindings, chunk_workgroups + row_workgroups)?;
            if long_rows > 0 {
                // A workgroup per long row and column tile.
                rec.dispatch(&self.finish, params, bindings, long_rows as u64 * self.col_tiles as u64)?;
            }
        }
        Ok(())
    }

    /// The CSR arrays the kernels walk for `block`: its panel of A, or A's transpose.
    fn rows_of(&self, block: &RowBlock) -> Result<RowSource<'_, T>> {
        let a = match self.matrix.panels().get(block.panel).map(|p| p.storage()) {
            Some(PanelStorage::Csr(a)) => Some(a),
            Some(_) => return Err(Error::Validation("spmm: a panel that is not CSR".into())),
            // The transpose of a matrix with no rows has no panel.
            None => None,
        };
        if let Some(t) = &self.transpose {
            let values = match (&t.ordered, a) {
                (Some(ordered), _) => &ordered.ordered,
                (None, Some(a)) => a.values(),
                (None, None) => &self.unused.values,
            };
            let (row_offsets, col_indices) = (&t.pattern.row_offsets, &t.pattern.col_indices);
            return Ok(RowSource { row_offsets, col_indices, values, perm: &t.pattern.perm });
        }
        let a = a.ok_or_else(|| Error::Validation("spmm: a block past A's panels".into()))?;
        Ok(RowSource {
            row_offsets: a.row_offsets(),
            col_indices: a.col_indices(),
            values: a.values(),
            perm: &self.unused.perm,
        })
    }

    /// Records and submits the product; returns without waiting for the GPU.
    pub fn run<'s>(
        &self,
        alpha: impl Into<ScalarArg<'s, T>>,
        b: &GpuDense<T>,
        beta: impl Into<ScalarArg<'s, T>>,
        c: &mut GpuDense<T>,
    ) -> Result<()> {
        let mut batch = self.ctx.batch();
        self.record(&mut batch.recorder(), alpha, b, beta, c)?;
        batch.submit()
    }
}

/// The CSR arrays of the rows a block walks, and the permutation its values are read
/// through (used only by a plan of `Aᵀ·B` that reads them so).
struct RowSource<'a, T: Scalar> {
    row_offsets: &'a GpuVec<u32>,
    col_indices: &'a GpuVec<u32>,
    values: &'a GpuVec<T>,
    perm: &'a GpuVec<u32>,
}

/// Rows and columns of `op(A)`.
fn op_shape<T: Scalar>(a: &GpuSparse<T>, transposed: bool) -> (usize, usize) {
    if transposed {
        (a.cols(), a.rows())
    } else {
        (a.rows(), a.cols())
    }
}

/// Checks a row_parts option ([`SpmmOptions::row_parts`]): a power of two within a
/// workgroup's slots, for RoDe, with one-row groups, and within the device's workgroup memory.
fn check_row_parts<T: Scalar>(ctx: &Context, options: &SpmmOptions, shape: &TileShape, chunked: bool) -> Result<()> {
    let Some(parts) = options.row_parts else {
        return Ok(());
    };
    let slots = shape.slots() as u32;
    let refuse = |why: String| Err(Error::InvalidArgument(format!("SpmmOptions: row_parts {why}")));
    if !parts.is_power_of_two() || parts > slots {
        return refuse(format!("{parts} must be a power of two up to {slots} (the slots of a workgroup)"));
    }
    if parts == 1 {
        return Ok(());
    }
    if !chunked {
        return refuse("is RoDe's: the row-group baseline takes a slot per row".into());
    }
    if options.group_rows.is_some_and(|r| r > 1) {
        return refuse("needs one-row groups (group_rows 1)".into());
    }
    let (needed, max) = (split_rows_storage::<T>(ctx, shape), ctx.limits().max_compute_workgroup_storage_size as u64);
    if needed > max {
        return Err(Error::LimitExceeded {
            what: format!("SpMM with rows shared by {parts} slots ({} invocations)", shape.workgroup_size),
            limit: "max_compute_workgroup_storage_size",
            requested: needed,
            max,
        });
    }
    Ok(())
}

/// RoDe's chunk length where [`SpmmOptions::chunk_len`] is not set, for rows of these
/// statistics: 512, or 8·k when that is more (its chunks' scratch, `chunks × k` elements,
/// then stays within 1/16 of A's bytes in f32). Shorter where rows are skewed (standard
/// deviation of the lengths past the mean) on a matrix too small for nnz/[`MIN_TASKS`] to
/// reach that: a chunk walks its entries one after another and a long row's chunk sums are
/// added one after another, so the two chains balance near √(longest row) entries a chunk;
/// at least 64, and nnz/`MIN_TASKS` where that is more. H200, k = 32 / 128 (benches/NOTES.md,
/// session 68): a row of 1,024 among 4,096 66.9 / 108.3 µs at 512 against 17.7 / 19.6 at 64;
/// rajat01 (1,442) 69.0 / 116.8 against 19.8 / 22.7; a row of 16,384 among 65,536 99.5 /
/// 183.6 against 39.6 / 60.2 at 128.
fn default_chunk_len(stats: &RowStats, k: usize) -> u64 {
    let most = longest_chunk(k);
    if stats.std_dev <= stats.mean {
        return most;
    }
    let by_tasks = (stats.nnz as u64).div_ceil(MIN_TASKS as u64);
    let by_longest = (stats.max_len as f64).sqrt().ceil() as u64;
    by_tasks.max(by_longest).next_power_of_two().clamp(SKEWED_CHUNK_LEAST, most)
}

/// The default chunk without skew: 512, or 8·k when that is more.
fn longest_chunk(k: usize) -> u64 {
    512u64.max((k as u64).saturating_mul(8))
}

/// [`default_chunk_len`] for a plan of `Aᵀ·B`, whose rows are A's columns: their statistics
/// come from the transpose's row offsets, read back once per pattern (kept with the
/// transpose), and only where the rule could shorten the chunks (nnz/[`MIN_TASKS`] below
/// the longest chunk) and the offsets are at most 16 MiB.
fn transposed_chunk_len<T: Scalar>(ctx: &Context, a: &GpuSparse<T>, k: usize) -> Result<u64> {
    let small = (a.nnz() as u64).div_ceil(MIN_TASKS as u64) < longest_chunk(k);
    if !small || a.cols() > TRANSPOSE_STATS_MOST_COLS || a.panel_count() > 1 {
        return Ok(longest_chunk(k));
    }
    Ok(default_chunk_len(&Transpose::of(ctx, a)?.row_stats()?, k))
}

/// The most columns whose counts a plan of `Aᵀ·B` reads back to pick its chunks.
const TRANSPOSE_STATS_MOST_COLS: usize = 1 << 22;

/// The shortest chunk [`default_chunk_len`] gives skewed rows: the shortest measured (session
/// 68); shorter chunks lengthen the chain that adds a long row's chunk sums.
const SKEWED_CHUNK_LEAST: u64 = 64;

/// Workgroup memory of the SpMM kernel with rows shared by slots: the parts' sums (4 values a
/// lane), and without subgroups the two tiles of staged entries (`shared/slots.wgsl`).
fn split_rows_storage<T: Scalar>(ctx: &Context, shape: &TileShape) -> u64 {
    let (lanes, size) = (shape.workgroup_size as u64, T::KIND.size());
    let tiles = if ctx.subgroup_size_range().is_some() { 0 } else { 2 * lanes * (4 + size) + 8 };
    4 * lanes * size + tiles
}

/// The default slots per row ([`SpmmOptions::row_parts`]) for a matrix of `rows` one-row
/// groups of `nnz` entries in all, each taken once per tile of C's columns (`col_tiles`):
/// where the tasks (rows × column tiles) are at most [`MIN_TASKS`] / 2, as many as bring
/// them to [`MIN_TASKS`], leaving each part of a mean row two batches of gathers (8 entries)
/// at least, within a workgroup's slots and its memory (else 1).
fn default_row_parts<T: Scalar>(ctx: &Context, shape: &TileShape, nnz: usize, rows: usize, col_tiles: usize) -> u32 {
    if rows == 0 || split_rows_storage::<T>(ctx, shape) > ctx.limits().max_compute_workgroup_storage_size as u64 {
        return 1;
    }
    let by_tasks = MIN_TASKS / (rows * col_tiles).max(1);
    let by_length = nnz / rows / 8;
    let parts = by_tasks.min(by_length).min(shape.slots() as usize).max(1) as u32;
    1 << parts.ilog2()
}

#[cfg(test)]
mod tests {
    use super::{default_chunk_len, transposed_chunk_len};
    use crate::generate;
    use crate::{Context, ContextOptions, Conversion, GpuSparse};

    /// RoDe's default chunk: 512 (8·k past 64) on regular rows and large matrices; on small
    /// matrices of skewed rows √(longest row) as a power of two from 64, or nnz/16,384 where
    /// more; for Aᵀ·B by A's columns (the transpose's rows).
    #[test]
    fn chunks_shorten_on_small_matrices_of_skewed_rows() {
        let ctx = Context::new_blocking(ContextOptions::from_env().unwrap()).unwrap();
        let upload = |a| GpuSparse::<f32>::from_csr(&ctx, &a, Conversion::Csr).unwrap();
        let chunk = |a: &GpuSparse<f32>, k| default_chunk_len(a.stats(), k);
        let one_long_row = upload(generate::dense_row_mix(4096, 1024, 1));
        assert_eq!(chunk(&one_long_row, 32), 64);
        // Its columns are not skewed; a long column is.
        assert_eq!(transposed_chunk_len(&ctx, &one_long_row, 32).unwrap(), 512);
        let one_long_column = upload(generate::dense_row_mix(4096, 1024, 1).transpose());
        assert_eq!(chunk(&one_long_column, 32), 512);
        assert_eq!(transposed_chunk_len(&ctx, &one_long_column, 32).unwrap(), 64);
        assert_eq!(chunk(&upload(generate::dense_row_mix(65_536, 16_384, 1)), 128), 128);
        // Over 2 M entries: nnz/16,384 rounds up to 256, past √4,096.
        let many_entries = upload(generate::dense_row_mix(1 << 20, 4096, 1));
        assert_eq!(chunk(&many_entries, 32), 256);
        let regular = upload(generate::laplacian_2d(64));
        assert_eq!(chunk(&regular, 32), 512);
        assert_eq!(chunk(&regular, 128), 1024);
    }
}
