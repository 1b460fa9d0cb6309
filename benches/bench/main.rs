//! The wgsparse benchmark, behind `cargo xtask bench`: every op and every algorithm on a
//! suite of generated matrices (or Matrix Market files), timed with GPU timestamps, checked
//! against the CPU twin, optionally beside cuSPARSE, printed as one table and written as
//! JSON, Markdown and SVG on request. `--help` lists the options.
//!
//! It runs from `cargo bench --bench bench -- ARGS` or as a prebuilt binary on another
//! machine; only `--peer` looks for a file of the source tree (the peer script).
//!
//! Modules: [`cli`] parses, [`suite`] builds the matrices, [`ops`] wraps each library op
//! behind one interface, [`timing`] measures, [`peer`] runs the vendor library,
//! [`report`] and [`plot`] render.

mod cli;
mod convergence;
mod cpu_peer;
mod occupancy;
mod ops;
mod peer;
mod pipeline_stats;
mod plot;
mod progress;
mod report;
mod suite;
mod timing;

use std::process::ExitCode;

use wgsparse::{Context, ContextOptions};

use cli::Options;
use ops::{Inputs, Op, K};
use peer::{PeerCase, PeerRequest, PeerResults};
use progress::Progress;
use report::{Outcome, PeerTime, Report, Row};
use suite::{Scale, Suite};
use timing::{Clock, Settings};

fn main() -> ExitCode {
    match run() {
        Ok(code) => code,
        Err(message) => {
            eprintln!("bench: {message}");
            ExitCode::from(2)
        }
    }
}

fn run() -> Result<ExitCode, String> {
    let options = match cli::parse(std::env::args().skip(1))? {
        cli::Command::Help => {
            println!("{}", cli::USAGE);
            return Ok(ExitCode::SUCCESS);
        }
        cli::Command::PipelineStats(specs) => {
            pipeline_stats::run(&specs)?;
            return Ok(ExitCode::SUCCESS);
        }
        cli::Command::Occupancy(shapes) => {
            let ctx = ContextOptions::from_env().and_then(Context::new_blocking).map_err(|e| e.to_string())?;
            occupancy::run(&ctx, &shapes)?;
            return Ok(ExitCode::SUCCESS);
        }
        cli::Command::Run(options) => *options,
    };
    let ops = select_ops(&options)?;
    let ctx = ContextOptions::from_env().and_then(Context::new_blocking).map_err(|e| e.to_string())?;
    if options.dtype == wgsparse::ElementKind::F64 && !ctx.supports::<f64>() {
        return Err(format!("--dtype f64: adapter {:?} has no SHADER_F64", ctx.adapter_info().name));
    }
    let scale = match (options.quick, options.small || ctx.is_cpu()) {
        (true, _) => Scale::Quick,
        (false, true) => Scale::Small,
        (false, false) => Scale::Large,
    };
    let mut settings = Settings::new(options.quick);
    if let Some(runs) = options.e2e_runs {
        settings.e2e_runs = runs;
    }
    let progress = Progress::new(options.verbose);
    let only = options.matrices.as_deref();
    let mut suite = suite::load(options.suite.then_some(scale), &options.mtx, only, options.seed, &progress);
    if options.suite {
        suite.add_dense_shapes(ops.iter().flat_map(|op| op.dense_shapes(scale)), only, options.seed);
    }
    let plan = plan_cases(&suite, &ops, &options, scale);

    let mut peer_notes = Vec::new();
    let peer = options.peer.as_deref().and_then(|name| {
        let requests = peer_requests(&suite, &ops, &plan);
        progress.note(&format!("peer {name}: timing {} matrices…", requests.len()));
        let start = std::time::Instant::now();
        match peer::run(name, options.peer_script.as_deref(), &requests, &settings, options.seed, options.dtype) {
            Ok(results) => {
                results.log.iter().for_each(|line| progress.detail(|| format!("peer {name}: {line}")));
                progress.detail(|| format!("peer {name}: done in {:.1} s", start.elapsed().as_secs_f64()));
                peer_notes.extend(doubtful_peer_results(&results));
                Some(results)
            }
            Err(line) => {
                progress.note(&line);
                peer_notes.push(line);
                None
            }
        }
    });

    let clock = Clock::new(&ctx, settings.runs);
    // Like every row, the copy runs on a freshly opened device when rows are isolated.
    let copy_ctx = match options.isolate {
        true => {
            ContextOptions::from_env().and_then(Context::new_blocking).map_err(|e| format!("opening a device: {e}"))?
        }
        false => ctx.clone(),
    };
    let (copy_gbps, copy_bytes) = timing::copy_bandwidth(&copy_ctx, &Clock::new(&copy_ctx, settings.runs), &settings)
        .map_err(|e| format!("measuring copy bandwidth: {}", e.message))?;
    drop(copy_ctx);
    let runner = Runner {
        ctx: &ctx,
        clock: &clock,
        settings,
        seed: options.seed,
        progress: &progress,
        isolate: options.isolate,
    };
    let rows = runner.measure_all(&suite, &ops, &plan, peer.as_ref());
    progress.finish();

    let report = Report {
        adapter: ctx.report(),
        copy_gbps,
        copy_bytes,
        date: report::today(),
        inputs: describe_inputs(&options, scale, ctx.is_cpu()),
        settings,
        timestamps: clock.uses_timestamps(),
        isolated: options.isolate,
        models: ops.iter().map(|op| (op.name(), op.model())).collect(),
        rows,
        skipped: suite.skipped,
        peer: peer.map(|p| (p.name, p.device)),
        peer_notes,
    };
    print!("{}", report.text());
    let mut write_failed = false;
    type Render = fn(&Report) -> String;
    let outputs: [(&Option<std::path::PathBuf>, Render); 4] = [
        (&options.json, Report::json),
        (&options.markdown, Report::markdown),
        (&options.plot, plot::svg),
        (&options.convergence_plot, convergence::svg),
    ];
    for (path, render) in outputs {
        if let Some(path) = path {
            if let Err(e) = std::fs::write(path, render(&report)) {
                eprintln!("bench: cannot write {}: {e}", path.display());
                write_failed = true;
            }
        }
    }
    Ok(match (report.failed(), write_failed) {
        (true, _) => ExitCode::FAILURE,
        (false, true) => ExitCode::from(2),
        (false, false) => ExitCode::SUCCESS,
    })
}

/// The ops named by `--ops` (all by default), after checking `--algorithms` too.
fn select_ops(options: &Options) -> Result<Vec<Box<dyn Op>>, String> {
    let all = ops::all(options.dtype);
    let names: Vec<&str> = all.iter().map(|op| op.name()).collect();
    if let Some(wanted) = &options.ops {
        if let Some(bad) = wanted.iter().find(|w| !names.contains(&w.as_str())) {
            return Err(format!("unknown op {bad:?}: expected one of {}", names.join(", ")));
        }
    }
    let selected: Vec<Box<dyn Op>> =
        all.into_iter().filter(|op| options.ops.as_ref().is_none_or(|w| w.iter().any(|n| n == op.name()))).collect();
    if let Some(wanted) = &options.algorithms {
        if let Some(bad) = wanted.iter().find(|w| !selected.iter().any(|op| op.accepts(w))) {
            let known: Vec<&str> = selected.iter().flat_map(|op| op.algorithms()).collect();
            return Err(format!(
                "unknown algorithm {bad:?}: expected one of {} (or a tuned variant)",
                known.join(", ")
            ));
        }
    }
    Ok(selected)
}

/// One (matrix, op, k) and the algorithms to run on it.
struct Case {
    matrix: usize,
    op: usize,
    k: K,
    algorithms: Vec<&'static str>,
}

/// Every case of the run, in report order.
fn plan_cases(suite: &Suite, ops: &[Box<dyn Op>], options: &Options, scale: Scale) -> Vec<Case> {
    // Names from the command line live as long as the run (tuned variants are not static).
    let requested: Option<Vec<&'static str>> =
        options.algorithms.as_ref().map(|w| w.iter().map(|a| &*Box::leak(a.clone().into_boxed_str())).collect());
    let mut cases = Vec::new();
    for (matrix, m) in suite.matrices.iter().enumerate() {
        for (op_index, op) in ops.iter().enumerate() {
            let algorithms: Vec<&'static str> = match &requested {
                Some(names) => names.iter().copied().filter(|a| op.accepts(a)).collect(),
                None => op.algorithms(),
            };
            if algorithms.is_empty() {
                continue;
            }
            // Dense shapes belong to the ops that list them; generated sparse matrices to the
            // sparse ops (dense ops take Matrix Market files that fit).
            let dense_op = !op.dense_shapes(scale).is_empty();
            let takes = match m.dense {
                Some(shape) => op.dense_shapes(scale).contains(&shape),
                None => !dense_op || !m.generated,
            };
            if !takes {
                continue;
            }
            let mut widths = op.cases(m, scale);
            if let Some(only) = &options.widths {
                // Ops whose every case is a dense width (SpMM, SDDMM) run the widths asked
                // for; the others their own cases (the solvers' k is a count of systems).
                if !widths.is_empty() && widths.iter().all(Option::is_some) {
                    widths = only.iter().map(|&k| Some(k)).collect();
                }
            }
            for k in widths {
                cases.push(Case { matrix, op: op_index, k, algorithms: algorithms.clone() });
            }
        }
    }
    cases
}

/// What the peer runs: each matrix once, with the cases of ops it has.
fn peer_requests<'a>(suite: &'a Suite, ops: &[Box<dyn Op>], plan: &[Case]) -> Vec<PeerRequest<'a>> {
    let mut requests: Vec<PeerRequest<'a>> = Vec::new();
    for case in plan {
        let op = &ops[case.op];
        let Some(peer_op) = op.peer_op() else { continue };
        let matrix = &suite.matrices[case.matrix];
        // The peer's copies follow our rule on the op's compulsory bytes.
        let bytes = op.cost(matrix, case.k).bytes.unwrap_or(0);
        let peer_case = PeerCase { op: peer_op, k: case.k, copies: timing::rotation_copies(bytes) };
        match requests.iter_mut().find(|r| std::ptr::eq(r.matrix, matrix)) {
            Some(request) => request.cases.push(peer_case),
            None => requests.push(PeerRequest { matrix, cases: vec![peer_case] }),
        }
    }
    requests
}

/// Makes the row of the op's baseline algorithm (if it ran) the peer of the case's other
/// rows: our own CSR kernels for the bitmap ops.
fn own_peer(rows: &mut [Row], baseline: Option<&'static str>) {
    let Some(baseline) = baseline else { return };
    let Some(time_us) = rows.iter().find(|r| r.algorithm == baseline).and_then(Row::gpu_us) else { return };
    for row in rows.iter_mut().filter(|r| r.algorithm != baseline) {
        row.peer = Some(PeerTime {
            name: format!("wgsparse {baseline}"),
            time_us,
            e2e_us: None,
            repeated_us: None,
            iterations: None,
            history: None,
        });
    }
}

/// Footer lines for peer cases that failed or whose own check is off.
fn doubtful_peer_results(results: &PeerResults) -> Vec<String> {
    let mut notes: Vec<String> = results
        .all()
        .filter_map(|(matrix, op, k, r)| {
            let case = format!("{matrix} {op}{}", k.map_or(String::new(), |k| format!(" k={k}")));
            match (&r.error, r.rel_err) {
                (Some(e), _) => Some(format!("peer {}: {case} failed: {e}", results.name)),
                (None, Some(err)) if err.is_nan() || err > report::TOLERANCE => {
                    Some(format!("peer {}: {case} relative error {err:.1e} against its float64 product", results.name))
                }
                _ => None,
            }
        })
        .collect();
    notes.sort();
    notes
}

/// What measuring a row needs besides the row itself.
struct Runner<'a> {
    ctx: &'a Context,
    clock: &'a Clock,
    settings: Settings,
    seed: u64,
    progress: &'a Progress,
    /// Each row on a freshly opened device, so that no row runs in memory the rows before it
    /// allocated and freed. (What once looked like such an effect, rows 2–4× slower on one
    /// device, was the driver's slow start after seconds of idle, which the warm-up covers:
    /// benches/NOTES.md, "idle devices".)
    isolate: bool,
}

impl Runner<'_> {
    /// Measures every algorithm of every case; a row's error marks the row and the run goes on.
    fn measure_all(&self, suite: &Suite, ops: &[Box<dyn Op>], plan: &[Case], peer: Option<&PeerResults>) -> Vec<Row> {
        self.progress.start("measuring", plan.iter().map(|c| c.algorithms.len() as u64).sum());
        let mut rows = Vec::new();
        for case in plan {
            let (m, op) = (&suite.matrices[case.matrix], &ops[case.op]);
            let peer_time = peer.and_then(|p| {
                let result = p.get(&m.name, op.peer_op()?, case.k)?;
                let name = result.library.clone().unwrap_or_else(|| p.name.clone());
                Some(PeerTime {
                    name,
                    time_us: result.time_us?,
                    e2e_us: result.e2e_time_us,
                    repeated_us: result.repeated_time_us,
                    iterations: result.iterations,
                    history: result.history.clone(),
                })
            });
            let inputs = op.inputs(m, case.k, self.seed);
            let cpu_peers = inputs.cpu_peers();
            let first_row = rows.len();
            for &algorithm in &case.algorithms {
                self.progress.step(&format!("{} {} {algorithm}", m.name, op.name()));
                let start = std::time::Instant::now();
                let (label, outcome) = self.measure(inputs.as_ref(), algorithm);
                let row = Row {
                    matrix: m.name.clone(),
                    rows: m.csr.rows(),
                    cols: m.csr.cols(),
                    nnz: m.entries(),
                    op: op.name(),
                    dtype: op.dtype(),
                    k: case.k,
                    algorithm,
                    label,
                    format: op.format(algorithm),
                    cost: op.cost(m, case.k),
                    outcome,
                    peer: peer_time.clone(),
                    cpu_peers: cpu_peers.clone(),
                };
                self.progress.detail(|| {
                    let gpu = row
                        .gpu_spread()
                        .map_or(String::new(), |s| format!("{:.1} µs (runs {:.1}–{:.1}), ", s.median, s.min, s.max));
                    let took = start.elapsed().as_secs_f64();
                    format!("{} {} {}: {gpu}{} ({took:.1} s)", m.name, op.name(), row.label, row.status())
                });
                rows.push(row);
            }
            own_peer(&mut rows[first_row..], op.own_peer());
        }
        rows
    }

    /// One row: the algorithm's label (what `auto` picked) and what happened.
    fn measure(&self, inputs: &dyn Inputs, algorithm: &str) -> (String, Outcome) {
        let fresh = match self.isolate.then(|| ContextOptions::from_env().and_then(Context::new_blocking)) {
            Some(Ok(ctx)) => Some((Clock::new(&ctx, self.settings.runs), ctx)),
            Some(Err(e)) => return (algorithm.to_string(), Outcome::Broke(format!("opening a fresh device: {e}"))),
            None => None,
        };
        let (clock, ctx) = fresh.as_ref().map_or((self.clock, self.ctx), |(clock, ctx)| (clock, ctx));
        let mut prepared = match inputs.prepare(ctx, algorithm) {
            Ok(p) => p,
            Err(e) => return (algorithm.to_string(), e.into()),
        };
        let (extra_bytes, transpose_bytes) = (prepared.extra_bytes(), prepared.transpose_bytes());
        let transfer_us = prepared.transfer().map(|t| t.as_secs_f64() * 1e6);
        let outcome = match timing::measure(ctx, clock, &self.settings, prepared.as_mut()) {
            Ok(measurement) => Outcome::Measured { measurement, extra_bytes, transpose_bytes, transfer_us },
            Err(e) => e.into(),
        };
        (prepared.label(), outcome)
    }
}

/// The header's line on what was run.
fn describe_inputs(options: &Options, scale: Scale, cpu_adapter: bool) -> String {
    let mut parts = Vec::new();
    if options.suite {
        let why = match scale {
            Scale::Quick => "--quick",
            Scale::Small if options.small => "--small",
            Scale::Small if cpu_adapter => "CPU adapter",
            _ => "GPU adapter",
        };
        parts.push(format!(
            "generated suite, {} sizes ({why}), seed {}, {} values",
            scale.name(),
            options.seed,
            options.dtype.name()
        ));
    }
    if !options.mtx.is_empty() {
        parts.push(format!("{} Matrix Market files", options.mtx.len()));
    }
    parts.join(" + ")
}
