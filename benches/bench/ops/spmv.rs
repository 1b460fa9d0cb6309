//! SpMV `y ← A·x` with every [`SpmvAlgorithm`], each on the format it reads, and `auto` on a
//! CSR upload.

use wgsparse::format::EllOptions;
use wgsparse::gpu::{Format, GpuMatrix, GpuVec};
use wgsparse::ops::{Spmv, SpmvAlgorithm, SpmvOptions};
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

    fn accepts(&self, algorithm: &str) -> bool {
        parse_variant(algorithm).is_some()
    }

    fn format(&self, algorithm: &str) -> &'static str {
        parse_variant(algorithm).and_then(|v| v.algorithm.format()).unwrap_or("auto")
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
    fn prepare(&self, ctx: &Context, name: &str) -> Result<Box<dyn Prepared + '_>, OpError> {
        let Variant { algorithm, options, wide_indices } =
            parse_variant(name).ok_or_else(|| OpError::failed(format!("unknown spmv algorithm {name:?}")))?;
        let format = match algorithm.default_format() {
            // `auto` lets the row lengths choose the format as well as the kernel.
            None => Format::Auto,
            Some(Format::Ell(ell)) => Format::Ell(EllOptions { compact_indices: !wide_indices, ..ell }),
            Some(format) => format,
        };
        let first = Operands::upload(ctx, self, format, algorithm, &options)?;
        let ctx = ctx.clone();
        let variant = name.contains(':').then(|| name.to_string());
        Ok(Box::new(SpmvRuns {
            ctx,
            inputs: self,
            format,
            requested: algorithm,
            options,
            variant,
            copies: vec![first],
            output: Vec::new(),
        }))
    }
}

/// An algorithm with tuning knobs, and whether ELL keeps 32-bit columns.
struct Variant {
    algorithm: SpmvAlgorithm,
    options: SpmvOptions,
    wide_indices: bool,
}

/// `name[:key=value]…`: an algorithm and tuning knobs (wg, items, lanes, threshold, chunk,
/// steps; index=32 keeps ELL's 32-bit columns), e.g. `csr-merge:items=4:wg=128`.
fn parse_variant(name: &str) -> Option<Variant> {
    let mut parts = name.split(':');
    let algorithm = SpmvAlgorithm::from_name(parts.next()?)?;
    let mut options = SpmvOptions::default();
    let mut wide_indices = false;
    for part in parts {
        let (key, value) = part.split_once('=')?;
        let value: u32 = value.parse().ok()?;
        options = match key {
            "index" if value == 32 => {
                wide_indices = true;
                options
            }
            "wg" => options.workgroup_size(value),
            "items" => options.merge_items(value),
            "lanes" => options.vector_lanes(value),
            "threshold" => options.split_threshold(value),
            "chunk" => options.chunk_steps(value),
            "steps" => options.coo_steps(value),
            _ => return None,
        };
    }
    Some(Variant { algorithm, options, wide_indices })
}

/// One copy of the device operands with its plan.
struct Operands {
    plan: Spmv,
    x: GpuVec<f32>,
    y: GpuVec<f32>,
    matrix_bytes: u64,
    index_bits: u32,
}

impl Operands {
    fn upload(
        ctx: &Context,
        inputs: &SpmvInputs<'_>,
        format: Format,
        algorithm: SpmvAlgorithm,
        options: &SpmvOptions,
    ) -> Result<Self, OpError> {
        let matrix = GpuMatrix::from_csr(ctx, inputs.a, format)?;
        Ok(Operands {
            index_bits: matrix.index_bits(),
            plan: Spmv::with_options(ctx, &matrix, algorithm, options)?,
            x: ctx.upload(&inputs.x)?,
            y: ctx.zeros(inputs.a.rows())?,
            matrix_bytes: matrix.device_bytes(),
        })
    }
}

struct SpmvRuns<'a> {
    ctx: Context,
    inputs: &'a SpmvInputs<'a>,
    format: Format,
    requested: SpmvAlgorithm,
    options: SpmvOptions,
    /// The full name when tuning knobs were given.
    variant: Option<String>,
    copies: Vec<Operands>,
    /// The last `y` read back.
    output: Vec<f32>,
}

impl Prepared for SpmvRuns<'_> {
    fn label(&self) -> String {
        let used = self.copies[0].plan.algorithm().name();
        // Marks ELL columns stored as 16-bit diagonal offsets.
        let indices = if self.copies[0].index_bits == 16 { ", i16" } else { "" };
        match (&self.variant, self.requested) {
            (Some(variant), _) => format!("{variant}{indices}"),
            (None, SpmvAlgorithm::Auto) => format!("auto ({used}{indices})"),
            (None, _) => format!("{used}{indices}"),
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
        self.copies.push(Operands::upload(&self.ctx, self.inputs, self.format, self.requested, &self.options)?);
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
