//! The bitmap format's ops (seed 004): element reads (`bitmap-get`), `A ± B`
//! (`bitmap-add`, `bitmap-sub`, B = A with its columns mirrored), `A·Aᵀ` (`bitmap-spgemm`),
//! SpMV (`bitmap-spmv`) and batched LU (`bitmap-lu`), on the generated matrices of
//! [`BitmapOp::dense_shapes`] (uniform random at a density; LU's batches with a dominant
//! diagonal) and Matrix Market files (a file past the flag bound is a skipped row).
//!
//! Reads and SpMV are measured against our own CSR kernels in the same run (the `csr-…`
//! algorithm's row is the peer of the others: no vendor library has the format). `A ± B` and
//! `A·Aᵀ` have a one-shot form, the call that builds C from scratch (pattern, entry count
//! read back, values: what a user waits for), timed by the wall clock against the peer's
//! wall clock (CuPy `A + B`, `A @ A.T` and a synchronize); their GPU µs is the numeric phase
//! alone on the kept pattern.

use std::marker::PhantomData;
use std::time::{Duration, Instant};

use wgsparse::format::{BitmapMatrix, BitmapOptions};
use wgsparse::generate::{self, Rng};
use wgsparse::matrix::GpuBitmap;
use wgsparse::ops::bitmap::{BitmapLu, BitmapProduct, BitmapSpmv, BitmapSum, ElementAccess, MultiplyAlgorithm};
use wgsparse::ops::{Pivoting, Spmv, SpmvAlgorithm};
use wgsparse::record::Recorder;
use wgsparse::reference;
use wgsparse::{Context, Conversion, CooMatrix, CsrMatrix, DenseMatrix, ElementKind, GpuSparse, GpuVec, Scalar};

use super::cost::{self, Cost, Model, Shape};
use super::{Inputs, OneShot, Op, OpError, Prepared, K};
use crate::suite::{dense_operand, BenchMatrix, DenseShape, Scale};

/// Which bitmap op.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Get,
    Add,
    Sub,
    Spgemm,
    Spmv,
    Lu,
}

/// A bitmap op for values of type `T`.
pub struct BitmapOp<T> {
    kind: Kind,
    _values: PhantomData<T>,
}

impl<T> BitmapOp<T> {
    /// The op of `kind`.
    pub fn new(kind: Kind) -> Self {
        BitmapOp { kind, _values: PhantomData }
    }
}

/// Queries of a read: as many as the matrix has entries, at most this many.
const MAX_QUERIES: usize = 1 << 22;

/// Density as stored in a [`DenseShape`]'s batch field for the `bitmap` family: parts per
/// million.
fn shape(rows: usize, cols: usize, density: f64) -> DenseShape {
    DenseShape { family: "bitmap", batch: (density * 1e6).round() as usize, rows, cols }
}

impl<T: Scalar> Op for BitmapOp<T> {
    fn name(&self) -> &'static str {
        match self.kind {
            Kind::Get => "bitmap-get",
            Kind::Add => "bitmap-add",
            Kind::Sub => "bitmap-sub",
            Kind::Spgemm => "bitmap-spgemm",
            Kind::Spmv => "bitmap-spmv",
            Kind::Lu => "bitmap-lu",
        }
    }

    fn algorithms(&self) -> Vec<&'static str> {
        match self.kind {
            Kind::Get => vec!["csr-search", "auto"],
            Kind::Spmv => vec!["csr-auto", "auto"],
            Kind::Lu => vec!["partial", "auto"],
            Kind::Spgemm => vec!["row-wise", "outputs", "auto"],
            Kind::Add | Kind::Sub => vec!["auto"],
        }
    }

    fn format(&self, algorithm: &str) -> &'static str {
        if algorithm.starts_with("csr") {
            "csr"
        } else {
            "bitmap"
        }
    }

    fn cases(&self, m: &BenchMatrix, _scale: Scale) -> Vec<K> {
        match (self.kind, m.dense) {
            (Kind::Lu, Some(d)) if d.family == "bitmap-lu" => vec![None],
            (Kind::Lu, _) => Vec::new(),
            (_, Some(d)) if d.family == "bitmap" => vec![None],
            (_, Some(_)) => Vec::new(),
            (_, None) => vec![None],
        }
    }

    fn dense_shapes(&self, scale: Scale) -> Vec<DenseShape> {
        if self.kind == Kind::Lu {
            let (batch, n) = match scale {
                Scale::Quick => (100, 16),
                Scale::Small => (1000, 32),
                Scale::Large => (10_000, 32),
            };
            return vec![DenseShape { family: "bitmap-lu", batch, rows: batch * n, cols: n }];
        }
        let mut shapes: Vec<DenseShape> = match scale {
            Scale::Quick => vec![shape(256, 256, 0.05), shape(512, 512, 1.0 / 16.0)],
            Scale::Small => vec![shape(1024, 1024, 0.05), shape(2048, 2048, 0.01), shape(2048, 2048, 1.0 / 16.0)],
            Scale::Large => vec![
                shape(1024, 1024, 0.05),
                shape(4096, 4096, 0.01),
                shape(4096, 4096, 0.05),
                shape(16384, 16384, 1.0 / 16.0),
            ],
        };
        match self.kind {
            // Rows of 10⁶ columns (10⁵ at the quick scale).
            Kind::Get | Kind::Spmv => {
                let cols = if scale == Scale::Quick { 100_000 } else { 1_000_000 };
                shapes.push(shape(16, cols, 1.0 / 16.0));
            }
            // The product's twin is too slow past 4096² (and the cases stop there).
            Kind::Spgemm => shapes.retain(|s| s.rows <= 4096),
            _ => {}
        }
        shapes
    }

    fn model(&self) -> Model {
        match self.kind {
            Kind::Get => Model {
                bytes: "queries·(12 + v): each query's row and column read, its value and flag written",
                flops: "none",
                error: Some("max over the queries of |value − twin| / max |twin|; infinite if a present flag differs"),
            },
            Kind::Add | Kind::Sub => Model {
                bytes: "(nnz_A + nnz_B + nnz_C)·(4+v) + 3·(rows+1)·4 (CSR of A, B read and C written once)",
                flops: "nnz_A + nnz_B",
                error: Some("max |C − twin| / max |twin| over C's values; infinite if the pattern differs"),
            },
            Kind::Spgemm => Model {
                bytes: "none counted",
                flops: "2·Σ_k c_k² (A·Aᵀ: c_k entries in column k of A)",
                error: Some("max |C − twin| / max |twin| over C's values; infinite if the pattern differs"),
            },
            Kind::Spmv => cost::SPMV,
            Kind::Lu => Model {
                bytes: "batch·(2·n²·v) (the dense batch in and out, as the dense LU counts it)",
                flops: "batch·(2/3·n³ − 1/2·n² + 5/6·n)",
                error: Some(
                    "no pivoting: max |factors − twin| / max |twin|, infinite if a pattern differs; \
                     partial: max over the batch of ‖P·A − L·U‖_F / (n·‖A‖_F)",
                ),
            },
        }
    }

    fn dtype(&self) -> ElementKind {
        T::KIND
    }

    fn cost(&self, m: &BenchMatrix, _k: K) -> Cost {
        let a = &m.csr;
        let (rows, nnz, v) = (a.rows() as u64, a.nnz() as u64, T::KIND.size());
        match self.kind {
            Kind::Get => Cost { bytes: Some(queries_of(a) as u64 * (12 + v)), flops: None },
            Kind::Add | Kind::Sub => Cost { bytes: Some(4 * nnz * (4 + v) + 3 * (rows + 1) * 4), flops: Some(2 * nnz) },
            Kind::Spgemm => {
                let mut counts = vec![0u64; a.cols()];
                a.col_indices().iter().for_each(|&j| counts[j as usize] += 1);
                Cost { bytes: None, flops: Some(2 * counts.iter().map(|c| c * c).sum::<u64>()) }
            }
            Kind::Spmv => cost::spmv(Shape { rows, cols: a.cols() as u64, nnz }, v),
            Kind::Lu => {
                let n = a.cols() as u64;
                let batch = rows / n.max(1);
                let lu = cost::lu(batch, n, v);
                Cost { bytes: Some(batch * 2 * n * n * v), flops: lu.flops }
            }
        }
    }

    fn peer_op(&self) -> Option<&'static str> {
        match self.kind {
            Kind::Add => Some("bitmap-add"),
            Kind::Sub => Some("bitmap-sub"),
            Kind::Spgemm => Some("bitmap-spgemm"),
            Kind::Lu => Some("bitmap-lu"),
            Kind::Get | Kind::Spmv => None,
        }
    }

    fn own_peer(&self) -> Option<&'static str> {
        match self.kind {
            Kind::Get => Some("csr-search"),
            Kind::Spmv => Some("csr-auto"),
            _ => None,
        }
    }

    fn inputs<'a>(&self, m: &'a BenchMatrix, _k: K, seed: u64) -> Box<dyn Inputs + 'a> {
        let a: CsrMatrix<T> = m.csr.map_values(|v| T::from_f64(v as f64));
        Box::new(BitmapInputs::new(self.kind, a, seed))
    }
}

/// The bench matrix of a `bitmap` or `bitmap-lu` shape.
pub fn generate(shape: DenseShape, seed: u64) -> CsrMatrix<f32> {
    match shape.family {
        "bitmap-lu" => lu_batch(shape.batch, shape.cols, seed),
        _ => generate::random(shape.rows, shape.cols, shape.batch as f64 / 1e6, seed),
    }
}

/// `batch` stacked n × n matrices at 20% density with a dominant diagonal (n + 1).
fn lu_batch(batch: usize, n: usize, seed: u64) -> CsrMatrix<f32> {
    let random = generate::random(batch * n, n, 0.2, seed);
    let (mut offsets, mut cols, mut values) = (vec![0u32], Vec::new(), Vec::new());
    for i in 0..batch * n {
        let (row_cols, row_values) = random.row(i);
        let mut row: Vec<(u32, f32)> =
            row_cols.iter().zip(row_values).filter(|(&j, _)| j as usize != i % n).map(|(&j, &v)| (j, v)).collect();
        row.push(((i % n) as u32, n as f32 + 1.0));
        row.sort_by_key(|&(j, _)| j);
        cols.extend(row.iter().map(|&(j, _)| j));
        values.extend(row.iter().map(|&(_, v)| v));
        offsets.push(cols.len() as u32);
    }
    CsrMatrix::try_from_csr_data(batch * n, n, offsets, cols, values).expect("a valid batch")
}

/// Reads on `a`: as many as its entries, at most [`MAX_QUERIES`].
fn queries_of<T: Scalar>(a: &CsrMatrix<T>) -> usize {
    a.nnz().clamp(1, MAX_QUERIES)
}

/// A with its columns mirrored (j ↦ cols − 1 − j).
fn mirrored<T: Scalar>(a: &CsrMatrix<T>) -> CsrMatrix<T> {
    let coo = a.to_coo();
    let cols = coo.col_indices().iter().map(|&j| (a.cols() - 1) as u32 - j).collect();
    CooMatrix::try_new(a.rows(), a.cols(), coo.row_indices().to_vec(), cols, coo.values().to_vec())
        .expect("mirrored columns stay inside")
        .to_csr()
}

/// The host operands and the twin's result of one case.
struct BitmapInputs<T: Scalar> {
    kind: Kind,
    a: CsrMatrix<T>,
    /// A in bitmap form, or why the conversion refused.
    bitmap: Result<BitmapMatrix<T>, String>,
    /// B of `A ± B` (A mirrored) or of `A·Aᵀ`.
    b: Option<BitmapMatrix<T>>,
    x: Vec<T>,
    query_rows: Vec<u32>,
    query_cols: Vec<u32>,
    /// The twin's result: values (reads, SpMV) or the result's bitmap (sum, product, L|U).
    expected: Vec<f64>,
    expected_flags: Vec<u32>,
}

impl<T: Scalar> BitmapInputs<T> {
    fn new(kind: Kind, a: CsrMatrix<T>, seed: u64) -> Self {
        let bitmap = BitmapMatrix::from_csr(&a, &BitmapOptions::default()).map_err(|e| e.to_string());
        let mut inputs = BitmapInputs {
            kind,
            bitmap,
            b: None,
            x: Vec::new(),
            query_rows: Vec::new(),
            query_cols: Vec::new(),
            expected: Vec::new(),
            expected_flags: Vec::new(),
            a,
        };
        let Ok(host) = &inputs.bitmap else { return inputs };
        match kind {
            Kind::Get => {
                // Half stored entries, half random positions (mostly absent).
                let mut rng = Rng::new(seed);
                let a = &inputs.a;
                for q in 0..queries_of(a) {
                    let (i, j) = if q % 2 == 0 && a.nnz() > 0 {
                        let e = rng.below(a.nnz() as u64) as usize;
                        let i = a.row_offsets().partition_point(|&o| o as usize <= e) - 1;
                        (i, a.col_indices()[e] as usize)
                    } else {
                        (rng.below(a.rows().max(1) as u64) as usize, rng.below(a.cols().max(1) as u64) as usize)
                    };
                    inputs.query_rows.push(i as u32);
                    inputs.query_cols.push(j as u32);
                    inputs.expected.push(host.get(i, j).map_or(0.0, |v| v.to_f64()));
                    inputs.expected_flags.push(host.get(i, j).is_some() as u32);
                }
            }
            Kind::Spmv => {
                inputs.x = dense_operand(inputs.a.cols(), seed).into_iter().map(|v| T::from_f64(v as f64)).collect();
                inputs.expected = reference::spmv_csr(1.0, &inputs.a, &inputs.x, 0.0, &[]);
            }
            Kind::Add | Kind::Sub | Kind::Spgemm => {
                let other = if kind == Kind::Spgemm { inputs.a.transpose() } else { mirrored(&inputs.a) };
                let b = BitmapMatrix::from_csr(&other, &BitmapOptions { max_flag_ratio: f64::INFINITY })
                    .expect("the bound passed for A");
                let c = match kind {
                    Kind::Spgemm => reference::bitmap_multiply(host, &b),
                    _ => reference::bitmap_add(host, &b, kind == Kind::Sub),
                };
                inputs.expected = c.values().to_vec();
                inputs.expected_flags = c.flags().to_vec();
                inputs.b = Some(b);
            }
            Kind::Lu => {
                let (l, u, _) = reference::bitmap_lu(host, inputs.a.cols(), false);
                inputs.expected = l.values().iter().chain(u.values()).copied().collect();
                inputs.expected_flags = l.flags().iter().chain(u.flags()).copied().collect();
            }
        }
        inputs
    }
}

impl<T: Scalar> Inputs for BitmapInputs<T> {
    fn prepare(&self, ctx: &Context, name: &str) -> Result<Box<dyn Prepared + '_>, OpError> {
        let host = self.bitmap.as_ref().map_err(|e| OpError { refused: true, message: e.clone() })?;
        let pivoting = if name == "partial" { Pivoting::Partial } else { Pivoting::None };
        let mut runs = BitmapRuns {
            ctx: ctx.clone(),
            inputs: self,
            host,
            csr: name.starts_with("csr"),
            pivoting,
            multiply: MultiplyAlgorithm::from_name(name).unwrap_or_default(),
            copies: Vec::new(),
            output: Vec::new(),
            output_flags: Vec::new(),
            label: String::new(),
        };
        runs.add_copy()?;
        Ok(Box::new(runs))
    }
}

/// One copy of the device operands and the op's plan on them.
// A few per bench row: the variants' sizes do not matter.
#[allow(clippy::large_enum_variant)]
enum DeviceCopy<T: Scalar> {
    Get {
        a: Matrix<T>,
        access: ElementAccess,
        rows: GpuVec<u32>,
        cols: GpuVec<u32>,
        values: GpuVec<T>,
        present: GpuVec<u32>,
    },
    Spmv {
        a: Matrix<T>,
        plan: SpmvPlan<T>,
        x: GpuVec<T>,
        y: GpuVec<T>,
    },
    Sum {
        a: GpuBitmap<T>,
        b: GpuBitmap<T>,
        plan: BitmapSum<T>,
    },
    Product {
        a: GpuBitmap<T>,
        b: GpuBitmap<T>,
        plan: BitmapProduct<T>,
    },
    Lu {
        a: GpuBitmap<T>,
        plan: Box<BitmapLu<T>>,
    },
}

/// The matrix in the row's format.
enum Matrix<T: Scalar> {
    Bitmap(Box<GpuBitmap<T>>),
    Csr(GpuSparse<T>),
}

enum SpmvPlan<T: Scalar> {
    Bitmap(BitmapSpmv<T>),
    Csr(Spmv<T>),
}

struct BitmapRuns<'a, T: Scalar> {
    ctx: Context,
    inputs: &'a BitmapInputs<T>,
    host: &'a BitmapMatrix<T>,
    /// The CSR baseline (reads, SpMV).
    csr: bool,
    pivoting: Pivoting,
    multiply: MultiplyAlgorithm,
    copies: Vec<DeviceCopy<T>>,
    /// The values (and flags) last read back.
    output: Vec<T>,
    output_flags: Vec<u32>,
    label: String,
}

impl<T: Scalar> BitmapRuns<'_, T> {
    fn matrix(&self) -> Result<Matrix<T>, OpError> {
        Ok(if self.csr {
            Matrix::Csr(GpuSparse::from_csr(&self.ctx, &self.inputs.a, Conversion::Csr)?)
        } else {
            Matrix::Bitmap(Box::new(GpuBitmap::upload(&self.ctx, self.host)?))
        })
    }

    /// Records one run on copy `copy` (also the end-to-end path's).
    fn record_copy(&mut self, rec: &mut Recorder<'_, '_>, copy: usize) -> Result<(), OpError> {
        match &mut self.copies[copy] {
            DeviceCopy::Get { a, access, rows, cols, values, present } => match a {
                Matrix::Bitmap(m) => access.record_get(rec, m, rows, cols, values, present)?,
                Matrix::Csr(m) => access.record_get_csr(rec, m, rows, cols, values, present)?,
            },
            DeviceCopy::Spmv { a, plan, x, y } => match (a, plan) {
                (Matrix::Bitmap(m), SpmvPlan::Bitmap(p)) => p.record(rec, T::from_f64(1.0), m, x, T::default(), y)?,
                (Matrix::Csr(_), SpmvPlan::Csr(p)) => p.record(rec, T::from_f64(1.0), x, T::default(), y)?,
                _ => return Err(OpError::failed("a plan for another format")),
            },
            DeviceCopy::Sum { a, b, plan } => plan.record(rec, a, b)?,
            DeviceCopy::Product { a, b, plan } => plan.record(rec, a, b)?,
            DeviceCopy::Lu { a, plan } => plan.record(rec, a)?,
        }
        Ok(())
    }

    /// The output vectors of a copy, to poison and read.
    fn outputs(&self, copy: usize) -> (&GpuVec<T>, Option<&GpuVec<u32>>) {
        match &self.copies[copy] {
            DeviceCopy::Get { values, present, .. } => (values, Some(present)),
            DeviceCopy::Spmv { y, .. } => (y, None),
            DeviceCopy::Sum { plan, .. } => (plan.output().values(), None),
            DeviceCopy::Product { plan, .. } => (plan.output().values(), None),
            DeviceCopy::Lu { plan, .. } => (plan.l().values(), Some(plan.u().flags())),
        }
    }
}

impl<T: Scalar> Prepared for BitmapRuns<'_, T> {
    fn label(&self) -> String {
        self.label.clone()
    }

    fn extra_bytes(&self) -> u64 {
        match &self.copies[0] {
            DeviceCopy::Lu { plan, .. } => plan.extra_bytes(),
            DeviceCopy::Product { plan, .. } => plan.extra_bytes(),
            _ => 0,
        }
    }

    fn working_set_bytes(&self) -> u64 {
        let matrix = |m: &Matrix<T>| match m {
            Matrix::Bitmap(b) => b.device_bytes(),
            Matrix::Csr(c) => c.device_bytes(),
        };
        match &self.copies[0] {
            DeviceCopy::Get { a, rows, cols, values, present, .. } => {
                matrix(a) + rows.byte_len() + cols.byte_len() + values.byte_len() + present.byte_len()
            }
            DeviceCopy::Spmv { a, x, y, .. } => matrix(a) + x.byte_len() + y.byte_len(),
            DeviceCopy::Sum { a, b, plan } => a.device_bytes() + b.device_bytes() + plan.output().device_bytes(),
            DeviceCopy::Product { a, b, plan } => a.device_bytes() + b.device_bytes() + plan.output().device_bytes(),
            DeviceCopy::Lu { a, plan } => a.device_bytes() + plan.l().device_bytes() + plan.u().device_bytes(),
        }
    }

    fn copies(&self) -> usize {
        self.copies.len()
    }

    fn add_copy(&mut self) -> Result<(), OpError> {
        let ctx = self.ctx.clone();
        let inputs = self.inputs;
        let copy = match inputs.kind {
            Kind::Get => {
                let count = inputs.query_rows.len();
                self.label =
                    if self.csr { "csr-search (binary search)".into() } else { "auto (rank directory)".into() };
                DeviceCopy::Get {
                    a: self.matrix()?,
                    access: ElementAccess::new(&ctx)?,
                    rows: ctx.upload(&inputs.query_rows)?,
                    cols: ctx.upload(&inputs.query_cols)?,
                    values: ctx.zeros(count)?,
                    present: ctx.zeros(count)?,
                }
            }
            Kind::Spmv => {
                let a = self.matrix()?;
                let plan = match &a {
                    Matrix::Bitmap(m) => {
                        let plan = BitmapSpmv::new(&ctx, m)?;
                        self.label = match plan.segments() {
                            1 => format!("auto (bitmap, {} lanes a row)", plan.lanes_per_row()),
                            s => format!("auto (bitmap, {} lanes a segment, {s} segments a row)", plan.lanes_per_row()),
                        };
                        SpmvPlan::Bitmap(plan)
                    }
                    Matrix::Csr(m) => {
                        let plan = Spmv::new(&ctx, m, SpmvAlgorithm::Auto)?;
                        self.label = format!("csr-auto ({})", plan.algorithm().name());
                        SpmvPlan::Csr(plan)
                    }
                };
                DeviceCopy::Spmv { a, plan, x: ctx.upload(&inputs.x)?, y: ctx.zeros(inputs.a.rows())? }
            }
            Kind::Add | Kind::Sub | Kind::Spgemm => {
                let b = inputs.b.as_ref().expect("B of a binary op");
                let (a, b) = (GpuBitmap::upload(&ctx, self.host)?, GpuBitmap::upload(&ctx, b)?);
                if inputs.kind == Kind::Spgemm {
                    let plan = BitmapProduct::new(&ctx, &a, &b, self.multiply)?;
                    self.label = match self.multiply {
                        MultiplyAlgorithm::Auto => format!("auto ({})", plan.algorithm().name()),
                        chosen => chosen.name().into(),
                    };
                    DeviceCopy::Product { a, b, plan }
                } else {
                    self.label = "auto (OR, scan, fill)".into();
                    let plan = BitmapSum::new(&ctx, &a, &b, inputs.kind == Kind::Sub)?;
                    DeviceCopy::Sum { a, b, plan }
                }
            }
            Kind::Lu => {
                let n = inputs.a.cols();
                let batch = inputs.a.rows() / n.max(1);
                let plan = BitmapLu::new(&ctx, n, batch, self.pivoting)?;
                let name = if self.pivoting == Pivoting::Partial { "partial" } else { "auto" };
                self.label = format!("{name} ({})", plan.describe());
                DeviceCopy::Lu { a: GpuBitmap::upload(&ctx, self.host)?, plan: Box::new(plan) }
            }
        };
        self.copies.push(copy);
        Ok(())
    }

    fn record(&mut self, rec: &mut Recorder<'_, '_>, copy: usize) -> Result<(), OpError> {
        self.record_copy(rec, copy)
    }

    fn poison(&mut self, copy: usize) -> Result<(), OpError> {
        let (values, flags) = self.outputs(copy);
        values.write(&vec![T::from_f64(f64::NAN); values.len()])?;
        if let (Some(flags), Kind::Get) = (flags, self.inputs.kind) {
            flags.write(&vec![7; flags.len()])?;
        }
        if let DeviceCopy::Lu { plan, .. } = &self.copies[copy] {
            plan.u().values().write(&vec![T::from_f64(f64::NAN); plan.u().values().len()])?;
        }
        Ok(self.ctx.synchronize()?)
    }

    fn run_and_read(&mut self, copy: usize) -> Result<Duration, OpError> {
        let ctx = self.ctx.clone();
        let start = Instant::now();
        let mut batch = ctx.batch();
        self.record_copy(&mut batch.recorder(), copy)?;
        batch.submit()?;
        let took;
        match &mut self.copies[copy] {
            DeviceCopy::Get { values, present, .. } => {
                self.output = values.read_blocking()?;
                took = start.elapsed();
                self.output_flags = present.read_blocking()?;
            }
            DeviceCopy::Spmv { y, .. } => {
                self.output = y.read_blocking()?;
                took = start.elapsed();
            }
            DeviceCopy::Sum { plan, .. } => {
                let c = plan.output().read_blocking()?;
                took = start.elapsed();
                (self.output, self.output_flags) = (c.values().to_vec(), c.flags().to_vec());
            }
            DeviceCopy::Product { plan, .. } => {
                let c = plan.output().read_blocking()?;
                took = start.elapsed();
                (self.output, self.output_flags) = (c.values().to_vec(), c.flags().to_vec());
            }
            DeviceCopy::Lu { plan, a } => {
                let info = plan.finish()?;
                let (l, u) = (plan.l().read_blocking()?, plan.u().read_blocking()?);
                took = start.elapsed();
                if self.pivoting == Pivoting::Partial {
                    // The backward error of each matrix, its factors packed as LAPACK's.
                    let pivots = plan.pivots().read_blocking()?;
                    let (l, u) = (l.to_dense()?, u.to_dense()?);
                    let dense = self.host.to_dense()?;
                    let n = a.cols();
                    let mut worst = 0f64;
                    for m in 0..a.rows() / n.max(1) {
                        let block = |d: &DenseMatrix<T>| d.data()[m * n * n..(m + 1) * n * n].to_vec();
                        let packed: Vec<f64> =
                            block(&l).iter().zip(block(&u)).map(|(&x, y)| x.to_f64() + y.to_f64()).collect();
                        let original = DenseMatrix::try_new(n, n, block(&dense))?;
                        let error = reference::lu_backward_error(&original, &packed, &pivots[m * n..(m + 1) * n]);
                        worst = worst.max(if info[m] == 0 { error / n as f64 } else { f64::INFINITY });
                    }
                    self.output = vec![T::from_f64(worst)];
                } else {
                    self.output = l.values().iter().chain(u.values()).copied().collect();
                    self.output_flags = l.flags().iter().chain(u.flags()).copied().collect();
                }
            }
        }
        Ok(took)
    }

    fn check(&self) -> f64 {
        let inputs = self.inputs;
        if inputs.kind == Kind::Lu && self.pivoting == Pivoting::Partial {
            return self.output.first().map_or(f64::INFINITY, |e| e.to_f64());
        }
        if inputs.kind == Kind::Spmv {
            return reference::relative_error(&self.output, &inputs.expected);
        }
        if self.output_flags != inputs.expected_flags || self.output.len() != inputs.expected.len() {
            return f64::INFINITY;
        }
        reference::max_relative_error(&self.output, &inputs.expected)
    }

    fn one_shot(&mut self) -> Result<Option<OneShot>, OpError> {
        let ctx = self.ctx.clone();
        let start = Instant::now();
        match &self.copies[0] {
            DeviceCopy::Sum { a, b, .. } => drop(BitmapSum::new(&ctx, a, b, self.inputs.kind == Kind::Sub)?),
            DeviceCopy::Product { a, b, .. } => {
                let product = BitmapProduct::new(&ctx, a, b, self.multiply)?;
                ctx.synchronize()?;
                drop(product);
            }
            _ => return Ok(None),
        }
        Ok(Some(OneShot { time: start.elapsed(), levels: None, relaunches: 0 }))
    }
}
