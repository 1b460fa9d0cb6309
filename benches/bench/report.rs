//! The rows of a run and their three renderings: a text table for the terminal, the same
//! table in Markdown, and the stable JSON schema other tools read.

use std::collections::BTreeMap;

use serde::Serialize;
use wgsparse::{AdapterReport, ElementKind};

use crate::cpu_peer::CpuPeerTime;
use crate::ops::{Cost, Model, OpError, K};
use crate::suite::SkippedFile;
use crate::timing::{
    Measurement, Settings, Spread, BATCHED_BUDGET, CPU_BATCHES, MAX_COPIES, MAX_WARMUP, ROTATION_BYTES,
    SLOW_ROW_BUDGET, SLOW_RUN,
};

/// The house tolerance on `‖y − y_ref‖₂ / ‖y_ref‖₂` for f32 results...
pub const TOLERANCE: f64 = 1e-5;
/// ...and for f64 results: far below f32 rounding, so an f64 kernel that computes in f32
/// somewhere fails.
pub const TOLERANCE_F64: f64 = 1e-12;

/// The tolerance for results of `dtype`.
pub fn tolerance(dtype: ElementKind) -> f64 {
    match dtype {
        ElementKind::F32 => TOLERANCE,
        ElementKind::F64 => TOLERANCE_F64,
    }
}

/// One (matrix, op, format, algorithm, k) of the run.
pub struct Row {
    /// Matrix name.
    pub matrix: String,
    /// Rows of the matrix.
    pub rows: usize,
    /// Columns of the matrix.
    pub cols: usize,
    /// Stored entries.
    pub nnz: usize,
    /// Op name.
    pub op: &'static str,
    /// Value type.
    pub dtype: ElementKind,
    /// Dense width of the case.
    pub k: K,
    /// The algorithm as requested (`auto` for the automatic choice).
    pub algorithm: &'static str,
    /// The algorithm as shown (`auto (csr-merge)`).
    pub label: String,
    /// Device format the algorithm read.
    pub format: &'static str,
    /// Bytes and flops of one run.
    pub cost: Cost,
    /// What happened.
    pub outcome: Outcome,
    /// The peer's time on the same case.
    pub peer: Option<PeerTime>,
    /// CPU implementations timed on the same case (dense ops).
    pub cpu_peers: Vec<CpuPeerTime>,
}

/// How a row ended.
pub enum Outcome {
    /// Timed and verified (the error may still be above tolerance).
    Measured {
        /// Times and error.
        measurement: Measurement,
        /// Device bytes the plan allocated beyond inputs and outputs.
        extra_bytes: u64,
        /// Device bytes of the transpose the plan runs on, where it has one.
        transpose_bytes: Option<u64>,
        /// Host → device upload of the inputs, µs, where the op reports it.
        transfer_us: Option<f64>,
    },
    /// The library declined the case (format conversion, limits, memory).
    Refused(String),
    /// An error that is a bug: the row FAILED.
    Broke(String),
}

impl From<OpError> for Outcome {
    fn from(e: OpError) -> Self {
        if e.refused {
            Outcome::Refused(e.message)
        } else {
            Outcome::Broke(e.message)
        }
    }
}

/// The peer's median times for a row's case.
#[derive(Debug, Clone)]
pub struct PeerTime {
    /// The peer's self-description.
    pub name: String,
    /// Median µs.
    pub time_us: f64,
    /// Median µs of the run with its result on the host (where the peer measured it).
    pub e2e_us: Option<f64>,
    /// For ops with a one-shot form (then `time_us` is the one-shot time): the repeated
    /// form's median µs.
    pub repeated_us: Option<f64>,
    /// The solvers: iterations the peer ran, and its residual history as (iteration, norm).
    pub iterations: Option<usize>,
    pub history: Option<Vec<(usize, f64)>>,
}

impl Row {
    fn measurement(&self) -> Option<&Measurement> {
        match &self.outcome {
            Outcome::Measured { measurement, .. } => Some(measurement),
            _ => None,
        }
    }
    /// Measured and within tolerance.
    pub fn verified(&self) -> bool {
        self.measurement().is_some_and(|m| m.max_rel_err <= tolerance(self.dtype))
    }
    /// A wrong result or a broken op: the run exits non-zero.
    pub fn failed(&self) -> bool {
        match self.outcome {
            Outcome::Measured { .. } => !self.verified(),
            Outcome::Refused(_) => false,
            Outcome::Broke(_) => true,
        }
    }
    /// Median GPU µs.
    pub fn gpu_us(&self) -> Option<f64> {
        self.measurement().map(|m| m.gpu.median)
    }
    /// The spread of the GPU times.
    pub fn gpu_spread(&self) -> Option<Spread> {
        self.measurement().map(|m| m.gpu)
    }
    /// Rotation copies the timed runs used.
    pub fn copies(&self) -> Option<usize> {
        self.measurement().map(|m| m.copies)
    }
    /// Achieved GB/s by the op's byte model.
    pub fn gbps(&self) -> Option<f64> {
        rate(self.cost.bytes, self.gpu_us()?)
    }
    /// Achieved GFLOP/s.
    pub fn gflops(&self) -> Option<f64> {
        rate(self.cost.flops, self.gpu_us()?)
    }
    /// The peer's GB/s by the same model.
    pub fn peer_gbps(&self) -> Option<f64> {
        rate(self.cost.bytes, self.peer.as_ref()?.time_us)
    }
    /// The peer's GFLOP/s.
    pub fn peer_gflops(&self) -> Option<f64> {
        rate(self.cost.flops, self.peer.as_ref()?.time_us)
    }
    /// Peer time / our time: above 1 we are faster. For ops with a one-shot form, the
    /// one-shot times.
    pub fn speedup(&self) -> Option<f64> {
        let ours = match self.one_shot_us() {
            Some(one_shot) => one_shot,
            None => self.gpu_us()?,
        };
        Some(self.peer.as_ref()?.time_us / ours)
    }
    /// What the solve did (the solvers).
    pub fn solve(&self) -> Option<&crate::ops::SolveFigures> {
        self.measurement()?.solve.as_deref()
    }
    /// The peer's wall clock per iteration, µs (the solvers).
    pub fn peer_per_iteration_us(&self) -> Option<f64> {
        let peer = self.peer.as_ref()?;
        Some(peer.time_us / peer.iterations?.max(1) as f64)
    }
    /// The one-shot wall clock, µs, for ops that have one.
    pub fn one_shot_us(&self) -> Option<f64> {
        self.measurement()?.one_shot.map(|(us, _)| us)
    }
    /// The peer's repeated time / ours (GPU µs), for ops with a one-shot form.
    pub fn repeated_speedup(&self) -> Option<f64> {
        self.one_shot_us()?;
        Some(self.peer.as_ref()?.repeated_us? / self.gpu_us()?)
    }
    /// Peer end-to-end time / ours.
    pub fn e2e_speedup(&self) -> Option<f64> {
        Some(self.peer.as_ref()?.e2e_us? / self.measurement()?.e2e_us)
    }
    /// `ok`, `FAILED`, `FAILED: why` or `skipped: why`.
    pub fn status(&self) -> String {
        match &self.outcome {
            Outcome::Measured { .. } if self.verified() => "ok".into(),
            Outcome::Measured { .. } => "FAILED".into(),
            Outcome::Refused(why) => format!("skipped: {why}"),
            Outcome::Broke(why) => format!("FAILED: {why}"),
        }
    }
}

/// `count` per µs in G per second.
fn rate(count: Option<u64>, us: f64) -> Option<f64> {
    (us > 0.0).then(|| count.map(|c| c as f64 / (us * 1e3))).flatten()
}

/// Everything the renderings need.
pub struct Report {
    /// What the adapter says about itself.
    pub adapter: AdapterReport,
    /// Device copy bandwidth, GB/s (read + write).
    pub copy_gbps: f64,
    /// Bytes per copy-bandwidth buffer.
    pub copy_bytes: u64,
    /// UTC date of the run, `YYYY-MM-DD`.
    pub date: String,
    /// What was run, e.g. `suite small (CPU adapter), seed 1`.
    pub inputs: String,
    /// Repetition counts.
    pub settings: Settings,
    /// Whether GPU time came from timestamps.
    pub timestamps: bool,
    /// Whether every row ran on its own freshly opened device.
    pub isolated: bool,
    /// The cost model of each op that ran.
    pub models: Vec<(&'static str, Model)>,
    /// The rows, in run order.
    pub rows: Vec<Row>,
    /// Files the reader refused.
    pub skipped: Vec<SkippedFile>,
    /// The peer's name and device, when it ran.
    pub peer: Option<(String, String)>,
    /// Lines about the peer: unavailable, failed cases, doubtful results.
    pub peer_notes: Vec<String>,
}

impl Report {
    /// Whether any row failed.
    pub fn failed(&self) -> bool {
        self.rows.iter().any(Row::failed)
    }

    /// The terminal rendering.
    pub fn text(&self) -> String {
        let mut out = String::new();
        for line in self.header() {
            out += &line;
            out.push('\n');
        }
        out.push('\n');
        out += &self.table().text();
        out.push('\n');
        for line in self.footer() {
            out += &line;
            out.push('\n');
        }
        out
    }

    /// The Markdown rendering (for benches/results/ and the README).
    pub fn markdown(&self) -> String {
        let list = |lines: Vec<String>| lines.iter().map(|l| format!("- {}\n", l.trim())).collect::<String>();
        format!("{}\n{}\n{}", list(self.header()), self.table().markdown(), list(self.footer()))
    }

    /// The JSON rendering: the records of every measured row.
    pub fn json(&self) -> String {
        let report = JsonReport {
            adapter: JsonAdapter {
                name: &self.adapter.name,
                backend: &self.adapter.backend,
                driver: &self.adapter.driver,
                subgroup_min: self.adapter.subgroup_min,
                subgroup_max: self.adapter.subgroup_max,
            },
            copy_gbps: self.copy_gbps,
            date: &self.date,
            records: self.rows.iter().filter_map(JsonRecord::of).collect(),
        };
        serde_json::to_string_pretty(&report).expect("plain data serializes")
    }

    fn header(&self) -> Vec<String> {
        let mut lines: Vec<String> = self.adapter.to_string().lines().map(String::from).collect();
        lines.push(format!(
            "copy      {:.1} GB/s device copy bandwidth (read + write, {} buffers, median of {})",
            self.copy_gbps,
            bytes(self.copy_bytes),
            self.settings.runs
        ));
        lines.push(format!("date      {}", self.date));
        lines.push(format!("inputs    {}", self.inputs));
        if let Some((name, device)) = &self.peer {
            lines.push(format!("peer      {name} on {device}"));
        }
        lines
    }

    fn table(&self) -> Table {
        let with_k = self.rows.iter().any(|r| r.k.is_some());
        let with_peer = self.peer.is_some() || self.rows.iter().any(|r| r.peer.is_some());
        let with_one_shot = self.rows.iter().any(|r| r.one_shot_us().is_some());
        let with_solve = self.rows.iter().any(|r| r.solve().is_some());
        let gpu = if self.timestamps { "GPU µs" } else { "GPU µs*" };
        let mut columns = vec![("matrix", false), ("rows", true), ("nnz", true), ("op", false), ("format", false)];
        columns.push(("algorithm", false));
        if with_k {
            columns.push(("k", true));
        }
        columns.extend([(gpu, true), ("GB/s", true), ("% copy", true), ("GFLOP/s", true)]);
        columns.extend([("batched µs", true), ("CPU µs", true), ("e2e µs", true)]);
        columns.extend([("extra", true), ("max rel err", true)]);
        if with_one_shot {
            columns.extend([("one-shot µs", true), ("levels", true), ("relaunches", true)]);
        }
        if with_solve {
            columns.extend([("iterations", true), ("µs/iteration", true)]);
        }
        if with_peer {
            columns.extend([("peer µs", true), ("speedup", true), ("peer e2e µs", true), ("e2e speedup", true)]);
            if with_one_shot {
                columns.extend([("peer repeated µs", true), ("repeated speedup", true)]);
            }
            if with_solve {
                columns.extend([("peer iterations", true), ("peer µs/iteration", true)]);
            }
        }
        columns.push(("status", false));
        let mut table = Table::new(columns);
        for r in &self.rows {
            let m = r.measurement();
            let mut cells = vec![r.matrix.clone(), r.rows.to_string(), r.nnz.to_string(), r.op.into(), r.format.into()];
            cells.push(r.label.clone());
            if with_k {
                cells.push(opt(r.k, |k| k.to_string()));
            }
            // † marks a slow op timed fewer times (see the footer).
            let fewer = |m: &Measurement| if m.runs < self.settings.runs { "†" } else { "" };
            cells.push(opt(m, |m| format!("{:.1}{}", m.gpu.median, fewer(m))));
            cells.push(opt(r.gbps(), |g| format!("{g:.1}")));
            cells.push(opt(r.gbps(), |g| format!("{:.0}%", 100.0 * g / self.copy_gbps)));
            cells.push(opt(r.gflops(), |g| format!("{g:.2}")));
            cells.push(opt(m.and_then(|m| m.batched_us), |b| format!("{b:.1}")));
            cells.push(opt(m.and_then(|m| m.cpu), |c| format!("{:.2}+{:.2}", c.record, c.submit)));
            cells.push(opt(m, |m| format!("{:.1}", m.e2e_us)));
            cells.push(match &r.outcome {
                // A kept transpose apart: `1.0 MB + 40 MB ᵀ`.
                Outcome::Measured { extra_bytes, transpose_bytes: Some(t), .. } => {
                    format!("{} + {} ᵀ", bytes(*extra_bytes), bytes(*t))
                }
                Outcome::Measured { extra_bytes, .. } => bytes(*extra_bytes),
                _ => "-".into(),
            });
            cells.push(opt(m, |m| if m.max_rel_err == 0.0 { "0".into() } else { format!("{:.1e}", m.max_rel_err) }));
            let one_shot = m.and_then(|m| m.one_shot);
            if with_one_shot {
                cells.push(opt(one_shot, |(us, _)| format!("{us:.1}")));
                cells.push(opt(one_shot.and_then(|(_, s)| s.levels), |l| l.to_string()));
                cells.push(opt(one_shot, |(_, s)| s.relaunches.to_string()));
            }
            if with_solve {
                cells.push(opt(r.solve(), |s| s.iterations.to_string()));
                cells.push(opt(r.solve(), |s| format!("{:.1}", s.per_iteration_us)));
            }
            if with_peer {
                cells.push(opt(r.peer.as_ref(), |p| format!("{:.1}", p.time_us)));
                cells.push(opt(r.speedup(), |s| format!("{s:.2}×")));
                cells.push(opt(r.peer.as_ref().and_then(|p| p.e2e_us), |e| format!("{e:.1}")));
                cells.push(opt(r.e2e_speedup(), |s| format!("{s:.2}×")));
                if with_one_shot {
                    cells.push(opt(r.peer.as_ref().and_then(|p| p.repeated_us), |e| format!("{e:.1}")));
                    cells.push(opt(r.repeated_speedup(), |s| format!("{s:.2}×")));
                }
                if with_solve {
                    cells.push(opt(r.peer.as_ref().and_then(|p| p.iterations), |i| i.to_string()));
                    cells.push(opt(r.peer_per_iteration_us(), |u| format!("{u:.1}")));
                }
            }
            cells.push(r.status());
            table.rows.push(cells);
        }
        table
    }

    fn footer(&self) -> Vec<String> {
        let s = &self.settings;
        let mut lines = vec![if self.timestamps {
            format!(
                "GPU µs: median of {} runs, each its own compute pass between two GPU timestamps, submitted back to \
                 back; after warm-up runs for {} ms (at most {MAX_WARMUP} runs), at least {} and one per rotated copy",
                s.runs,
                s.warmup.time.as_millis(),
                s.warmup.runs
            )
        } else {
            format!(
                "GPU µs*: the adapter has no timestamp queries: wall clock of submit + wait, median of {} runs",
                s.runs
            )
        }];
        lines.push(format!(
            "batched µs: GPU time per run of {} runs (fewer where they would keep the GPU busy over {} s: as many \
             as fit) recorded back to back in one batch, one compute pass between two timestamps, rotating among the \
             operand copies; CPU µs: record + submit, CPU time per run to record such a batch (the ops' recording and \
             wgpu's encoding of the command buffer) and to submit it, on one copy (a plan re-applied to the same \
             vectors): the median of {CPU_BATCHES} batches after a warm-up one (which pays the page faults of wgpu's \
             newly grown buffers); submit from the last",
            s.batched_runs,
            BATCHED_BUDGET.as_secs()
        ));
        lines.push(format!(
            "e2e µs: the run with its result on the host, operands already on the device: median of {} runs or one \
             per rotated copy, whichever is more, wall clock from recording the run to the result readable in host \
             memory (the run and the copy to a pooled staging buffer in one batch, mapped: ReadTicket::wait_view); \
             the peer's is the same figure for its library call with the result on the host",
            s.e2e_runs
        ));
        let slow: Vec<String> = self
            .rows
            .iter()
            .filter_map(|r| r.measurement().filter(|m| m.runs < s.runs).map(|m| (r, m)))
            .map(|(r, m)| format!("{} {} {} ({} runs)", r.matrix, r.op, r.label, m.runs))
            .collect();
        if !slow.is_empty() {
            lines.push(format!(
                "†: one run takes over {} ms: timed as many times as fit in {} s (once at least; the warm-up run \
                 is the sample when only one fits), without further warm-up, and end to end once: {}",
                SLOW_RUN.as_millis(),
                SLOW_ROW_BUDGET.as_secs(),
                slow.join(", ")
            ));
        }
        // Matrices by the most copies any of their rows rotated through.
        let mut copies: Vec<(&str, Vec<usize>)> = Vec::new();
        for r in &self.rows {
            push_to(&mut copies, r.matrix.as_str(), r.copies().unwrap_or(1));
        }
        let mut by_count: BTreeMap<usize, Vec<&str>> = BTreeMap::new();
        for (m, c) in copies {
            let most = c.into_iter().max().unwrap_or(1);
            if most > 1 {
                by_count.entry(most).or_default().push(m);
            }
        }
        if !by_count.is_empty() {
            let groups: Vec<String> = by_count.iter().rev().map(|(c, ms)| format!("×{c}: {}", ms.join(", "))).collect();
            lines.push(format!(
                "rotation: operands under {} were uploaded up to {MAX_COPIES} times and runs rotate among the copies, \
                 so that repeated runs do not find them in cache; {}",
                bytes(ROTATION_BYTES),
                groups.join("; ")
            ));
        }
        for r in self.rows.iter().filter(|r| !r.cpu_peers.is_empty() && r.algorithm == "auto") {
            let Some(gpu) = r.gpu_us() else { continue };
            let times: Vec<String> = r
                .cpu_peers
                .iter()
                .map(|c| {
                    format!(
                        "{} thread{} {:.1} µs ({:.2}× our GPU time)",
                        c.threads,
                        if c.threads == 1 { "" } else { "s" },
                        c.time_us,
                        c.time_us / gpu
                    )
                })
                .collect();
            lines.push(format!("cpu peer {} on {} {}: {}", r.cpu_peers[0].name, r.matrix, r.op, times.join(", ")));
        }
        for (op, model) in &self.models {
            let error = model.error.map_or(String::new(), |e| format!("; max rel err = {e}"));
            lines.push(format!(
                "{op}: bytes = {}, flops = {}; % copy = GB/s / copy bandwidth{error}",
                model.bytes, model.flops
            ));
        }
        lines.push(if self.isolated {
            "device: each row ran on a freshly opened device, so that none ran in memory the rows before it \
             allocated and freed (--shared-device turns this off)"
                .into()
        } else {
            "device: all rows ran on one device (--shared-device)".into()
        });
        let one_shot = |op: &str| self.rows.iter().any(|r| r.op.starts_with(op) && r.one_shot_us().is_some());
        if ["bitmap-add", "bitmap-sub", "bitmap-spgemm"].iter().any(|op| one_shot(op)) {
            lines.push(
                "bitmap-add/sub/spgemm rows: GPU µs is the numeric phase alone (C's values again on its kept \
                 pattern); one-shot µs the wall clock of the call that builds C from scratch (pattern, entry count \
                 read back, values, done on the device), the figure the speedup compares with the peer's wall clock \
                 (its call and a synchronize)"
                    .into(),
            );
        }
        if one_shot("sptrsv") {
            lines.push(
                "sptrsv rows: GPU µs is the repeated solve (the pattern's levels kept from an earlier solve); one-shot \
                 µs the wall clock of a fresh plan on a matrix without analyses, its first solve and level capture \
                 waited for (median of the end-to-end count); speedup compares one-shot times with the peer's \
                 analysis + solve, repeated speedup GPU µs with the peer's solve phase alone; relaunches: the most \
                 any one-shot solve needed"
                    .into(),
            );
        }
        if self.rows.iter().any(|r| r.solve().is_some()) {
            let (restart, rtol, f32_iterations, _) = crate::ops::solver_settings();
            lines.push(format!(
                "cg/bicgstab/gmres rows: A·x = b with b = 1, x0 = 0 (GMRES restarts every {}); auto: no \
                 preconditioner, as the peer (GMRES by classical Gram–Schmidt projected twice, the second \
                 projection and the normalization delayed into the next column's two passes: DCGS2); cgs: GMRES by \
                 one classical Gram–Schmidt projection, as CuPy's (the same passes); ic0/ilu0: IC(0) for CG, ILU(0) for the others (3 factorization sweeps), \
                 applied by exact triangular solves (run when named), -sweeps: by 2 Jacobi sweeps per triangle, -sweepsN by N (the peer stays \
                 unpreconditioned); f64 rows solve to rtol {:e}, f32 rows run {} iterations on both sides (f32 cannot \
                 reach that rtol by the true residual on these systems); GPU µs is one iteration's kernels (recorded \
                 ungated; GMRES's grows with the column, so its GPU µs is the median \
                 column's and its batched µs the cycle's mean, which the byte model's average matches); one-shot µs the \
                 wall clock from planning (SpMV plan, factorization and solver, A freshly \
                 uploaded: no analyses kept) to the solution on the device, \
                 which the speedup compares with the peer's call; µs/iteration the solve's wall clock per \
                 iteration (planning excluded; the median of the one-shot runs), the peer's its call's; k ({}; 2 with \
                 --quick) on systems of at most 2^18 rows: that many systems (b[j] = 1 + ((j·i) mod 7)/7 for system i) solved together by solve_many, against the peer's \
                 calls one after another: one-shot µs for all of them, iterations and µs/iteration over all systems' \
                 iterations, the first system's history",
                restart, rtol, f32_iterations, crate::ops::solver_systems(),
            ));
            lines.push(
                "peer solvers: CuPy's cupyx.scipy.sparse.linalg.cg and gmres (a host synchronisation per iteration, \
                 GMRES's per cycle), and BiCGSTAB written with CuPy ops as wgsparse runs it (SciPy's recurrences, wgsparse's hashed shadow residual and residual replacement; CuPy has none); their \
                 history: CG the true residual of each iterate (an untimed second call with a callback), BiCGSTAB \
                 its recurrence's, GMRES its residual at each cycle's end; their check: 0 when the true residual \
                 meets rtol (f64) or x is finite (f32)"
                    .into(),
            );
        }
        lines.push(
            "extra: device bytes the op allocates beyond its inputs and outputs; `+ N ᵀ`: the transpose it runs \
             on, built once (its pattern kept with the matrix, A's values in its order kept by the plan; \
             materialised: the matrix Aᵀ) (JSON transpose_bytes)"
                .into(),
        );
        lines.push(format!(
            "max rel err: ‖y − y_ref‖₂ / ‖y_ref‖₂ against the f64 CPU twin, worst over the end-to-end runs \
             (every copy checked, its output poisoned with NaN before each run); FAILED above {TOLERANCE:e} (f32), \
             {TOLERANCE_F64:e} (f64)"
        ));
        lines.extend(self.speedup_means());
        lines.extend(self.peer_notes.iter().cloned());
        if !self.skipped.is_empty() {
            lines.push(format!("skipped files ({}):", self.skipped.len()));
            lines.extend(self.skipped.iter().map(|f| format!("  {}: {}", f.path.display(), f.reason)));
        }
        let count = |f: fn(&Row) -> bool| self.rows.iter().filter(|r| f(r)).count();
        lines.push(format!(
            "{} rows: {} ok, {} FAILED, {} skipped",
            self.rows.len(),
            count(Row::verified),
            count(Row::failed),
            count(|r| matches!(r.outcome, Outcome::Refused(_)))
        ));
        lines
    }

    /// Geometric means of the speedups over the peer, per op and per algorithm, in run order.
    fn speedup_means(&self) -> Vec<String> {
        // Rows may have a peer of their own (the bitmap ops' CSR baselines) without a script.
        let none = String::new();
        let peer = self.peer.as_ref().map_or(&none, |(name, _)| name);
        if self.peer.is_none() && self.rows.iter().all(|r| r.peer.is_none()) {
            return Vec::new();
        }
        let mut by_op: Vec<(&str, Vec<f64>)> = Vec::new();
        let mut by_algorithm: Vec<((&str, &str), Vec<f64>)> = Vec::new();
        let mut e2e: Vec<((&str, &str), Vec<f64>)> = Vec::new();
        for r in self.rows.iter().filter(|r| r.verified()) {
            if let Some(s) = r.speedup() {
                push_to(&mut by_op, r.op, s);
                push_to(&mut by_algorithm, (r.op, r.algorithm), s);
            }
            if let Some(s) = r.e2e_speedup() {
                push_to(&mut e2e, (r.op, r.algorithm), s);
            }
        }
        let e2e_lines = e2e.into_iter().filter(|((_, a), _)| *a == "auto").map(|((op, _), s)| {
            let least = s.iter().copied().fold(f64::INFINITY, f64::min);
            format!(
                "end-to-end speedup over {peer} (peer e2e µs / our e2e µs), {op} auto: geometric mean {:.2}×, least {least:.2}×",
                geometric_mean(&s)
            )
        });
        let mut lines: Vec<String> = by_op
            .iter()
            .map(|(op, speedups)| {
                let per_algorithm: Vec<String> = by_algorithm
                    .iter()
                    .filter(|((o, _), _)| o == op)
                    .map(|((_, a), s)| format!("{a} {:.2}×", geometric_mean(s)))
                    .collect();
                // Where the script timed several libraries, each case's peer is the faster.
                let mut libraries: Vec<(&str, Vec<()>)> = Vec::new();
                for r in self.rows.iter().filter(|r| r.op == *op && r.algorithm == "auto") {
                    if let Some(p) = r.peer.as_ref().filter(|p| p.name != *peer) {
                        push_to(&mut libraries, p.name.as_str(), ());
                    }
                }
                let over = if libraries.is_empty() {
                    peer.clone()
                } else {
                    let named: Vec<String> =
                        libraries.iter().map(|(name, cases)| format!("{name}: {} cases", cases.len())).collect();
                    format!("the faster library per case ({})", named.join(", "))
                };
                format!(
                    "speedup over {over} (peer µs / our µs), geometric mean: {op} {:.2}× ({})",
                    geometric_mean(speedups),
                    per_algorithm.join(", ")
                )
            })
            .collect();
        lines.extend(e2e_lines);
        lines
    }
}

/// Appends `value` to the group of `key`; groups keep first-seen order.
fn push_to<Key: PartialEq, Value>(groups: &mut Vec<(Key, Vec<Value>)>, key: Key, value: Value) {
    match groups.iter_mut().find(|(k, _)| *k == key) {
        Some((_, values)) => values.push(value),
        None => groups.push((key, vec![value])),
    }
}

fn geometric_mean(values: &[f64]) -> f64 {
    (values.iter().map(|v| v.ln()).sum::<f64>() / values.len() as f64).exp()
}

/// `-` for a missing value.
fn opt<T>(value: Option<T>, show: impl FnOnce(T) -> String) -> String {
    value.map_or_else(|| "-".into(), show)
}

/// Bytes in B, KiB, MiB or GiB.
pub fn bytes(n: u64) -> String {
    const UNITS: [&str; 3] = ["KiB", "MiB", "GiB"];
    if n < 1024 {
        return format!("{n} B");
    }
    let mut value = n as f64;
    let mut unit = "B";
    for u in UNITS {
        if value < 1024.0 {
            break;
        }
        value /= 1024.0;
        unit = u;
    }
    format!("{value:.1} {unit}")
}

/// Today's UTC date as `YYYY-MM-DD` (civil-from-days, Howard Hinnant's algorithm).
pub fn today() -> String {
    let secs = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let z = (secs / 86_400) as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02}")
}

/// Cells with per-column alignment, rendered as padded text or Markdown.
struct Table {
    headers: Vec<&'static str>,
    right: Vec<bool>,
    rows: Vec<Vec<String>>,
}

impl Table {
    fn new(columns: Vec<(&'static str, bool)>) -> Self {
        let (headers, right) = columns.into_iter().unzip();
        Table { headers, right, rows: Vec::new() }
    }

    fn text(&self) -> String {
        let width = |i: usize| {
            let cells = self.rows.iter().map(|r| r[i].chars().count());
            cells.chain([self.headers[i].chars().count()]).max().unwrap_or(0)
        };
        // The last column (status) is not padded: its long reasons would widen every line.
        let widths: Vec<usize> = (0..self.headers.len()).map(width).collect();
        let line = |cells: Vec<&str>| {
            let padded: Vec<String> = cells
                .iter()
                .enumerate()
                .map(|(i, c)| {
                    let pad = " ".repeat(widths[i].saturating_sub(c.chars().count()));
                    match (self.right[i], i + 1 == cells.len()) {
                        (true, _) => format!("{pad}{c}"),
                        (false, true) => c.to_string(),
                        (false, false) => format!("{c}{pad}"),
                    }
                })
                .collect();
            padded.join("  ") + "\n"
        };
        let mut out = line(self.headers.clone());
        for row in &self.rows {
            out += &line(row.iter().map(String::as_str).collect());
        }
        out
    }

    fn markdown(&self) -> String {
        let escape = |c: &str| c.replace('|', "\\|");
        let mut out = format!("| {} |\n", self.headers.join(" | "));
        let rule: Vec<&str> = self.right.iter().map(|&r| if r { "---:" } else { "---" }).collect();
        out += &format!("| {} |\n", rule.join(" | "));
        for row in &self.rows {
            let cells: Vec<String> = row.iter().map(|c| escape(c)).collect();
            out += &format!("| {} |\n", cells.join(" | "));
        }
        out
    }
}

#[derive(Serialize)]
struct JsonReport<'a> {
    adapter: JsonAdapter<'a>,
    copy_gbps: f64,
    date: &'a str,
    records: Vec<JsonRecord<'a>>,
}

#[derive(Serialize)]
struct JsonAdapter<'a> {
    name: &'a str,
    backend: &'a str,
    driver: &'a str,
    subgroup_min: u32,
    subgroup_max: u32,
}

#[derive(Serialize)]
struct JsonRecord<'a> {
    matrix: &'a str,
    rows: usize,
    cols: usize,
    nnz: usize,
    op: &'a str,
    dtype: &'a str,
    format: &'a str,
    algorithm: &'a str,
    k: K,
    gpu_time_us: f64,
    e2e_time_us: f64,
    batched_time_us: Option<f64>,
    record_cpu_us: Option<f64>,
    submit_cpu_us: Option<f64>,
    gbps: Option<f64>,
    gflops: Option<f64>,
    extra_bytes: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    transpose_bytes: Option<u64>,
    /// Dense ops: the inputs' upload to the device, µs (the result's download is in
    /// e2e_time_us).
    #[serde(skip_serializing_if = "Option::is_none")]
    transfer_us: Option<f64>,
    /// Ops with a one-shot form (the triangular solve): its wall clock, and the repeated
    /// form's GPU time (= gpu_time_us).
    #[serde(skip_serializing_if = "Option::is_none")]
    one_shot_time_us: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    repeated_time_us: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    levels: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    relaunches: Option<u32>,
    /// The solvers: iterations, why the solve stopped, its wall clock per iteration and the
    /// recurrence's relative residual after each iteration.
    #[serde(skip_serializing_if = "Option::is_none")]
    iterations: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    stop_reason: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    per_iteration_us: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    history: Option<&'a [f64]>,
    max_rel_err: f64,
    verified: bool,
    peer: Option<JsonPeer<'a>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    cpu_peers: Vec<JsonCpuPeer>,
}

#[derive(Serialize)]
struct JsonCpuPeer {
    name: &'static str,
    threads: usize,
    time_us: f64,
    /// CPU time / our GPU time.
    speedup: f64,
}

#[derive(Serialize)]
struct JsonPeer<'a> {
    name: &'a str,
    time_us: f64,
    speedup: f64,
    e2e_time_us: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    repeated_time_us: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    repeated_speedup: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    iterations: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    per_iteration_us: Option<f64>,
    /// (iteration, relative residual) pairs.
    #[serde(skip_serializing_if = "Option::is_none")]
    history: Option<&'a [(usize, f64)]>,
}

impl<'a> JsonRecord<'a> {
    /// The record of a measured row; refused and broken rows have no times to report.
    fn of(r: &'a Row) -> Option<Self> {
        let Outcome::Measured { measurement: m, extra_bytes, transpose_bytes, transfer_us } = &r.outcome else {
            return None;
        };
        Some(JsonRecord {
            matrix: &r.matrix,
            rows: r.rows,
            cols: r.cols,
            nnz: r.nnz,
            op: r.op,
            dtype: r.dtype.name(),
            format: r.format,
            algorithm: &r.label,
            k: r.k,
            gpu_time_us: m.gpu.median,
            e2e_time_us: m.e2e_us,
            batched_time_us: m.batched_us,
            record_cpu_us: m.cpu.map(|c| c.record),
            submit_cpu_us: m.cpu.map(|c| c.submit),
            gbps: r.gbps(),
            gflops: r.gflops(),
            extra_bytes: *extra_bytes,
            transpose_bytes: *transpose_bytes,
            transfer_us: *transfer_us,
            one_shot_time_us: m.one_shot.map(|(us, _)| us),
            repeated_time_us: m.one_shot.filter(|_| m.solve.is_none()).map(|_| m.gpu.median),
            levels: m.one_shot.and_then(|(_, s)| s.levels),
            relaunches: m.one_shot.map(|(_, s)| s.relaunches),
            iterations: m.solve.as_ref().map(|s| s.iterations),
            stop_reason: m.solve.as_ref().map(|s| s.reason.as_str()),
            per_iteration_us: m.solve.as_ref().map(|s| s.per_iteration_us),
            history: m.solve.as_ref().map(|s| s.history.as_slice()),
            // JSON has no infinity (serde_json would write null): the largest double says "no
            // agreement at all" and still compares as a number.
            max_rel_err: if m.max_rel_err.is_finite() { m.max_rel_err } else { f64::MAX },
            verified: r.verified(),
            peer: r.peer.as_ref().zip(r.speedup()).map(|(p, speedup)| JsonPeer {
                name: &p.name,
                time_us: p.time_us,
                speedup,
                e2e_time_us: p.e2e_us,
                repeated_time_us: p.repeated_us,
                repeated_speedup: r.repeated_speedup(),
                iterations: p.iterations,
                per_iteration_us: r.peer_per_iteration_us(),
                history: p.history.as_deref(),
            }),
            cpu_peers: r
                .cpu_peers
                .iter()
                .map(|c| JsonCpuPeer {
                    name: c.name,
                    threads: c.threads,
                    time_us: c.time_us,
                    speedup: c.time_us / m.gpu.median,
                })
                .collect(),
        })
    }
}
