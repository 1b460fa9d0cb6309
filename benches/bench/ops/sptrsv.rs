//! Sparse triangular solve `T·x = b` (op `sptrsv` for the lower triangle, `sptrsv-upper`
//! for the upper one) with every [`SptrsvAlgorithm`]. Any square matrix becomes a triangle to
//! solve: its strictly lower (upper) entries, with `1 + Σ|row|` on the diagonal
//! ([`generate::solvable_triangle`]); the peer script builds the same matrix.
//!
//! Rows are timed twice: repeated (the GPU µs column: a recorded solve, the pattern's levels
//! kept from an earlier solve) and one-shot (a fresh plan on a matrix whose analyses were
//! dropped: the first solve with its level capture, waited for; wall clock), which the
//! peer's speedup compares with cuSPARSE's analysis + solve.

use std::marker::PhantomData;
use std::time::Instant;

use wgsparse::generate;
use wgsparse::ops::{Diagonal, LevelCapture, SptrsvAlgorithm, SptrsvOptions, Triangle, TriangularSolve};
use wgsparse::record::Recorder;
use wgsparse::reference;
use wgsparse::{Context, Conversion, CsrMatrix, ElementKind, GpuSparse, GpuVec, Scalar};

use super::cost::{self, Cost, Model, Shape};
use super::tiles;
use super::{Inputs, OneShot, Op, OpError, Prepared, K};
use crate::suite::{BenchMatrix, Scale};

/// The triangular solve for values of type `T`, of the lower or the upper triangle.
pub struct SptrsvOp<T> {
    upper: bool,
    values: PhantomData<T>,
}

impl<T> SptrsvOp<T> {
    /// `L·x = b`.
    pub fn lower() -> Self {
        SptrsvOp { upper: false, values: PhantomData }
    }

    /// `U·x = b`.
    pub fn upper() -> Self {
        SptrsvOp { upper: true, values: PhantomData }
    }

    fn triangle(&self) -> Triangle {
        if self.upper {
            Triangle::Upper
        } else {
            Triangle::Lower
        }
    }
}

/// `algorithm` or a tuning variant
/// `algorithm:backoff=N:wgs=N:capture=C:rounds=N:batches=N:solo=N` (the back-off, the most
/// workgroups a launch has, how the first solve learns the levels: auto, solve or frontier;
/// the relaunch rounds a recorded solve holds; the batches of 4 entries a lane walks a round;
/// the entries from which a row has a team of its own in row order).
fn parse_variant(name: &str) -> Option<(SptrsvAlgorithm, SptrsvOptions)> {
    let mut parts = name.split(':');
    let algorithm = parts.next()?;
    let mut options = SptrsvOptions::default();
    for knob in parts {
        match knob.split_once('=')? {
            ("backoff", v) => options.backoff = Some(v.parse().ok()?),
            ("wgs", v) => options.max_workgroups = Some(v.parse().ok()?),
            ("capture", v) => options.capture = LevelCapture::from_name(v)?,
            ("rounds", v) => options.relaunch_rounds = v.parse().ok()?,
            ("batches", v) => options.walk_batches = v.parse().ok()?,
            ("solo", v) => options.solo_row_entries = Some(v.parse().ok()?),
            _ => return None,
        }
    }
    Some((SptrsvAlgorithm::from_name(algorithm)?, options))
}

impl<T: Scalar> Op for SptrsvOp<T> {
    fn name(&self) -> &'static str {
        if self.upper {
            "sptrsv-upper"
        } else {
            "sptrsv"
        }
    }

    fn algorithms(&self) -> Vec<&'static str> {
        SptrsvAlgorithm::ALL.iter().chain([&SptrsvAlgorithm::Auto]).map(|a| a.name()).collect()
    }

    fn accepts(&self, algorithm: &str) -> bool {
        parse_variant(algorithm).is_some()
    }

    fn format(&self, _algorithm: &str) -> &'static str {
        "csr"
    }

    fn cases(&self, m: &BenchMatrix, _scale: Scale) -> Vec<K> {
        let a = &m.csr;
        if a.rows() == a.cols() {
            vec![None]
        } else {
            Vec::new()
        }
    }

    fn model(&self) -> Model {
        cost::SPTRSV
    }

    fn dtype(&self) -> ElementKind {
        T::KIND
    }

    fn cost(&self, m: &BenchMatrix, _k: K) -> Cost {
        let a = &m.csr;
        let off_diagonal = (0..a.rows())
            .map(|i| a.row(i).0.iter().filter(|&&j| if self.upper { j as usize > i } else { (j as usize) < i }).count())
            .sum::<usize>();
        let shape = Shape { rows: a.rows() as u64, cols: a.cols() as u64, nnz: (off_diagonal + a.rows()) as u64 };
        cost::sptrsv(shape, T::KIND.size())
    }

    fn peer_op(&self) -> Option<&'static str> {
        Some(self.name())
    }

    fn inputs<'a>(&self, m: &'a BenchMatrix, _k: K, seed: u64) -> Box<dyn Inputs + 'a> {
        let a = &m.csr;
        let triangle: CsrMatrix<T> = tiles::values_as(&generate::solvable_triangle(a, self.upper));
        let b: Vec<T> = generate::random_vector(a.rows(), seed).into_iter().map(|v| T::from_f64(v as f64)).collect();
        let b64: Vec<f64> = b.iter().map(|v| v.to_f64()).collect();
        let x_ref = reference::triangular_solve(&triangle, self.upper, false, &b64, 1)
            .unwrap_or_else(|(row, why)| panic!("a solvable triangle is solvable, but row {row}: {why}"));
        Box::new(SptrsvInputs { triangle, side: self.triangle(), b, x_ref })
    }
}

/// The triangle, b, and the twin's x.
struct SptrsvInputs<T: Scalar> {
    triangle: CsrMatrix<T>,
    side: Triangle,
    b: Vec<T>,
    x_ref: Vec<f64>,
}

impl<T: Scalar> Inputs for SptrsvInputs<T> {
    fn prepare(&self, ctx: &Context, name: &str) -> Result<Box<dyn Prepared + '_>, OpError> {
        let (algorithm, options) =
            parse_variant(name).ok_or_else(|| OpError::failed(format!("unknown sptrsv algorithm {name:?}")))?;
        let variant = name.contains(':').then(|| name.to_string());
        let mut runs = SptrsvRuns {
            ctx: ctx.clone(),
            inputs: self,
            algorithm,
            options,
            variant,
            copies: Vec::new(),
            output: Vec::new(),
        };
        runs.add_copy()?;
        Ok(Box::new(runs))
    }
}

/// One copy of the device operands with its plan (its levels captured).
struct Operands<T: Scalar> {
    matrix: GpuSparse<T>,
    plan: TriangularSolve<T>,
    b: GpuVec<T>,
    x: GpuVec<T>,
}

struct SptrsvRuns<'a, T: Scalar> {
    ctx: Context,
    inputs: &'a SptrsvInputs<T>,
    algorithm: SptrsvAlgorithm,
    options: SptrsvOptions,
    variant: Option<String>,
    copies: Vec<Operands<T>>,
    /// The last x read back, for the check.
    output: Vec<T>,
}

impl<T: Scalar> SptrsvRuns<'_, T> {
    fn plan(&self, matrix: &GpuSparse<T>) -> Result<TriangularSolve<T>, OpError> {
        let inputs = self.inputs;
        Ok(TriangularSolve::with_options(
            &self.ctx,
            matrix,
            inputs.side,
            Diagonal::NonUnit,
            self.algorithm,
            self.options,
        )?)
    }
}

impl<T: Scalar> Prepared for SptrsvRuns<'_, T> {
    fn label(&self) -> String {
        let used = self.copies[0].plan.order_in_use().name();
        match (&self.variant, self.algorithm) {
            (Some(variant), _) => variant.clone(),
            (None, SptrsvAlgorithm::Auto) => format!("auto ({used})"),
            (None, a) => a.name().to_string(),
        }
    }

    fn extra_bytes(&self) -> u64 {
        let plan = &self.copies[0].plan;
        plan.extra_bytes() + plan.level_sets_bytes()
    }

    fn working_set_bytes(&self) -> u64 {
        let c = &self.copies[0];
        c.matrix.device_bytes() + c.b.byte_len() + c.x.byte_len()
    }

    fn copies(&self) -> usize {
        self.copies.len()
    }

    fn add_copy(&mut self) -> Result<(), OpError> {
        let inputs = self.inputs;
        let matrix = GpuSparse::from_csr(&self.ctx, &inputs.triangle, Conversion::Csr)?;
        let plan = self.plan(&matrix)?;
        let b = self.ctx.upload(&inputs.b)?;
        let mut x = self.ctx.zeros(inputs.b.len())?;
        // The first solve captures the levels the repeated runs use.
        plan.solve(&b, &mut x)?;
        self.copies.push(Operands { matrix, plan, b, x });
        Ok(())
    }

    fn record(&mut self, rec: &mut Recorder<'_, '_>, copy: usize) -> Result<(), OpError> {
        let c = &mut self.copies[copy];
        Ok(c.plan.record(rec, &c.b, &mut c.x)?)
    }

    fn poison(&mut self, copy: usize) -> Result<(), OpError> {
        let x = &self.copies[copy].x;
        x.write(&vec![T::from_f64(f64::NAN); x.len()])?;
        Ok(self.ctx.synchronize()?)
    }

    fn run_and_read(&mut self, copy: usize) -> Result<std::time::Duration, OpError> {
        let c = &mut self.copies[copy];
        let start = Instant::now();
        let mut batch = self.ctx.batch();
        c.plan.record(&mut batch.recorder(), &c.b, &mut c.x)?;
        let ticket = batch.read_back(&c.x)?;
        batch.submit()?;
        let view = ticket.wait_view()?;
        let took = start.elapsed();
        self.output.clear();
        self.output.extend_from_slice(&view);
        // A recorded run reports unsolvable rows and rows left to its relaunches here.
        c.plan.check()?;
        Ok(took)
    }

    fn check(&self) -> f64 {
        reference::relative_error(&self.output, &self.inputs.x_ref)
    }

    fn one_shot(&mut self) -> Result<Option<OneShot>, OpError> {
        let c = &self.copies[0];
        c.matrix.drop_analyses();
        let mut x = self.ctx.zeros(self.inputs.b.len())?;
        self.ctx.synchronize()?;
        let start = Instant::now();
        let plan = self.plan(&c.matrix)?;
        let report = plan.solve(&c.b, &mut x)?;
        // Anything the call left queued is counted too (solve() waits for its capture and,
        // where the plan runs by level, the level sort).
        self.ctx.synchronize()?;
        let time = start.elapsed();
        let levels = plan.levels().or(report.levels);
        Ok(Some(OneShot { time, levels, relaunches: report.relaunches }))
    }
}
