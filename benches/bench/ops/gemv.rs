//! Dense GEMV `y ← A·x` (`gemv`) and `y ← Aᵀ·x` (`gemv-t`) on row-major matrices: the
//! shapes of [`GemvOp::dense_shapes`] (cuBLAS's anchors on the H100 at the large scale), and
//! Matrix Market files whose dense form fits; f32 or f64 values.

use std::marker::PhantomData;
use std::time::{Duration, Instant};

use wgsparse::ops::{Gemv, GemvOptions, Transpose};
use wgsparse::record::Recorder;
use wgsparse::reference;
use wgsparse::{Context, DenseLayout, DenseMatrix, ElementKind, GpuDense, GpuVec, Scalar};

use super::cost::{self, Cost, Model};
use super::{Inputs, Op, OpError, Prepared, K};
use crate::suite::{dense_operand, BenchMatrix, DenseShape, Scale};

/// Files are densified up to this many entries (256 MiB of f32).
const MAX_DENSE_ENTRIES: usize = 1 << 26;

/// GEMV for values of type `T`, with A or Aᵀ.
pub struct GemvOp<T> {
    transpose: Transpose,
    _values: PhantomData<T>,
}

impl<T> GemvOp<T> {
    /// `y ← A·x`.
    pub fn plain() -> Self {
        GemvOp { transpose: Transpose::No, _values: PhantomData }
    }
    /// `y ← Aᵀ·x`.
    pub fn transposed() -> Self {
        GemvOp { transpose: Transpose::Yes, _values: PhantomData }
    }
}

/// `auto` or `auto:lanes=…:columns=…:splits=…:wg=…:batch=…`.
fn parse_variant(name: &str) -> Option<GemvOptions> {
    let mut parts = name.split(':');
    if parts.next()? != "auto" {
        return None;
    }
    let mut options = GemvOptions::default();
    for part in parts {
        let (key, value) = part.split_once('=')?;
        let value: u32 = value.parse().ok()?;
        match key {
            "wg" => options.workgroup_size = Some(value),
            "lanes" => options.lanes = Some(value),
            "columns" => options.columns = Some(value),
            "splits" => options.splits = Some(value),
            "batch" => options.row_batch = Some(value),
            _ => return None,
        }
    }
    Some(options)
}

/// The dense matrix of an entry: random values for a dense shape, the file's for a matrix.
fn matrix<T: Scalar>(m: &BenchMatrix, seed: u64) -> DenseMatrix<T> {
    match m.dense {
        Some(shape) => {
            let data = dense_operand(shape.rows * shape.cols, seed ^ 0xA).into_iter();
            DenseMatrix::try_new(shape.rows, shape.cols, data.map(|v| T::from_f64(v as f64)).collect())
                .expect("the shape fits")
        }
        None => {
            let dense = DenseMatrix::from_csr(&m.csr).expect("cases() kept matrices that fit");
            DenseMatrix::try_new(
                dense.rows(),
                dense.cols(),
                dense.data().iter().map(|&v| T::from_f64(v as f64)).collect(),
            )
            .expect("same shape")
        }
    }
}

impl<T: Scalar> Op for GemvOp<T> {
    fn name(&self) -> &'static str {
        match self.transpose {
            Transpose::No => "gemv",
            Transpose::Yes => "gemv-t",
        }
    }

    fn algorithms(&self) -> Vec<&'static str> {
        vec!["auto"]
    }

    fn accepts(&self, algorithm: &str) -> bool {
        parse_variant(algorithm).is_some()
    }

    fn format(&self, _algorithm: &str) -> &'static str {
        "dense"
    }

    fn cases(&self, m: &BenchMatrix, _scale: Scale) -> Vec<K> {
        let fits = m.csr.rows().checked_mul(m.csr.cols()).is_some_and(|n| n <= MAX_DENSE_ENTRIES);
        if m.dense.is_some() || fits {
            vec![None]
        } else {
            Vec::new()
        }
    }

    fn dense_shapes(&self, scale: Scale) -> Vec<DenseShape> {
        let shapes: &[(usize, usize)] = match scale {
            Scale::Quick => &[(512, 512), (4096, 64), (64, 4096), (4096, 32)],
            Scale::Small => &[(2048, 2048), (16384, 256), (256, 16384), (25_000, 32)],
            Scale::Large => &[(8192, 8192), (65_536, 1024), (1024, 65_536), (100_000, 32)],
        };
        shapes.iter().map(|&(rows, cols)| DenseShape { family: "dense", batch: 1, rows, cols }).collect()
    }

    fn model(&self) -> Model {
        cost::GEMV
    }

    fn dtype(&self) -> ElementKind {
        T::KIND
    }

    fn cost(&self, m: &BenchMatrix, _k: K) -> Cost {
        let (rows, cols) = (m.csr.rows() as u64, m.csr.cols() as u64);
        cost::gemv(rows, cols, T::KIND.size())
    }

    fn peer_op(&self) -> Option<&'static str> {
        Some(self.name())
    }

    fn inputs<'a>(&self, m: &'a BenchMatrix, _k: K, seed: u64) -> Box<dyn Inputs + 'a> {
        let a = matrix::<T>(m, seed);
        let in_len = if self.transpose == Transpose::No { a.cols() } else { a.rows() };
        let x: Vec<T> = dense_operand(in_len, seed).into_iter().map(|v| T::from_f64(v as f64)).collect();
        let y_ref = match self.transpose {
            Transpose::No => reference::gemv_dense(1.0, &a, &x, 0.0, &[]),
            Transpose::Yes => reference::gemv_dense_t(1.0, &a, &x, 0.0, &[]),
        };
        Box::new(GemvInputs { a, x, y_ref, transpose: self.transpose })
    }
}

struct GemvInputs<T: Scalar> {
    a: DenseMatrix<T>,
    x: Vec<T>,
    y_ref: Vec<f64>,
    transpose: Transpose,
}

impl<T: Scalar> Inputs for GemvInputs<T> {
    fn prepare(&self, ctx: &Context, name: &str) -> Result<Box<dyn Prepared + '_>, OpError> {
        let options = parse_variant(name).ok_or_else(|| OpError::failed(format!("unknown gemv algorithm {name:?}")))?;
        let mut runs = GemvRuns {
            ctx: ctx.clone(),
            inputs: self,
            options,
            variant: name.contains(':').then(|| name.to_string()),
            copies: Vec::new(),
            upload: Duration::ZERO,
            output: Vec::new(),
        };
        runs.add_copy()?;
        Ok(Box::new(runs))
    }

    fn cpu_peers(&self) -> Vec<crate::cpu_peer::CpuPeerTime> {
        crate::cpu_peer::gemv(&self.a, &self.x, self.transpose == Transpose::Yes)
    }
}

/// One copy of the device operands with its plan.
struct Operands<T: Scalar> {
    plan: Gemv<T>,
    a: GpuDense<T>,
    x: GpuVec<T>,
    y: GpuVec<T>,
}

struct GemvRuns<'a, T: Scalar> {
    ctx: Context,
    inputs: &'a GemvInputs<T>,
    options: GemvOptions,
    variant: Option<String>,
    copies: Vec<Operands<T>>,
    /// A and x to the device, the first copy's, waited for.
    upload: Duration,
    /// The last y read back, for the check.
    output: Vec<T>,
}

impl<T: Scalar> Prepared for GemvRuns<'_, T> {
    fn label(&self) -> String {
        match &self.variant {
            Some(variant) => format!("{variant} ({})", self.copies[0].plan.describe()),
            None => format!("auto ({})", self.copies[0].plan.describe()),
        }
    }

    fn extra_bytes(&self) -> u64 {
        self.copies[0].plan.extra_bytes()
    }

    fn working_set_bytes(&self) -> u64 {
        let c = &self.copies[0];
        c.a.byte_len() + c.x.byte_len() + c.y.byte_len()
    }

    fn copies(&self) -> usize {
        self.copies.len()
    }

    fn add_copy(&mut self) -> Result<(), OpError> {
        let (ctx, inputs) = (&self.ctx, self.inputs);
        let start = Instant::now();
        let a = GpuDense::upload(ctx, &inputs.a, DenseLayout::RowMajor)?;
        let x = ctx.upload(&inputs.x)?;
        ctx.synchronize()?;
        if self.copies.is_empty() {
            self.upload = start.elapsed();
        }
        let out_len = inputs.y_ref.len();
        self.copies.push(Operands {
            plan: Gemv::with_options(ctx, &a, inputs.transpose, &self.options)?,
            a,
            x,
            y: ctx.zeros(out_len)?,
        });
        Ok(())
    }

    fn record(&mut self, rec: &mut Recorder<'_, '_>, copy: usize) -> Result<(), OpError> {
        let c = &mut self.copies[copy];
        Ok(c.plan.record(rec, T::from_f64(1.0), &c.a, &c.x, T::default(), &mut c.y)?)
    }

    fn poison(&mut self, copy: usize) -> Result<(), OpError> {
        let y = &self.copies[copy].y;
        y.write(&vec![T::from_f64(f64::NAN); y.len()])?;
        Ok(self.ctx.synchronize()?)
    }

    fn run_and_read(&mut self, copy: usize) -> Result<Duration, OpError> {
        let c = &mut self.copies[copy];
        let start = Instant::now();
        let mut batch = self.ctx.batch();
        c.plan.record(&mut batch.recorder(), T::from_f64(1.0), &c.a, &c.x, T::default(), &mut c.y)?;
        let ticket = batch.read_back(&c.y)?;
        batch.submit()?;
        let view = ticket.wait_view()?;
        let took = start.elapsed();
        self.output.clear();
        self.output.extend_from_slice(&view);
        Ok(took)
    }

    fn check(&self) -> f64 {
        reference::relative_error(&self.output, &self.inputs.y_ref)
    }

    fn transfer(&self) -> Option<Duration> {
        Some(self.upload)
    }
}
