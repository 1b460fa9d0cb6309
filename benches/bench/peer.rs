//! `--peer cusparse`: the same matrices timed by the vendor library, through the Python
//! script `benches/peer_cusparse.py` (CuPy, PyTorch where CuPy lacks an op).
//!
//! Each matrix is written once, as raw little-endian arrays, to a temporary folder with a
//! `manifest.json` naming the ops, K and rotation copies to run; the script answers with one
//! JSON file. A missing python3 or CuPy is not an error of the run: the report goes on
//! without the peer.

use std::collections::HashMap;
use std::fs;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::Command;

use serde::{Deserialize, Serialize};

use wgsparse::ElementKind;

use crate::ops::K;
use crate::suite::{dense_operand, BenchMatrix};
use crate::timing::Settings;

/// Where the script lives in the source tree.
const SCRIPT: &str = "benches/peer_cusparse.py";
/// The script's exit status when CuPy (or a CUDA device) is missing.
const EXIT_UNAVAILABLE: i32 = 3;

/// One op the peer runs on a matrix.
pub struct PeerCase {
    /// The op's name in the script.
    pub op: &'static str,
    /// Dense width, if the op has one.
    pub k: K,
    /// Copies to rotate through, by the same rule as ours.
    pub copies: usize,
}

/// A matrix and what to run on it.
pub struct PeerRequest<'a> {
    /// The matrix.
    pub matrix: &'a BenchMatrix,
    /// Its ops.
    pub cases: Vec<PeerCase>,
}

/// The peer's answer.
pub struct PeerResults {
    /// E.g. `cusparse (CuPy 14.0, CUDA 13.0)`.
    pub name: String,
    /// The device it ran on.
    pub device: String,
    /// What the script said on stderr, line by line (for `--verbose`).
    pub log: Vec<String>,
    results: HashMap<(String, String, K), PeerResult>,
}

/// One timed case, as the script reports it.
#[derive(Debug, Clone, Deserialize)]
pub struct PeerResult {
    matrix: String,
    op: String,
    k: K,
    /// Median time, µs (absent when the case failed).
    pub time_us: Option<f64>,
    /// Median time of the call with its result on the host, µs (where measured).
    #[serde(default)]
    pub e2e_time_us: Option<f64>,
    /// For ops with a one-shot form (`time_us`), the repeated form's median, µs: the
    /// triangular solve's solve phase alone, its analysis done once before.
    #[serde(default)]
    pub repeated_time_us: Option<f64>,
    /// The peer's own relative error against a float64 product.
    pub rel_err: Option<f64>,
    /// Which library the time is from, where the script timed several (the faster).
    #[serde(default)]
    pub library: Option<String>,
    /// Why the case failed.
    pub error: Option<String>,
    /// The solvers: iterations the peer ran.
    #[serde(default)]
    pub iterations: Option<usize>,
    /// The solvers: the peer's relative residual norms, in order (CG and BiCGSTAB: each
    /// iteration's; GMRES: each cycle's, at its last iteration).
    #[serde(default)]
    pub history: Option<Vec<(usize, f64)>>,
}

#[derive(Deserialize)]
struct Output {
    peer: String,
    device: String,
    results: Vec<PeerResult>,
}

impl PeerResults {
    /// The result for `(matrix, op, k)`, if the peer ran it.
    pub fn get(&self, matrix: &str, op: &str, k: K) -> Option<&PeerResult> {
        self.results.get(&(matrix.to_string(), op.to_string(), k))
    }

    /// Every result, for the footer's warnings.
    pub fn all(&self) -> impl Iterator<Item = (&str, &str, K, &PeerResult)> {
        self.results.values().map(|r| (r.matrix.as_str(), r.op.as_str(), r.k, r))
    }
}

#[derive(Serialize)]
struct Manifest<'a> {
    warmup: usize,
    runs: usize,
    /// `float32` or `float64`: the values the peer computes with.
    dtype: &'static str,
    e2e_runs: usize,
    /// How the solver ops stop: as ours do for this dtype.
    solver: ManifestSolver,
    matrices: Vec<ManifestMatrix<'a>>,
}

/// The solver ops' stopping rule: to `rtol` within `max_iterations` (f64), or exactly
/// `max_iterations` with `rtol` 0 (f32); GMRES restarts every `restart`.
#[derive(Serialize)]
struct ManifestSolver {
    rtol: f64,
    max_iterations: usize,
    restart: usize,
}

#[derive(Serialize)]
struct ManifestMatrix<'a> {
    name: &'a str,
    rows: usize,
    cols: usize,
    nnz: usize,
    row_offsets: Option<String>,
    col_indices: Option<String>,
    values: Option<String>,
    x: Option<String>,
    /// A dense op's case: its shape, no arrays (the script draws the operands).
    dense: Option<ManifestDense>,
    ops: Vec<ManifestOp>,
}

#[derive(Serialize)]
struct ManifestDense {
    batch: usize,
    rows: usize,
    cols: usize,
}

#[derive(Serialize)]
struct ManifestOp {
    op: &'static str,
    k: K,
    copies: usize,
}

/// Removes the folder when the run ends, whatever happens.
struct TempDir(PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

/// Runs the peer on `requests`. The error is the line to print: `peer cusparse unavailable:
/// <reason>` or `peer cusparse failed: <reason>`.
pub fn run(
    peer: &str,
    script: Option<&Path>,
    requests: &[PeerRequest<'_>],
    settings: &Settings,
    seed: u64,
    dtype: ElementKind,
) -> Result<PeerResults, String> {
    run_script(script, requests, settings, seed, dtype).map_err(|e| e.line(peer))
}

fn run_script(
    script: Option<&Path>,
    requests: &[PeerRequest<'_>],
    settings: &Settings,
    seed: u64,
    dtype: ElementKind,
) -> Result<PeerResults, ScriptError> {
    let script = find_script(script).map_err(ScriptError::Unavailable)?;
    // Ask first, so that a machine without CuPy is not made to write every matrix to disk.
    python(&script, &["--check".as_ref()])?;
    let dir = TempDir(std::env::temp_dir().join(format!("wgsparse-bench-{}", std::process::id())));
    let manifest = write_inputs(&dir.0, requests, settings, seed, dtype)
        .map_err(|e| ScriptError::Failed(format!("writing inputs: {e}")))?;
    let out = dir.0.join("out.json");
    let log = python(&script, &[manifest.as_os_str(), out.as_os_str()])?;
    let text = fs::read_to_string(&out).map_err(|e| ScriptError::Failed(format!("reading {}: {e}", out.display())))?;
    let parsed: Output =
        serde_json::from_str(&text).map_err(|e| ScriptError::Failed(format!("parsing its output: {e}")))?;
    let results = parsed.results.into_iter().map(|r| ((r.matrix.clone(), r.op.clone(), r.k), r)).collect();
    let log = log.lines().map(String::from).collect();
    Ok(PeerResults { name: parsed.peer, device: parsed.device, log, results })
}

/// Why the script gave no answer.
enum ScriptError {
    /// No python3, no CuPy or no CUDA device.
    Unavailable(String),
    /// Anything else.
    Failed(String),
}

impl ScriptError {
    /// The line the report prints.
    fn line(self, peer: &str) -> String {
        match self {
            ScriptError::Unavailable(why) => format!("peer {peer} unavailable: {why}"),
            ScriptError::Failed(why) => format!("peer {peer} failed: {why}"),
        }
    }
}

/// Runs `python3 script args…`, mapping the ways it can fail; returns its stderr.
fn python(script: &Path, args: &[&std::ffi::OsStr]) -> Result<String, ScriptError> {
    let output = match Command::new("python3").arg(script).args(args).output() {
        Ok(output) => output,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(ScriptError::Unavailable("python3 is not on PATH".into()));
        }
        Err(e) => return Err(ScriptError::Failed(format!("starting python3: {e}"))),
    };
    let stderr = String::from_utf8_lossy(&output.stderr);
    match output.status.code() {
        Some(0) => Ok(stderr.into_owned()),
        Some(EXIT_UNAVAILABLE) => Err(ScriptError::Unavailable(last_lines(&stderr, 1))),
        status => {
            let status = status.map_or("a signal".to_string(), |c| format!("status {c}"));
            Err(ScriptError::Failed(format!("{} exited with {status}:\n{}", script.display(), last_lines(&stderr, 10))))
        }
    }
}

/// The script: `explicit`, else `benches/peer_cusparse.py` under the current directory, a
/// folder holding the executable or one of its parents (a carried binary), or the source tree
/// this binary was built from.
fn find_script(explicit: Option<&Path>) -> Result<PathBuf, String> {
    if let Some(path) = explicit {
        return if path.is_file() { Ok(path.to_path_buf()) } else { Err(format!("{} does not exist", path.display())) };
    }
    let mut candidates = vec![PathBuf::from(SCRIPT)];
    if let Some(exe_dir) = std::env::current_exe().ok().and_then(|e| e.parent().map(Path::to_path_buf)) {
        candidates.extend(exe_dir.ancestors().map(|dir| dir.join(SCRIPT)));
    }
    candidates.push(Path::new(env!("CARGO_MANIFEST_DIR")).join(SCRIPT));
    candidates.into_iter().find(|p| p.is_file()).ok_or_else(|| format!("{SCRIPT} not found (give --peer-script PATH)"))
}

/// Writes every matrix's arrays and x, and the manifest; returns the manifest's path.
fn write_inputs(
    dir: &Path,
    requests: &[PeerRequest<'_>],
    settings: &Settings,
    seed: u64,
    dtype: ElementKind,
) -> std::io::Result<PathBuf> {
    fs::create_dir_all(dir)?;
    let mut matrices = Vec::with_capacity(requests.len());
    for (i, request) in requests.iter().enumerate() {
        let a = &request.matrix.csr;
        let ops = request.cases.iter().map(|c| ManifestOp { op: c.op, k: c.k, copies: c.copies }).collect();
        let (name, rows, cols, nnz) = (&request.matrix.name, a.rows(), a.cols(), request.matrix.entries());
        if let Some(d) = request.matrix.dense.filter(|d| !d.is_sparse()) {
            let dense = Some(ManifestDense { batch: d.batch, rows: d.rows, cols: d.cols });
            let (row_offsets, col_indices, values, x) = (None, None, None, None);
            matrices.push(ManifestMatrix { name, rows, cols, nnz, row_offsets, col_indices, values, x, dense, ops });
            continue;
        }
        let file = |array: &str| dir.join(format!("m{i}_{array}.bin"));
        let (row_offsets, col_indices, values, x) =
            (file("row_offsets"), file("col_indices"), file("values"), file("x"));
        write_le(&row_offsets, a.row_offsets().iter().map(|v| v.to_le_bytes()))?;
        write_le(&col_indices, a.col_indices().iter().map(|v| v.to_le_bytes()))?;
        write_le(&values, a.values().iter().map(|v| v.to_le_bytes()))?;
        write_le(&x, dense_operand(a.cols(), seed).iter().map(|v| v.to_le_bytes()))?;
        let path = |p: PathBuf| Some(p.to_string_lossy().into_owned());
        matrices.push(ManifestMatrix {
            name,
            rows,
            cols,
            nnz,
            row_offsets: path(row_offsets),
            col_indices: path(col_indices),
            values: path(values),
            x: path(x),
            dense: None,
            ops,
        });
    }
    let manifest = dir.join("manifest.json");
    let (restart, rtol, f32_iterations, f64_budget) = crate::ops::solver_settings();
    let (dtype, solver) = match dtype {
        ElementKind::F32 => ("float32", ManifestSolver { rtol: 0.0, max_iterations: f32_iterations, restart }),
        ElementKind::F64 => ("float64", ManifestSolver { rtol, max_iterations: f64_budget, restart }),
    };
    let body = Manifest {
        warmup: settings.warmup.runs,
        runs: settings.runs,
        dtype,
        e2e_runs: settings.e2e_runs,
        solver,
        matrices,
    };
    fs::write(&manifest, serde_json::to_vec_pretty(&body).map_err(std::io::Error::other)?)?;
    Ok(manifest)
}

/// Writes 4-byte little-endian words.
fn write_le(path: &Path, words: impl Iterator<Item = [u8; 4]>) -> std::io::Result<()> {
    let mut out = BufWriter::new(fs::File::create(path)?);
    for w in words {
        out.write_all(&w)?;
    }
    out.flush()
}

/// The last `n` non-empty lines of `text`, joined.
fn last_lines(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    let tail = lines[lines.len().saturating_sub(n)..].join("\n");
    if tail.is_empty() {
        "(no message)".into()
    } else {
        tail
    }
}
