//! The matrices a run measures: the generated suite, sized for the adapter, and Matrix
//! Market files.

use std::path::{Path, PathBuf};

use wgsparse::format::matrix_market;
use wgsparse::generate;
use wgsparse::CsrMatrix;

use crate::progress::Progress;

/// How large the generated suite is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scale {
    /// Tiny: a smoke test that finishes in seconds anywhere.
    Quick,
    /// For CPU adapters (lavapipe): the whole run takes about a minute.
    Small,
    /// For discrete GPUs: every matrix well beyond the caches.
    Large,
}

impl Scale {
    /// Lower case name, for the report header.
    pub fn name(self) -> &'static str {
        match self {
            Scale::Quick => "quick",
            Scale::Small => "small",
            Scale::Large => "large",
        }
    }
}

/// One matrix of the run.
pub struct BenchMatrix {
    /// Short name used in tables, JSON and the peer's results.
    pub name: String,
    /// The matrix, f32 values.
    pub csr: CsrMatrix<f32>,
}

/// A Matrix Market file the reader refused.
pub struct SkippedFile {
    /// The path as given.
    pub path: PathBuf,
    /// The reader's message.
    pub reason: String,
}

/// Everything to measure, and the files left out.
pub struct Suite {
    /// Generated matrices first, then files, in command-line order.
    pub matrices: Vec<BenchMatrix>,
    /// Files the reader refused.
    pub skipped: Vec<SkippedFile>,
}

/// R-MAT quadrant probabilities of Graph500.
const RMAT_ABC: (f64, f64, f64) = (0.57, 0.19, 0.19);

/// A generated matrix, built only when the suite is loaded.
struct Generated {
    name: String,
    build: Box<dyn Fn(u64) -> CsrMatrix<f32>>,
}

fn generated(name: String, build: impl Fn(u64) -> CsrMatrix<f32> + 'static) -> Generated {
    Generated { name, build: Box::new(build) }
}

/// The five shapes every scale has: regular 2-D and 3-D stencils, a power-law graph, uniform
/// random rows, and one dense row among empty and short rows.
fn shapes(scale: Scale) -> Vec<Generated> {
    // (2-D side, 3-D side, R-MAT scale, R-MAT edge factor, uniform rows, per row, mix rows, dense row)
    let (side2, side3, rmat_scale, edge_factor, uniform_rows, per_row, mix_rows, dense_len) = match scale {
        Scale::Quick => (64, 12, 10, 8, 4096, 8, 4096, 1024),
        Scale::Small => (256, 32, 14, 16, 65_536, 16, 65_536, 16_384),
        Scale::Large => (2048, 160, 21, 16, 1 << 22, 16, 1 << 22, 1 << 20),
    };
    let (a, b, c) = RMAT_ABC;
    vec![
        generated(format!("lap2d_{side2}"), move |_| generate::laplacian_2d(side2)),
        generated(format!("lap3d_{side3}"), move |_| generate::laplacian_3d(side3)),
        generated(format!("rmat_s{rmat_scale}_ef{edge_factor}"), move |seed| {
            generate::rmat(rmat_scale, edge_factor, a, b, c, seed)
        }),
        generated(format!("uniform_{}_{per_row}", count(uniform_rows)), move |seed| {
            generate::uniform_random(uniform_rows, uniform_rows, per_row, seed)
        }),
        generated(format!("dense_row_{}", count(mix_rows)), move |seed| {
            generate::dense_row_mix(mix_rows, dense_len, seed)
        }),
    ]
}

/// `4M`, `64K` or the plain number: short names for powers of two.
fn count(n: usize) -> String {
    match n {
        n if n >= 1 << 20 && n % (1 << 20) == 0 => format!("{}M", n >> 20),
        n if n >= 1 << 10 && n % (1 << 10) == 0 => format!("{}K", n >> 10),
        n => n.to_string(),
    }
}

/// Builds the suite (when asked) and reads the files, keeping the matrices named in `only`
/// (all when `None`); a refused file is recorded, not fatal.
pub fn load(scale: Option<Scale>, files: &[PathBuf], only: Option<&[String]>, seed: u64, progress: &Progress) -> Suite {
    let kept = |name: &str| only.is_none_or(|names| names.iter().any(|n| n == name));
    let mut shapes = scale.map(shapes).unwrap_or_default();
    shapes.retain(|s| kept(&s.name));
    let files: Vec<&PathBuf> = files.iter().filter(|f| kept(&file_name(f))).collect();
    progress.start("loading", (shapes.len() + files.len()) as u64);
    let mut suite = Suite { matrices: Vec::new(), skipped: Vec::new() };
    for shape in shapes {
        progress.step(&format!("generating {}", shape.name));
        let start = std::time::Instant::now();
        let csr = (shape.build)(seed);
        progress.detail(|| {
            let took = start.elapsed().as_secs_f64();
            format!("generated {}: {} rows, {} nnz ({took:.1} s)", shape.name, csr.rows(), csr.nnz())
        });
        suite.matrices.push(BenchMatrix { csr, name: shape.name });
    }
    for path in files {
        progress.step(&format!("reading {}", path.display()));
        match matrix_market::read_path::<f32>(path) {
            Ok((_, matrix)) => suite.matrices.push(BenchMatrix { name: file_name(path), csr: matrix.into_csr() }),
            Err(e) => suite.skipped.push(SkippedFile { path: path.to_path_buf(), reason: e.to_string() }),
        }
    }
    suite
}

/// The file's stem (`west0479` for `../west0479.mtx`).
fn file_name(path: &Path) -> String {
    path.file_stem().unwrap_or(path.as_os_str()).to_string_lossy().into_owned()
}

/// The dense vector an op multiplies by: the same for our run and the peer's, so both
/// compute the same product.
pub fn dense_operand(len: usize, seed: u64) -> Vec<f32> {
    // Salted so that x is not the stream that drew the matrix's values.
    const SALT: u64 = 0x5EED_0F0D_E45E_ED00;
    generate::random_vector(len, seed ^ SALT)
}
