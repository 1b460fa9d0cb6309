//! ILU(0) and IC(0) (`solvers::IncompleteLu`) against their f64 twins: the factor after 1 to
//! 3 fine-grained sweeps, the sweeps' convergence to the exact factors, and `z = M⁻¹·r`
//! applied exactly and by Jacobi sweeps, on Poisson, convection–diffusion and the
//! repository's matrices that have a full diagonal; f32 and f64, both subgroup modes; bad
//! matrices refused with the row named. (Solves with them: `tests/solvers.rs`.)

mod common;

use wgsparse::generate::{self, Rng};
use wgsparse::reference;
use wgsparse::solvers::{Factorization, IncompleteLu, IncompleteOptions, LinOp, TriangularApply};
use wgsparse::{Conversion, CsrMatrix, Error, GpuSparse, Scalar, SolveProblem};

fn cast<T: Scalar>(a: &CsrMatrix<f32>) -> CsrMatrix<T> {
    a.map_values(|v| T::from_f64(v as f64))
}

/// Whether every row stores its diagonal entry, and the pattern is symmetric.
fn full_diagonal_and_symmetric<T: Scalar>(a: &CsrMatrix<T>) -> (bool, bool) {
    let has = |i: usize, j: usize| {
        let r = a.row_offsets()[i] as usize..a.row_offsets()[i + 1] as usize;
        a.col_indices()[r].contains(&(j as u32))
    };
    let diagonal = a.rows() == a.cols() && (0..a.rows()).all(|i| has(i, i));
    let symmetric = (0..a.rows()).all(|i| {
        (a.row_offsets()[i] as usize..a.row_offsets()[i + 1] as usize).all(|p| has(a.col_indices()[p] as usize, i))
    });
    (diagonal, symmetric)
}

/// Systems with a full diagonal: (name, A, whether IC(0) applies: SPD).
fn systems<T: Scalar>() -> Vec<(String, CsrMatrix<T>, bool)> {
    let mut out = vec![
        ("poisson 2-D 13²".to_string(), cast(&generate::laplacian_2d(13)), true),
        ("poisson 3-D 6³".to_string(), cast(&generate::laplacian_3d(6)), true),
        ("convection-diffusion 11²".to_string(), cast(&generate::convection_diffusion_2d(11, 0.8)), false),
        ("poisson 2-D 1".to_string(), cast(&generate::laplacian_2d(1)), true),
        // 1089 rows: the split triangles' offsets are scanned in two blocks of 1024.
        ("poisson 2-D 33²".to_string(), cast(&generate::laplacian_2d(33)), true),
    ];
    for (name, a) in common::real_matrices::<T>() {
        // cage5 (non-symmetric, diagonally dominant) and 494_bus (SPD, a power network) have
        // full diagonals and pivots that stay away from zero.
        let spd = name == "494_bus.mtx";
        if (name == "cage5.mtx" || spd) && full_diagonal_and_symmetric(&a).0 {
            out.push((name, a, spd));
        }
    }
    assert!(out.len() >= 6, "the repository's matrices for the incomplete factorizations");
    out
}

/// The factor's values, read back.
fn factor_values<T: Scalar>(m: &IncompleteLu<T>) -> Vec<f64> {
    let wgsparse::matrix::PanelStorage::Csr(csr) = m.factor().panels()[0].storage() else {
        panic!("the factor is CSR");
    };
    csr.values().read_blocking().unwrap().iter().map(|v| v.to_f64()).collect()
}

fn forms(spd: bool) -> Vec<Factorization> {
    if spd {
        vec![Factorization::Ilu0, Factorization::Ic0]
    } else {
        vec![Factorization::Ilu0]
    }
}

fn tolerance<T: Scalar>() -> f64 {
    // f32 factors go through a few sweeps of sums and divisions per entry.
    match T::KIND {
        wgsparse::ElementKind::F32 => 1e-4,
        wgsparse::ElementKind::F64 => 1e-11,
    }
}

fn factor_and_apply<T: Scalar>() {
    let mut rng = Rng::new(common::seed("incomplete factor and apply"));
    for (mode, ctx) in common::contexts_for::<T>() {
        for (name, a, spd) in systems::<T>() {
            let gpu_a = GpuSparse::from_csr(ctx, &a, Conversion::Csr).unwrap();
            for form in forms(spd) {
                let cholesky = form == Factorization::Ic0;
                for sweeps in [1, 2, 3] {
                    for apply in [
                        TriangularApply::Exact,
                        TriangularApply::Sweeps(0),
                        TriangularApply::Sweeps(1),
                        TriangularApply::Sweeps(3),
                    ] {
                        let what = format!("{mode} {} {name} {form:?} sweeps {sweeps} {apply:?}", T::KIND.name());
                        let m = IncompleteLu::new(ctx, &gpu_a, form, IncompleteOptions { sweeps, apply }).unwrap();
                        let want = reference::incomplete_factor(&a, cholesky, sweeps);
                        let got = factor_values(&m);
                        let error = reference::relative_error(&got, &want);
                        assert!(error <= tolerance::<T>(), "{what}: factor differs by {error:e}");

                        let r: Vec<T> = generate::random_vector(a.rows(), rng.next_u64())
                            .iter()
                            .map(|&v| T::from_f64(v as f64))
                            .collect();
                        let r64: Vec<f64> = r.iter().map(|v| v.to_f64()).collect();
                        let want = reference::apply_incomplete(&a, &want, cholesky, apply, &r64);
                        let r = ctx.upload(&r).unwrap();
                        let mut z = ctx.upload(&vec![T::from_f64(f64::NAN); a.rows()]).unwrap();
                        let mut batch = ctx.batch();
                        m.apply(&mut batch.recorder(), &r, &mut z).unwrap();
                        batch.submit().unwrap();
                        let z = z.read_blocking().unwrap();
                        let error = reference::relative_error(&z, &want);
                        // The exact solves divide by pivots along chains: a little more rounding.
                        assert!(error <= 10.0 * tolerance::<T>(), "{what}: M⁻¹·r differs by {error:e}");
                    }
                }
            }
        }
    }
}

#[test]
fn factor_and_apply_match_twin_f32() {
    factor_and_apply::<f32>();
}

#[test]
fn factor_and_apply_match_twin_f64() {
    factor_and_apply::<f64>();
}

/// IC(0) reads A's lower triangle only: what is stored above the diagonal changes nothing.
#[test]
fn ic0_reads_the_lower_triangle() {
    let ctx = common::context();
    let a = generate::laplacian_2d(7);
    let mut skewed = a.clone();
    for i in 0..a.rows() {
        for p in a.row_offsets()[i] as usize..a.row_offsets()[i + 1] as usize {
            if a.col_indices()[p] as usize > i {
                skewed.values_mut()[p] = 5.0;
            }
        }
    }
    let factor = |a: &CsrMatrix<f32>| {
        let gpu = GpuSparse::from_csr(ctx, a, Conversion::Csr).unwrap();
        factor_values(&IncompleteLu::ic0(ctx, &gpu).unwrap())
    };
    assert_eq!(factor(&a), factor(&skewed));
}

/// Enough sweeps reach the exact ILU(0)/IC(0) (the row-by-row elimination): on a 2-D
/// Poisson 6² the twin's sweeps are there (to rounding) after 20.
#[test]
fn sweeps_converge_to_the_exact_factors() {
    let a = generate::laplacian_2d(6).map_values(|v| v as f64);
    for (mode, ctx) in common::contexts_for::<f64>() {
        let gpu_a = GpuSparse::from_csr(ctx, &a, Conversion::Csr).unwrap();
        for form in [Factorization::Ilu0, Factorization::Ic0] {
            let cholesky = form == Factorization::Ic0;
            let exact = reference::exact_incomplete_factor(&a, cholesky);
            let options = IncompleteOptions { sweeps: 24, ..Default::default() };
            let got = factor_values(&IncompleteLu::new(ctx, &gpu_a, form, options).unwrap());
            let error = reference::relative_error(&got, &exact);
            assert!(error <= 1e-13, "{mode} {form:?}: {error:e} from the exact factor");
            // And two sweeps are not there yet (the test can tell).
            let two = reference::incomplete_factor(&a, cholesky, 2);
            assert!(reference::relative_error(&two, &exact) > 1e-6, "{form:?}: two sweeps already exact?");
        }
    }
}

/// A missing diagonal entry, a zero pivot, an indefinite matrix for IC(0), the wrong shapes
/// and options: typed errors with the row named.
#[test]
fn bad_matrices_are_refused() {
    let ctx = common::context();
    let refuse = |a: &CsrMatrix<f32>, form, row, problem| {
        let gpu = GpuSparse::from_csr(ctx, a, Conversion::Csr).unwrap();
        let got = IncompleteLu::new(ctx, &gpu, form, IncompleteOptions::default()).map(|_| ());
        assert!(
            matches!(got, Err(Error::NotSolvable { row: r, problem: p, .. }) if r == row && p == problem),
            "{form:?}: {got:?}, expected row {row} {problem:?}"
        );
    };
    // Row 2 of [[2, 1, 0], [1, 2, 0], [1, 0, 0]] stores no diagonal entry.
    let missing =
        CsrMatrix::try_from_csr_data(3, 3, vec![0, 2, 4, 5], vec![0, 1, 0, 1, 0], vec![2.0, 1.0, 1.0, 2.0, 1.0])
            .unwrap();
    refuse(&missing, Factorization::Ilu0, 2, SolveProblem::MissingDiagonal);
    // [[1, 1], [1, 1]]: the second pivot is 1 − 1·1 = 0.
    let singular = CsrMatrix::try_from_csr_data(2, 2, vec![0, 2, 4], vec![0, 1, 0, 1], vec![1.0; 4]).unwrap();
    refuse(&singular, Factorization::Ilu0, 1, SolveProblem::ZeroPivot);
    // [[1, 2], [2, 1]] is indefinite: IC(0)'s second pivot is √(1 − 4).
    let indefinite =
        CsrMatrix::try_from_csr_data(2, 2, vec![0, 2, 4], vec![0, 1, 0, 1], vec![1.0, 2.0, 2.0, 1.0]).unwrap();
    refuse(&indefinite, Factorization::Ic0, 1, SolveProblem::NotPositiveDefinite);

    // IC(0) of a pattern that is not symmetric: (0, 1) stored, (1, 0) not.
    let lopsided = CsrMatrix::try_from_csr_data(2, 2, vec![0, 2, 3], vec![0, 1, 1], vec![2.0, 1.0, 2.0]).unwrap();
    let lopsided = GpuSparse::from_csr(ctx, &lopsided, Conversion::Csr).unwrap();
    assert!(matches!(IncompleteLu::ic0(ctx, &lopsided), Err(Error::InvalidArgument(_))));
    // A 0 × 0 matrix factors to nothing and applies to empty vectors.
    let empty = GpuSparse::from_csr(ctx, &CsrMatrix::<f32>::zeros(0, 0).unwrap(), Conversion::Csr).unwrap();
    for apply in [TriangularApply::Exact, TriangularApply::Sweeps(2)] {
        for form in [Factorization::Ilu0, Factorization::Ic0] {
            let m = IncompleteLu::new(ctx, &empty, form, IncompleteOptions { sweeps: 3, apply }).unwrap();
            let (r, mut z) = (ctx.zeros::<f32>(0).unwrap(), ctx.zeros::<f32>(0).unwrap());
            m.apply(&mut ctx.batch().recorder(), &r, &mut z).unwrap();
        }
    }

    let rect = GpuSparse::from_csr(ctx, &generate::random(5, 7, 0.5, 1), Conversion::Csr).unwrap();
    assert!(matches!(IncompleteLu::ilu0(ctx, &rect), Err(Error::DimensionMismatch { .. })));
    let lap = generate::laplacian_2d(4);
    let coo = GpuSparse::from_csr(ctx, &lap, Conversion::Coo).unwrap();
    assert!(matches!(IncompleteLu::ilu0(ctx, &coo), Err(Error::InvalidArgument(_))));
    let a = GpuSparse::from_csr(ctx, &lap, Conversion::Csr).unwrap();
    let none = IncompleteOptions { sweeps: 0, ..Default::default() };
    assert!(matches!(IncompleteLu::new(ctx, &a, Factorization::Ilu0, none), Err(Error::InvalidArgument(_))));
    let m = IncompleteLu::ic0(ctx, &a).unwrap();
    let (r, mut z) = (ctx.zeros::<f32>(15).unwrap(), ctx.zeros::<f32>(16).unwrap());
    let refused = m.apply(&mut ctx.batch().recorder(), &r, &mut z);
    assert!(matches!(refused, Err(Error::DimensionMismatch { .. })), "{refused:?}");
    let (_, other) = &common::contexts()[common::contexts().len() - 1];
    if other.id() != ctx.id() {
        assert!(matches!(IncompleteLu::ilu0(other, &a), Err(Error::ContextMismatch(_))));
        let (r, mut z) = (other.zeros::<f32>(16).unwrap(), other.zeros::<f32>(16).unwrap());
        let refused = m.apply(&mut other.batch().recorder(), &r, &mut z);
        assert!(matches!(refused, Err(Error::ContextMismatch(_))), "{refused:?}");
    }
}
