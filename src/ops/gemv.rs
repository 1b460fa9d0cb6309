//! Dense matrix × vector: `y ← α·op(A)·x + β·y` with A a [`GpuDense`] (row- or column-major,
//! in row panels past one binding) and `op(A) = A` or `Aᵀ` (no transpose is stored); f32 or
//! f64, any shape.
//!
//! Every panel is a row-major block S as memory holds it (A's rows, or for a column-major
//! panel Aᵀ's), so each product is one of two kernels:
//! - `S·v`, the **rows** kernel (`shaders/shared/gemv_rows_body.wgsl`): a slot of lanes per
//!   row, coalesced vec4 loads along it, a subgroup (or workgroup) sum; short-wide blocks
//!   cut their rows into segments taken by separate workgroups;
//! - `Sᵀ·v`, the **columns** kernel (`shaders/shared/gemv_columns_body.wgsl`): seed 001's
//!   one output per invocation, turned to row-major data: a lane walks down a unit of
//!   columns; tall blocks cut their rows into strips taken by separate workgroups.
//!
//! Segments leave unscaled partial sums that the columns kernel adds up in a fixed order (its
//! `SUM` variant, a second dispatch); strips add up in their own dispatch, the last to arrive
//! summing every strip in strip order (`STRIPS`). Either way results are deterministic. How to
//! cut is chosen from the
//! shape ([`GemvOptions`] overrides it): enough lanes for a large GPU, enough work per lane.
//!
//! BLAS conventions: with β = 0, y is not read (NaN there does not survive); with α = 0 the
//! product is not computed (y ← β·y); with no columns the product is zero.

use super::blas1;
use super::common::{check_len, ready_sums_scratch, recompute_pieces, Operands, ScalarBinds};
use crate::context::Context;
use crate::element::{ElementKind, Scalar};
use crate::gpu::{GpuVec, ScalarArg};
use crate::kernel::shaders::{gemv_columns, gemv_columns_scalar, gemv_rows, gemv_rows_scalar};
use crate::kernel::Kernel;
use crate::matrix::{DenseLayout, GpuDense};
use crate::record::Recorder;
use crate::{Error, Result};

/// Which product of A: `A·x` or `Aᵀ·x`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Transpose {
    /// `y ← α·A·x + β·y`.
    No,
    /// `y ← α·Aᵀ·x + β·y`.
    Yes,
}

/// Tuning knobs; each `None` is chosen from the shape.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GemvOptions {
    /// Invocations per workgroup: a power of two (by default 256; the columns kernel takes up
    /// to 512 on a tall block that leaves the GPU idle, and up to the adapter's most where
    /// that needs no strips).
    pub workgroup_size: Option<u32>,
    /// Lanes per row of the rows kernel: a power of two up to the smallest subgroup size, or
    /// the workgroup size.
    pub lanes: Option<u32>,
    /// Unit columns (of 4 elements where rows allow vec4 loads) per workgroup of the columns
    /// kernel: a power of two up to the workgroup size.
    pub columns: Option<u32>,
    /// Segments per row (rows kernel) or strips of rows (columns kernel), 1 to 1024; more
    /// than one adds a pass that sums the partial results.
    pub splits: Option<u32>,
    /// Rows a lane of the columns kernel loads before it adds them, 2 to 16: more keep more
    /// loads in flight where the GPU has few lanes busy; 2 (two sums alternating) keeps the
    /// fewest registers, which lets a GPU hold more lanes.
    pub row_batch: Option<u32>,
}

/// Lanes a product should keep busy: a large GPU's resident lanes (the H100 holds 270 K);
/// a smaller one just runs the extra workgroups in turn.
const TARGET_LANES: u64 = 1 << 18;
/// Units each lane should take at least before a row or a column is cut further.
const UNITS_PER_LANE: u64 = 16;
/// The most segments or strips: bounds the partial sums to 1024 per output.
const MAX_SPLITS: u32 = 1024;
/// The most rows a lane of the columns kernel loads before adding them.
const MAX_ROW_BATCH: u32 = 16;

/// How the rows kernel covers a block.
#[derive(Debug, Clone, Copy)]
struct RowsShape {
    lanes: u32,
    splits: u32,
    segment: u32,
}

/// How the columns kernel covers a block.
#[derive(Debug, Clone, Copy)]
struct ColumnsShape {
    wg: u32,
    columns: u32,
    col_blocks: u32,
    strip: u32,
    strips: u32,
    row_batch: u32,
}

/// The kernel of one panel's product, by the unit its rows are read in.
enum Product<T: Scalar> {
    Rows(RowsShape, RowsKernel<T>),
    Columns(ColumnsShape, ColumnsKernel<T>),
}

enum RowsKernel<T: Scalar> {
    Vec4(Kernel<gemv_rows::Shader, T>),
    Scalar(Kernel<gemv_rows_scalar::Shader, T>),
}

enum ColumnsKernel<T: Scalar> {
    Vec4(Kernel<gemv_columns::Shader, T>),
    Scalar(Kernel<gemv_columns_scalar::Shader, T>),
}

/// One panel's part of the product.
struct Pass<T: Scalar> {
    panel: usize,
    /// The stored block S: rows and columns of its row-major data.
    block: (usize, usize),
    product: Product<T>,
    /// The elements of x and y it reads and writes.
    x: std::ops::Range<usize>,
    y: std::ops::Range<usize>,
    /// Adds to y (β = 1): panels after the first of `Aᵀ·x` on row-major A.
    accumulate: bool,
    /// The adder of the rows kernel's partial sums, when its rows are cut (its block: parts ×
    /// outputs).
    finish: Option<(ColumnsShape, Kernel<gemv_columns_scalar::Shader, T>, usize)>,
    /// The columns kernel's arrival counters and strips' sums, when its rows are cut.
    strips: Option<GpuVec<u32>>,
}

/// A planned GEMV for one shape, layout and [`Transpose`], recorded many times.
pub struct Gemv<T: Scalar> {
    ctx: Context,
    rows: usize,
    cols: usize,
    layout: DenseLayout,
    panel_rows: usize,
    transpose: Transpose,
    passes: Vec<Pass<T>>,
    /// Partial sums of cut products (one element where none is cut).
    partials: GpuVec<T>,
    /// Bound as the columns kernel's scratch where it has none (the adder's included).
    spare_words: GpuVec<u32>,
}

impl<T: Scalar> std::fmt::Debug for Gemv<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gemv")
            .field("rows", &self.rows)
            .field("cols", &self.cols)
            .field("layout", &self.layout)
            .field("transpose", &self.transpose)
            .field("kernel", &self.describe())
            .finish()
    }
}

impl<T: Scalar> Gemv<T> {
    /// Plans `y ← α·op(A)·x + β·y` for matrices of `a`'s shape, layout and panels.
    pub fn new(ctx: &Context, a: &GpuDense<T>, transpose: Transpose) -> Result<Self> {
        Self::with_options(ctx, a, transpose, &GemvOptions::default())
    }

    /// [`Gemv::new`] with tuning knobs.
    pub fn with_options(ctx: &Context, a: &GpuDense<T>, transpose: Transpose, options: &GemvOptions) -> Result<Self> {
        Operands::new(ctx, "gemv")?.owned("A", a.device_id())?;
        ctx.check_element::<T>()?;
        let wg = check_options(ctx, options)?;
        let max_wg = max_workgroup(ctx);
        // The columns kernel's row lanes closer than this add by shuffles.
        let shuffle_span = ctx.subgroup_size_range().map_or(1, |(min, _)| min);
        let (out_len, in_len) = match transpose {
            Transpose::No => (a.rows(), a.cols()),
            Transpose::Yes => (a.cols(), a.rows()),
        };
        let mut passes = Vec::new();
        let mut partial_len = 1;
        for panel in 0..a.panels().len() {
            let rows = a.panel_range(panel);
            // S as stored, and whether the panel's product is S·v (rows kernel) or Sᵀ·v.
            let (block, rows_kernel) = match a.layout() {
                DenseLayout::RowMajor => ((rows.len(), a.cols()), transpose == Transpose::No),
                DenseLayout::ColMajor => ((a.cols(), rows.len()), transpose == Transpose::Yes),
            };
            let (x, y, accumulate) = match transpose {
                Transpose::No => (0..in_len, rows.clone(), false),
                Transpose::Yes => (rows.clone(), 0..out_len, panel > 0),
            };
            let vec4 = block.1 % 4 == 0 && block.1 > 0;
            let unit_len = if vec4 { 4 } else { 1 };
            let units = block.1 / unit_len;
            // The product, the parts the adder sums (the rows kernel's segments), and the
            // columns kernel's scratch for strips that add up in its own dispatch.
            let (product, parts, strips) = if rows_kernel {
                let shape = rows_shape(ctx, wg, block.0, units, options)?;
                // A lane walks its share of a segment, then the row's reduction.
                let walk = (shape.segment as u64).div_ceil(shape.lanes as u64) + 64;
                ctx.check_loop_iterations(|| format!("gemv: rows of {units} units, {shape:?}"), walk)?;
                let (partial, lanes) = (shape.splits > 1, shape.lanes);
                let kernel = if vec4 {
                    RowsKernel::Vec4(ctx.kernel(
                        gemv_rows::Flags { partial },
                        gemv_rows::Overrides { wg_size: wg, lanes, ..Default::default() },
                    )?)
                } else {
                    RowsKernel::Scalar(ctx.kernel(
                        gemv_rows_scalar::Flags { partial },
                        gemv_rows_scalar::Overrides { wg_size: wg, lanes, ..Default::default() },
                    )?)
                };
                (Product::Rows(shape, kernel), shape.splits as usize, None)
            } else {
                let shape = columns_shape::<T>(wg, max_wg, block.0, units, unit_len, options)?;
                // A lane walks its share of a strip's rows in batches (a loop iteration a row
                // and one a batch); the strip that completes a block reads (or recomputes)
                // every strip's.
                let rows_per_lane = (shape.strip as u64).div_ceil((shape.wg / shape.columns) as u64);
                let batch = shape.row_batch as u64;
                let walk = rows_per_lane.div_ceil(batch) * (batch + 1) * 2 + shape.strips as u64 + 64;
                ctx.check_loop_iterations(|| format!("gemv: columns of {} rows, {shape:?}", block.0), walk)?;
                let strips = shape.strips > 1;
                let kernel = if vec4 {
                    ColumnsKernel::Vec4(ctx.kernel(
                        gemv_columns::Flags { strips, sum: false },
                        gemv_columns::Overrides {
                            wg_size: shape.wg,
                            cols: shape.columns,
                            row_batch: shape.row_batch,
                            shuffle_span: shuffle_span.min(shape.wg),
                        },
                    )?)
                } else {
                    ColumnsKernel::Scalar(ctx.kernel(
                        gemv_columns_scalar::Flags { strips, sum: false },
                        gemv_columns_scalar::Overrides {
                            wg_size: shape.wg,
                            cols: shape.columns,
                            row_batch: shape.row_batch,
                            shuffle_span: shuffle_span.min(shape.wg),
                        },
                    )?)
                };
                let scratch = if strips {
                    let sums = shape.strips as usize * units * unit_len;
                    Some(ready_sums_scratch::<T>(ctx, shape.col_blocks as usize, sums)?)
                } else {
                    None
                };
                (Product::Columns(shape, kernel), 1, scratch)
            };
            let outputs = y.len();
            let finish = if parts > 1 {
                partial_len = partial_len.max(parts * outputs);
                // Adds the parts × outputs partial sums down their columns, in part order.
                let adder = GemvOptions { splits: Some(1), ..Default::default() };
                let shape = columns_shape::<T>(wg, max_wg, parts, outputs, 1, &adder)?;
                let kernel = ctx.kernel(
                    gemv_columns_scalar::Flags { strips: false, sum: true },
                    gemv_columns_scalar::Overrides {
                        wg_size: shape.wg,
                        cols: shape.columns,
                        row_batch: shape.row_batch,
                        shuffle_span: shuffle_span.min(shape.wg),
                    },
                )?;
                Some((shape, kernel, parts))
            } else {
                None
            };
            passes.push(Pass { panel, block, product, x, y, accumulate, finish, strips });
        }
        Ok(Gemv {
            ctx: ctx.clone(),
            rows: a.rows(),
            cols: a.cols(),
            layout: a.layout(),
            panel_rows: a.panel_rows(),
            transpose,
            passes,
            partials: ctx.zeros(partial_len)?,
            spare_words: ctx.zeros(1)?,
        })
    }

    /// Device bytes this plan allocated (the partial sums).
    pub fn extra_bytes(&self) -> u64 {
        let strips: u64 = self.passes.iter().filter_map(|p| p.strips.as_ref()).map(GpuVec::byte_len).sum();
        self.partials.byte_len() + self.spare_words.byte_len() + strips
    }

    /// What the plan runs on its first panel, for reports: `rows vec4, 32 lanes × 4 segments`,
    /// `columns vec4, 8 wide × 16 strips`.
    pub fn describe(&self) -> String {
        let Some(pass) = self.passes.first() else { return String::new() };
        let unit = |vec4: bool| if vec4 { "vec4" } else { "scalar" };
        match &pass.product {
            Product::Rows(s, k) => {
                let cut = if s.splits > 1 { format!(" × {} segments", s.splits) } else { String::new() };
                format!("rows {}, {} lanes{cut}", unit(matches!(k, RowsKernel::Vec4(_))), s.lanes)
            }
            Product::Columns(s, k) => {
                let cut = if s.strips > 1 { format!(" × {} strips", s.strips) } else { String::new() };
                let unit = unit(matches!(k, ColumnsKernel::Vec4(_)));
                format!("columns {unit}, {} wide{cut}, {} rows a batch", s.columns, s.row_batch)
            }
        }
    }

    /// Records `y ← α·op(A)·x + β·y`. A must have the plan's shape, layout and panels; α
    /// and β are host values or device scalars. Everything is checked before anything is
    /// recorded.
    pub fn record<'s>(
        &self,
        rec: &mut Recorder<'_, '_>,
        alpha: impl Into<ScalarArg<'s, T>>,
        a: &GpuDense<T>,
        x: &GpuVec<T>,
        beta: impl Into<ScalarArg<'s, T>>,
        y: &mut GpuVec<T>,
    ) -> Result<()> {
        let (alpha, beta) = (alpha.into(), beta.into());
        Operands::new(rec.context(), "gemv")?
            .owned("the plan", self.ctx.id())?
            .scalar("alpha", &alpha)?
            .scalar("beta", &beta)?
            .dense_input("A", a)?
            .input("x", x)?
            .output("y", y)?;
        check_len("gemv", "A rows", self.rows, a.rows())?;
        check_len("gemv", "A columns", self.cols, a.cols())?;
        if a.layout() != self.layout || a.panel_rows() != self.panel_rows {
            return Err(Error::InvalidArgument("gemv: A's layout or panels are not the plan's".into()));
        }
        let (out_len, in_len) = match self.transpose {
            Transpose::No => (self.rows, self.cols),
            Transpose::Yes => (self.cols, self.rows),
        };
        check_len("gemv", "x", in_len, x.len())?;
        check_len("gemv", "y", out_len, y.len())?;
        let ctx = rec.context().clone();
        let scaling = ScalarBinds::new(&ctx, alpha, beta)?;
        if out_len == 0 {
            return Ok(());
        }
        if scaling.host_alpha() == Some(T::default()) {
            return blas1::scale_range(rec, &scaling.beta_as_alpha(), y.bind(), out_len, blas1::Fill::Scale);
        }
        let adding = ScalarBinds::new(&ctx, alpha, ScalarArg::Host(T::from_f64(1.0)))?;
        for pass in &self.passes {
            let scaling = if pass.accumulate { &adding } else { &scaling };
            self.record_pass(rec, pass, a, x, scaling, y)?;
        }
        Ok(())
    }

    fn record_pass(
        &self,
        rec: &mut Recorder<'_, '_>,
        pass: &Pass<T>,
        a: &GpuDense<T>,
        x: &GpuVec<T>,
        scaling: &ScalarBinds<'_, T>,
        y: &GpuVec<T>,
    ) -> Result<()> {
        let panel = a.panels()[pass.panel].bind();
        let (x, y) = (x.bind_range(pass.x.clone()), y.bind_range(pass.y.clone()));
        let partials = self.partials.bind();
        let (rows, cols) = pass.block;
        match &pass.product {
            Product::Rows(shape, kernel) => {
                let unit_len = if matches!(kernel, RowsKernel::Vec4(_)) { 4 } else { 1 };
                let slots = (kernel_wg(kernel) / shape.lanes) as u64;
                let workgroups = (rows as u64).div_ceil(slots) * shape.splits as u64;
                macro_rules! rows_dispatch {
                    ($module:ident, $kernel:expr, $a:expr, $x:expr) => {
                        rec.dispatch(
                            $kernel,
                            $module::Params {
                                rows: rows as u32,
                                units: (cols / unit_len) as u32,
                                splits: shape.splits,
                                segment: shape.segment,
                                scaling: scaling.params,
                            },
                            $module::Bindings {
                                a: $a,
                                x: $x,
                                alpha_dev: scaling.alpha_dev,
                                beta_dev: scaling.beta_dev,
                                y,
                                partials,
                            },
                            workgroups,
                        )?
                    };
                }
                match kernel {
                    RowsKernel::Vec4(k) => rows_dispatch!(gemv_rows, k, panel.as_vec4(), x.as_vec4()),
                    RowsKernel::Scalar(k) => rows_dispatch!(gemv_rows_scalar, k, panel, x),
                }
            }
            Product::Columns(shape, kernel) => {
                let unit_len = if matches!(kernel, ColumnsKernel::Vec4(_)) { 4 } else { 1 };
                let workgroups = shape.col_blocks as u64 * shape.strips as u64;
                macro_rules! columns_dispatch {
                    ($module:ident, $kernel:expr, $a:expr) => {
                        rec.dispatch(
                            $kernel,
                            $module::Params {
                                rows: rows as u32,
                                units: (cols / unit_len) as u32,
                                col_blocks: shape.col_blocks,
                                strip: shape.strip,
                                strips: shape.strips,
                                // Tests: every third strip withheld.
                                withhold: 3 * recompute_pieces(),
                                scaling: scaling.params,
                            },
                            $module::Bindings {
                                a: $a,
                                x,
                                alpha_dev: scaling.alpha_dev,
                                beta_dev: scaling.beta_dev,
                                y,
                                scratch: pass.strips.as_ref().unwrap_or(&self.spare_words).bind(),
                            },
                            workgroups,
                        )?
                    };
                }
                match kernel {
                    ColumnsKernel::Vec4(k) => columns_dispatch!(gemv_columns, k, panel.as_vec4()),
                    ColumnsKernel::Scalar(k) => columns_dispatch!(gemv_columns_scalar, k, panel),
                }
            }
        }
        if let Some((shape, kernel, parts)) = &pass.finish {
            let outputs = pass.y.len();
            rec.dispatch(
                kernel,
                gemv_columns_scalar::Params {
                    rows: *parts as u32,
                    units: outputs as u32,
                    col_blocks: shape.col_blocks,
                    strip: shape.strip,
                    strips: shape.strips,
                    withhold: 0,
                    scaling: scaling.params,
                },
                gemv_columns_scalar::Bindings {
                    a: self.partials.bind_range(0..parts * outputs),
                    x: self.partials.bind(),
                    alpha_dev: scaling.alpha_dev,
                    beta_dev: scaling.beta_dev,
                    y,
                    scratch: self.spare_words.bind(),
                },
                shape.col_blocks as u64,
            )?;
        }
        Ok(())
    }

    /// Records and submits the product; returns without waiting for the GPU.
    pub fn run<'s>(
        &self,
        alpha: impl Into<ScalarArg<'s, T>>,
        a: &GpuDense<T>,
        x: &GpuVec<T>,
        beta: impl Into<ScalarArg<'s, T>>,
        y: &mut GpuVec<T>,
    ) -> Result<()> {
        let mut batch = self.ctx.batch();
        self.record(&mut batch.recorder(), alpha, a, x, beta, y)?;
        batch.submit()
    }
}

fn kernel_wg<T: Scalar>(kernel: &RowsKernel<T>) -> u32 {
    match kernel {
        RowsKernel::Vec4(k) => k.workgroup_size(),
        RowsKernel::Scalar(k) => k.workgroup_size(),
    }
}

/// The largest workgroup the adapter runs (a power of two or not).
fn max_workgroup(ctx: &Context) -> u32 {
    let limits = ctx.limits();
    limits.max_compute_invocations_per_workgroup.min(limits.max_compute_workgroup_size_x)
}

/// Checks the knobs that do not depend on the shape; returns the workgroup size.
fn check_options(ctx: &Context, options: &GemvOptions) -> Result<u32> {
    let bad = |what: String| Err(Error::InvalidArgument(format!("GemvOptions: {what}")));
    let max_wg = max_workgroup(ctx);
    let wg = options.workgroup_size.unwrap_or(256.min(max_wg));
    let min_wg = ctx.subgroup_size_range().map_or(1, |(_, max)| max);
    if !wg.is_power_of_two() || wg > max_wg || wg < min_wg {
        return bad(format!("workgroup_size {wg} is not a power of two from {min_wg} to {max_wg}"));
    }
    if let Some(lanes) = options.lanes {
        let max_shuffle = ctx.subgroup_size_range().map_or(wg, |(min, _)| min);
        if !lanes.is_power_of_two() || (lanes > max_shuffle && lanes != wg) {
            return bad(format!("lanes {lanes} is not a power of two up to {max_shuffle}, nor the workgroup size"));
        }
    }
    if let Some(columns) = options.columns {
        if !columns.is_power_of_two() || columns > wg {
            return bad(format!("columns {columns} is not a power of two up to the workgroup size {wg}"));
        }
    }
    if let Some(splits) = options.splits {
        if !(1..=MAX_SPLITS).contains(&splits) {
            return bad(format!("splits {splits} is not from 1 to {MAX_SPLITS}"));
        }
    }
    if let Some(batch) = options.row_batch {
        if !(2..=MAX_ROW_BATCH).contains(&batch) {
            return bad(format!("row_batch {batch} is not from 2 to {MAX_ROW_BATCH}"));
        }
    }
    Ok(wg)
}

/// The rows kernel on `rows` rows of `units` units: lanes per row from the row length
/// (a slot each lane of which takes ~8 units, at least 4 lanes wide, as wide as a subgroup
/// allows, else the whole workgroup), then segments until the GPU is full. 65536 × 1024 f32
/// (256 units a row) ran 69.0 µs with 16 lanes, 67.9 with 32; 8192² 67.9 with the
/// workgroup, 71.7 with 32 (H200, benches/NOTES.md, session 66).
fn rows_shape(ctx: &Context, wg: u32, rows: usize, units: usize, options: &GemvOptions) -> Result<RowsShape> {
    let max_shuffle = ctx.subgroup_size_range().map_or(wg, |(min, _)| min);
    let wanted = (units as u64).div_ceil(UNITS_PER_LANE / 2).max(1).next_power_of_two();
    // At least 4 lanes where the row has the units: rows of 8 vec4s (100000 × 32 f32) ran
    // 12.4 µs with 4 lanes, 13.4 with 8, 12.8 with 2 on the H100 (benches/NOTES.md, session 42).
    let least = (units as u64).clamp(1, 4).next_power_of_two().min(max_shuffle as u64);
    let lanes = options.lanes.unwrap_or(match wanted.max(least) {
        lanes if lanes <= max_shuffle as u64 => lanes as u32,
        _ => wg,
    });
    let busy = (rows as u64 * lanes as u64).max(1);
    let most = (units as u64).div_ceil(lanes as u64 * UNITS_PER_LANE).max(1);
    let splits = options.splits.unwrap_or_else(|| TARGET_LANES.div_ceil(busy).min(most).min(MAX_SPLITS as u64) as u32);
    let segment = (units as u64).div_ceil(splits as u64).max(1);
    let splits = (units as u64).div_ceil(segment).max(1) as u32;
    Ok(RowsShape { lanes, splits, segment: segment as u32 })
}

/// The columns kernel on `rows` rows of `units` units of `unit_len` elements: as many row
/// lanes as leave ~16 rows each, but a workgroup at least 128 bytes wide (coalesced); then
/// strips until the GPU is full (`splits` fixes their number). A grid of strips that still
/// leaves the GPU's lanes idle (a tall, narrow block) is bound by its loads' latency and by
/// the strip that adds up the others, so unless the knobs fix it, it takes workgroups of 512 lanes in
/// blocks of at most 4 units (two strips complete side by side where 32 columns had one),
/// 8 rows a lane (twice the lanes), loaded in batches of 8 (4 in f64) to keep them in
/// flight. 100000 × 32 f32 on the H200: 17.4 → 13.5 µs, f64 23.0 → 19.4 (benches/NOTES.md,
/// session 66). A grid that needs strips only to fill the GPU takes the widest workgroup
/// instead where that needs none (8192²: 70.4 → 68.6 µs). Any grid that leaves lanes idle loads in such batches; one that fills the
/// GPU in batches of 2 (fewer registers, more lanes resident: 8192² ran 69.8 µs so, 77.7 in
/// batches of 2 with the reloads).
fn columns_shape<T: Scalar>(
    wg: u32,
    max_wg: u32,
    rows: usize,
    units: usize,
    unit_len: usize,
    options: &GemvOptions,
) -> Result<ColumnsShape> {
    let fits = |v: u64| u32::try_from(v).map_err(|_| Error::InvalidArgument(format!("gemv: {v} workgroups")));
    // The shape for workgroups of `wg` lanes, `columns` units a block (else from the rows) and
    // strips of at least `rows_per_lane` rows a row lane; its row batch is set after.
    let shape = |wg: u32, columns: Option<u32>, rows_per_lane: u64| -> Result<ColumnsShape> {
        let min_columns = (32 / unit_len as u32).min(wg);
        let row_lanes = (rows as u64).div_ceil(UNITS_PER_LANE).max(1).next_power_of_two().min(wg as u64) as u32;
        let fit = (units as u64).max(1).next_power_of_two().min(wg as u64) as u32;
        let columns = columns.unwrap_or_else(|| fit.min((wg / row_lanes).max(min_columns)));
        let col_blocks = (units as u64).div_ceil(columns as u64).max(1);
        let row_lanes = (wg / columns) as u64;
        let most = (rows as u64).div_ceil(row_lanes * rows_per_lane).max(1);
        let strips = options
            .splits
            .map(u64::from)
            .unwrap_or_else(|| TARGET_LANES.div_ceil(col_blocks * wg as u64).min(most).min(MAX_SPLITS as u64));
        let strip = (rows as u64).div_ceil(strips).max(1);
        let strips = (rows as u64).div_ceil(strip).max(1);
        Ok(ColumnsShape {
            wg,
            columns,
            col_blocks: fits(col_blocks)?,
            strip: fits(strip)?,
            strips: fits(strips)?,
            row_batch: 2,
        })
    };
    let mut chosen = shape(wg, options.columns, UNITS_PER_LANE)?;
    let idle = chosen.col_blocks as u64 * chosen.strips as u64 * (wg as u64) < TARGET_LANES;
    let knobs = options.workgroup_size.is_some() || options.columns.is_some() || options.splits.is_some();
    let widest = (1u32 << (31 - max_wg.leading_zeros())).max(wg);
    if chosen.strips > 1 && !knobs {
        if idle {
            // Tall blocks only (cut into strips): a short one's rows would leave row lanes idle.
            let fit = (units as u64).max(1).next_power_of_two().min(4) as u32;
            chosen = shape(widest.min(512).max(wg), Some(fit), 8)?;
        } else {
            // Wider workgroups where they need no strips: no strip that adds up the others.
            let wide = shape(widest, None, UNITS_PER_LANE)?;
            if wide.strips == 1 {
                chosen = wide;
            }
        }
    }
    chosen.row_batch = options.row_batch.unwrap_or(match idle {
        true if T::KIND == ElementKind::F64 => 4,
        true => 8,
        false => 2,
    });
    Ok(chosen)
}

/// The completing strip's fallback, which hardware takes when a strip's published sums are
/// not visible yet: with every third strip's sums withheld (`RECOMPUTE_PIECES`), the
/// completing strip must find and recompute exactly those, to the twin's result and bit for
/// bit the result from the published sums.
#[cfg(test)]
mod tests {
    use super::*;
    use crate::generate::random_vector;
    use crate::ops::common::RECOMPUTE_PIECES;
    use crate::reference::{gemv_dense_t, relative_error};
    use crate::{ContextOptions, DenseMatrix, ElementKind};

    fn recomputed_strips_match<T: Scalar>() {
        let tolerance = match T::KIND {
            ElementKind::F32 => 1e-5,
            ElementKind::F64 => 1e-12,
        };
        // Rows of vec4s and of single elements, cut into a few strips or many short ones,
        // blocks of columns narrower than the rows; a block as wide as the workgroup (one
        // row lane, which then reads every strip: 550 of them, past 32 a lane).
        let cases = [
            (1000, 64, 7, None),
            (3001, 37, 13, Some(8)),
            (300, 8, 1024, None),
            (77, 1, 5, None),
            (1100, 4, 1024, Some(256)),
        ];
        for subgroups in [true, false] {
            let ctx =
                Context::new_blocking(ContextOptions { subgroups, ..ContextOptions::from_env().unwrap() }).unwrap();
            if !ctx.supports::<T>() {
                continue;
            }
            for (i, &(rows, cols, splits, columns)) in cases.iter().enumerate() {
                // Rows in batches with reloads past the strip (the default where the grid
                // leaves lanes idle, as here), and two sums alternating.
                let row_batch = [None, Some(2)][i % 2];
                let values = random_vector(rows * cols, i as u64);
                let a =
                    DenseMatrix::try_new(rows, cols, values.iter().map(|&v| T::from_f64(v as f64)).collect()).unwrap();
                let gpu = GpuDense::upload(&ctx, &a, DenseLayout::RowMajor).unwrap();
                let options = GemvOptions { splits: Some(splits), columns, row_batch, ..Default::default() };
                let plan = Gemv::with_options(&ctx, &gpu, Transpose::Yes, &options).unwrap();
                let what = format!("{rows}x{cols} {} {} subgroups {subgroups}", plan.describe(), T::KIND.name());
                assert!(plan.describe().contains("strips"), "{what}: not cut");
                let mut results = Vec::new();
                for (run, recompute) in [false, true, false, true].into_iter().enumerate() {
                    let x: Vec<T> =
                        random_vector(rows, 100 + run as u64 % 2).iter().map(|&v| T::from_f64(v as f64)).collect();
                    let mut y = ctx.upload(&vec![T::from_f64(f64::NAN); cols]).unwrap();
                    RECOMPUTE_PIECES.set(recompute);
                    let done = plan.run(T::from_f64(1.0), &gpu, &ctx.upload(&x).unwrap(), T::from_f64(0.0), &mut y);
                    RECOMPUTE_PIECES.set(false);
                    done.unwrap();
                    let got = y.read_blocking().unwrap();
                    let error = relative_error(&got, &gemv_dense_t(1.0, &a, &x, 0.0, &[]));
                    assert!(error <= tolerance, "{what} run {run} recompute {recompute}: {error:e}");
                    results.push(got);
                }
                // Runs 0 and 2 (published sums) and 1 and 3 (recomputed) on the same x each;
                // the first x again: the same bits either way.
                let bits = |v: &[T]| v.iter().map(|e| e.to_f64().to_bits()).collect::<Vec<_>>();
                assert_eq!(bits(&results[0]), bits(&results[2]), "{what}: published runs differ");
                assert_eq!(bits(&results[1]), bits(&results[3]), "{what}: recomputed runs differ");
                let x: Vec<T> = random_vector(rows, 101).iter().map(|&v| T::from_f64(v as f64)).collect();
                let mut y = ctx.upload(&vec![T::from_f64(f64::NAN); cols]).unwrap();
                plan.run(T::from_f64(1.0), &gpu, &ctx.upload(&x).unwrap(), T::from_f64(0.0), &mut y).unwrap();
                assert_eq!(bits(&y.read_blocking().unwrap()), bits(&results[1]), "{what}: recomputed bits differ");
            }
        }
    }

    /// `Auto`'s columns kernel on the bench's shapes, as measured (benches/NOTES.md, session
    /// 66): tall and narrow, a grid that leaves the GPU idle, in the widest workgroups up to
    /// 512, blocks of 4 units, 8 rows a lane in batches; square, the widest workgroup where it
    /// needs no strips; the others as before, in batches of 2.
    #[test]
    fn auto_shapes_the_columns_kernel_by_how_full_the_gpu_is() {
        let auto = GemvOptions::default();
        let tall = columns_shape::<f32>(256, 1024, 100_000, 8, 4, &auto).unwrap();
        assert_eq!((tall.wg, tall.columns, tall.strips, tall.row_batch), (512, 4, 98, 8), "{tall:?}");
        let tall = columns_shape::<f64>(256, 1024, 100_000, 8, 4, &auto).unwrap();
        assert_eq!((tall.wg, tall.columns, tall.strips, tall.row_batch), (512, 4, 98, 4), "{tall:?}");
        // Where the adapter holds 256 lanes at most, the tall shape keeps them.
        let small = columns_shape::<f32>(256, 256, 100_000, 8, 4, &auto).unwrap();
        assert_eq!((small.wg, small.columns), (256, 4), "{small:?}");
        let square = columns_shape::<f32>(256, 1024, 8192, 2048, 4, &auto).unwrap();
        assert_eq!((square.wg, square.columns, square.strips, square.row_batch), (1024, 8, 1, 2), "{square:?}");
        let tall_wide = columns_shape::<f32>(256, 1024, 65_536, 256, 4, &auto).unwrap();
        assert_eq!((tall_wide.wg, tall_wide.strips, tall_wide.row_batch), (256, 32, 2), "{tall_wide:?}");
        let wide = columns_shape::<f32>(256, 1024, 1024, 16_384, 4, &auto).unwrap();
        assert_eq!((wide.wg, wide.strips, wide.row_batch), (256, 1, 2), "{wide:?}");
        // Knobs keep what they fix.
        let fixed = GemvOptions { workgroup_size: Some(256), ..Default::default() };
        let kept = columns_shape::<f32>(256, 1024, 100_000, 8, 4, &fixed).unwrap();
        assert_eq!((kept.wg, kept.columns, kept.strips), (256, 8, 196), "{kept:?}");
    }

    #[test]
    fn recomputed_strips_match_f32() {
        recomputed_strips_match::<f32>();
    }

    #[test]
    fn recomputed_strips_match_f64() {
        recomputed_strips_match::<f64>();
    }
}
