//! ILU(0) and IC(0) (`solvers::IncompleteLu`) against their f64 twins: the factor after 1 to
//! 3 fine-grained sweeps, the sweeps' convergence to the exact factors, and `z = M⁻¹·r`
//! applied exactly and by Jacobi sweeps, on Poisson, convection–diffusion and the
//! repository's matrices that have a full diagonal; f32 and f64, both subgroup modes; bad
//! matrices refused with the row named. The diagonal form (A's own triangles and the pivots)
//! on CSR and on ELL in each index encoding: its pivots, `M⁻¹·r` and the r·z it folds in,
//! against the same twins, and where it does not apply. (Solves with them:
//! `tests/solvers.rs`.)

mod common;

use wgsparse::format::EllOptions;
use wgsparse::generate::{self, Rng};
use wgsparse::reference;
use wgsparse::solvers::{FactorForm, Factorization, IncompleteLu, IncompleteOptions, LinOp, TriangularApply};
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

/// The full factor's values, read back.
fn factor_values<T: Scalar>(m: &IncompleteLu<T>) -> Vec<f64> {
    let wgsparse::matrix::PanelStorage::Csr(csr) = m.factor().expect("the full form").panels()[0].storage() else {
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
                        let options = IncompleteOptions { sweeps, apply, form: FactorForm::Full };
                        let m = IncompleteLu::new(ctx, &gpu_a, form, options).unwrap();
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

/// The uploads the diagonal form reads: CSR, and ELL with 32-bit columns, 16-bit diagonal
/// offsets, and offsets with the values coded into a table.
fn storages() -> [(&'static str, Conversion); 4] {
    let ell = |compact_indices, value_table_limit| {
        Conversion::Ell(EllOptions { compact_indices, value_table_limit, ..Default::default() })
    };
    [
        ("csr", Conversion::Csr),
        ("ell columns", ell(false, 0)),
        ("ell offsets", ell(true, 0)),
        ("ell coded", ell(true, 256)),
    ]
}

/// The diagonal form against the twins: `1/d` after 1–3 sweeps of the pivots, `M⁻¹·r` by 0–3
/// Jacobi sweeps per triangle (z poisoned first), and with the r·z partials of `apply_dot`;
/// where the elimination fills the pattern (cage5, 494_bus) or IC(0)'s values are not
/// symmetric (convection–diffusion), CSR falls back to the full form and ELL is refused.
/// Sizes around the 256-row workgroups of the sweeps (16² = 256, 17², 33²).
fn diagonal_form<T: Scalar>() {
    let mut rng = Rng::new(common::seed("incomplete diagonal form"));
    let mut systems = systems::<T>();
    for n in [16, 17] {
        systems.push((format!("poisson 2-D {n}²"), cast(&generate::laplacian_2d(n)), true));
    }
    // ILU(0) patterns with no fill and no symmetry: a lower bidiagonal (no upper entries),
    // and rows i storing i − 1 and i + 2 (no mirrors: their terms drop out).
    for (name, offsets) in [("lower bidiagonal 37", &[-1i64, 0][..]), ("offsets −1, 0, +2 (37)", &[-1, 0, 2])] {
        let n = 37i64;
        let (mut row_offsets, mut cols, mut values) = (vec![0u32], Vec::new(), Vec::new());
        for i in 0..n {
            for &o in offsets {
                if (0..n).contains(&(i + o)) {
                    cols.push((i + o) as u32);
                    values.push(if o == 0 { 4.0 + (i % 3) as f32 } else { -1.0 - (i % 2) as f32 * 0.5 });
                }
            }
            row_offsets.push(cols.len() as u32);
        }
        let a = CsrMatrix::try_from_csr_data(n as usize, n as usize, row_offsets, cols, values).unwrap();
        systems.push((name.to_string(), cast(&a), false));
    }
    let mut applied = 0;
    for (mode, ctx) in common::contexts_for::<T>() {
        for (name, a, spd) in &systems {
            for form in forms(*spd) {
                let cholesky = form == Factorization::Ic0;
                let applies = reference::has_diagonal_form(a, cholesky);
                for (storage, conversion) in storages() {
                    // ELL refuses patterns that pad too much (494_bus): nothing to test there.
                    let Ok(gpu_a) = GpuSparse::from_csr(ctx, a, conversion) else { continue };
                    for (sweeps, apply_sweeps) in [(1, 0), (2, 1), (3, 2), (3, 3)] {
                        let what = format!(
                            "{mode} {} {name} {form:?} {storage} sweeps {sweeps} apply {apply_sweeps}",
                            T::KIND.name()
                        );
                        let apply = TriangularApply::Sweeps(apply_sweeps);
                        let options = IncompleteOptions { sweeps, apply, form: FactorForm::Auto };
                        let made = IncompleteLu::new(ctx, &gpu_a, form, options);
                        if !applies {
                            match (storage, made) {
                                ("csr", Ok(m)) => assert_eq!(m.form(), FactorForm::Full, "{what}"),
                                (_, Err(Error::Unsupported(_))) if storage != "csr" => {}
                                (_, other) => panic!("{what}: {:?}", other.map(|m| m.form())),
                            }
                            continue;
                        }
                        let m = made.unwrap();
                        assert_eq!(m.form(), FactorForm::Auto, "{what}");
                        assert!(m.factor().is_none(), "{what}: no full factor");
                        // 1/d is kept in f32 on both sides: a last-bit difference in the f64
                        // sums may round it to the neighbouring f32, and a sweep may carry
                        // that on, so f64 allows a few f32 ulps; f32's own sums, its tolerance.
                        let want =
                            inverse_pivots(a, &reference::diagonal_incomplete_factor(a, cholesky, sweeps), cholesky);
                        let got = m.inverse_pivots().unwrap().read_blocking().unwrap();
                        let got = &got[..a.rows()];
                        let ulps = 4.0 * f32::EPSILON as f64;
                        let bound = |w: f32| (w.abs() as f64) * tolerance::<T>().max(ulps);
                        let far = (0..a.rows()).find(|&i| (got[i] as f64 - want[i] as f64).abs() > bound(want[i]));
                        assert!(far.is_none(), "{what}: 1/d of row {far:?}: {:?}", far.map(|i| (got[i], want[i])));
                        // The application against the twin's on the device's own pivots.
                        let factor = reference::diagonal_factor(a, cholesky, got);

                        let r: Vec<T> = generate::random_vector(a.rows(), rng.next_u64())
                            .iter()
                            .map(|&v| T::from_f64(v as f64))
                            .collect();
                        let r64: Vec<f64> = r.iter().map(|v| v.to_f64()).collect();
                        let want = reference::apply_incomplete(a, &factor, cholesky, apply, &r64);
                        let rz: f64 = r64.iter().zip(&want).map(|(r, z)| r * z).sum();
                        let r = ctx.upload(&r).unwrap();
                        let nan = T::from_f64(f64::NAN);
                        for fold in [false, true] {
                            let mut z = ctx.upload(&vec![nan; a.rows()]).unwrap();
                            let partials = ctx.upload(&vec![[nan; 2]; a.rows().div_ceil(64).max(1)]).unwrap();
                            let mut batch = ctx.batch();
                            let count = if fold {
                                m.apply_dot(&mut batch.recorder(), &r, &mut z, &partials).unwrap()
                            } else {
                                m.apply(&mut batch.recorder(), &r, &mut z).unwrap();
                                None
                            };
                            batch.submit().unwrap();
                            let z = z.read_blocking().unwrap();
                            let error = reference::relative_error(&z, &want);
                            assert!(error <= 10.0 * tolerance::<T>(), "{what} fold {fold}: M⁻¹·r differs by {error:e}");
                            if fold {
                                let count = count.unwrap_or_else(|| panic!("{what}: r·z folded in"));
                                let partials = partials.read_blocking().unwrap();
                                let sum: f64 = partials[..count].iter().map(|p| p[0].to_f64()).sum();
                                let scale: f64 = r64.iter().zip(&want).map(|(r, z)| (r * z).abs()).sum();
                                let error = (sum - rz).abs() / scale.max(f64::MIN_POSITIVE);
                                assert!(error <= 10.0 * tolerance::<T>(), "{what}: r·z {sum} against {rz}");
                            }
                        }
                        applied += 1;
                    }
                }
            }
        }
    }
    assert!(applied > 0, "the diagonal form was tested");
}

#[test]
fn diagonal_form_matches_twin_f32() {
    diagonal_form::<f32>();
}

#[test]
fn diagonal_form_matches_twin_f64() {
    diagonal_form::<f64>();
}

/// An f64 pivot whose reciprocal is beyond f32's normal range: CSR keeps the full factor,
/// ELL is refused (the full factor takes CSR).
#[test]
fn diagonal_form_refuses_pivots_f32_cannot_hold() {
    let mut a = generate::laplacian_2d(6).map_values(|v| v as f64);
    let p = (a.row_offsets()[7] as usize..).find(|&p| a.col_indices()[p] == 7).unwrap();
    a.values_mut()[p] = 1e40;
    let options = IncompleteOptions { apply: TriangularApply::Sweeps(1), ..Default::default() };
    for (mode, ctx) in common::contexts_for::<f64>() {
        for (storage, conversion) in storages() {
            let gpu_a = GpuSparse::from_csr(ctx, &a, conversion).unwrap();
            let made = IncompleteLu::new(ctx, &gpu_a, Factorization::Ilu0, options);
            match (storage, made) {
                ("csr", Ok(m)) => assert_eq!(m.form(), FactorForm::Full, "{mode}"),
                (_, Err(Error::Unsupported(message))) if storage != "csr" => {
                    assert!(message.contains("row 7"), "{mode} {storage}: {message}")
                }
                (_, other) => panic!("{mode} {storage}: {:?}", other.map(|m| m.form())),
            }
        }
    }
}

/// The reciprocal pivots of a factor in the layout of `reference::incomplete_factor`.
fn inverse_pivots<T: Scalar>(a: &CsrMatrix<T>, factor: &[f64], cholesky: bool) -> Vec<f32> {
    (0..a.rows())
        .map(|i| {
            let p = (a.row_offsets()[i] as usize..).find(|&p| a.col_indices()[p] as usize == i).unwrap();
            let d = if cholesky { factor[p] * factor[p] } else { factor[p] };
            (1.0 / d) as f32
        })
        .collect()
}

/// The diagonal form's pivots reach the exact factor's (the row-by-row elimination's) after
/// enough sweeps, on every storage: so the form is IC(0)/ILU(0) itself, not another
/// preconditioner.
#[test]
fn diagonal_form_converges_to_the_exact_factor() {
    let a = generate::laplacian_2d(6).map_values(|v| v as f64);
    for (mode, ctx) in common::contexts_for::<f64>() {
        for (storage, conversion) in storages() {
            let gpu_a = GpuSparse::from_csr(ctx, &a, conversion).unwrap();
            for form in [Factorization::Ilu0, Factorization::Ic0] {
                let cholesky = form == Factorization::Ic0;
                let exact = reference::exact_incomplete_factor(&a, cholesky);
                let want = inverse_pivots(&a, &exact, cholesky);
                let want64: Vec<f64> = want.iter().map(|&v| v as f64).collect();
                let options =
                    IncompleteOptions { sweeps: 24, apply: TriangularApply::Sweeps(1), form: FactorForm::Auto };
                let m = IncompleteLu::new(ctx, &gpu_a, form, options).unwrap();
                let got = m.inverse_pivots().unwrap().read_blocking().unwrap();
                // Kept in f32: the exact pivots rounded, to a last bit.
                let error = reference::relative_error(&got, &want64);
                assert!(
                    error <= 2.0 * f32::EPSILON as f64,
                    "{mode} {storage} {form:?}: {error:e} from the exact pivots"
                );
                // The off-diagonal entries are A's own: with the device's pivots the form's
                // factor is the exact factor, to f32's rounding of the pivots.
                let full = reference::diagonal_factor(&a, cholesky, &got);
                let error = reference::relative_error(&full, &exact);
                assert!(
                    error <= 2.0 * f32::EPSILON as f64,
                    "{form:?}: the form's factor is {error:e} from the exact one"
                );
                // And two sweeps are not there yet (the test can tell).
                let two = inverse_pivots(&a, &reference::diagonal_incomplete_factor(&a, cholesky, 2), cholesky);
                assert!(reference::relative_error(&two, &want64) > 1e-4, "{form:?}: two sweeps already exact?");
            }
        }
    }
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
    // Each in the full form and in the diagonal form (its own checks), on CSR and ELL.
    let diagonal = IncompleteOptions { apply: TriangularApply::Sweeps(2), ..Default::default() };
    let refuse = |a: &CsrMatrix<f32>, form, row, problem| {
        for (storage, conversion) in storages() {
            for options in [IncompleteOptions::default(), diagonal] {
                if storage != "csr" && options.apply == TriangularApply::Exact {
                    continue;
                }
                let gpu = GpuSparse::from_csr(ctx, a, conversion).unwrap();
                let got = IncompleteLu::new(ctx, &gpu, form, options).map(|_| ());
                assert!(
                    matches!(got, Err(Error::NotSolvable { row: r, problem: p, .. }) if r == row && p == problem),
                    "{form:?} {storage} {options:?}: {got:?}, expected row {row} {problem:?}"
                );
            }
        }
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
    for (_, conversion) in storages() {
        let lopsided = GpuSparse::from_csr(ctx, &lopsided, conversion).unwrap();
        let got = IncompleteLu::new(ctx, &lopsided, Factorization::Ic0, diagonal).map(|_| ());
        assert!(matches!(got, Err(Error::InvalidArgument(_))), "{got:?}");
        // The full form: the same refusal on CSR; ELL it does not take at all.
        assert!(matches!(IncompleteLu::ic0(ctx, &lopsided), Err(Error::InvalidArgument(_))));
        if conversion != Conversion::Csr {
            let full = IncompleteOptions { form: FactorForm::Full, ..diagonal };
            let got = IncompleteLu::new(ctx, &lopsided, Factorization::Ilu0, full).map(|_| ());
            assert!(matches!(got, Err(Error::InvalidArgument(_))), "{got:?}");
        }
    }
    // A 0 × 0 matrix factors to nothing and applies to empty vectors.
    let empty = GpuSparse::from_csr(ctx, &CsrMatrix::<f32>::zeros(0, 0).unwrap(), Conversion::Csr).unwrap();
    for (apply, factor_form) in [
        (TriangularApply::Exact, FactorForm::Auto),
        (TriangularApply::Sweeps(2), FactorForm::Full),
        (TriangularApply::Sweeps(2), FactorForm::Auto),
    ] {
        for form in [Factorization::Ilu0, Factorization::Ic0] {
            let options = IncompleteOptions { sweeps: 3, apply, form: factor_form };
            let m = IncompleteLu::new(ctx, &empty, form, options).unwrap();
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

/// Where the adapter caps an invocation's loop iterations (llvmpipe: 65,535 in all), a matrix
/// whose rows are too long for a row's walk over its pairs of entries is refused with the
/// limit named, in both forms, rather than factored wrong; a row of 40 entries is not.
#[test]
fn rows_past_the_loop_limit_are_refused() {
    let ctx = common::context();
    // Diagonally dominant, with row n − 1 full below its diagonal.
    let with_last_row = |n: usize| {
        let mut offsets = vec![0u32];
        let (mut cols, mut vals) = (Vec::new(), Vec::new());
        for i in 0..n {
            let first = if i + 1 == n { 0 } else { i };
            for j in first..=i {
                cols.push(j as u32);
                vals.push(if j == i { 2.0 * n as f32 } else { 1.0 });
            }
            offsets.push(cols.len() as u32);
        }
        CsrMatrix::try_from_csr_data(n, n, offsets, cols, vals).unwrap()
    };
    let diagonal = IncompleteOptions { apply: TriangularApply::Sweeps(2), ..Default::default() };
    for (n, refused) in [(40, false), (200, ctx.loop_iteration_limit().is_some())] {
        let gpu = GpuSparse::from_csr(ctx, &with_last_row(n), Conversion::Csr).unwrap();
        for options in [IncompleteOptions::default(), diagonal] {
            let got = IncompleteLu::new(ctx, &gpu, Factorization::Ilu0, options);
            common::planned_unless_refused(got, refused, &format!("n {n} {options:?}"));
        }
    }
}
