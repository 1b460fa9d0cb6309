//! `C = A·B` on bitmaps: `C_ij = Σ a_ik·b_kj` over the k where both are stored. C's pattern
//! first (row i is the OR of B's rows k for the k stored in A's row i), its structure steps,
//! the entry count read back to size C's values, then the values.

use super::StructureSteps;
use crate::context::Context;
use crate::element::Scalar;
use crate::kernel::shaders::{bitmap_multiply, bitmap_multiply_pattern};
use crate::kernel::Kernel;
use crate::matrix::GpuBitmap;
use crate::ops::common::{check_len, Operands};
use crate::record::Recorder;
use crate::{Error, Result};

/// How C's rows are formed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum MultiplyAlgorithm {
    /// [`MultiplyAlgorithm::RowWise`] (the one implemented).
    #[default]
    Auto,
    /// Gustavson's order with a bitmap accumulator: a workgroup per row of C (and chunk of
    /// its columns), a lane per flag word of the chunk adding `a_ik·b_kj` for each stored
    /// `a_ik` in k order; work in proportion to the products, whatever C's density.
    RowWise,
}

impl MultiplyAlgorithm {
    /// Short name used in reports and on the command line.
    pub fn name(self) -> &'static str {
        match self {
            MultiplyAlgorithm::Auto => "auto",
            MultiplyAlgorithm::RowWise => "row-wise",
        }
    }

    /// Parses [`MultiplyAlgorithm::name`].
    pub fn from_name(name: &str) -> Option<Self> {
        [MultiplyAlgorithm::Auto, MultiplyAlgorithm::RowWise].into_iter().find(|a| a.name() == name)
    }
}

/// `A·B`, a new bitmap: two submissions, one wait between them for C's entry count.
/// Sums run in k order (deterministic); a position whose products cancel stays stored.
/// A's columns must match B's rows ([`Error::DimensionMismatch`]).
pub fn multiply<T: Scalar>(
    ctx: &Context,
    a: &GpuBitmap<T>,
    b: &GpuBitmap<T>,
    algorithm: MultiplyAlgorithm,
) -> Result<GpuBitmap<T>> {
    Ok(BitmapProduct::new(ctx, a, b, algorithm)?.into_output())
}

/// `C = A·B` planned for two patterns: [`BitmapProduct::new`] builds C (its pattern, the
/// entry count read back, then the values); [`record`](Self::record) recomputes C's values
/// for new values of A and B with the same patterns (the numeric phase alone).
pub struct BitmapProduct<T: Scalar> {
    ctx: Context,
    kernel: Kernel<bitmap_multiply::Shader, T>,
    chunks: usize,
    patterns: (u64, u64),
    c: GpuBitmap<T>,
}

impl<T: Scalar> BitmapProduct<T> {
    /// Computes `A·B`.
    pub fn new(ctx: &Context, a: &GpuBitmap<T>, b: &GpuBitmap<T>, algorithm: MultiplyAlgorithm) -> Result<Self> {
        let (MultiplyAlgorithm::Auto | MultiplyAlgorithm::RowWise) = algorithm;
        Operands::new(ctx, "bitmap multiply")?.owned("A", a.device_id())?.owned("B", b.device_id())?;
        check_len("bitmap multiply", "B rows", a.cols(), b.rows())?;
        let (rows, cols) = (a.rows(), b.cols());
        let mut c = GpuBitmap::allocate(ctx, rows, cols, 0)?;
        let words = c.words_per_row();
        let steps = StructureSteps::new(ctx, rows, cols)?;

        // The pattern: chunks of 4 words a lane.
        let pattern_wg = (words.div_ceil(4).next_power_of_two() as u32).clamp(32, 128);
        let pattern_chunks = words.div_ceil(4 * pattern_wg as usize).max(1);
        let pattern = ctx.plain_kernel::<bitmap_multiply_pattern::Shader>(
            Default::default(),
            bitmap_multiply_pattern::Overrides { wg_size: pattern_wg },
        )?;
        let mut batch = ctx.batch();
        {
            let mut rec = batch.recorder();
            let params = bitmap_multiply_pattern::Params {
                rows: rows as u32,
                a_words: a.words_per_row() as u32,
                b_words: words as u32,
                chunks: pattern_chunks as u32,
            };
            let bindings = bitmap_multiply_pattern::Bindings {
                a_flags: a.flags().bind(),
                b_flags: b.flags().bind(),
                c_flags: c.flags().bind(),
            };
            rec.dispatch(&pattern, params, bindings, (rows * pattern_chunks) as u64)?;
            steps.record(&mut rec, &c, None)?;
        }
        let total = batch.read_back(steps.total())?;
        batch.submit()?;
        let nnz = total.wait()?[0] as usize;
        c.reserve_values(ctx, nnz)?;
        c.set_nnz(nnz)?;

        // The values: a lane per word, 32 accumulators a lane in workgroup memory.
        let budget = ctx.limits().max_compute_workgroup_storage_size as u64;
        let fits = |wg: u32| 32 * wg as u64 * T::stride() + 4 * wg as u64 + 64 <= budget;
        let most =
            [256u32, 128, 64, 32, 16, 8].into_iter().find(|&wg| fits(wg)).ok_or_else(|| Error::LimitExceeded {
                what: "the accumulators of a bitmap multiply".into(),
                limit: "max_compute_workgroup_storage_size",
                requested: 32 * 8 * T::stride() + 96,
                max: budget,
            })?;
        let values_wg = (words.next_power_of_two() as u32).clamp(8, most);
        let product = BitmapProduct {
            ctx: ctx.clone(),
            kernel: ctx.kernel::<bitmap_multiply::Shader, T>(
                Default::default(),
                bitmap_multiply::Overrides { wg_size: values_wg },
            )?,
            chunks: words.div_ceil(values_wg as usize).max(1),
            patterns: (a.pattern_id(), b.pattern_id()),
            c,
        };
        let mut batch = ctx.batch();
        product.record_values(&mut batch.recorder(), a, b)?;
        batch.submit()?;
        Ok(product)
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

    fn record_values(&self, rec: &mut Recorder<'_, '_>, a: &GpuBitmap<T>, b: &GpuBitmap<T>) -> Result<()> {
        let c = &self.c;
        let params = bitmap_multiply::Params {
            rows: c.rows() as u32,
            a_words: a.words_per_row() as u32,
            a_blocks: a.blocks_per_row() as u32,
            b_words: c.words_per_row() as u32,
            b_blocks: c.blocks_per_row() as u32,
            chunks: self.chunks as u32,
        };
        let bindings = bitmap_multiply::Bindings {
            a_flags: a.flags().bind(),
            a_rank: a.rank_directory().bind(),
            a_values: a.values().bind(),
            b_flags: b.flags().bind(),
            b_rank: b.rank_directory().bind(),
            b_values: b.values().bind(),
            c_rank: c.rank_directory().bind(),
            c_values: c.values().bind(),
        };
        rec.dispatch(&self.kernel, params, bindings, (c.rows() * self.chunks) as u64)
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
