//! SpMV on the bitmap format, `y ← α·A·x + β·y` (`shaders/bitmap_spmv.wgsl`).

use crate::context::Context;
use crate::element::Scalar;
use crate::gpu::{GpuVec, ScalarArg};
use crate::kernel::shaders::bitmap_spmv as kernel;
use crate::kernel::Kernel;
use crate::matrix::GpuBitmap;
use crate::ops::blas1;
use crate::ops::common::{check_len, Operands, ScalarBinds};
use crate::record::Recorder;
use crate::{Error, Result};

/// Lanes of each workgroup.
const WG_SIZE: u32 = 256;

/// A planned SpMV on a bitmap of a given width: lanes per row sized to its flag words (a word
/// a lane, up to the smallest subgroup and 32).
/// The same conventions as [`crate::ops::Spmv`]: with α = 0, A and x are not read; with
/// β = 0, y is not read; sums run in a fixed order (deterministic).
pub struct BitmapSpmv<T: Scalar> {
    ctx: Context,
    cols: usize,
    /// Rows planned for, and how they are cut (1 segment: whole rows).
    rows: usize,
    segments: usize,
    segment_words: usize,
    passes: Passes<T>,
    /// A segment's sum each (one element, unused, with whole rows).
    partials: GpuVec<T>,
    group: u32,
}

enum Passes<T: Scalar> {
    /// A group of lanes a row, storing y.
    Whole(Kernel<kernel::Shader, T>),
    /// A group a segment, leaving its sum in `partials`; then a group a row adding them.
    Cut { sums: Kernel<kernel::Shader, T>, finish: Kernel<kernel::Shader, T> },
}

/// Lanes per row (a flag word a lane, up to 32) for rows of `words` flag words, and whether
/// they use subgroup operations, given the smallest subgroup (`None`: subgroups off). A group
/// fits in the smallest subgroup; its chunk of words must hold whole 8-word rank blocks (the
/// kernel places values by them) unless one chunk covers the row, so where the smallest
/// subgroup has fewer than 8 lanes and rows are wider, the kernel runs without subgroups.
fn lanes_per_row(words: usize, smallest_subgroup: Option<u32>) -> (u32, bool) {
    let wanted = (words.max(1) as u32).next_power_of_two().min(32);
    match smallest_subgroup {
        Some(min) if wanted <= min || min >= 8 => (wanted.min(min), true),
        _ => (wanted, false),
    }
}

/// Groups of lanes below which rows are cut into segments: a row a group would leave most of
/// a large GPU idle (16 rows of 10⁶ columns: 16 groups on the H100's 132 SMs).
const SPLIT_BELOW_GROUPS: usize = 4096;
/// Loop iterations a lane may run for one chunk of its segment (`shaders/bitmap_spmv.wgsl`:
/// the chunk, a word's entries past its first four, the scans' steps).
const STEPS_PER_CHUNK: usize = 40;

impl<T: Scalar> BitmapSpmv<T> {
    /// Plans SpMV for bitmaps of `a`'s width (and, where its rows are cut into segments, of
    /// its row count): rows are cut when fewer than 4096 groups of lanes would run, into
    /// segments of whole 32-word runs, enough for 4096 groups.
    pub fn new(ctx: &Context, a: &GpuBitmap<T>) -> Result<Self> {
        let rows = a.rows();
        let mut segments = if rows >= SPLIT_BELOW_GROUPS { 1 } else { SPLIT_BELOW_GROUPS.div_ceil(rows.max(1)) };
        // Where the adapter caps an invocation's loop iterations, rows are cut at least into
        // segments a group walks within half of them.
        if let Some(limit) = ctx.loop_iteration_limit() {
            let (group, _) = lanes_per_row(a.words_per_row(), ctx.subgroup_size_range().map(|(min, _)| min));
            let words_within = (limit as usize / 2 / STEPS_PER_CHUNK) * group as usize;
            segments = segments.max(a.words_per_row().div_ceil(words_within.max(1)));
        }
        Self::with_segments(ctx, a, segments)
    }

    /// [`new`](Self::new) with each row cut into at most `segments` segments (fewer where
    /// the row has fewer 32-word runs; 1: whole rows). Plans that cut rows take bitmaps of
    /// `a`'s row count only.
    pub fn with_segments(ctx: &Context, a: &GpuBitmap<T>, segments: usize) -> Result<Self> {
        ctx.check_owner("BitmapSpmv::with_segments", a.device_id())?;
        ctx.check_element::<T>()?;
        if segments == 0 {
            return Err(Error::InvalidArgument("BitmapSpmv: segments must be at least 1".into()));
        }
        let (rows, words) = (a.rows(), a.words_per_row());
        let (group, subgroups) = lanes_per_row(words, ctx.subgroup_size_range().map(|(min, _)| min));
        // Segments start at rank blocks (8 words) and hold whole chunks of `group` words: runs
        // of 32 words. Unsplit, a row is its words rounded up to whole chunks.
        let cut = segments.min(words.div_ceil(32)).max(1);
        let segment_words = words.div_ceil(cut).next_multiple_of(32);
        let (segments, segment_words) = match cut {
            1 => (1, words.next_multiple_of(group as usize)),
            _ => (words.div_ceil(segment_words), segment_words),
        };
        // A lane walks its segment a chunk of `group` words at a time.
        let walk = (segment_words / group as usize + 1) * STEPS_PER_CHUNK + segments.div_ceil(group as usize);
        let what = || format!("bitmap SpMV on segments of {segment_words} words (cut rows into more segments)");
        ctx.check_loop_iterations(what, walk as u64)?;
        let overrides = kernel::Overrides { wg_size: WG_SIZE, group };
        let kernel = |split, finish| {
            ctx.kernel_in_mode::<kernel::Shader, T>(subgroups, kernel::Flags { split, finish }, overrides)
        };
        let items = rows.checked_mul(segments).filter(|&n| n <= u32::MAX as usize).ok_or_else(|| {
            Error::InvalidArgument(format!("BitmapSpmv: {rows} rows of {segments} segments pass 2^32"))
        })?;
        let passes = match segments {
            1 => Passes::Whole(kernel(false, false)?),
            _ => Passes::Cut { sums: kernel(true, false)?, finish: kernel(false, true)? },
        };
        Ok(BitmapSpmv {
            ctx: ctx.clone(),
            cols: a.cols(),
            rows,
            segments,
            segment_words,
            passes,
            partials: ctx.zeros(if segments == 1 { 1 } else { items })?,
            group,
        })
    }

    /// Segments a row is cut into (1: whole rows).
    pub fn segments(&self) -> usize {
        self.segments
    }

    /// Lanes per row, or per segment where rows are cut.
    pub fn lanes_per_row(&self) -> u32 {
        self.group
    }

    /// Records `y ← α·A·x + β·y`.
    pub fn record<'s>(
        &self,
        rec: &mut Recorder<'_, '_>,
        alpha: impl Into<ScalarArg<'s, T>>,
        a: &GpuBitmap<T>,
        x: &GpuVec<T>,
        beta: impl Into<ScalarArg<'s, T>>,
        y: &mut GpuVec<T>,
    ) -> Result<()> {
        let (alpha, beta) = (alpha.into(), beta.into());
        Operands::new(rec.context(), "bitmap spmv")?
            .owned("the plan", self.ctx.id())?
            .owned("A", a.device_id())?
            .scalar("alpha", &alpha)?
            .scalar("beta", &beta)?
            .input("x", x)?
            .output("y", y)?;
        check_len("bitmap spmv", "A columns (as planned)", self.cols, a.cols())?;
        check_len("bitmap spmv", "x length", a.cols(), x.len())?;
        check_len("bitmap spmv", "y length", a.rows(), y.len())?;
        if self.segments > 1 {
            check_len("bitmap spmv", "A rows (as planned, its rows cut into segments)", self.rows, a.rows())?;
        }
        let ctx = rec.context().clone();
        let scaling = ScalarBinds::new(&ctx, alpha, beta)?;
        if scaling.host_alpha() == Some(T::default()) {
            return blas1::scale_range(rec, &scaling.beta_as_alpha(), y.bind(), y.len(), blas1::Fill::Scale);
        }
        let params = kernel::Params {
            rows: a.rows() as u32,
            words: a.words_per_row() as u32,
            blocks: a.blocks_per_row() as u32,
            segments: self.segments as u32,
            segment_words: self.segment_words as u32,
            scaling: scaling.params,
        };
        let partials = &self.partials;
        let bindings = || kernel::Bindings {
            flags: a.flags().bind(),
            rank: a.rank_directory().bind(),
            values: a.values().bind(),
            x: x.bind(),
            alpha_dev: scaling.alpha_dev,
            beta_dev: scaling.beta_dev,
            y: y.bind(),
            partials: partials.bind(),
        };
        let groups_per_workgroup = (WG_SIZE / self.group) as u64;
        let workgroups = |items: usize| (items as u64).div_ceil(groups_per_workgroup);
        match &self.passes {
            Passes::Whole(whole) => rec.dispatch(whole, params, bindings(), workgroups(a.rows())),
            Passes::Cut { sums, finish } => {
                rec.dispatch(sums, params, bindings(), workgroups(a.rows() * self.segments))?;
                rec.dispatch(finish, params, bindings(), workgroups(a.rows()))
            }
        }
    }

    /// Records and submits `y ← α·A·x + β·y`.
    pub fn run<'s>(
        &self,
        alpha: impl Into<ScalarArg<'s, T>>,
        a: &GpuBitmap<T>,
        x: &GpuVec<T>,
        beta: impl Into<ScalarArg<'s, T>>,
        y: &mut GpuVec<T>,
    ) -> Result<()> {
        let mut batch = self.ctx.batch();
        self.record(&mut batch.recorder(), alpha, a, x, beta, y)?;
        batch.submit()
    }
}

#[cfg(test)]
mod tests {
    use super::lanes_per_row;

    #[test]
    fn groups_hold_whole_rank_blocks_or_whole_rows() {
        // (words, smallest subgroup) → (lanes, subgroups)
        let cases = [
            ((1, Some(32)), (1, true)),
            ((20, Some(32)), (32, true)),
            ((512, Some(32)), (32, true)),
            ((512, Some(64)), (32, true)),
            ((512, Some(8)), (8, true)),
            ((5, Some(8)), (8, true)),
            // Narrower subgroups: rows of one chunk keep them, wider rows go without.
            ((3, Some(4)), (4, true)),
            ((4, Some(4)), (4, true)),
            ((5, Some(4)), (8, false)),
            ((512, Some(4)), (32, false)),
            ((3, None), (4, false)),
            ((512, None), (32, false)),
        ];
        for ((words, smallest), want) in cases {
            assert_eq!(lanes_per_row(words, smallest), want, "{words} words, smallest subgroup {smallest:?}");
        }
    }
}
