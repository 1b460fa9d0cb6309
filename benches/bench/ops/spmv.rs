//! SpMV `y ← A·x` with every [`SpmvAlgorithm`], each on the format it reads, and `auto` on a
//! CSR upload.

use wgsparse::gpu::{Format, GpuMatrix, GpuVec};
use wgsparse::ops::{Spmv, SpmvAlgorithm};
use wgsparse::reference;
use wgsparse::{Context, CsrMatrix};

use super::cost::{self, Cost, Model, Shape};
use super::{Inputs, Op, OpError, Prepared, K};
use crate::suite::{dense_operand, Scale};

/// The SpMV op.
pub struct SpmvOp;

impl Op for SpmvOp {
    fn name(&self) -> &'static str {
        "spmv"
    }

    fn algorithms(&self) -> Vec<&'static str> {
        SpmvAlgorithm::ALL.iter().chain([&SpmvAlgorithm::Auto]).map(|a| a.name()).collect()
    }

    fn format(&self, algorithm: &str) -> &'static str {
        SpmvAlgorithm::from_name(algorithm).and_then(SpmvAlgorithm::format).unwrap_or("csr")
    }

    fn cases(&self, _a: &CsrMatrix<f32>, _scale: Scale) -> Vec<K> {
        vec![None]
    }

    fn model(&self) -> Model {
        cost::SPMV
    }

    fn cost(&self, a: &CsrMatrix<f32>, _k: K) -> Cost {
        cost::spmv(Shape { rows: a.rows() as u64, cols: a.cols() as u64, nnz: a.nnz() as u64 })
    }

    fn peer_op(&self) -> Option<&'static str> {
        Some("spmv")
    }

    fn inputs<'a>(&self, a: &'a CsrMatrix<f32>, _k: K, seed: u64) -> Box<dyn Inputs + 'a> {
        let x = dense_operand(a.cols(), seed);
        let y_ref = reference::spmv_csr(1.0, a, &x, 0.0, &[]);
        Box::new(SpmvInputs { a, x, y_ref })
    }
}

/// The matrix on the host, x, and the twin's `A·x`.
struct SpmvInputs<'a> {
    a: &'a CsrMatrix<f32>,
    x: Vec<f32>,
    y_ref: Vec<f64>,
}

impl Inputs for SpmvInputs<'_> {
    fn prepare(&self, ctx: &Context, algorithm: &str) -> Result<Box<dyn Prepared + '_>, OpError> {
        let algorithm = SpmvAlgorithm::from_name(algorithm)
            .ok_or_else(|| OpError::failed(format!("unknown spmv algorithm {algorithm:?}")))?;
        let first = Operands::upload(ctx, self, algorithm)?;
        let ctx = ctx.clone();
        Ok(Box::new(SpmvRuns { ctx, inputs: self, requested: algorithm, copies: vec![first], output: Vec::new() }))
    }
}

/// One copy of the device operands with its plan.
struct Operands {
    plan: Spmv,
    x: GpuVec<f32>,
    y: GpuVec<f32>,
    matrix_bytes: u64,
}

impl Operands {
    fn upload(ctx: &Context, inputs: &SpmvInputs<'_>, algorithm: SpmvAlgorithm) -> Result<Self, OpError> {
        let format = algorithm.default_format().unwrap_or(Format::Csr);
        let matrix = GpuMatrix::from_csr(ctx, inputs.a, format)?;
        Ok(Operands {
            plan: Spmv::new(ctx, &matrix, algorithm)?,
            x: ctx.upload(&inputs.x)?,
            y: ctx.zeros(inputs.a.rows())?,
            matrix_bytes: matrix.device_bytes(),
        })
    }
}

struct SpmvRuns<'a> {
    ctx: Context,
    inputs: &'a SpmvInputs<'a>,
    requested: SpmvAlgorithm,
    copies: Vec<Operands>,
    /// The last `y` read back.
    output: Vec<f32>,
}

impl Prepared for SpmvRuns<'_> {
    fn label(&self) -> String {
        let used = self.copies[0].plan.algorithm().name();
        match self.requested {
            SpmvAlgorithm::Auto => format!("auto ({used})"),
            _ => used.to_string(),
        }
    }

    fn extra_bytes(&self) -> u64 {
        self.copies[0].plan.extra_bytes()
    }

    fn working_set_bytes(&self) -> u64 {
        let c = &self.copies[0];
        c.matrix_bytes + c.x.byte_len() + c.y.byte_len()
    }

    fn copies(&self) -> usize {
        self.copies.len()
    }

    fn add_copy(&mut self) -> Result<(), OpError> {
        self.copies.push(Operands::upload(&self.ctx, self.inputs, self.requested)?);
        Ok(())
    }

    fn encode(&mut self, pass: &mut wgpu::ComputePass<'_>, copy: usize) -> Result<(), OpError> {
        let c = &mut self.copies[copy];
        Ok(c.plan.encode(pass, 1.0, &c.x, 0.0, &mut c.y)?)
    }

    fn poison(&mut self, copy: usize) -> Result<(), OpError> {
        let ctx = &self.ctx;
        let y = &self.copies[copy].y;
        y.write(ctx, &vec![f32::NAN; y.len()])?;
        // An empty submission flushes the write, so that the end-to-end time does not carry it.
        ctx.queue().submit([]);
        Ok(ctx.synchronize()?)
    }

    fn run_and_read(&mut self, copy: usize) -> Result<(), OpError> {
        let c = &mut self.copies[copy];
        c.plan.run(1.0, &c.x, 0.0, &mut c.y)?;
        self.output = c.y.read_blocking(&self.ctx)?;
        Ok(())
    }

    fn check(&self) -> f64 {
        reference::relative_error(&self.output, &self.inputs.y_ref)
    }
}
