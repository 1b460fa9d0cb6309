//! SDDMM `C ← A ⊙ (B1·B2ᵀ)` with every [`SddmmAlgorithm`], on CSR uploads, at the widths of
//! [`tiles::widths`]; f32 or f64 values.

use std::marker::PhantomData;

use wgsparse::matrix::PanelStorage;
use wgsparse::ops::{Sddmm, SddmmAlgorithm, SddmmOptions};
use wgsparse::record::Recorder;
use wgsparse::reference;
use wgsparse::{Context, Conversion, CsrMatrix, DenseMatrix, ElementKind, GpuDense, GpuSparse, GpuVec, Scalar};

use super::cost::{self, Cost, Model, Shape};
use super::tiles;
use super::{Inputs, Op, OpError, Prepared, K};
use crate::suite::{BenchMatrix, Scale};

/// The SDDMM op for values of type `T`.
#[derive(Default)]
pub struct SddmmOp<T>(PhantomData<T>);

fn parse_variant(name: &str) -> Option<(SddmmAlgorithm, SddmmOptions)> {
    let (algorithm, knobs) = tiles::parse(name)?;
    Some((SddmmAlgorithm::from_name(algorithm)?, knobs))
}

impl<T: Scalar> Op for SddmmOp<T> {
    fn name(&self) -> &'static str {
        "sddmm"
    }

    fn algorithms(&self) -> Vec<&'static str> {
        SddmmAlgorithm::ALL.iter().chain([&SddmmAlgorithm::Auto]).map(|a| a.name()).collect()
    }

    fn accepts(&self, algorithm: &str) -> bool {
        parse_variant(algorithm).is_some()
    }

    fn format(&self, _algorithm: &str) -> &'static str {
        "csr"
    }

    fn cases(&self, _m: &BenchMatrix, scale: Scale) -> Vec<K> {
        tiles::widths(scale).into_iter().map(Some).collect()
    }

    fn model(&self) -> Model {
        cost::SDDMM
    }

    fn dtype(&self) -> ElementKind {
        T::KIND
    }

    fn cost(&self, m: &BenchMatrix, k: K) -> Cost {
        let a = &m.csr;
        let shape = Shape { rows: a.rows() as u64, cols: a.cols() as u64, nnz: a.nnz() as u64 };
        cost::sddmm(shape, k.unwrap_or(1) as u64, T::KIND.size())
    }

    fn peer_op(&self) -> Option<&'static str> {
        Some("sddmm")
    }

    fn inputs<'a>(&self, m: &'a BenchMatrix, k: K, seed: u64) -> Box<dyn Inputs + 'a> {
        let a = &m.csr;
        let k = k.unwrap_or(1);
        let a: CsrMatrix<T> = tiles::values_as(a);
        let b1 = tiles::operand::<T>(a.rows(), k, seed);
        let b2 = tiles::operand::<T>(a.cols(), k, seed.wrapping_add(1));
        let c_ref = reference::sddmm_csr(1.0, &a, &b1, &b2, 0.0, &[]);
        Box::new(SddmmInputs { a, b1, b2, k, c_ref })
    }
}

/// The matrix, B1, B2, and the twin's `A ⊙ (B1·B2ᵀ)` values.
struct SddmmInputs<T: Scalar> {
    a: CsrMatrix<T>,
    b1: DenseMatrix<T>,
    b2: DenseMatrix<T>,
    k: usize,
    c_ref: Vec<f64>,
}

impl<T: Scalar> Inputs for SddmmInputs<T> {
    fn prepare(&self, ctx: &Context, name: &str) -> Result<Box<dyn Prepared + '_>, OpError> {
        let (algorithm, options) =
            parse_variant(name).ok_or_else(|| OpError::failed(format!("unknown sddmm algorithm {name:?}")))?;
        let mut runs = SddmmRuns {
            ctx: ctx.clone(),
            inputs: self,
            requested: algorithm,
            options,
            variant: name.contains(':').then(|| name.to_string()),
            copies: Vec::new(),
            output: Vec::new(),
        };
        runs.add_copy()?;
        Ok(Box::new(runs))
    }
}

/// One copy of the device operands with its plan.
struct Operands<T: Scalar> {
    plan: Sddmm<T>,
    b1: GpuDense<T>,
    b2: GpuDense<T>,
    c: GpuSparse<T>,
    matrix_bytes: u64,
}

/// C's value arrays, panel by panel.
fn c_values<T: Scalar>(c: &GpuSparse<T>) -> impl Iterator<Item = &GpuVec<T>> {
    c.panels().iter().filter_map(|p| match p.storage() {
        PanelStorage::Csr(m) => Some(m.values()),
        _ => None,
    })
}

struct SddmmRuns<'a, T: Scalar> {
    ctx: Context,
    inputs: &'a SddmmInputs<T>,
    requested: SddmmAlgorithm,
    options: SddmmOptions,
    variant: Option<String>,
    copies: Vec<Operands<T>>,
    /// The last values of C read back, for the check.
    output: Vec<T>,
}

impl<T: Scalar> Prepared for SddmmRuns<'_, T> {
    fn label(&self) -> String {
        let used = self.copies[0].plan.algorithm().name();
        match (&self.variant, self.requested) {
            (Some(variant), _) => variant.clone(),
            (None, SddmmAlgorithm::Auto) => format!("auto ({used})"),
            (None, _) => used.to_string(),
        }
    }

    fn extra_bytes(&self) -> u64 {
        self.copies[0].plan.extra_bytes()
    }

    fn working_set_bytes(&self) -> u64 {
        let c = &self.copies[0];
        c.matrix_bytes + c.b1.byte_len() + c.b2.byte_len() + c_values(&c.c).map(GpuVec::byte_len).sum::<u64>()
    }

    fn copies(&self) -> usize {
        self.copies.len()
    }

    fn add_copy(&mut self) -> Result<(), OpError> {
        let (ctx, inputs) = (&self.ctx, self.inputs);
        let matrix = GpuSparse::from_csr(ctx, &inputs.a, Conversion::Csr)?;
        self.copies.push(Operands {
            plan: Sddmm::with_options(ctx, &matrix, inputs.k, self.requested, &self.options)?,
            b1: tiles::upload(ctx, &inputs.b1)?,
            b2: tiles::upload(ctx, &inputs.b2)?,
            c: matrix.zeros_like(ctx)?,
            matrix_bytes: matrix.device_bytes(),
        });
        Ok(())
    }

    fn record(&mut self, rec: &mut Recorder<'_, '_>, copy: usize) -> Result<(), OpError> {
        let c = &mut self.copies[copy];
        Ok(c.plan.record(rec, T::from_f64(1.0), &c.b1, &c.b2, T::default(), &mut c.c)?)
    }

    fn poison(&mut self, copy: usize) -> Result<(), OpError> {
        for values in c_values(&self.copies[copy].c) {
            values.write(&vec![T::from_f64(f64::NAN); values.len()])?;
        }
        Ok(self.ctx.synchronize()?)
    }

    fn run_and_read(&mut self, copy: usize) -> Result<std::time::Duration, OpError> {
        let c = &mut self.copies[copy];
        let start = std::time::Instant::now();
        let mut batch = self.ctx.batch();
        c.plan.record(&mut batch.recorder(), T::from_f64(1.0), &c.b1, &c.b2, T::default(), &mut c.c)?;
        let tickets = c_values(&c.c).map(|v| batch.read_back(v)).collect::<Result<Vec<_>, _>>()?;
        batch.submit()?;
        let views = tickets.into_iter().map(|t| t.wait_view()).collect::<Result<Vec<_>, _>>()?;
        let took = start.elapsed();
        self.output.clear();
        views.iter().for_each(|v| self.output.extend_from_slice(v));
        Ok(took)
    }

    fn check(&self) -> f64 {
        reference::relative_error(&self.output, &self.inputs.c_ref)
    }
}
