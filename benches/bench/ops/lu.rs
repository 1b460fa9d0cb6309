//! Batched LU `P·A = L·U` with partial pivoting (`lu`; tournament pivoting as a variant),
//! out of place as `torch.linalg.lu_factor` does it: the batches of [`LuOp::dense_shapes`]
//! (`lu_<batch>x<n>`, PyTorch's anchors on the H100 at the large scale) and square Matrix
//! Market files (one matrix, dense); f32 or f64 values. Checked by the backward error, the
//! pivots and the multipliers (see [`cost::LU`]).

use std::marker::PhantomData;
use std::time::{Duration, Instant};

use wgsparse::ops::{BatchedLu, LuAlgorithm, LuOptions, Pivoting, TallPanels};
use wgsparse::record::Recorder;
use wgsparse::reference;
use wgsparse::{Context, DenseLayout, DenseMatrix, ElementKind, GpuDense, GpuVec, Scalar};

use super::cost::{self, Cost, Model};
use super::{Inputs, Op, OpError, Prepared, K};
use crate::suite::{dense_operand, BenchMatrix, DenseShape, Scale};

/// Matrices up to this order are checked by the exact backward error, larger ones along
/// random vectors.
const EXACT_CHECK_ORDER: usize = 256;
/// Square files are factored up to this order.
const MAX_FILE_ORDER: usize = 4096;

/// Batched LU for values of type `T`.
#[derive(Default)]
pub struct LuOp<T>(PhantomData<T>);

/// An algorithm name, optionally with `:wg=…`, `:pivot=partial|tournament` (partial by
/// default: `auto` is getrf's partial pivoting) and `:rows=…` (the blocked LU's rows a
/// workgroup, `LuOptions::tournament_rows`: a tournament's rounds, or the tallest panel
/// partial pivoting factors in one workgroup), `:panel=cooperative|columns` (how partial
/// pivoting steps taller panels, `LuOptions::tall_panels`) or `:panel=staged` (the panel in
/// workgroup memory, `LuOptions::staged_panel`) and `:polls=…` (the cooperative
/// panel's wait, `LuOptions::panel_polls`), `:trsm=…` (the blocked LU's columns a workgroup
/// of its triangular solve, `LuOptions::trsm_columns`), `:lookahead=on|off`
/// (`LuOptions::look_ahead`); `:profile` prints the GPU time of each step once
/// (`BatchedLu::profile_factor`); `:solve=K` adds to each run the solve of K right-hand sides
/// a matrix with the factors (`BatchedLu::record_solve`; its time is the difference to the
/// run without), `:solveby=columns|lanes` (`LuOptions::solve_by_columns`), `:solvepanel=…`
/// (the solve's panel rows, 0 for none, `LuOptions::solve_panel`).
fn parse_variant(name: &str) -> Option<(LuOptions, Pivoting, bool, Option<usize>)> {
    let mut parts = name.split(':');
    let mut options = LuOptions { algorithm: LuAlgorithm::from_name(parts.next()?)?, ..Default::default() };
    let mut pivoting = Pivoting::Partial;
    let mut profile = false;
    let mut solve = None;
    for part in parts {
        if part == "profile" {
            profile = true;
            continue;
        }
        let (key, value) = part.split_once('=')?;
        match (key, value) {
            ("wg", _) => options.workgroup_size = Some(value.parse().ok()?),
            ("rows", _) => options.tournament_rows = Some(value.parse().ok()?),
            ("pivot", "partial") => pivoting = Pivoting::Partial,
            ("pivot", "tournament") => pivoting = Pivoting::Tournament,
            ("panel", "cooperative") => options.tall_panels = Some(TallPanels::Cooperative),
            ("panel", "columns") => options.tall_panels = Some(TallPanels::ByColumns),
            ("panel", "staged") => options.staged_panel = true,
            ("polls", _) => options.panel_polls = Some(value.parse().ok()?),
            ("trsm", _) => options.trsm_columns = Some(value.parse().ok()?),
            ("lookahead", "on") => options.look_ahead = Some(true),
            ("lookahead", "off") => options.look_ahead = Some(false),
            ("solve", _) => solve = Some(value.parse().ok().filter(|&k| k > 0)?),
            ("solveby", "columns") => options.solve_by_columns = Some(true),
            ("solveby", "lanes") => options.solve_by_columns = Some(false),
            ("solvepanel", _) => options.solve_panel = Some(value.parse().ok()?),
            _ => return None,
        }
    }
    Some((options, pivoting, profile, solve))
}

/// (batch, n) of an entry.
fn batch_and_order(m: &BenchMatrix) -> (usize, usize) {
    m.dense.map_or((1, m.csr.rows()), |d| (d.batch, d.rows))
}

impl<T: Scalar> Op for LuOp<T> {
    fn name(&self) -> &'static str {
        "lu"
    }

    fn algorithms(&self) -> Vec<&'static str> {
        LuAlgorithm::ALL.iter().chain([&LuAlgorithm::Auto]).map(|a| a.name()).collect()
    }

    fn accepts(&self, algorithm: &str) -> bool {
        parse_variant(algorithm).is_some()
    }

    fn format(&self, _algorithm: &str) -> &'static str {
        "dense"
    }

    fn cases(&self, m: &BenchMatrix, _scale: Scale) -> Vec<K> {
        let square = m.csr.rows() == m.csr.cols() && m.csr.rows() <= MAX_FILE_ORDER;
        if m.dense.is_some() || square {
            vec![None]
        } else {
            Vec::new()
        }
    }

    fn dense_shapes(&self, scale: Scale) -> Vec<DenseShape> {
        let shapes: &[(usize, usize)] = match scale {
            Scale::Quick => &[(100, 16), (10, 32), (2, 64)],
            Scale::Small => &[(1000, 32), (100, 64), (10, 256), (1, 512)],
            Scale::Large => &[(10_000, 32), (1000, 64), (100, 256), (1, 1024), (1, 4096)],
        };
        shapes.iter().map(|&(batch, n)| DenseShape { family: "lu", batch, rows: n, cols: n }).collect()
    }

    fn model(&self) -> Model {
        cost::LU
    }

    fn dtype(&self) -> ElementKind {
        T::KIND
    }

    fn cost(&self, m: &BenchMatrix, _k: K) -> Cost {
        let (batch, n) = batch_and_order(m);
        cost::lu(batch as u64, n as u64, T::KIND.size())
    }

    fn peer_op(&self) -> Option<&'static str> {
        Some("lu")
    }

    fn inputs<'a>(&self, m: &'a BenchMatrix, _k: K, seed: u64) -> Box<dyn Inputs + 'a> {
        let (batch, n) = batch_and_order(m);
        let data: Vec<T> = match m.dense {
            Some(_) => dense_operand(batch * n * n, seed ^ 0x1).into_iter().map(|v| T::from_f64(v as f64)).collect(),
            None => match DenseMatrix::from_csr(&m.csr) {
                Ok(d) => d.data().iter().map(|&v| T::from_f64(v as f64)).collect(),
                Err(_) => Vec::new(),
            },
        };
        Box::new(LuInputs { a: DenseMatrix::try_new(batch * n, n, data).ok(), batch, n })
    }
}

struct LuInputs<T: Scalar> {
    /// The batch stacked by rows (`None`: a file too large to densify).
    a: Option<DenseMatrix<T>>,
    batch: usize,
    n: usize,
}

impl<T: Scalar> Inputs for LuInputs<T> {
    fn prepare(&self, ctx: &Context, name: &str) -> Result<Box<dyn Prepared + '_>, OpError> {
        let (options, pivoting, profile, solve) =
            parse_variant(name).ok_or_else(|| OpError::failed(format!("unknown lu algorithm {name:?}")))?;
        let a = self.a.as_ref().ok_or(OpError { refused: true, message: "too large to factor densely".into() })?;
        let mut runs = LuRuns {
            ctx: ctx.clone(),
            a,
            plan: BatchedLu::with_options(ctx, self.n, self.batch, pivoting, &options)?,
            pivoting,
            solve,
            name: name.to_string(),
            n: self.n,
            copies: Vec::new(),
            upload: Duration::ZERO,
            factors: Vec::new(),
            pivots: Vec::new(),
        };
        runs.add_copy()?;
        if profile {
            let c = &mut runs.copies[0];
            let mut factors = GpuDense::upload(ctx, a, DenseLayout::RowMajor)?;
            let steps = runs.plan.profile_factor(&mut factors, &mut c.pivots)?;
            let steps: Vec<String> = steps.iter().map(|(step, micros)| format!("{step} {micros:.0} µs")).collect();
            eprintln!("lu {} n {}: {}", runs.name, self.n, steps.join(", "));
        }
        Ok(Box::new(runs))
    }

    fn cpu_peers(&self) -> Vec<crate::cpu_peer::CpuPeerTime> {
        self.a.as_ref().map_or(Vec::new(), |a| crate::cpu_peer::lu(a, self.batch, self.n))
    }
}

/// One copy of the device operands.
struct Operands<T: Scalar> {
    a: GpuDense<T>,
    lu: GpuDense<T>,
    pivots: GpuVec<u32>,
    info: GpuVec<u32>,
    /// `:solve=K`: the right-hand sides, solved in place run after run.
    b: Option<GpuDense<T>>,
}

struct LuRuns<'a, T: Scalar> {
    ctx: Context,
    a: &'a DenseMatrix<T>,
    plan: BatchedLu<T>,
    pivoting: Pivoting,
    /// `:solve=K`: right-hand sides a matrix solved after each factorization.
    solve: Option<usize>,
    /// The algorithm as requested.
    name: String,
    n: usize,
    copies: Vec<Operands<T>>,
    /// A to the device, the first copy's, waited for.
    upload: Duration,
    /// The factors and pivots last read back, for the check.
    factors: Vec<T>,
    pivots: Vec<u32>,
}

impl<T: Scalar> Prepared for LuRuns<'_, T> {
    fn label(&self) -> String {
        format!("{} ({})", self.name, self.plan.describe())
    }

    fn extra_bytes(&self) -> u64 {
        self.plan.extra_bytes()
    }

    fn working_set_bytes(&self) -> u64 {
        let c = &self.copies[0];
        c.a.byte_len() + c.lu.byte_len() + c.pivots.byte_len() + c.info.byte_len()
    }

    fn copies(&self) -> usize {
        self.copies.len()
    }

    fn add_copy(&mut self) -> Result<(), OpError> {
        let ctx = &self.ctx;
        let start = Instant::now();
        let a = GpuDense::upload(ctx, self.a, DenseLayout::RowMajor)?;
        ctx.synchronize()?;
        if self.copies.is_empty() {
            self.upload = start.elapsed();
        }
        let (rows, batch) = (self.a.rows(), self.plan.batch());
        self.copies.push(Operands {
            a,
            lu: GpuDense::zeros(ctx, rows, self.n, DenseLayout::RowMajor)?,
            pivots: ctx.zeros(rows)?,
            info: ctx.zeros(batch)?,
            b: match self.solve {
                Some(k) => {
                    let values = dense_operand(rows * k, 3).into_iter().map(|v| T::from_f64(v.into())).collect();
                    Some(GpuDense::upload(ctx, &DenseMatrix::try_new(rows, k, values)?, DenseLayout::RowMajor)?)
                }
                None => None,
            },
        });
        Ok(())
    }

    fn record(&mut self, rec: &mut Recorder<'_, '_>, copy: usize) -> Result<(), OpError> {
        let c = &mut self.copies[copy];
        self.plan.record_factor(rec, &c.a, &mut c.lu, &mut c.pivots, &mut c.info)?;
        if let Some(b) = &mut c.b {
            self.plan.record_solve(rec, &c.lu, &c.pivots, b)?;
        }
        Ok(())
    }

    fn poison(&mut self, copy: usize) -> Result<(), OpError> {
        let c = &self.copies[copy];
        for panel in c.lu.panels() {
            panel.write(&vec![T::from_f64(f64::NAN); panel.len()])?;
        }
        c.pivots.write(&vec![u32::MAX; c.pivots.len()])?;
        Ok(self.ctx.synchronize()?)
    }

    fn run_and_read(&mut self, copy: usize) -> Result<Duration, OpError> {
        let c = &mut self.copies[copy];
        let start = Instant::now();
        let mut batch = self.ctx.batch();
        self.plan.record_factor(&mut batch.recorder(), &c.a, &mut c.lu, &mut c.pivots, &mut c.info)?;
        let factors = batch.read_back(&c.lu.panels()[0])?;
        let pivots = batch.read_back(&c.pivots)?;
        batch.submit()?;
        let (factors, pivots) = (factors.wait_view()?, pivots.wait_view()?);
        let took = start.elapsed();
        self.factors.clear();
        self.factors.extend_from_slice(&factors);
        self.pivots.clear();
        self.pivots.extend_from_slice(&pivots);
        Ok(took)
    }

    /// The worst matrix's backward error over n; infinite where a pivot is out of its range
    /// or, with partial pivoting, a multiplier exceeds 1 (a tournament's may).
    fn check(&self) -> f64 {
        let n = self.n;
        let mut worst = 0f64;
        for (b, (lu, pivots)) in self.factors.chunks(n * n).zip(self.pivots.chunks(n)).enumerate() {
            let pivots_ok = pivots.iter().enumerate().all(|(k, &p)| (k..n).contains(&(p as usize)));
            let multipliers_ok = self.pivoting == Pivoting::Tournament
                || (0..n).all(|i| (0..i).all(|j| lu[i * n + j].to_f64().abs() <= 1.0 + 1e-5));
            if !pivots_ok || !multipliers_ok {
                return f64::INFINITY;
            }
            let a = DenseMatrix::try_new(n, n, self.a.data()[b * n * n..(b + 1) * n * n].to_vec()).expect("n × n");
            let error = if n <= EXACT_CHECK_ORDER {
                reference::lu_backward_error(&a, lu, pivots)
            } else {
                // O(n²) along two random vectors instead of O(n³).
                (0..2u64)
                    .map(|s| {
                        let v: Vec<f64> = dense_operand(n, s).into_iter().map(f64::from).collect();
                        reference::lu_residual_along(&a, lu, pivots, &v)
                    })
                    .fold(0.0, f64::max)
            };
            worst = worst.max(error / n as f64);
        }
        worst
    }

    fn transfer(&self) -> Option<Duration> {
        Some(self.upload)
    }
}
