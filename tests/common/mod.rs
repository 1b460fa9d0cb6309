//! Shared test support: one context per subgroup mode, the repository's real matrices,
//! fresh seeds, and tolerances per element type.
#![allow(dead_code)]

use std::path::PathBuf;
use std::sync::OnceLock;

use wgsparse::format::matrix_market;
use wgsparse::{Context, ContextOptions, CsrMatrix, ElementKind, Scalar};

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

/// The first context (subgroups when the adapter has them).
pub fn context() -> &'static Context {
    &contexts()[0].1
}

/// A fresh seed per test run (printed, and fixed by `WGSPARSE_TEST_SEED` to reproduce).
pub fn seed(test: &str) -> u64 {
    let seed = std::env::var("WGSPARSE_TEST_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or_else(|| {
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos() as u64).unwrap_or(1)
    });
    eprintln!("{test}: seed {seed} (WGSPARSE_TEST_SEED={seed} reproduces)");
    seed
}

/// The house tolerance on `‖y − y_ref‖ / ‖y_ref‖` against the f64 twin: 1e-5 for f32; for
/// f64 results far below f32 rounding (1e-12), so an f64 kernel that computed in f32
/// somewhere fails.
pub fn tolerance<T: Scalar>() -> f64 {
    match T::KIND {
        ElementKind::F32 => 1e-5,
        ElementKind::F64 => 1e-12,
    }
}

/// `tests/data/matrices`, inside the repository (see its README for provenance).
pub fn matrices_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/matrices")
}

/// Every real matrix the reader accepts, by file name, read as `T`.
pub fn real_matrices<T: Scalar>() -> Vec<(String, CsrMatrix<T>)> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(matrices_dir())
        .expect("tests/data/matrices is in the repository")
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "mtx"))
        .collect();
    files.sort();
    let matrices: Vec<_> = files
        .iter()
        .filter_map(|p| {
            let (_, m) = matrix_market::read_path::<T>(p).ok()?;
            Some((p.file_name().unwrap().to_string_lossy().into_owned(), m.into_csr()))
        })
        .collect();
    assert!(matrices.len() >= 18, "expected the repository's matrices, found {}", matrices.len());
    matrices
}

/// The contexts on which kernels run for `T` (f64 needs SHADER_F64, which lavapipe has).
pub fn contexts_for<T: Scalar>() -> Vec<(&'static str, &'static Context)> {
    let all: Vec<_> = contexts().iter().map(|(m, c)| (*m, c)).collect();
    let usable: Vec<_> = all.iter().copied().filter(|(_, c)| c.supports::<T>()).collect();
    assert!(
        !usable.is_empty() || std::env::var_os("WGSPARSE_ALLOW_NO_F64").is_some(),
        "no context runs {} kernels (set WGSPARSE_ALLOW_NO_F64 on adapters without SHADER_F64)",
        T::KIND.name()
    );
    usable
}
