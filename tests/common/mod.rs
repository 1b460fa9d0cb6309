//! Shared test support: one context per subgroup mode, the real matrices, fresh seeds.
#![allow(dead_code)]

use std::path::PathBuf;
use std::sync::OnceLock;

use wgsparse::format::matrix_market;
use wgsparse::{Context, ContextOptions, CsrMatrix};

/// The contexts every GPU test runs on: with subgroups (when the adapter has them) and
/// without, so both code paths of every kernel are exercised.
pub fn contexts() -> &'static [(&'static str, Context)] {
    static CONTEXTS: OnceLock<Vec<(&'static str, Context)>> = OnceLock::new();
    CONTEXTS.get_or_init(|| {
        let options = ContextOptions::from_env().expect("WGSPARSE_* variables parse");
        let with = Context::new_blocking(options.clone().with_subgroups(true)).unwrap_or_else(|e| {
            panic!("a GPU adapter is needed for these tests (cargo xtask test sets up lavapipe): {e}")
        });
        eprintln!("{}", with.report());
        let without = Context::new_blocking(options.with_subgroups(false)).expect("second context");
        let mut contexts = vec![("no-subgroups", without)];
        if with.subgroups() {
            contexts.insert(0, ("subgroups", with));
        }
        contexts
    })
}

/// A fresh seed per test run (printed, and fixed by `WGSPARSE_TEST_SEED` to reproduce).
pub fn seed(test: &str) -> u64 {
    let seed = std::env::var("WGSPARSE_TEST_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or_else(|| {
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos() as u64).unwrap_or(1)
    });
    eprintln!("{test}: seed {seed} (WGSPARSE_TEST_SEED={seed} reproduces)");
    seed
}

/// `../shared/matrices`, beside the project.
pub fn matrices_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/matrices")
}

/// Every real matrix the reader accepts, as f32 CSR, by file name.
pub fn shared_matrices() -> Vec<(String, CsrMatrix<f32>)> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(matrices_dir())
        .expect("../shared/matrices is beside the project")
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "mtx"))
        .collect();
    files.sort();
    let matrices: Vec<_> = files
        .iter()
        .filter_map(|p| {
            let (_, m) = matrix_market::read_path::<f32>(p).ok()?;
            Some((p.file_name().unwrap().to_string_lossy().into_owned(), m.into_csr()))
        })
        .collect();
    assert!(matrices.len() >= 18, "expected the shared matrices, found {}", matrices.len());
    matrices
}
