//! Shared test support: one context per subgroup mode, the repository's real matrices,
//! fresh seeds, and tolerances per element type.
#![allow(dead_code)]

use std::path::PathBuf;
use std::sync::{OnceLock, RwLock, RwLockReadGuard, RwLockWriteGuard};

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

/// New contexts for each mode of [`contexts`], for a test that counts what its context
/// caches or pools: the shared ones also serve the tests running beside it.
pub fn fresh_contexts() -> Vec<(&'static str, Context)> {
    contexts()
        .iter()
        .map(|(mode, shared)| {
            let options = ContextOptions::from_env().expect("WGSPARSE_* variables parse");
            let ctx = Context::new_blocking(options.with_subgroups(shared.subgroups())).expect("a fresh context");
            (*mode, ctx)
        })
        .collect()
}

/// Tests that open and drop devices of their own run alone (`alone()`); the tests of their
/// binary that only use the shared contexts run beside each other (`beside_others()`).
/// NVIDIA's driver (580) can deadlock when a device is destroyed while other threads are in
/// the driver; wgsparse makes that rare (it opens and closes devices one thread at a time) but
/// cannot rule it out, since other threads' ordinary driver calls stay outside its lock
/// (RELIABILITY.md, concurrency). The tests are of wgsparse, not of that driver bug.
static DEVICE_TEARDOWN: RwLock<()> = RwLock::new(());

/// Held by a test that opens and drops devices of its own: no other test of the binary
/// that takes either guard runs meanwhile.
pub fn alone() -> RwLockWriteGuard<'static, ()> {
    DEVICE_TEARDOWN.write().unwrap_or_else(|p| p.into_inner())
}

/// Held by a test that uses only the shared contexts, in a binary with tests that hold
/// [`alone`].
pub fn beside_others() -> RwLockReadGuard<'static, ()> {
    DEVICE_TEARDOWN.read().unwrap_or_else(|p| p.into_inner())
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

/// The dense widths the sparse × dense ops are checked at: 1, around the lane tiles
/// (31/32/33, 129) and the common sizes.
pub const WIDTHS: [usize; 8] = [1, 3, 31, 32, 33, 64, 128, 129];

/// A `rows × cols` dense matrix of values in [0.25, 1.25]: positive, so that sums over long
/// rows stay well conditioned whatever their order (A's values carry the signs).
pub fn dense<T: Scalar>(rows: usize, cols: usize, seed: u64) -> wgsparse::DenseMatrix<T> {
    let data = wgsparse::generate::random_vector(rows * cols, seed)
        .into_iter()
        .map(|v| T::from_f64(v.abs() as f64 + 0.25))
        .collect();
    wgsparse::DenseMatrix::try_new(rows, cols, data).unwrap()
}

/// Small matrices of every shape the sparse × dense kernels special-case: stencils, a power
/// law, one row long enough for several chunks among empty rows, no entries at all, tall
/// and wide.
///
/// Sizes keep every invocation under 65,535 loop steps: lavapipe (llvmpipe's
/// LP_MAX_TGSI_LOOP_ITERATIONS) silently ends all loops of an invocation past that many
/// steps in total, so a larger case would fail there for a reason no GPU has.
pub fn sparse_dense_cases<T: Scalar>(seed: u64) -> Vec<(String, CsrMatrix<T>)> {
    use wgsparse::generate;
    let to = |a: CsrMatrix<f32>| a.map_values(|v| T::from_f64(v as f64));
    vec![
        ("laplacian_2d(16)".into(), to(generate::laplacian_2d(16))),
        ("laplacian_3d(6)".into(), to(generate::laplacian_3d(6))),
        ("rmat(9, 8)".into(), to(generate::rmat(9, 8, 0.57, 0.19, 0.19, seed))),
        ("dense row of 1100 among empty rows".into(), to(generate::dense_row_mix(1200, 1100, seed))),
        ("0x0".into(), CsrMatrix::zeros(0, 0).unwrap()),
        ("70x50 no entries".into(), CsrMatrix::zeros(70, 50).unwrap()),
        ("tall 300x20".into(), to(generate::random(300, 20, 0.2, seed))),
        ("wide 20x300".into(), to(generate::random(20, 300, 0.2, seed))),
    ]
}

/// A matrix and the dense widths to check it at.
pub type WidthCase<T> = (String, CsrMatrix<T>, Vec<usize>);

/// Every case at each of its widths with every algorithm (named by `name`), in every given
/// context: `error` runs one and returns its relative error against the twin. Reports all
/// failures (NaN included) at once.
pub fn check_widths<T: Scalar, A: Copy>(
    contexts: &[(&str, &Context)],
    cases: &[WidthCase<T>],
    algorithms: &[A],
    name: impl Fn(A) -> &'static str,
    seed: u64,
    mut error: impl FnMut(&Context, &CsrMatrix<T>, usize, A, &mut wgsparse::generate::Rng) -> f64,
) {
    let mut rng = wgsparse::generate::Rng::new(seed);
    let mut failures = Vec::new();
    for &(mode, ctx) in contexts {
        for (case, a, widths) in cases {
            for &k in widths {
                for &algorithm in algorithms {
                    let e = error(ctx, a, k, algorithm, &mut rng);
                    if e.is_nan() || e > tolerance::<T>() {
                        let (rows, cols, nnz) = (a.rows(), a.cols(), a.nnz());
                        let (element, algorithm) = (T::KIND.name(), name(algorithm));
                        failures.push(format!(
                            "{element} {mode} {case} ({rows}x{cols}, nnz {nnz}) k={k} {algorithm}: error {e:e}"
                        ));
                    }
                }
            }
        }
    }
    assert!(failures.is_empty(), "seed {seed}:\n{}", failures.join("\n"));
}

/// Every generated sparse × dense case at every width.
pub fn generated_widths<T: Scalar>(seed: u64) -> Vec<WidthCase<T>> {
    sparse_dense_cases::<T>(seed).into_iter().map(|(n, a)| (n, a, WIDTHS.to_vec())).collect()
}

/// The repository's matrices, one width each, rotating from `offset` so that every width
/// meets several (the generated cases take every width).
pub fn real_widths<T: Scalar>(offset: usize) -> Vec<WidthCase<T>> {
    let w = WIDTHS;
    real_matrices::<T>().into_iter().enumerate().map(|(i, (n, a))| (n, a, vec![w[(i + offset) % w.len()]])).collect()
}

/// The entries' magnitudes `|v|`, for the twin run on absolute values (the terms' scale).
pub fn magnitudes<T: Scalar>(v: &[T]) -> Vec<T> {
    v.iter().map(|e| T::from_f64(e.to_f64().abs())).collect()
}

/// `A`'s entries replaced by their magnitudes `|A|`, the same pattern.
pub fn matrix_magnitudes<T: Scalar>(a: &CsrMatrix<T>) -> CsrMatrix<T> {
    a.map_values(|v| T::from_f64(v.to_f64().abs()))
}

/// A plan made where the adapter may cap an invocation's loop iterations (llvmpipe): with
/// `refused`, it must be refused with that limit named; otherwise made, and returned.
pub fn planned_unless_refused<P>(got: wgsparse::Result<P>, refused: bool, what: &str) -> Option<P> {
    match got {
        Err(wgsparse::Error::LimitExceeded { limit, .. }) if refused => {
            assert!(limit.contains("loop iterations"), "{what}: refused for {limit}");
            None
        }
        Ok(plan) if !refused => Some(plan),
        Err(e) => panic!("{what}: {e} (refusal expected: {refused})"),
        Ok(_) => panic!("{what}: planned, where the loop cap should refuse it"),
    }
}
