//! The tuning knobs of the sparse × dense ops (SpMM, SDDMM), whose kernels share one shape:
//! slots of lanes, each taking a row or a chunk of one (`shaders/shared/slots.wgsl`).

/// Tuning knobs of the SpMM and SDDMM kernels ([`SpmmOptions`](super::SpmmOptions) and
/// [`SddmmOptions`](super::SddmmOptions) name it per op). `None` takes the op's default;
/// invalid values are refused by the plan's `with_options` with
/// [`Error::InvalidArgument`](crate::Error::InvalidArgument).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct TileOptions {
    /// Invocations per workgroup: a power of two, at least the largest subgroup and 32, at
    /// most the device's limit. Default 256 with subgroups, 64 without (the workgroup is then
    /// one group of lanes, and short rows leave most of it idle).
    pub workgroup_size: Option<u32>,
    /// RoDe's `N_S`: rows longer than this are cut into chunks of this many entries; a
    /// multiple of `lanes` (SDDMM's `row-group` and `entries` have no chunks; setting it
    /// makes SDDMM's `Auto` take RoDe). Default: SpMM 512, or 8·k when that is more (its chunks'
    /// scratch, `chunks × k` elements, then stays within 1/16 of A's bytes in f32), except on
    /// small matrices of skewed rows: √(longest row) rounded up to a power of two, from 64,
    /// or nnz/16,384 where that is more (plans of `Aᵀ·B` by A's columns, whose counts they
    /// read back once per pattern, up to 2^22 columns); SDDMM 512,
    /// or nnz/16,384 rounded up to a multiple of 32 where that is less (at least 64 in f32
    /// and 32 in f64, which keeps the decomposition under 10% of A's bytes), so that small
    /// matrices still make enough tasks.
    pub chunk_len: Option<u32>,
    /// Lanes per slot, the group that takes one row or chunk: each lane takes four of SpMM's
    /// output columns, or a share of an SDDMM entry's dot product. A power of two up to the
    /// smallest subgroup (32 without subgroups). Default: k/4 rounded up to a power of two,
    /// at most 32; SDDMM where rows + nnz/`chunk_len` stay under 8,192 (a small matrix) and
    /// `chunk_len` is the default: k rounded up to a power of two, at most 32. SDDMM's
    /// `entries` algorithm: the lanes of one entry, default units/8 clamped to 2..4 (a unit
    /// is 4 columns where k is a multiple of 4, else 1), at most the units.
    pub lanes: Option<u32>,
    /// SpMM: consecutive rows one slot takes as one run of entries (1 to 1024), so that the
    /// load chain of short rows is paid once per group. Only where no row of the matrix is
    /// longer than `chunk_len` (a row split into chunks makes every group one row). Default:
    /// 2·lanes entries' worth of rows of mean length, at most 64, and few enough to leave
    /// 16,384 groups (one row each below 32,768 rows: small matrices need the parallelism);
    /// the `row-group` baseline always takes one. SDDMM refuses it.
    pub group_rows: Option<u32>,
    /// SpMM (RoDe): slots that share each row, each taking a consecutive part of its entries,
    /// their sums added in workgroup memory, so that a row's serial chain of loads is that
    /// many times shorter where rows are too few to fill the GPU. A power of two up to the
    /// slots of a workgroup; more than 1 needs one-row groups (`group_rows` 1) and RoDe (the
    /// `row-group` baseline takes a slot per row). Default 1, except where rows × column
    /// tiles are at most 8,192 tasks (two parts then stay within 16,384) and rows average 16
    /// entries or more: then the largest power of two within 16,384 / tasks, the mean row length / 8 and the slots of a
    /// workgroup. SDDMM refuses it.
    pub row_parts: Option<u32>,
    /// SpMM with `Aᵀ` ([`Spmm::transposed`](super::Spmm::transposed)): how the product reads
    /// A's values. Default: [`TransposedReads::Permuted`] where A's values take at most
    /// [`TransposedReads::PERMUTED_MAX_BYTES`], [`TransposedReads::Ordered`] above. SpMM on A
    /// and SDDMM refuse it.
    pub transposed_reads: Option<TransposedReads>,
}

/// How SpMM with `Aᵀ` reads A's values, which are stored in A's order while the product
/// walks the transpose's. Both see A's values as they are when the product runs, however
/// they were written; they differ in cost only.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum TransposedReads {
    /// Through the transpose's permutation, in the product's own dispatch: a scattered
    /// read per entry at every run, nothing kept but the transpose. Best where A's values
    /// are few enough to stay in cache and a second dispatch would cost more than the
    /// scattered reads (small matrices).
    Permuted,
    /// From the plan's copy of A's values in the transpose's order, read in order; a pass
    /// before every run compares A's values with the copy (in order) and scatters only
    /// those that changed. Costs an index and two values an entry (with the transpose's
    /// bytes) and a second dispatch; on large matrices much faster than `Permuted` when
    /// the values did not change (the H100, 4M-row uniform matrix, k = 32: 3.61 ms against
    /// 5.45), slower when they all change before every run (a scattered write each: ~8.4 ms
    /// against 5.45 there). A caller whose A changes every run (attention scores) should ask
    /// for `Permuted`.
    Ordered,
}

impl TransposedReads {
    /// The size of A's values up to which [`TransposedReads::Permuted`] is the default:
    /// 4 MiB, well within a large GPU's last-level cache.
    pub const PERMUTED_MAX_BYTES: u64 = 4 << 20;

    /// The default for a matrix whose values take `value_bytes`.
    pub fn default_for(value_bytes: u64) -> Self {
        match value_bytes <= Self::PERMUTED_MAX_BYTES {
            true => TransposedReads::Permuted,
            false => TransposedReads::Ordered,
        }
    }

    /// The name the bench uses (`permuted`, `ordered`).
    pub fn name(self) -> &'static str {
        match self {
            TransposedReads::Permuted => "permuted",
            TransposedReads::Ordered => "ordered",
        }
    }

    /// The reads named `name` (see [`TransposedReads::name`]).
    pub fn from_name(name: &str) -> Option<Self> {
        [TransposedReads::Permuted, TransposedReads::Ordered].into_iter().find(|r| r.name() == name)
    }
}

impl TileOptions {
    /// Sets [`TileOptions::workgroup_size`].
    pub fn workgroup_size(mut self, size: u32) -> Self {
        self.workgroup_size = Some(size);
        self
    }
    /// Sets [`TileOptions::chunk_len`].
    pub fn chunk_len(mut self, len: u32) -> Self {
        self.chunk_len = Some(len);
        self
    }
    /// Sets [`TileOptions::group_rows`].
    pub fn group_rows(mut self, rows: u32) -> Self {
        self.group_rows = Some(rows);
        self
    }
    /// Sets [`TileOptions::lanes`].
    pub fn lanes(mut self, lanes: u32) -> Self {
        self.lanes = Some(lanes);
        self
    }
    /// Sets [`TileOptions::row_parts`].
    pub fn row_parts(mut self, parts: u32) -> Self {
        self.row_parts = Some(parts);
        self
    }
    /// Sets [`TileOptions::transposed_reads`].
    pub fn transposed_reads(mut self, reads: TransposedReads) -> Self {
        self.transposed_reads = Some(reads);
        self
    }
}
