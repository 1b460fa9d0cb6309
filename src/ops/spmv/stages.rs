//! The dispatches behind each SpMV algorithm, with their scratch buffers.

use std::sync::Arc;

use bytemuck::{Pod, Zeroable};

use super::{SpmvAlgorithm, SpmvOptions};
use crate::gpu::{Context, EllIndices, GpuCoo, GpuCsr, GpuEll, GpuVec, Storage, VecSlice};
use crate::pipeline::registry::{ids, ShaderId};
use crate::pipeline::{Kernel, KernelKey};
use crate::Result;

/// Bytes of one `Carry { row: u32, value: f32 }`.
type CarryBits = [u32; 2];

#[repr(C)]
#[derive(Clone, Copy, Pod, Zeroable)]
struct RowsParams {
    rows: u32,
    alpha: f32,
    beta: f32,
    _pad: u32,
}

#[repr(C)]
#[derive(Clone, Copy, Pod, Zeroable)]
struct SplitParams {
    rows: u32,
    max_len: u32,
    chunk_workgroups: u32,
    chunks: u32,
    chunk_len: u32,
    alpha: f32,
    beta: f32,
    _pad: u32,
}

#[repr(C)]
#[derive(Clone, Copy, Pod, Zeroable)]
struct LongRowsParams {
    long_rows: u32,
    alpha: f32,
    beta: f32,
    _pad: u32,
}

#[repr(C)]
#[derive(Clone, Copy, Pod, Zeroable)]
struct ScaleParams {
    len: u32,
    beta: f32,
    _pad: [u32; 2],
}

#[repr(C)]
#[derive(Clone, Copy, Pod, Zeroable)]
struct PartitionParams {
    rows: u32,
    nnz: u32,
    boundaries: u32,
    tile: u32,
}

#[repr(C)]
#[derive(Clone, Copy, Pod, Zeroable)]
struct MergeParams {
    rows: u32,
    nnz: u32,
    tiles: u32,
    alpha: f32,
    beta: f32,
    _pad: [u32; 3],
}

#[repr(C)]
#[derive(Clone, Copy, Pod, Zeroable)]
struct FixupParams {
    count: u32,
    rows: u32,
    alpha: f32,
    _pad: u32,
}

#[repr(C)]
#[derive(Clone, Copy, Pod, Zeroable)]
struct CooParams {
    nnz: u32,
    intervals: u32,
    interval_len: u32,
    alpha: f32,
}

#[repr(C)]
#[derive(Clone, Copy, Pod, Zeroable)]
struct AtomicParams {
    nnz: u32,
    alpha: f32,
    _pad: [u32; 2],
}

#[repr(C)]
#[derive(Clone, Copy, Pod, Zeroable)]
struct EllParams {
    rows: u32,
    width: u32,
    alpha: f32,
    beta: f32,
    first_row: u32,
    index_stride: u32,
    _pad: [u32; 2],
}

/// The kernels and scratch of one planned algorithm.
#[derive(Debug)]
pub(super) struct Stages {
    scale: Arc<Kernel>,
    kind: Kind,
}

#[derive(Debug)]
enum Kind {
    /// CsrThread and CsrVector: one dispatch over rows.
    CsrRows {
        kernel: Arc<Kernel>,
        rows_per_workgroup: u32,
    },
    CsrMerge {
        kernel: Arc<Kernel>,
        tile_rows: GpuVec<u32>,
        carries: Carries,
    },
    CsrSplit(CsrSplit),
    CooSegmented(CooSegmented),
    CooAtomic {
        kernel: Arc<Kernel>,
    },
    Ell {
        kernel: Arc<Kernel>,
    },
    Hyb {
        ell: Arc<Kernel>,
        coo: CooSegmented,
    },
}

/// Per-tile (or per-interval) carries and the kernel that reduces them into y.
#[derive(Debug)]
struct Carries {
    buffer: GpuVec<CarryBits>,
    fixup: Arc<Kernel>,
}

#[derive(Debug)]
struct CooSegmented {
    kernel: Arc<Kernel>,
    /// One carry per interval.
    carries: Carries,
    interval_len: u32,
    groups: Groups,
}

impl Stages {
    pub(super) fn new(ctx: &Context, a: &Storage, algorithm: SpmvAlgorithm, options: &SpmvOptions) -> Result<Self> {
        let cache = &ctx.inner.pipelines;
        let wg = options.workgroup_size_for(ctx, algorithm);
        let scale = cache.get(ctx, &KernelKey::new(ids::SCALE_VECTOR).constant("WG_SIZE", wg))?;
        // Matrices reach the GPU only through validated host formats, so every index the
        // kernels follow is in bounds: naga's checks can go.
        let key = |shader| KernelKey::new(shader).constant("WG_SIZE", wg).unchecked();
        let kind = match (a, algorithm) {
            (Storage::Csr(_), SpmvAlgorithm::CsrThread) => {
                Kind::CsrRows { kernel: cache.get(ctx, &key(ids::SPMV_CSR_THREAD))?, rows_per_workgroup: wg }
            }
            (Storage::Csr(m), SpmvAlgorithm::CsrVector) => {
                let lanes = options.vector_lanes.unwrap_or_else(|| vector_lanes(ctx, wg, m.stats.mean));
                let kernel = cache.get(ctx, &key(ids::SPMV_CSR_VECTOR).subgroups(ctx).constant("GROUP", lanes))?;
                Kind::CsrRows { kernel, rows_per_workgroup: wg / lanes }
            }
            (Storage::Csr(m), SpmvAlgorithm::CsrMerge) => plan_merge(ctx, m, wg, options)?,
            (Storage::Csr(m), SpmvAlgorithm::CsrSplit) => Kind::CsrSplit(CsrSplit::new(ctx, m, wg, options)?),
            (Storage::Coo(m), SpmvAlgorithm::CooSegmented) => {
                Kind::CooSegmented(CooSegmented::new(ctx, m, wg, options)?)
            }
            (Storage::Coo(_), SpmvAlgorithm::CooAtomic) => {
                Kind::CooAtomic { kernel: cache.get(ctx, &key(ids::SPMV_COO_ATOMIC).subgroups(ctx))? }
            }
            (Storage::Ell(m), SpmvAlgorithm::Ell) => Kind::Ell { kernel: cache.get(ctx, &ell_key(key, m))? },
            (Storage::Hyb(m), SpmvAlgorithm::Hyb) => Kind::Hyb {
                ell: cache.get(ctx, &ell_key(key, &m.ell))?,
                coo: CooSegmented::new(ctx, &m.coo, wg, options)?,
            },
            _ => unreachable!("Spmv::new checked that the algorithm reads the matrix's format"),
        };
        Ok(Stages { scale, kind })
    }

    pub(super) fn extra_bytes(&self) -> u64 {
        match &self.kind {
            Kind::CsrMerge { tile_rows, carries, .. } => tile_rows.byte_len() + carries.buffer.byte_len(),
            Kind::CooSegmented(c) | Kind::Hyb { coo: c, .. } => c.carries.buffer.byte_len(),
            Kind::CsrSplit(s) => s.chunks.byte_len() + s.long_rows.byte_len() + s.partials.byte_len(),
            Kind::CsrRows { .. } | Kind::CooAtomic { .. } | Kind::Ell { .. } => 0,
        }
    }

    /// y ← β·y.
    pub(super) fn encode_scale(
        &self,
        ctx: &Context,
        pass: &mut wgpu::ComputePass<'_>,
        beta: f32,
        y: VecSlice<'_>,
    ) -> Result<()> {
        let params = ScaleParams { len: y.len() as u32, beta, _pad: [0; 2] };
        let bind = self.scale.bind(ctx, &params, &[("y", y.binding())])?;
        self.scale.dispatch_items(ctx, pass, &bind, y.len() as u64)
    }

    #[allow(clippy::too_many_arguments)]
    pub(super) fn encode(
        &self,
        ctx: &Context,
        pass: &mut wgpu::ComputePass<'_>,
        matrix: &Storage,
        alpha: f32,
        x: &GpuVec<f32>,
        beta: f32,
        y: VecSlice<'_>,
    ) -> Result<()> {
        match (&self.kind, matrix) {
            (Kind::CsrRows { kernel, rows_per_workgroup }, Storage::Csr(a)) => {
                let params = RowsParams { rows: a.rows as u32, alpha, beta, _pad: 0 };
                let bind = kernel.bind(ctx, &params, &csr_bindings(a, x, y))?;
                kernel.dispatch(ctx, pass, &bind, (a.rows as u64).div_ceil(*rows_per_workgroup as u64))
            }
            (Kind::CsrSplit(split), Storage::Csr(a)) => split.encode(ctx, pass, a, alpha, x, beta, y),
            (Kind::CsrMerge { kernel, tile_rows, carries }, Storage::Csr(a)) => {
                let tiles = carries.buffer.len() as u32;
                let nnz = a.col_indices.len() as u32;
                let params = MergeParams { rows: a.rows as u32, nnz, tiles, alpha, beta, _pad: [0; 3] };
                let [offsets, cols, vals, xb, yb] = csr_bindings(a, x, y);
                let bindings = [
                    offsets,
                    cols,
                    vals,
                    xb,
                    ("tile_rows", tile_rows.binding()),
                    yb,
                    ("carries", carries.buffer.binding()),
                ];
                let bind = kernel.bind(ctx, &params, &bindings)?;
                kernel.dispatch(ctx, pass, &bind, tiles as u64)?;
                carries.encode_fixup(ctx, pass, a.rows, alpha, y)
            }
            (Kind::CooSegmented(c), Storage::Coo(a)) => {
                self.encode_scale(ctx, pass, beta, y)?;
                c.encode(ctx, pass, a, alpha, x, y)
            }
            (Kind::CooAtomic { kernel }, Storage::Coo(a)) => {
                self.encode_scale(ctx, pass, beta, y)?;
                let nnz = a.values.len() as u32;
                let params = AtomicParams { nnz, alpha, _pad: [0; 2] };
                let bind = kernel.bind(ctx, &params, &coo_bindings(a, x, y))?;
                kernel.dispatch_items(ctx, pass, &bind, nnz as u64)
            }
            (Kind::Ell { kernel }, Storage::Ell(a)) => encode_ell(ctx, pass, kernel, a, alpha, x, beta, y),
            (Kind::Hyb { ell, coo }, Storage::Hyb(a)) => {
                encode_ell(ctx, pass, ell, &a.ell, alpha, x, beta, y)?;
                coo.encode(ctx, pass, &a.coo, alpha, x, y)
            }
            _ => unreachable!("stages are planned for the matrix they run on"),
        }
    }
}

fn csr_bindings<'a>(
    a: &'a GpuCsr,
    x: &'a GpuVec<f32>,
    y: VecSlice<'a>,
) -> [(&'static str, wgpu::BufferBinding<'a>); 5] {
    [
        ("row_offsets", a.row_offsets.binding()),
        ("col_indices", a.col_indices.binding()),
        ("values", a.values.binding()),
        ("x", x.binding()),
        ("y", y.binding()),
    ]
}

fn coo_bindings<'a>(
    a: &'a GpuCoo,
    x: &'a GpuVec<f32>,
    y: VecSlice<'a>,
) -> [(&'static str, wgpu::BufferBinding<'a>); 5] {
    [
        ("row_indices", a.row_indices.binding()),
        ("col_indices", a.col_indices.binding()),
        ("values", a.values.binding()),
        ("x", x.binding()),
        ("y", y.binding()),
    ]
}

/// spmv_ell for `a`'s index encoding, with batches as equal as its width allows.
fn ell_key(key: impl Fn(ShaderId) -> KernelKey, a: &GpuEll) -> KernelKey {
    key(ids::SPMV_ELL)
        .flag("DIAGONAL_OFFSETS", matches!(a.indices, EllIndices::DiagonalOffsets { .. }))
        .constant("BATCH", ell_batch(a.width))
}

/// Slots per batch of spmv_ell (at most its MAX_BATCH of 8): `width` split into the fewest
/// batches of at most 8, as equal as can be, so that few loads re-read a clamped slot.
fn ell_batch(width: usize) -> u32 {
    const MAX_BATCH: usize = 8;
    let batches = width.div_ceil(MAX_BATCH).max(1);
    width.div_ceil(batches).max(1) as u32
}

#[allow(clippy::too_many_arguments)]
fn encode_ell(
    ctx: &Context,
    pass: &mut wgpu::ComputePass<'_>,
    kernel: &Kernel,
    a: &GpuEll,
    alpha: f32,
    x: &GpuVec<f32>,
    beta: f32,
    y: VecSlice<'_>,
) -> Result<()> {
    let (indices, first_row, index_stride) = match &a.indices {
        EllIndices::Columns(columns) => (columns, 0, 0),
        EllIndices::DiagonalOffsets { packed, first_row, stride } => (packed, *first_row, *stride),
    };
    let params =
        EllParams { rows: a.rows as u32, width: a.width as u32, alpha, beta, first_row, index_stride, _pad: [0; 2] };
    let bindings =
        [("col_indices", indices.binding()), ("values", a.values.binding()), ("x", x.binding()), ("y", y.binding())];
    let bind = kernel.bind(ctx, &params, &bindings)?;
    kernel.dispatch_items(ctx, pass, &bind, a.rows as u64)
}

/// Lanes per row for CsrVector: the mean row length rounded up to a power of two, at least
/// 4 and at most a subgroup (32 lanes without subgroups).
fn vector_lanes(ctx: &Context, wg: u32, mean_row_len: f64) -> u32 {
    let max = ctx.subgroup_size_range().map_or(32, |(min, _)| min).clamp(4, wg);
    (mean_row_len.ceil() as u32).next_power_of_two().clamp(4, max)
}

/// Partitions the merge path once (a dispatch that stays on the GPU) and allocates carries.
fn plan_merge(ctx: &Context, a: &GpuCsr, wg: u32, options: &SpmvOptions) -> Result<Kind> {
    let cache = &ctx.inner.pipelines;
    let items = options.merge_items.unwrap_or_else(|| merge_items(ctx, wg));
    let tile = wg * items;
    let nnz = a.col_indices.len() as u64;
    let tiles = (a.rows as u64 + nnz).div_ceil(tile as u64);
    let tile_rows = ctx.zeros::<u32>(tiles as usize + 1)?;
    let carries = Carries::new(ctx, tiles as usize)?;
    let partition = cache.get(ctx, &KernelKey::new(ids::SPMV_CSR_MERGE_PARTITION).unchecked())?;
    let params = PartitionParams { rows: a.rows as u32, nnz: nnz as u32, boundaries: tiles as u32 + 1, tile };
    let bind = partition.bind(
        ctx,
        &params,
        &[("row_offsets", a.row_offsets.binding()), ("tile_rows", tile_rows.binding())],
    )?;
    super::super::submit_pass(ctx, "spmv merge partition", |pass| {
        partition.dispatch_items(ctx, pass, &bind, tiles + 1)
    })?;
    let kernel = cache.get(
        ctx,
        &KernelKey::new(ids::SPMV_CSR_MERGE)
            .constant("WG_SIZE", wg)
            .constant("ITEMS", items)
            .subgroups(ctx)
            .unchecked(),
    )?;
    Ok(Kind::CsrMerge { kernel, tile_rows, carries })
}

/// Merge items per invocation: 6, or fewer where the device's workgroup memory is small.
fn merge_items(ctx: &Context, wg: u32) -> u32 {
    let budget = ctx.limits().max_compute_workgroup_storage_size as u64;
    (1..=6).rev().find(|&items| merge_workgroup_bytes(wg, items) <= budget).unwrap_or(1)
}

/// Workgroup memory of spmv_csr_merge: two arrays of wg × items words (staged entries,
/// partial sums) and four of wg (the scan's keys and sums, and the group scan's).
pub(super) fn merge_workgroup_bytes(wg: u32, items: u32) -> u64 {
    4 * (2 * wg as u64 * items as u64 + 4 * wg as u64)
}

impl Carries {
    fn new(ctx: &Context, count: usize) -> Result<Self> {
        let fixup = ctx.inner.pipelines.get(ctx, &KernelKey::new(ids::SPMV_CARRY_FIXUP))?;
        Ok(Carries { buffer: ctx.zeros(count)?, fixup })
    }

    fn encode_fixup(
        &self,
        ctx: &Context,
        pass: &mut wgpu::ComputePass<'_>,
        rows: usize,
        alpha: f32,
        y: VecSlice<'_>,
    ) -> Result<()> {
        let count = self.buffer.len() as u32;
        let params = FixupParams { count, rows: rows as u32, alpha, _pad: 0 };
        let bind = self.fixup.bind(ctx, &params, &[("carries", self.buffer.binding()), ("y", y.binding())])?;
        self.fixup.dispatch_items(ctx, pass, &bind, count as u64)
    }
}

/// How a kernel built on shared/group.wgsl splits a workgroup into groups of lanes.
#[derive(Debug)]
struct Groups {
    /// Tasks a workgroup owns (its groups take them in turn).
    tasks_per_workgroup: u32,
    /// The largest group size the kernel can meet.
    max_size: u32,
}

impl Groups {
    /// A subgroup per group when the context uses subgroups (whatever size the adapter
    /// picks in its range), else the whole workgroup.
    fn new(ctx: &Context, wg: u32) -> Self {
        match ctx.subgroup_size_range() {
            Some((min, max)) => Groups { tasks_per_workgroup: wg / min, max_size: max },
            None => Groups { tasks_per_workgroup: 1, max_size: wg },
        }
    }

    fn key(&self, ctx: &Context, shader: ShaderId, wg: u32) -> KernelKey {
        KernelKey::new(shader)
            .constant("WG_SIZE", wg)
            .constant("TASKS_PER_WORKGROUP", self.tasks_per_workgroup)
            .subgroups(ctx)
            .unchecked()
    }

    fn workgroups(&self, tasks: u64) -> u64 {
        tasks.div_ceil(self.tasks_per_workgroup as u64)
    }
}

impl CooSegmented {
    fn new(ctx: &Context, a: &GpuCoo, wg: u32, options: &SpmvOptions) -> Result<Self> {
        let groups = Groups::new(ctx, wg);
        let interval_len = groups.max_size * options.coo_steps;
        let intervals = (a.values.len() as u64).div_ceil(interval_len as u64) as u32;
        let kernel = ctx.inner.pipelines.get(ctx, &groups.key(ctx, ids::SPMV_COO_SEGMENTED, wg))?;
        Ok(CooSegmented { kernel, carries: Carries::new(ctx, intervals as usize)?, interval_len, groups })
    }

    /// Adds α·A·x into y (already scaled by β).
    fn encode(
        &self,
        ctx: &Context,
        pass: &mut wgpu::ComputePass<'_>,
        a: &GpuCoo,
        alpha: f32,
        x: &GpuVec<f32>,
        y: VecSlice<'_>,
    ) -> Result<()> {
        let intervals = self.carries.buffer.len() as u32;
        let params = CooParams { nnz: a.values.len() as u32, intervals, interval_len: self.interval_len, alpha };
        let [rows, cols, vals, xb, yb] = coo_bindings(a, x, y);
        let bindings = [rows, cols, vals, xb, yb, ("carries", self.carries.buffer.binding())];
        let bind = self.kernel.bind(ctx, &params, &bindings)?;
        self.kernel.dispatch(ctx, pass, &bind, self.groups.workgroups(intervals as u64))?;
        self.carries.encode_fixup(ctx, pass, a.rows, alpha, y)
    }
}

/// csr-split: short rows one invocation each, long rows cut into chunks of `chunk_len`
/// entries for groups of lanes (one dispatch for both), then each long row's chunk sums
/// added in order. The decomposition (RoDe's, seed 002) is made on the host from the row
/// offsets when the plan is made.
#[derive(Debug)]
struct CsrSplit {
    split: Arc<Kernel>,
    finish: Arc<Kernel>,
    groups: Groups,
    max_len: u32,
    chunk_len: u32,
    /// (row, first entry) of every chunk of every long row.
    chunks: GpuVec<[u32; 2]>,
    /// (row, first chunk) of every long row, then a sentinel holding the chunk count.
    long_rows: GpuVec<[u32; 2]>,
    partials: GpuVec<f32>,
}

impl CsrSplit {
    fn new(ctx: &Context, a: &GpuCsr, wg: u32, options: &SpmvOptions) -> Result<Self> {
        let groups = Groups::new(ctx, wg);
        let max_len = options.split_threshold;
        let chunk_len = groups.max_size * options.chunk_steps;
        let (mut chunks, mut long_rows) = (Vec::new(), Vec::new());
        for (row, w) in a.host_row_offsets.windows(2).enumerate() {
            if w[1] - w[0] > max_len {
                long_rows.push([row as u32, chunks.len() as u32]);
                chunks.extend((w[0]..w[1]).step_by(chunk_len as usize).map(|start| [row as u32, start]));
            }
        }
        long_rows.push([u32::MAX, chunks.len() as u32]);
        let cache = &ctx.inner.pipelines;
        Ok(CsrSplit {
            split: cache.get(ctx, &groups.key(ctx, ids::SPMV_CSR_SPLIT, wg))?,
            finish: cache.get(ctx, &groups.key(ctx, ids::SPMV_CSR_SPLIT_ROWS, wg))?,
            groups,
            max_len,
            chunk_len,
            partials: ctx.zeros(chunks.len())?,
            chunks: ctx.upload(&chunks)?,
            long_rows: ctx.upload(&long_rows)?,
        })
    }

    #[allow(clippy::too_many_arguments)]
    fn encode(
        &self,
        ctx: &Context,
        pass: &mut wgpu::ComputePass<'_>,
        a: &GpuCsr,
        alpha: f32,
        x: &GpuVec<f32>,
        beta: f32,
        y: VecSlice<'_>,
    ) -> Result<()> {
        let chunks = self.chunks.len() as u32;
        let row_workgroups = (a.rows as u64).div_ceil(self.split.workgroup_size as u64);
        let chunk_workgroups = self.groups.workgroups(chunks as u64);
        let params = SplitParams {
            rows: a.rows as u32,
            max_len: self.max_len,
            chunk_workgroups: chunk_workgroups as u32,
            chunks,
            chunk_len: self.chunk_len,
            alpha,
            beta,
            _pad: 0,
        };
        let [offsets, cols, vals, xb, yb] = csr_bindings(a, x, y);
        let bindings =
            [offsets, cols, vals, xb, ("chunks", self.chunks.binding()), yb, ("partials", self.partials.binding())];
        let bind = self.split.bind(ctx, &params, &bindings)?;
        self.split.dispatch(ctx, pass, &bind, chunk_workgroups + row_workgroups)?;
        let long_rows = self.long_rows.len() as u32 - 1;
        if long_rows == 0 {
            return Ok(());
        }
        let params = LongRowsParams { long_rows, alpha, beta, _pad: 0 };
        let bindings =
            [("long_rows", self.long_rows.binding()), ("partials", self.partials.binding()), ("y", y.binding())];
        let bind = self.finish.bind(ctx, &params, &bindings)?;
        self.finish.dispatch(ctx, pass, &bind, self.groups.workgroups(long_rows as u64))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shader_params_size(shader: ShaderId) -> usize {
        shader.info().variants.iter().map(|v| v.bindings[0].size as usize).max().unwrap()
    }

    /// Kernel::bind checks this on every call; this pins it without a GPU.
    #[test]
    fn ell_batches_are_as_full_as_the_width_allows() {
        let batches: Vec<u32> = [0, 1, 5, 7, 8, 9, 16, 17, 64].into_iter().map(ell_batch).collect();
        assert_eq!(batches, [1, 1, 5, 7, 8, 5, 8, 6, 8]);
    }

    #[test]
    fn host_params_structs_match_the_shaders() {
        use std::mem::size_of;
        let pairs = [
            (ids::SPMV_CSR_THREAD, size_of::<RowsParams>()),
            (ids::SPMV_CSR_SPLIT, size_of::<SplitParams>()),
            (ids::SPMV_CSR_SPLIT_ROWS, size_of::<LongRowsParams>()),
            (ids::SPMV_CSR_VECTOR, size_of::<RowsParams>()),
            (ids::SCALE_VECTOR, size_of::<ScaleParams>()),
            (ids::SPMV_CSR_MERGE_PARTITION, size_of::<PartitionParams>()),
            (ids::SPMV_CSR_MERGE, size_of::<MergeParams>()),
            (ids::SPMV_CARRY_FIXUP, size_of::<FixupParams>()),
            (ids::SPMV_COO_SEGMENTED, size_of::<CooParams>()),
            (ids::SPMV_COO_ATOMIC, size_of::<AtomicParams>()),
            (ids::SPMV_ELL, size_of::<EllParams>()),
        ];
        for (shader, host) in pairs {
            assert_eq!(host, shader_params_size(shader), "{}", shader.info().name);
        }
        let carries = ids::SPMV_CARRY_FIXUP.info().variants[0].bindings.iter().find(|b| b.name == "carries").unwrap();
        assert_eq!(size_of::<CarryBits>(), carries.size as usize, "Carry stride");
    }
}
