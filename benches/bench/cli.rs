//! Command-line options of the benchmark binary (hand-parsed: a dozen flags do not need a
//! parser crate).

use std::path::PathBuf;

/// What `--help` prints.
pub const USAGE: &str = "\
wgsparse benchmark: every op and algorithm on a suite of matrices, timed on the GPU and
verified against the CPU twin.

usage: bench [OPTIONS]
       cargo bench --bench bench -- [OPTIONS]

  --mtx FILE...        Matrix Market files to run (instead of the generated suite, unless
                       --suite is given too), space- or comma-separated
  --suite              run the generated suite as well as the --mtx files
  --quick              tiny suite and few repetitions (a smoke test)
  --small              the small suite (lap2d_256, lap3d_32, …: what a CPU adapter runs) on
                       any adapter, with the full repetitions
  --matrices LIST      comma-separated matrix names to keep (suite names such as
                       lap2d_2048, or file names without .mtx; default: all)
  --ops LIST           comma-separated ops to run (default: all)
  --k LIST             comma-separated dense widths for SpMM and SDDMM (default: 32 and
                       128 on a GPU, 32 otherwise)
  --dtype f32|f64      value type of the matrices and vectors (default f32; f64 needs an
                       adapter with SHADER_F64)
  --algorithms LIST    comma-separated algorithms to run, `auto` included (default: all);
                       a variant adds tuning knobs: csr-merge:items=4:wg=128,
                       csr-split:threshold=32:chunk=16, csr-vector:lanes=8, coo-segmented:steps=4,
                       rode:lanes=16:chunk=256:parts=2 (spmm, sddmm), auto:reads=ordered
                       (spmm-t), auto:changing (spmm-t: A's values rewritten by an SDDMM
                       before every run, in the times), level-order:wgs=256:backoff=16 (sptrsv)
  --json PATH          write the records as JSON
  --markdown PATH      write the table as Markdown
  --plot PATH.svg      write a bar chart of GB/s (or GFLOP/s) per matrix and algorithm
  --convergence-plot PATH.svg
                       write the solvers' residual histories (ours and the peer's)
  --peer cusparse      also time cuSPARSE (python3 + CuPy) on the same matrices
  --peer-script PATH   the peer script (default: benches/peer_cusparse.py, found beside
                       the current directory, the executable or the source tree)
  --seed N             seed of the generated matrices and vectors (default 1)
  --e2e-runs N         end-to-end runs per row, each also checked (default 5, 2 with
                       --quick; at least 1): fewer save minutes on rows with GiB outputs
  --shared-device      run every row on one device instead of a fresh one per row (rows
                       then share the device's allocator; each row's 600 ms warm-up
                       covers the driver's slow start after idle either way)
  -v, --verbose        print each row to stderr as it finishes, with its wall time
  --occupancy WG:BYTES,...
                       measure how many workgroups of WG lanes and BYTES of workgroup
                       memory the GPU keeps resident at once, and run nothing
  --pipeline-stats SPEC...
                       print what the driver's compiler reports of shader variants
                       (registers a lane, spills, …: VK_KHR_pipeline_executable_properties)
                       and run nothing; SPEC is name[+FLAG…][@OVERRIDE=VALUE…], e.g.
                       lu_team+SUBGROUP@WG_SIZE=32 (every variant where no flag is given)
  -h, --help           this text

The adapter is the best one found; WGSPARSE_ADAPTER, WGSPARSE_BACKEND and
WGSPARSE_SUBGROUPS=0 choose another. On a CPU adapter the suite is shrunk.
Exit status: 0 all verified, 1 some row FAILED, 2 bad usage or no GPU.";

/// The parsed command line.
#[derive(Debug, Clone)]
pub struct Options {
    /// Matrix Market files to benchmark.
    pub mtx: Vec<PathBuf>,
    /// Whether to run the generated suite (true unless only `--mtx` files were asked for).
    pub suite: bool,
    /// Tiny sizes and few repetitions.
    pub quick: bool,
    /// The small sizes on any adapter.
    pub small: bool,
    /// Matrices to keep, by name; `None` means all.
    pub matrices: Option<Vec<String>>,
    /// Ops to run; `None` means all.
    pub ops: Option<Vec<String>>,
    /// Dense widths of the ops that have one; `None` means the scale's.
    pub widths: Option<Vec<usize>>,
    /// Value type.
    pub dtype: wgsparse::ElementKind,
    /// Algorithms to run; `None` means all.
    pub algorithms: Option<Vec<String>>,
    /// Where to write JSON records.
    pub json: Option<PathBuf>,
    /// Where to write the Markdown table.
    pub markdown: Option<PathBuf>,
    /// Where to write the SVG chart.
    pub plot: Option<PathBuf>,
    /// `--convergence-plot`.
    pub convergence_plot: Option<PathBuf>,
    /// The peer library to compare with (`cusparse`).
    pub peer: Option<String>,
    /// Explicit path of the peer script.
    pub peer_script: Option<PathBuf>,
    /// Seed of generated matrices and vectors.
    pub seed: u64,
    /// End-to-end runs per row, when not the default.
    pub e2e_runs: Option<usize>,
    /// A fresh device per row (the default; `--shared-device` turns it off).
    pub isolate: bool,
    /// Print each row as it finishes (for logs of long runs, where no bar is drawn).
    pub verbose: bool,
}

/// Either options to run with, or a request for the usage text.
pub enum Command {
    /// Run the benchmark.
    Run(Box<Options>),
    /// Print [`USAGE`].
    Help,
    /// Measure resident workgroups for these (workgroup size, workgroup memory bytes).
    Occupancy(Vec<(u32, u32)>),
    /// Print the driver's statistics of these shader variants.
    PipelineStats(Vec<crate::pipeline_stats::Spec>),
}

/// The peers `--peer` accepts.
pub const PEERS: [&str; 1] = ["cusparse"];

/// Parses the arguments after the program name. `--flag value` and `--flag=value` both work;
/// the `--bench` flag that `cargo bench` appends is ignored.
pub fn parse(args: impl IntoIterator<Item = String>) -> Result<Command, String> {
    let mut options = Options {
        mtx: Vec::new(),
        suite: false,
        quick: false,
        small: false,
        matrices: None,
        widths: None,
        ops: None,
        dtype: wgsparse::ElementKind::F32,
        algorithms: None,
        json: None,
        markdown: None,
        plot: None,
        convergence_plot: None,
        peer: None,
        peer_script: None,
        seed: 1,
        e2e_runs: None,
        verbose: false,
        isolate: true,
    };
    let mut args = args.into_iter().peekable();
    while let Some(arg) = args.next() {
        let (flag, inline) = match arg.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f.to_string(), Some(v.to_string())),
            _ => (arg.clone(), None),
        };
        // The flag's single value: inline after `=`, else the next argument.
        let mut value =
            || inline.clone().or_else(|| args.next_if(|a| !a.starts_with("--"))).ok_or(format!("{flag} needs a value"));
        match flag.as_str() {
            "-h" | "--help" => return Ok(Command::Help),
            "--bench" => {}
            "--occupancy" => {
                let shapes: Result<Vec<(u32, u32)>, String> = list(&value()?)
                    .iter()
                    .map(|s| {
                        let parsed = s.split_once(':').and_then(|(w, b)| Some((w.parse().ok()?, b.parse().ok()?)));
                        parsed.ok_or(format!("--occupancy expects WG:BYTES, got {s:?}"))
                    })
                    .collect();
                return Ok(Command::Occupancy(shapes?));
            }
            "--pipeline-stats" => {
                let first = inline.clone().into_iter();
                let rest = std::iter::from_fn(|| args.next_if(|a| !a.starts_with("--")));
                let specs: Result<Vec<_>, _> =
                    first.chain(rest).flat_map(|a| list(&a)).map(|s| crate::pipeline_stats::Spec::parse(&s)).collect();
                match specs? {
                    specs if specs.is_empty() => return Err("--pipeline-stats needs a shader".into()),
                    specs => return Ok(Command::PipelineStats(specs)),
                }
            }
            "--quick" => options.quick = true,
            "--small" => options.small = true,
            "--suite" => options.suite = true,
            "-v" | "--verbose" => options.verbose = true,
            "--shared-device" => options.isolate = false,
            "--mtx" => {
                let before = options.mtx.len();
                // Files after the flag, each argument also split at commas (`--mtx a.mtx,b.mtx`
                // as `--matrices` takes names).
                let first = inline.clone().into_iter();
                let rest = std::iter::from_fn(|| args.next_if(|a| !a.starts_with("--")));
                for arg in first.chain(rest) {
                    options.mtx.extend(list(&arg).into_iter().map(PathBuf::from));
                }
                if options.mtx.len() == before {
                    return Err("--mtx needs at least one file".into());
                }
            }
            "--matrices" => options.matrices = Some(list(&value()?)),
            "--ops" => options.ops = Some(list(&value()?)),
            "--k" => {
                let widths: Result<Vec<usize>, _> = list(&value()?).iter().map(|k| k.parse::<usize>()).collect();
                match widths {
                    Ok(w) if !w.is_empty() && w.iter().all(|&k| k > 0) => options.widths = Some(w),
                    _ => return Err("--k expects positive widths, e.g. 32,128".into()),
                }
            }
            "--dtype" => {
                options.dtype = match value()?.as_str() {
                    "f32" => wgsparse::ElementKind::F32,
                    "f64" => wgsparse::ElementKind::F64,
                    other => return Err(format!("--dtype expects f32 or f64, got {other:?}")),
                }
            }
            "--algorithms" => options.algorithms = Some(list(&value()?)),
            "--json" => options.json = Some(value()?.into()),
            "--markdown" => options.markdown = Some(value()?.into()),
            "--plot" => options.plot = Some(value()?.into()),
            "--convergence-plot" => options.convergence_plot = Some(value()?.into()),
            "--peer" => {
                let peer = value()?.to_ascii_lowercase();
                if !PEERS.contains(&peer.as_str()) {
                    return Err(format!("unknown peer {peer:?}: expected one of {}", PEERS.join(", ")));
                }
                options.peer = Some(peer);
            }
            "--peer-script" => options.peer_script = Some(value()?.into()),
            "--e2e-runs" => {
                let v = value()?;
                options.e2e_runs = match v.parse() {
                    Ok(n) if n >= 1 => Some(n),
                    _ => return Err(format!("--e2e-runs expects a positive count, got {v:?}")),
                };
            }
            "--seed" => {
                let v = value()?;
                options.seed = v.parse().map_err(|_| format!("--seed expects an unsigned integer, got {v:?}"))?;
            }
            _ => return Err(format!("unknown argument {arg:?} (see --help)")),
        }
    }
    // The suite runs by default; `--mtx` alone replaces it.
    options.suite |= options.mtx.is_empty();
    Ok(Command::Run(Box::new(options)))
}

/// Splits `a,b, c` into names.
fn list(value: &str) -> Vec<String> {
    value.split(',').map(str::trim).filter(|s| !s.is_empty()).map(String::from).collect()
}
