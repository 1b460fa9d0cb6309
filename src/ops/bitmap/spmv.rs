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
use crate::Result;

/// Lanes of each workgroup.
const WG_SIZE: u32 = 256;

/// A planned SpMV on a bitmap of a given width: lanes per row sized to its flag words (a word
/// a lane, up to the smallest subgroup and 32).
/// The same conventions as [`crate::ops::Spmv`]: with α = 0, A and x are not read; with
/// β = 0, y is not read; sums run in a fixed order (deterministic).
pub struct BitmapSpmv<T: Scalar> {
    ctx: Context,
    cols: usize,
    kernel: Kernel<kernel::Shader, T>,
    group: u32,
}

impl<T: Scalar> BitmapSpmv<T> {
    /// Plans SpMV for bitmaps of `a`'s width.
    pub fn new(ctx: &Context, a: &GpuBitmap<T>) -> Result<Self> {
        ctx.check_owner("BitmapSpmv::new", a.device_id())?;
        ctx.check_element::<T>()?;
        // A lane per flag word (32 columns), up to the smallest subgroup.
        let most = ctx.subgroup_size_range().map_or(32, |(min, _)| min.min(32));
        let group = (a.words_per_row().max(1) as u32).next_power_of_two().min(most);
        let kernel =
            ctx.kernel::<kernel::Shader, T>(Default::default(), kernel::Overrides { wg_size: WG_SIZE, group })?;
        Ok(BitmapSpmv { ctx: ctx.clone(), cols: a.cols(), kernel, group })
    }

    /// Lanes per row.
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
        let ctx = rec.context().clone();
        let scaling = ScalarBinds::new(&ctx, alpha, beta)?;
        if scaling.host_alpha() == Some(T::default()) {
            return blas1::scale_range(rec, &scaling.beta_as_alpha(), y.bind(), y.len(), blas1::Fill::Scale);
        }
        let params = kernel::Params {
            rows: a.rows() as u32,
            words: a.words_per_row() as u32,
            blocks: a.blocks_per_row() as u32,
            scaling: scaling.params,
        };
        let bindings = kernel::Bindings {
            flags: a.flags().bind(),
            rank: a.rank_directory().bind(),
            values: a.values().bind(),
            x: x.bind(),
            alpha_dev: scaling.alpha_dev,
            beta_dev: scaling.beta_dev,
            y: y.bind(),
        };
        let rows_per_workgroup = (WG_SIZE / self.group) as u64;
        rec.dispatch(&self.kernel, params, bindings, (a.rows() as u64).div_ceil(rows_per_workgroup))
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
