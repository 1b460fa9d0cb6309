//! SpMM `C ← A·B` (op `spmm`) and `C ← Aᵀ·B` (op `spmm-t`, on the transpose the plan
//! keeps) with every [`SpmmAlgorithm`], on CSR uploads, at the widths of
//! [`tiles::widths`]; f32 or f64 values. `spmm-t` also runs `materialised`: `Auto` on the
//! matrix [`wgsparse::ops::transpose`] makes of A once (values copied, a snapshot), what a
//! caller whose A does not change can use, and what the peer is given.

use std::marker::PhantomData;

use wgsparse::ops::{Sddmm, SddmmAlgorithm, Spmm, SpmmAlgorithm, SpmmOptions};
use wgsparse::record::Recorder;
use wgsparse::reference;
use wgsparse::{Context, Conversion, CsrMatrix, DenseLayout, DenseMatrix, ElementKind, GpuDense, GpuSparse, Scalar};

use super::cost::{self, Cost, Model, Shape};
use super::tiles;
use super::{Inputs, Op, OpError, Prepared, K};
use crate::suite::{BenchMatrix, Scale};

/// The SpMM op for values of type `T`, of A or of Aᵀ.
pub struct SpmmOp<T> {
    transposed: bool,
    values: PhantomData<T>,
}

impl<T> SpmmOp<T> {
    /// `C ← A·B`.
    pub fn plain() -> Self {
        SpmmOp { transposed: false, values: PhantomData }
    }

    /// `C ← Aᵀ·B`.
    pub fn transposed() -> Self {
        SpmmOp { transposed: true, values: PhantomData }
    }
}

/// The `spmm-t` algorithm that multiplies by a materialised `Aᵀ` (with `Auto`).
const MATERIALISED: &str = "materialised";
/// The `spmm-t` knob that rewrites all of A's values before every run (`auto:changing`).
const CHANGING: &str = "changing";

/// The algorithm, its tuning knobs and whether A's values change before every run.
fn parse_variant(name: &str) -> Option<(SpmmAlgorithm, SpmmOptions, bool)> {
    let changing = name.split(':').any(|k| k == CHANGING);
    let rest = name.split(':').filter(|k| *k != CHANGING).collect::<Vec<_>>().join(":");
    let (algorithm, knobs) = tiles::parse(&rest)?;
    let algorithm = if algorithm == MATERIALISED { SpmmAlgorithm::Auto } else { SpmmAlgorithm::from_name(algorithm)? };
    Some((algorithm, knobs, changing))
}

impl<T: Scalar> Op for SpmmOp<T> {
    fn name(&self) -> &'static str {
        if self.transposed {
            "spmm-t"
        } else {
            "spmm"
        }
    }

    fn algorithms(&self) -> Vec<&'static str> {
        let algorithms = SpmmAlgorithm::ALL.iter().chain([&SpmmAlgorithm::Auto]).filter(|a| a.supports::<T>());
        let materialised = self.transposed.then_some(MATERIALISED);
        algorithms.map(|a| a.name()).chain(materialised).collect()
    }

    fn accepts(&self, algorithm: &str) -> bool {
        let materialised = algorithm.split(':').next() == Some(MATERIALISED);
        let changing = algorithm.split(':').any(|k| k == CHANGING);
        (self.transposed || !(materialised || changing))
            && !(materialised && changing)
            && parse_variant(algorithm).is_some_and(|(a, _, _)| a.supports::<T>())
    }

    fn format(&self, _algorithm: &str) -> &'static str {
        "csr"
    }

    fn cases(&self, _m: &BenchMatrix, scale: Scale) -> Vec<K> {
        tiles::widths(scale).into_iter().map(Some).collect()
    }

    fn model(&self) -> Model {
        if self.transposed {
            cost::SPMM_T
        } else {
            cost::SPMM
        }
    }

    fn dtype(&self) -> ElementKind {
        T::KIND
    }

    fn cost(&self, m: &BenchMatrix, k: K) -> Cost {
        let a = &m.csr;
        let shape = Shape { rows: a.rows() as u64, cols: a.cols() as u64, nnz: a.nnz() as u64 };
        let cost = if self.transposed { cost::spmm_t } else { cost::spmm };
        cost(shape, k.unwrap_or(1) as u64, T::KIND.size())
    }

    fn peer_op(&self) -> Option<&'static str> {
        Some(self.name())
    }

    fn inputs<'a>(&self, m: &'a BenchMatrix, k: K, seed: u64) -> Box<dyn Inputs + 'a> {
        let a = &m.csr;
        let k = k.unwrap_or(1);
        let a: CsrMatrix<T> = tiles::values_as(a);
        let op_a = if self.transposed { a.transpose() } else { a.clone() };
        let b = tiles::operand::<T>(op_a.cols(), k, seed);
        let c_ref = reference::spmm_csr(1.0, &op_a, &b, 0.0, &[]);
        Box::new(SpmmInputs { a, transposed: self.transposed, b, k, c_ref })
    }
}

/// The matrix, B, and the twin's `op(A)·B`.
struct SpmmInputs<T: Scalar> {
    a: CsrMatrix<T>,
    transposed: bool,
    b: DenseMatrix<T>,
    k: usize,
    c_ref: Vec<f64>,
}

impl<T: Scalar> Inputs for SpmmInputs<T> {
    fn prepare(&self, ctx: &Context, name: &str) -> Result<Box<dyn Prepared + '_>, OpError> {
        let (algorithm, options, changing) =
            parse_variant(name).ok_or_else(|| OpError::failed(format!("unknown spmm algorithm {name:?}")))?;
        let mut runs = SpmmRuns {
            ctx: ctx.clone(),
            inputs: self,
            materialised: name.split(':').next() == Some(MATERIALISED),
            requested: algorithm,
            options,
            changing,
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
    plan: Spmm<T>,
    b: GpuDense<T>,
    c: GpuDense<T>,
    matrix_bytes: u64,
    /// The bytes of the transpose the product runs on (`spmm-t`).
    transpose_bytes: u64,
    /// `changing`: what rewrites the plan's matrix before every run.
    rewrite: Option<Rewrite<T>>,
}

/// A's values rewritten before every run, as a graph network's attention scores are: the
/// plan multiplies by `target`, which an SDDMM with k = 1 and ones sets to ±A (A's values
/// times 1·1) before each run, the sign alternating so that every value's bits change; the
/// product's α carries the sign back, so that C is Aᵀ·B every run. Its SDDMM is in the
/// times; `auto:reads=permuted:changing` pays the same.
struct Rewrite<T: Scalar> {
    sddmm: Sddmm<T>,
    target: GpuSparse<T>,
    ones_rows: GpuDense<T>,
    ones_cols: GpuDense<T>,
    runs: u64,
}

impl<T: Scalar> Operands<T> {
    /// Records one run (after the rewrite, with `changing`).
    fn record_run(&mut self, rec: &mut Recorder<'_, '_>) -> Result<(), OpError> {
        let mut sign = 1.0;
        if let Some(r) = &mut self.rewrite {
            r.runs += 1;
            sign = if r.runs % 2 == 1 { -1.0 } else { 1.0 };
            r.sddmm.record(rec, T::from_f64(sign), &r.ones_rows, &r.ones_cols, T::default(), &mut r.target)?;
        }
        Ok(self.plan.record(rec, T::from_f64(sign), &self.b, T::default(), &mut self.c)?)
    }
}

struct SpmmRuns<'a, T: Scalar> {
    ctx: Context,
    inputs: &'a SpmmInputs<T>,
    /// Whether the product runs on `ops::transpose(A)` instead of a transposed plan.
    materialised: bool,
    requested: SpmmAlgorithm,
    options: SpmmOptions,
    /// `changing`: A's values rewritten before every run ([`Rewrite`]).
    changing: bool,
    variant: Option<String>,
    copies: Vec<Operands<T>>,
    /// The last C read back, for the check.
    output: Vec<T>,
}

impl<T: Scalar> Prepared for SpmmRuns<'_, T> {
    fn label(&self) -> String {
        let plan = &self.copies[0].plan;
        let mut used = plan.algorithm().name().to_string();
        if plan.row_parts() > 1 {
            used += &format!(", {} slots a row", plan.row_parts());
        }
        if let Some(reads) = plan.transposed_reads() {
            used += &format!(", {} reads", reads.name());
        }
        match (&self.variant, self.requested) {
            _ if self.materialised => format!("{} ({used})", self.variant.as_deref().unwrap_or(MATERIALISED)),
            (Some(variant), _) => variant.clone(),
            (None, SpmmAlgorithm::Auto) => format!("auto ({used})"),
            (None, _) => used.to_string(),
        }
    }

    fn extra_bytes(&self) -> u64 {
        self.copies[0].plan.extra_bytes()
    }

    fn transpose_bytes(&self) -> Option<u64> {
        self.inputs.transposed.then(|| self.copies[0].transpose_bytes)
    }

    fn working_set_bytes(&self) -> u64 {
        let c = &self.copies[0];
        c.matrix_bytes + c.b.byte_len() + c.c.byte_len()
    }

    fn copies(&self) -> usize {
        self.copies.len()
    }

    fn add_copy(&mut self) -> Result<(), OpError> {
        let (ctx, inputs) = (&self.ctx, self.inputs);
        let matrix = GpuSparse::from_csr(ctx, &inputs.a, Conversion::Csr)?;
        let (k, requested, options) = (inputs.k, self.requested, &self.options);
        // `changing`: the plan multiplies by a matrix of A's pattern that a rewrite fills.
        let target = if self.changing { Some(matrix.zeros_like(ctx)?) } else { None };
        let (plan, c_rows, transpose_bytes) = if self.materialised {
            // A's transpose as a matrix of its own; the pattern A keeps for it is dropped,
            // as a caller who multiplies only by the copy would.
            let t = wgsparse::ops::transpose(ctx, &matrix)?;
            matrix.drop_analyses();
            (Spmm::with_options(ctx, &t, k, requested, options)?, inputs.a.cols(), t.device_bytes())
        } else if inputs.transposed {
            let plan = Spmm::transposed_with_options(ctx, target.as_ref().unwrap_or(&matrix), k, requested, options)?;
            let bytes = plan.transpose_bytes();
            (plan, inputs.a.cols(), bytes)
        } else {
            (Spmm::with_options(ctx, &matrix, k, requested, options)?, inputs.a.rows(), 0)
        };
        let rewrite = match target {
            Some(target) => {
                let ones = |rows| tiles::upload(ctx, &DenseMatrix::try_new(rows, 1, vec![T::from_f64(1.0); rows])?);
                Some(Rewrite {
                    sddmm: Sddmm::new(ctx, &matrix, 1, SddmmAlgorithm::Auto)?,
                    target,
                    ones_rows: ones(inputs.a.rows())?,
                    ones_cols: ones(inputs.a.cols())?,
                    runs: 0,
                })
            }
            None => None,
        };
        self.copies.push(Operands {
            plan,
            b: tiles::upload(ctx, &inputs.b)?,
            c: GpuDense::zeros(ctx, c_rows, inputs.k, DenseLayout::RowMajor)?,
            matrix_bytes: matrix.device_bytes(),
            transpose_bytes,
            rewrite,
        });
        Ok(())
    }

    fn record(&mut self, rec: &mut Recorder<'_, '_>, copy: usize) -> Result<(), OpError> {
        self.copies[copy].record_run(rec)
    }

    fn poison(&mut self, copy: usize) -> Result<(), OpError> {
        for panel in self.copies[copy].c.panels() {
            panel.write(&vec![T::from_f64(f64::NAN); panel.len()])?;
        }
        Ok(self.ctx.synchronize()?)
    }

    fn run_and_read(&mut self, copy: usize) -> Result<std::time::Duration, OpError> {
        let c = &mut self.copies[copy];
        let start = std::time::Instant::now();
        let mut batch = self.ctx.batch();
        c.record_run(&mut batch.recorder())?;
        let tickets = c.c.panels().iter().map(|p| batch.read_back(p)).collect::<Result<Vec<_>, _>>()?;
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
