//! SpMV `y ← A·x` with every [`SpmvAlgorithm`], each on the format it reads, and `auto` on
//! the conversion `preferred_conversion` picks; f32 or f64 values.

use std::marker::PhantomData;

use wgsparse::format::EllOptions;
use wgsparse::ops::{preferred_conversion, Spmv, SpmvAlgorithm, SpmvOptions};
use wgsparse::record::Recorder;
use wgsparse::reference;
use wgsparse::{Context, Conversion, CsrMatrix, ElementKind, Format, GpuSparse, GpuVec, Scalar};

use super::cost::{self, Cost, Model, Shape};
use super::{Inputs, Op, OpError, Prepared, K};
use crate::suite::{dense_operand, BenchMatrix, Scale};

/// The SpMV op for values of type `T`.
#[derive(Default)]
pub struct SpmvOp<T>(PhantomData<T>);

impl<T: Scalar> Op for SpmvOp<T> {
    fn name(&self) -> &'static str {
        "spmv"
    }

    fn algorithms(&self) -> Vec<&'static str> {
        SpmvAlgorithm::ALL
            .iter()
            .chain([&SpmvAlgorithm::Auto])
            .filter(|a| a.supports::<T>())
            .map(|a| a.name())
            .collect()
    }

    fn accepts(&self, algorithm: &str) -> bool {
        parse_variant(algorithm).is_some_and(|v| v.algorithm.supports::<T>())
    }

    fn format(&self, algorithm: &str) -> &'static str {
        parse_variant(algorithm).and_then(|v| v.algorithm.format()).map_or("auto", Format::name)
    }

    fn cases(&self, _m: &BenchMatrix, _scale: Scale) -> Vec<K> {
        vec![None]
    }

    fn model(&self) -> Model {
        cost::SPMV
    }

    fn dtype(&self) -> ElementKind {
        T::KIND
    }

    fn cost(&self, m: &BenchMatrix, _k: K) -> Cost {
        let a = &m.csr;
        cost::spmv(Shape { rows: a.rows() as u64, cols: a.cols() as u64, nnz: a.nnz() as u64 }, T::KIND.size())
    }

    fn peer_op(&self) -> Option<&'static str> {
        Some("spmv")
    }

    fn inputs<'a>(&self, m: &'a BenchMatrix, _k: K, seed: u64) -> Box<dyn Inputs + 'a> {
        let a = &m.csr;
        let a: CsrMatrix<T> = a.map_values(|v| T::from_f64(v as f64));
        let x: Vec<T> = dense_operand(a.cols(), seed).into_iter().map(|v| T::from_f64(v as f64)).collect();
        let y_ref = reference::spmv_csr(1.0, &a, &x, 0.0, &[]);
        Box::new(SpmvInputs { a, x, y_ref })
    }
}

/// The matrix on the host, x, and the twin's `A·x`.
struct SpmvInputs<T: Scalar> {
    a: CsrMatrix<T>,
    x: Vec<T>,
    y_ref: Vec<f64>,
}

impl<T: Scalar> Inputs for SpmvInputs<T> {
    fn prepare(&self, ctx: &Context, name: &str) -> Result<Box<dyn Prepared + '_>, OpError> {
        let Variant { algorithm, options, wide_indices, table_limit, dot } =
            parse_variant(name).ok_or_else(|| OpError::failed(format!("unknown spmv algorithm {name:?}")))?;
        let conversion = match algorithm.format() {
            // `auto` lets the row lengths choose the format as well as the kernel.
            None => preferred_conversion(&self.a),
            Some(Format::Ell) => Conversion::Ell(EllOptions { compact_indices: !wide_indices, ..Default::default() }),
            Some(format) => Conversion::of(format),
        };
        let conversion = match (conversion, table_limit) {
            (Conversion::Ell(ell), Some(limit)) => Conversion::Ell(EllOptions { value_table_limit: limit, ..ell }),
            (conversion, _) => conversion,
        };
        let first = Operands::upload(ctx, self, conversion, algorithm, &options, dot)?;
        let variant = name.contains(':').then(|| name.to_string());
        Ok(Box::new(SpmvRuns {
            ctx: ctx.clone(),
            inputs: self,
            conversion,
            requested: algorithm,
            options,
            dot,
            variant,
            output: vec![T::default(); self.a.rows()],
            copies: vec![first],
        }))
    }
}

/// An algorithm with tuning knobs, whether ELL keeps 32-bit columns, ELL's value-table
/// limit if not the default, and whether runs also leave the partials of x·y.
struct Variant {
    algorithm: SpmvAlgorithm,
    options: SpmvOptions,
    wide_indices: bool,
    table_limit: Option<usize>,
    dot: bool,
}

/// `name[:key=value]…`: an algorithm and tuning knobs (wg, items, lanes, threshold, chunk,
/// steps; index=32 keeps ELL's 32-bit columns; table=N sets ELL's value-table limit, 0 for
/// values in place, also under `auto` when it picks ELL; dot=1 runs `Spmv::record_dot`, the
/// product with the partials of x·y that CG asks for), e.g. `csr-merge:items=4:wg=128`.
fn parse_variant(name: &str) -> Option<Variant> {
    let mut parts = name.split(':');
    let algorithm = SpmvAlgorithm::from_name(parts.next()?)?;
    let mut options = SpmvOptions::default();
    let mut wide_indices = false;
    let mut table_limit = None;
    let mut dot = false;
    for part in parts {
        let (key, value) = part.split_once('=')?;
        let value: u32 = value.parse().ok()?;
        options = match key {
            "index" if value == 32 => {
                wide_indices = true;
                options
            }
            "table" => {
                table_limit = Some(value as usize);
                options
            }
            "dot" if value == 1 => {
                dot = true;
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
    Some(Variant { algorithm, options, wide_indices, table_limit, dot })
}

/// One copy of the device operands with its plan.
struct Operands<T: Scalar> {
    plan: Spmv<T>,
    x: GpuVec<T>,
    y: GpuVec<T>,
    matrix_bytes: u64,
    index_bits: u32,
    value_bits: u32,
    /// With `dot=1`: room for a partial of x·y per row.
    partials: Option<GpuVec<[T; 2]>>,
}

impl<T: Scalar> Operands<T> {
    fn upload(
        ctx: &Context,
        inputs: &SpmvInputs<T>,
        conversion: Conversion,
        algorithm: SpmvAlgorithm,
        options: &SpmvOptions,
        dot: bool,
    ) -> Result<Self, OpError> {
        let matrix = GpuSparse::from_csr(ctx, &inputs.a, conversion)?;
        Ok(Operands {
            partials: if dot { Some(ctx.zeros(inputs.a.rows().max(1))?) } else { None },
            index_bits: matrix.index_bits(),
            value_bits: matrix.value_bits(),
            plan: Spmv::with_options(ctx, &matrix, algorithm, options)?,
            x: ctx.upload(&inputs.x)?,
            y: ctx.zeros(inputs.a.rows())?,
            matrix_bytes: matrix.device_bytes(),
        })
    }
}

struct SpmvRuns<'a, T: Scalar> {
    ctx: Context,
    inputs: &'a SpmvInputs<T>,
    conversion: Conversion,
    requested: SpmvAlgorithm,
    options: SpmvOptions,
    dot: bool,
    /// The full name when tuning knobs were given.
    variant: Option<String>,
    copies: Vec<Operands<T>>,
    /// The last `y` read back, for the check.
    output: Vec<T>,
}

impl<T: Scalar> Prepared for SpmvRuns<'_, T> {
    fn label(&self) -> String {
        let used = self.copies[0].plan.algorithm().name();
        // Marks ELL columns stored as 16-bit diagonal offsets, and values as table codes.
        let indices = encoding_label(self.copies[0].index_bits, self.copies[0].value_bits);
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
        let copy = Operands::upload(&self.ctx, self.inputs, self.conversion, self.requested, &self.options, self.dot)?;
        self.copies.push(copy);
        Ok(())
    }

    fn record(&mut self, rec: &mut Recorder<'_, '_>, copy: usize) -> Result<(), OpError> {
        self.copies[copy].record(rec)
    }

    fn poison(&mut self, copy: usize) -> Result<(), OpError> {
        let y = &self.copies[copy].y;
        y.write(&vec![T::from_f64(f64::NAN); y.len()])?;
        // An empty submission flushes the write, so that the end-to-end time does not carry it.
        Ok(self.ctx.synchronize()?)
    }

    fn run_and_read(&mut self, copy: usize) -> Result<std::time::Duration, OpError> {
        let c = &mut self.copies[copy];
        let start = std::time::Instant::now();
        let mut batch = self.ctx.batch();
        c.record(&mut batch.recorder())?;
        let ticket = batch.read_back(&c.y)?;
        batch.submit()?;
        let y = ticket.wait_view()?;
        let took = start.elapsed();
        self.output.copy_from_slice(&y);
        Ok(took)
    }

    fn check(&self) -> f64 {
        reference::relative_error(&self.output, &self.inputs.y_ref)
    }
}

/// What a label says of a sparse matrix's encoding: `, i16` for 16-bit diagonal offsets,
/// `, coded` when its values are 16-bit codes into a table as well.
pub(super) fn encoding_label(index_bits: u32, value_bits: u32) -> &'static str {
    match (index_bits, value_bits) {
        (16, 16) => ", i16, coded",
        (16, _) => ", i16",
        _ => "",
    }
}

impl<T: Scalar> Operands<T> {
    /// Records `y ← A·x`, with the partials of x·y where `dot=1` asked for them.
    fn record(&mut self, rec: &mut Recorder<'_, '_>) -> Result<(), OpError> {
        match &self.partials {
            // A run that could not fold the dot in would time the plain product: refused.
            Some(partials) => {
                if self.plan.record_dot(rec, &self.x, &mut self.y, partials)?.is_none() {
                    return Err(OpError::failed("dot=1: this algorithm does not fold x·y into its pass".to_string()));
                }
            }
            None => self.plan.record(rec, T::from_f64(1.0), &self.x, T::default(), &mut self.y)?,
        }
        Ok(())
    }
}
