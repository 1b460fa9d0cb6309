//! `C = A·B` on bitmaps: `C_ij = Σ a_ik·b_kj` over the k where both are stored. C's pattern
//! first, its structure steps, then the values, by one of two schemes ([`MultiplyAlgorithm`]):
//! in one submission where room for every position of C is small (4 MiB), otherwise with the
//! entry count read back between them to size C's values.

use super::StructureSteps;
use crate::context::Context;
use crate::element::Scalar;
use crate::kernel::shaders::{
    bitmap_multiply, bitmap_multiply_outputs, bitmap_multiply_outputs_pattern, bitmap_multiply_pattern,
};
use crate::kernel::Kernel;
use crate::matrix::GpuBitmap;
use crate::ops::common::{check_len, Operands};
use crate::record::Recorder;
use crate::GpuVec;
use crate::{Error, Result};

/// How C is formed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum MultiplyAlgorithm {
    /// [`MultiplyAlgorithm::RowWise`]. The one-output-per-invocation scheme reads
    /// `rows·cols·ceil(k/32)` flag word pairs whatever C's density; the row-wise one works in
    /// proportion to the products. Until a measurement says otherwise, `Auto` is row-wise.
    #[default]
    Auto,
    /// Gustavson's order: a workgroup per row of C (and chunk of its columns) adds
    /// `a_ik·b_kj` for each stored `a_ik` in k order into a dense accumulator of the chunk
    /// in workgroup memory, taking the k's a batch at a time (a lane each) and loading the
    /// batch's entries of B before adding them; B's entries' columns are exported once by
    /// the plan (4 bytes an entry of B).
    RowWise,
    /// Seed 004's scheme: one invocation per output `C_ij`, intersecting row i of A with row
    /// j of Bᵀ (B's column bitmaps, a transpose built on the GPU and kept by the plan), the
    /// two rows' values found by their running positions.
    Outputs,
}

impl MultiplyAlgorithm {
    /// Every concrete algorithm, in the order reports list them.
    pub const ALL: [MultiplyAlgorithm; 2] = [MultiplyAlgorithm::RowWise, MultiplyAlgorithm::Outputs];

    /// Short name used in reports and on the command line.
    pub fn name(self) -> &'static str {
        match self {
            MultiplyAlgorithm::Auto => "auto",
            MultiplyAlgorithm::RowWise => "row-wise",
            MultiplyAlgorithm::Outputs => "outputs",
        }
    }

    /// Parses [`MultiplyAlgorithm::name`].
    pub fn from_name(name: &str) -> Option<Self> {
        std::iter::once(MultiplyAlgorithm::Auto).chain(Self::ALL).find(|a| a.name() == name)
    }

    /// The concrete algorithm `Auto` stands for.
    pub fn resolve(self) -> Self {
        match self {
            MultiplyAlgorithm::Auto => MultiplyAlgorithm::RowWise,
            chosen => chosen,
        }
    }
}

/// `A·B`, a new bitmap: one submission where C has at most 4 MiB of positions
/// (C then keeps room for them all), otherwise two, with a wait between them for C's entry
/// count.
/// Sums run in k order (deterministic); a position whose products cancel stays stored.
/// A's columns must match B's rows ([`Error::DimensionMismatch`]); a C of more than 2^32
/// entries, and on an adapter that caps loop iterations (llvmpipe) rows too long for its
/// kernels, are [`Error::LimitExceeded`].
pub fn multiply<T: Scalar>(
    ctx: &Context,
    a: &GpuBitmap<T>,
    b: &GpuBitmap<T>,
    algorithm: MultiplyAlgorithm,
) -> Result<GpuBitmap<T>> {
    Ok(BitmapProduct::new(ctx, a, b, algorithm)?.into_output())
}

/// `C = A·B` planned for two patterns: [`BitmapProduct::new`] builds C (its pattern, the
/// entry count read back, and the values: in the same submission for a small C, after the
/// count for a larger one); [`record`](Self::record) recomputes C's values
/// for new values of A and B with the same patterns (the numeric phase alone).
pub struct BitmapProduct<T: Scalar> {
    ctx: Context,
    scheme: Scheme<T>,
    patterns: (u64, u64),
    c: GpuBitmap<T>,
}

/// The values kernel of each algorithm, with what it keeps.
enum Scheme<T: Scalar> {
    /// B's entries' columns (exported once: B's pattern is the planned one).
    RowWise { kernel: Kernel<bitmap_multiply::Shader, T>, chunks: usize, b_cols: GpuVec<u32> },
    /// Bᵀ's values are refreshed from B's on every run.
    Outputs { kernel: Kernel<bitmap_multiply_outputs::Shader, T>, bt: Box<GpuBitmap<T>> },
}

impl<T: Scalar> BitmapProduct<T> {
    /// Computes `A·B`.
    pub fn new(ctx: &Context, a: &GpuBitmap<T>, b: &GpuBitmap<T>, algorithm: MultiplyAlgorithm) -> Result<Self> {
        Operands::new(ctx, "bitmap multiply")?.owned("A", a.device_id())?.owned("B", b.device_id())?;
        check_len("bitmap multiply", "B rows", a.cols(), b.rows())?;
        let (rows, cols) = (a.rows(), b.cols());
        check_walks(ctx, a, b, algorithm.resolve())?;
        let one_pass = (rows as u64).saturating_mul(cols as u64).saturating_mul(T::stride()) <= ONE_PASS_BYTES;
        let c = GpuBitmap::allocate(ctx, rows, cols, if one_pass { rows * cols } else { 0 })?;
        let steps = StructureSteps::new(ctx, rows, cols)?;
        let scheme = match algorithm.resolve() {
            MultiplyAlgorithm::Outputs => Scheme::Outputs {
                kernel: ctx.kernel(Default::default(), Default::default())?,
                bt: Box::new(GpuBitmap::allocate(ctx, b.cols(), b.rows(), b.nnz())?),
            },
            _ => {
                let (wg_size, chunk) = row_wise_shape::<T>(ctx, cols)?;
                Scheme::RowWise {
                    kernel: ctx.kernel(Default::default(), bitmap_multiply::Overrides { wg_size, chunk })?,
                    chunks: cols.div_ceil(chunk as usize).max(1),
                    b_cols: ctx.zeros::<u32>(b.nnz())?,
                }
            }
        };
        let mut product = BitmapProduct { ctx: ctx.clone(), scheme, patterns: (a.pattern_id(), b.pattern_id()), c };
        // The export of B's columns binds a stand-in for the rows it does not write; kept
        // until the batch has run.
        let no_rows = ctx.zeros::<u32>(1)?;
        let mut batch = ctx.batch();
        {
            let mut rec = batch.recorder();
            match &product.scheme {
                Scheme::Outputs { bt, .. } => {
                    let bt_steps = StructureSteps::new(ctx, bt.rows(), bt.cols())?;
                    b.record_transpose(&mut rec, bt, false)?;
                    bt_steps.record(&mut rec, bt, None)?;
                    record_outputs_pattern(&mut rec, a, bt, &product.c)?;
                }
                Scheme::RowWise { b_cols, .. } => {
                    record_row_pattern(&mut rec, a, b, &product.c)?;
                    b.record_columns(&mut rec, b_cols, &no_rows)?;
                }
            }
            steps.record(&mut rec, &product.c, None)?;
            if one_pass {
                product.record_values(&mut rec, a, b)?;
            }
        }
        let total = batch.read_back(steps.total())?;
        // C's entries are counted in u32, which C of more than 2^32 positions may pass: its row
        // starts then wrap.
        let may_wrap = rows as u64 * cols as u64 > u32::MAX as u64;
        let starts = may_wrap.then(|| batch.read_back(product.c.row_offsets())).transpose()?;
        batch.submit()?;
        let nnz = total.wait()?[0] as usize;
        if let Some(starts) = starts {
            let entries = entries_between(&starts.wait()?);
            if entries > u32::MAX as u64 {
                return Err(Error::LimitExceeded {
                    what: format!("the entries of a {rows} x {cols} bitmap product"),
                    limit: "2^32 entries (u32 positions)",
                    requested: entries,
                    max: u32::MAX as u64,
                });
            }
        }
        if let Scheme::Outputs { bt, .. } = &mut product.scheme {
            bt.set_nnz(b.nnz())?;
        }
        if one_pass {
            product.c.set_nnz(nnz)?;
        } else {
            product.c.reserve_values(ctx, nnz)?;
            product.c.set_nnz(nnz)?;
            let mut batch = ctx.batch();
            product.record_values(&mut batch.recorder(), a, b)?;
            batch.submit()?;
        }
        Ok(product)
    }

    /// The algorithm in use.
    pub fn algorithm(&self) -> MultiplyAlgorithm {
        match self.scheme {
            Scheme::RowWise { .. } => MultiplyAlgorithm::RowWise,
            Scheme::Outputs { .. } => MultiplyAlgorithm::Outputs,
        }
    }

    /// Records C's values again from A's and B's (which must have the planned patterns:
    /// [`Error::InvalidArgument`] otherwise).
    pub fn record(&self, rec: &mut Recorder<'_, '_>, a: &GpuBitmap<T>, b: &GpuBitmap<T>) -> Result<()> {
        Operands::new(rec.context(), "bitmap product")?
            .owned("the plan", self.ctx.id())?
            .owned("A", a.device_id())?
            .owned("B", b.device_id())?;
        if (a.pattern_id(), b.pattern_id()) != self.patterns {
            return Err(Error::InvalidArgument("BitmapProduct::record: A or B is not the matrix planned for".into()));
        }
        self.record_values(rec, a, b)
    }

    /// Records C's values (by outputs, Bᵀ's values from B's first: B may have new ones).
    fn record_values(&self, rec: &mut Recorder<'_, '_>, a: &GpuBitmap<T>, b: &GpuBitmap<T>) -> Result<()> {
        let c = &self.c;
        match &self.scheme {
            Scheme::RowWise { kernel, chunks, b_cols, .. } => {
                let params = bitmap_multiply::Params {
                    rows: c.rows() as u32,
                    a_words: a.words_per_row() as u32,
                    a_blocks: a.blocks_per_row() as u32,
                    words: c.words_per_row() as u32,
                    blocks: c.blocks_per_row() as u32,
                    chunks: *chunks as u32,
                    b_blocks: b.blocks_per_row() as u32,
                };
                let bindings = bitmap_multiply::Bindings {
                    a_flags: a.flags().bind(),
                    a_rank: a.rank_directory().bind(),
                    a_values: a.values().bind(),
                    b_offsets: b.row_offsets().bind(),
                    b_rank: b.rank_directory().bind(),
                    b_cols: b_cols.bind(),
                    b_values: b.values().bind(),
                    flags: c.flags().bind(),
                    rank: c.rank_directory().bind(),
                    c_values: c.values().bind(),
                };
                rec.dispatch(kernel, params, bindings, (c.rows() * chunks) as u64)
            }
            Scheme::Outputs { kernel, bt } => {
                b.record_transpose(rec, bt, true)?;
                let params = bitmap_multiply_outputs::Params {
                    rows: c.rows() as u32,
                    cols: c.cols() as u32,
                    a_words: a.words_per_row() as u32,
                    a_blocks: a.blocks_per_row() as u32,
                    c_words: c.words_per_row() as u32,
                    c_blocks: c.blocks_per_row() as u32,
                };
                let bindings = bitmap_multiply_outputs::Bindings {
                    a_flags: a.flags().bind(),
                    a_rank: a.rank_directory().bind(),
                    a_values: a.values().bind(),
                    t_flags: bt.flags().bind(),
                    t_rank: bt.rank_directory().bind(),
                    t_values: bt.values().bind(),
                    c_rank: c.rank_directory().bind(),
                    c_values: c.values().bind(),
                };
                rec.dispatch(kernel, params, bindings, (c.rows() * c.blocks_per_row()) as u64)
            }
        }
    }

    /// Device bytes the plan keeps beyond A, B and C: B's entries' columns (row-wise) or
    /// Bᵀ (outputs).
    pub fn extra_bytes(&self) -> u64 {
        match &self.scheme {
            Scheme::RowWise { b_cols, .. } => b_cols.byte_len(),
            Scheme::Outputs { bt, .. } => bt.device_bytes(),
        }
    }

    /// C.
    pub fn output(&self) -> &GpuBitmap<T> {
        &self.c
    }

    /// C, the plan dropped.
    pub fn into_output(self) -> GpuBitmap<T> {
        self.c
    }
}

/// The row-wise values kernel's shape for C of `cols` columns: a subgroup-sized workgroup
/// (its barriers between k's are then cheap) and a chunk of columns, a power of two from 256,
/// whose accumulators take about [`ACCUMULATOR_BYTES`]: many rows in flight rather than wide
/// ones (the H100's driver gives an SM 48 KiB of workgroup memory in all, benches/NOTES.md,
/// session 42), a chunk's entries of B's rows found by B's rank directory.
fn row_wise_shape<T: Scalar>(ctx: &Context, cols: usize) -> Result<(u32, u32)> {
    let wg_size = ctx.subgroup_size_range().map_or(32, |(_, max)| max.clamp(32, 64));
    let budget = ctx.limits().max_compute_workgroup_storage_size as u64;
    // A batch's k's (or a chunk's flag words), extents, a_ik and prefix counts, a lane each;
    // the scan's total and a round's eight window k's.
    let staged = (12 + T::stride()) * wg_size as u64 + 36;
    // At most a flag word of the chunk a lane when the chunk is written.
    let wanted = (ACCUMULATOR_BYTES / T::stride()).clamp(256, 32 * wg_size as u64);
    let chunk = (cols.max(1).next_power_of_two() as u64).clamp(256, wanted);
    if chunk * T::stride() + staged > budget {
        return Err(Error::LimitExceeded {
            what: "the accumulators of a bitmap multiply".into(),
            limit: "max_compute_workgroup_storage_size",
            requested: chunk * T::stride() + staged,
            max: budget,
        });
    }
    Ok((wg_size, chunk as u32))
}

/// Workgroup memory a row-wise workgroup's accumulators aim at.
const ACCUMULATOR_BYTES: u64 = 4096;

/// Up to this many bytes of values for every position of C, C gets them and one submission
/// builds it (pattern, entry count, values); past it, C's values are sized to the entry count
/// read back between the pattern and the values. A small product is bound by the host: the
/// second batch and wait cost ~100 µs on an H200 against a 1024² product's 51 µs of values
/// (benches/NOTES.md, session 46), and 4 MiB is a 1024² f32 matrix.
const ONE_PASS_BYTES: u64 = 4 << 20;

/// The entries of a bitmap whose row starts `starts` were counted in u32 and may have
/// wrapped: a row holds fewer than 2^32 (its columns are u32), so its count is the wrapping
/// difference of its starts.
fn entries_between(starts: &[u32]) -> u64 {
    starts.windows(2).map(|w| w[1].wrapping_sub(w[0]) as u64).sum()
}

/// The row-wise pattern kernel's workgroup size and chunks a row for C's rows of `words`
/// flag words: chunks of 4 words a lane.
fn row_pattern_shape(words: usize) -> (u32, usize) {
    let wg_size = (words.div_ceil(4).next_power_of_two() as u32).clamp(32, 128);
    (wg_size, words.div_ceil(4 * wg_size as usize).max(1))
}

/// Where the adapter caps an invocation's loop iterations (llvmpipe), refuses a product
/// whose kernels could walk past the cap ([`Error::LimitExceeded`]), before any work on
/// the GPU but a read of A's row offsets (and for the row-wise scheme B's rank directory):
/// a walk's length is set by A's longest row and, row-wise, by B's most entries of one
/// row in a chunk of C's columns, which a bitmap does not keep on the host.
fn check_walks<T: Scalar>(
    ctx: &Context,
    a: &GpuBitmap<T>,
    b: &GpuBitmap<T>,
    algorithm: MultiplyAlgorithm,
) -> Result<()> {
    if ctx.loop_iteration_limit().is_none() || a.rows() == 0 || a.cols() == 0 || b.cols() == 0 {
        return Ok(());
    }
    let row_wise = algorithm != MultiplyAlgorithm::Outputs;
    let mut batch = ctx.batch();
    let a_offsets = batch.read_back(a.row_offsets())?;
    let b_extents = match row_wise {
        true => Some((batch.read_back(b.row_offsets())?, batch.read_back(b.rank_directory())?)),
        false => None,
    };
    batch.submit()?;
    let a_offsets = a_offsets.wait()?;
    let a_longest = a_offsets.windows(2).map(|w| w[1].saturating_sub(w[0]) as u64).max().unwrap_or(0);
    let a_words = a.words_per_row() as u64;
    // The lanes llvmpipe runs as one (a subgroup): the cap counts their loops together.
    let lanes = ctx.subgroup_size_range().map_or(64, |(_, max)| max) as u64;
    let (what, walk) = match b_extents {
        None => ("outputs", outputs_walk(a_words, a_longest)),
        Some((offsets, rank)) => {
            let (wg_size, chunk) = row_wise_shape::<T>(ctx, b.cols())?;
            let (offsets, rank) = (offsets.wait()?, rank.wait()?);
            let b_longest = chunk_longest(&offsets, &rank, b.blocks_per_row(), chunk as usize / 256);
            let (pattern_wg, _) = row_pattern_shape(b.words_per_row());
            let walk = row_values_walk(a_words, a_longest, b_longest, chunk as u64, wg_size as u64, lanes)
                .max(row_pattern_walk(a_words, a_longest, pattern_wg as u64));
            ("row-wise", walk)
        }
    };
    let what = || format!("a {what} bitmap product over rows of A of up to {a_longest} entries");
    ctx.check_loop_iterations(what, walk)
}

/// B's most entries of one row in one chunk of `chunk_blocks` rank blocks, from its row
/// offsets and rank directory (`blocks` a row: each the position of the block's first entry).
fn chunk_longest(offsets: &[u32], rank: &[u32], blocks: usize, chunk_blocks: usize) -> u64 {
    if blocks == 0 {
        return 0;
    }
    let mut longest = 0;
    for (k, row) in rank.chunks(blocks).enumerate() {
        for first in (0..blocks).step_by(chunk_blocks.max(1)) {
            let end = row.get(first + chunk_blocks).copied().unwrap_or(offsets[k + 1]);
            longest = longest.max(end.saturating_sub(row[first]) as u64);
        }
    }
    longest
}

/// The most loop iterations an invocation of `bitmap_multiply_outputs(_pattern).wgsl` runs
/// for A's rows of `a_words` flag words and at most `a_longest` entries: every word, and
/// every entry of A's row that meets a flag of Bᵀ's (a chunk's lanes share A's row).
fn outputs_walk(a_words: u64, a_longest: u64) -> u64 {
    2 * a_words + a_longest + 12
}

/// The most loop iterations an invocation of `bitmap_multiply_pattern.wgsl` runs (a
/// workgroup of `wg` lanes): per segment of `wg` words of A's row, lane 0's count of it and
/// the skips over its words; per entry, a step of `next_k` and a quarter of the four-k step
/// (with its loop over four words).
fn row_pattern_walk(a_words: u64, a_longest: u64, wg: u64) -> u64 {
    let segments = a_words.div_ceil(wg);
    segments * (2 * wg + 18) + a_longest * 5 / 2 + 10
}

/// The most loop iterations an invocation of `bitmap_multiply.wgsl` runs (workgroups of
/// `wg` lanes, `chunk` columns of C, `lanes` lanes in one of the adapter's subgroups) for
/// A's rows of `a_words` words and at most `a_longest` entries, and B's rows of at most
/// `b_longest` entries in a chunk.
fn row_values_walk(a_words: u64, a_longest: u64, b_longest: u64, chunk: u64, wg: u64, lanes: u64) -> u64 {
    // lane_scan's steps, owner's (from 32 lanes down) and nth_bit's, each with its exit.
    let (scan, owner, nth_bit) = (wg.ilog2() as u64 + 1, 7, 6);
    let segments = a_words.div_ceil(4 * wg);
    let batches = segments + a_longest.div_ceil(wg);
    // Four deal_word calls a batch, each a step and the bits of its word where they reach the
    // batch: a word's entries reach at most two batches, and the lanes of one subgroup hold
    // at most 4 words of 32 entries each a segment.
    let deal = 4 * batches + 2 * a_longest.min(segments * 128 * lanes);
    // A batch's windows: ceil(entries of B's row k in the chunk / wg) for each of its k's.
    let windows = a_longest * b_longest.div_ceil(wg);
    let rounds = batches + windows.div_ceil(8);
    // The chunk's stored values written, four a lane a step, then the rest.
    let writes = (chunk / (4 * wg) + 1) * (1 + 4 * (owner + nth_bit)) + 4 * (1 + owner + nth_bit);
    chunk / wg + 1 + segments * (1 + scan) + batches * (1 + scan) + deal + rounds * (1 + owner) + scan + writes
}

/// Records C's pattern by rows: the OR of B's rows k for the k stored in A's row i.
fn record_row_pattern<T: Scalar>(
    rec: &mut Recorder<'_, '_>,
    a: &GpuBitmap<T>,
    b: &GpuBitmap<T>,
    c: &GpuBitmap<T>,
) -> Result<()> {
    let ctx = rec.context().clone();
    let words = c.words_per_row();
    let (wg_size, chunks) = row_pattern_shape(words);
    let kernel = ctx.plain_kernel::<bitmap_multiply_pattern::Shader>(
        Default::default(),
        bitmap_multiply_pattern::Overrides { wg_size },
    )?;
    let params = bitmap_multiply_pattern::Params {
        rows: c.rows() as u32,
        a_words: a.words_per_row() as u32,
        b_words: words as u32,
        chunks: chunks as u32,
    };
    let bindings = bitmap_multiply_pattern::Bindings {
        a_flags: a.flags().bind(),
        b_flags: b.flags().bind(),
        c_flags: c.flags().bind(),
    };
    rec.dispatch(&kernel, params, bindings, (c.rows() * chunks) as u64)
}

/// Records C's pattern by outputs: C_ij is stored where row i of A meets row j of Bᵀ.
fn record_outputs_pattern<T: Scalar>(
    rec: &mut Recorder<'_, '_>,
    a: &GpuBitmap<T>,
    bt: &GpuBitmap<T>,
    c: &GpuBitmap<T>,
) -> Result<()> {
    let ctx = rec.context().clone();
    let kernel = ctx.plain_kernel::<bitmap_multiply_outputs_pattern::Shader>(Default::default(), Default::default())?;
    let params = bitmap_multiply_outputs_pattern::Params {
        rows: c.rows() as u32,
        cols: c.cols() as u32,
        a_words: a.words_per_row() as u32,
        c_words: c.words_per_row() as u32,
        c_blocks: c.blocks_per_row() as u32,
    };
    let bindings = bitmap_multiply_outputs_pattern::Bindings {
        a_flags: a.flags().bind(),
        t_flags: bt.flags().bind(),
        c_flags: c.flags().bind(),
    };
    rec.dispatch(&kernel, params, bindings, (c.rows() * c.blocks_per_row()) as u64)
}

#[cfg(test)]
mod tests {
    use super::entries_between;

    #[test]
    fn entries_between_wrapped_row_starts() {
        assert_eq!(entries_between(&[0, 3, 3, 10]), 10);
        // Rows of 2^31 and 2^31 + 20 entries: the count passed 2^32 and wrapped to 20.
        assert_eq!(entries_between(&[0, 1 << 31, 20]), (1 << 32) + 20);
        assert_eq!(entries_between(&[7]), 0);
    }
}
