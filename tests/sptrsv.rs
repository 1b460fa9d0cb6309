//! Sync-free triangular solve against the f64 substitution twin: lower and upper (and Aᵀ),
//! unit and non-unit, 1, 4 and 33 right-hand sides, row order and level order (levels found
//! by the frontier before the first solve or captured during it, then reused), f32 and f64, with and without
//! subgroups, x poisoned with NaN before every solve; chains, long rows, empty rows, 1×1 and
//! 0×0; the relaunch path under a tiny spin bound; a back-off that changes no bit; unsolvable
//! input as typed errors.

mod common;

use wgsparse::generate::{self, Rng};
use wgsparse::ops::{Diagonal, LevelCapture, SolveReport, SptrsvAlgorithm, SptrsvOptions, Triangle, TriangularSolve};
use wgsparse::reference::{relative_error, triangular_backward_error, triangular_solve};
use wgsparse::{
    Context, Conversion, CsrMatrix, DenseLayout, DenseMatrix, ElementKind, Error, GpuDense, GpuSparse, Scalar,
    SolveProblem,
};

/// b with values in [-1, 1].
fn rhs<T: Scalar>(len: usize, rng: &mut Rng) -> Vec<T> {
    (0..len).map(|_| T::from_f64(rng.next_f64() * 2.0 - 1.0)).collect()
}

/// The f64 twin's solution of `a·x = b` (`k` right-hand sides) for b of any element type.
fn twin<A: Scalar, B: Scalar>(a: &CsrMatrix<A>, upper: bool, unit: bool, b: &[B], k: usize) -> Vec<f64> {
    let b64: Vec<f64> = b.iter().map(|v| v.to_f64()).collect();
    triangular_solve(a, upper, unit, &b64, k).unwrap()
}

/// Solves `plan` once (k = 1 through vectors, else through dense matrices) over NaN-poisoned
/// x; returns x.
fn solve<T: Scalar>(ctx: &Context, plan: &TriangularSolve<T>, b: &[T], k: usize) -> Vec<T> {
    try_solve(ctx, plan, b, k).unwrap()
}

/// [`solve`], with the solve's error returned (the grid reports which case failed).
fn try_solve<T: Scalar>(ctx: &Context, plan: &TriangularSolve<T>, b: &[T], k: usize) -> Result<Vec<T>, Error> {
    let n = b.len() / k;
    if k == 1 {
        let b_gpu = ctx.upload(b).unwrap();
        let mut x = ctx.upload(&vec![T::from_f64(f64::NAN); n]).unwrap();
        plan.solve(&b_gpu, &mut x)?;
        Ok(x.read_blocking().unwrap())
    } else {
        let dense = |data: Vec<T>| DenseMatrix::try_new(n, k, data).unwrap();
        let b_gpu = GpuDense::upload(ctx, &dense(b.to_vec()), DenseLayout::RowMajor).unwrap();
        let mut x = GpuDense::upload(ctx, &dense(vec![T::from_f64(f64::NAN); n * k]), DenseLayout::RowMajor).unwrap();
        plan.solve_dense(&b_gpu, &mut x)?;
        Ok(x.read_blocking().unwrap().data().to_vec())
    }
}

/// A row-order plan of `matrix`'s non-unit `triangle` with `options`.
fn row_order_plan<T: Scalar>(
    ctx: &Context,
    matrix: &GpuSparse<T>,
    triangle: Triangle,
    options: SptrsvOptions,
) -> TriangularSolve<T> {
    TriangularSolve::with_options(ctx, matrix, triangle, Diagonal::NonUnit, SptrsvAlgorithm::RowOrder, options).unwrap()
}

/// The n × n CSR matrix with the given rows of (column, value).
fn square_from_rows(rows: Vec<Vec<(u32, f32)>>) -> CsrMatrix<f32> {
    let n = rows.len();
    let mut offsets = vec![0u32];
    let (mut cols, mut vals) = (Vec::new(), Vec::new());
    for row in rows {
        for (j, v) in row {
            cols.push(j);
            vals.push(v);
        }
        offsets.push(cols.len() as u32);
    }
    CsrMatrix::try_from_csr_data(n, n, offsets, cols, vals).unwrap()
}

/// The n-row lower bidiagonal: x_i depends on x_{i-1}.
fn chain(n: u32) -> CsrMatrix<f32> {
    square_from_rows((0..n).map(|i| if i == 0 { vec![(0, 1.0)] } else { vec![(i - 1, -0.9), (i, 1.0)] }).collect())
}

/// The triangles every grid runs: stencils, a power-law graph, long rows (the team's blocks),
/// a chain where every row needs the one before (consecutive rows in one subgroup), rows
/// with no off-diagonal entry, a real matrix, 1×1.
fn triangles(seed: u64) -> Vec<(String, CsrMatrix<f32>)> {
    // The 3,000-row bidiagonal: x_i depends on x_{i-1}.
    let chain = chain(3000);
    let sparse_rows = generate::random(500, 500, 0.002, seed);
    let real = common::real_matrices::<f32>().into_iter().find(|(name, _)| name == "west0479.mtx").unwrap().1;
    vec![
        ("lap2d_12".into(), generate::laplacian_2d(12)),
        ("rmat_s8".into(), generate::rmat(8, 8, 0.57, 0.19, 0.19, seed)),
        ("dense_row".into(), generate::dense_row_mix(700, 600, seed)),
        ("chain_3000".into(), chain),
        ("mostly_empty_rows".into(), sparse_rows),
        ("west0479".into(), real),
        ("one".into(), generate::laplacian_2d(1)),
    ]
}

/// The number of levels of a triangle on the host: a row's level is 1 + the largest of the
/// rows it depends on (the entries on its side of the diagonal).
fn level_count<T: Scalar>(t: &CsrMatrix<T>, upper: bool) -> usize {
    let n = t.rows();
    let mut levels = vec![0usize; n];
    let order: Vec<usize> = if upper { (0..n).rev().collect() } else { (0..n).collect() };
    for r in order {
        let range = t.row_offsets()[r] as usize..t.row_offsets()[r + 1] as usize;
        let deps = t.col_indices()[range].iter().map(|&c| c as usize).filter(|&c| if upper { c > r } else { c < r });
        levels[r] = 1 + deps.map(|c| levels[c]).max().unwrap_or(0);
    }
    levels.into_iter().max().unwrap_or(0)
}

/// Every triangle × lower/upper × unit/non-unit × algorithm (level order with its levels
/// found by the frontier and captured during the first solve) × launch cap
/// ([`SptrsvOptions::max_workgroups`]), two solves each (the first learns the levels, the
/// second may run in level order), against the twin.
fn check_grid<T: Scalar>(test: &str, ks: &[usize], caps: &[Option<u32>]) {
    let seed = common::seed(test);
    let mut rng = Rng::new(seed);
    let mut failures = Vec::new();
    for (mode, ctx) in common::contexts_for::<T>() {
        for (name, a) in triangles(seed) {
            for &k in ks {
                // Several right-hand sides on the smaller shapes only (time on lavapipe).
                if k > 1 && a.rows() > 700 {
                    continue;
                }
                for upper in [false, true] {
                    let triangle: CsrMatrix<T> =
                        generate::solvable_triangle(&a, upper).map_values(|v| T::from_f64(v as f64));
                    let matrix = GpuSparse::from_csr(ctx, &triangle, Conversion::Csr).unwrap();
                    let side = if upper { Triangle::Upper } else { Triangle::Lower };
                    for diagonal in [Diagonal::NonUnit, Diagonal::Unit] {
                        let unit = diagonal == Diagonal::Unit;
                        let algorithms = [
                            (SptrsvAlgorithm::RowOrder, LevelCapture::DuringSolve),
                            (SptrsvAlgorithm::LevelOrder, LevelCapture::Frontier),
                            (SptrsvAlgorithm::LevelOrder, LevelCapture::DuringSolve),
                            (SptrsvAlgorithm::Auto, LevelCapture::DuringSolve),
                        ];
                        for ((algorithm, capture), &max_workgroups) in
                            algorithms.into_iter().flat_map(|a| caps.iter().map(move |c| (a, c)))
                        {
                            let options = SptrsvOptions { rhs: k, max_workgroups, capture, ..Default::default() };
                            let plan = TriangularSolve::with_options(ctx, &matrix, side, diagonal, algorithm, options)
                                .unwrap();
                            for round in 0..2 {
                                let what = format!(
                                    "{mode} {name} k={k} upper={upper} unit={unit} {} ({capture:?}) cap {max_workgroups:?} round {round}",
                                    algorithm.name()
                                );
                                let b = rhs::<T>(a.rows() * k, &mut rng);
                                let b64: Vec<f64> = b.iter().map(|v| v.to_f64()).collect();
                                let want = triangular_solve(&triangle, upper, unit, &b64, k).unwrap();
                                let got = match try_solve(ctx, &plan, &b, k) {
                                    Ok(got) => got,
                                    Err(e) => {
                                        failures.push(format!("{what}: {e}"));
                                        continue;
                                    }
                                };
                                let err = relative_error(&got, &want);
                                // Past the house tolerance, a solve is still right if every row's
                                // residual is within its rounding bound: west0479's unit triangles
                                // amplify rounding ~100× (f32 forward error ~1e-5; f64 is as
                                // exposed, with more margin). The residual is summed in f64: for
                                // an f64 x that sum rounds by up to the bound itself, hence 2.
                                let backward = triangular_backward_error(&triangle, unit, &b64, &got, k);
                                let rounding_bound = if T::KIND == ElementKind::F32 { 1.0 } else { 2.0 };
                                let within = err <= common::tolerance::<T>() || backward <= rounding_bound;
                                if err.is_nan() || !within {
                                    failures.push(format!("{what}: {err:e} (backward {backward:.2})"));
                                }
                            }
                            if algorithm != SptrsvAlgorithm::RowOrder && a.rows() > 1 {
                                let levels = level_count(&triangle, upper);
                                if plan.levels() != Some(levels) {
                                    failures.push(format!(
                                        "{mode} {name} {capture:?}: the first solve learns {levels} levels, not {:?}",
                                        plan.levels()
                                    ));
                                }
                            }
                        }
                    }
                }
            }
        }
    }
    assert!(failures.is_empty(), "seed {seed}:\n{}", failures.join("\n"));
}

#[test]
fn solves_match_twin_f32() {
    check_grid::<f32>("solves_match_twin_f32", &[1, 4, 33], &[None]);
}

#[test]
fn solves_match_twin_f64() {
    check_grid::<f64>("solves_match_twin_f64", &[1, 33], &[None]);
}

/// Launches of 1 and 3 workgroups: each team takes ticket after ticket (one workgroup solves
/// everything alone).
#[test]
fn capped_launches_match_twin_f32() {
    check_grid::<f32>("capped_launches_match_twin_f32", &[1, 4], &[Some(1), Some(3)]);
}

#[test]
fn capped_launches_match_twin_f64() {
    check_grid::<f64>("capped_launches_match_twin_f64", &[1], &[Some(3)]);
}

/// `Aᵀ·x = b` on the GPU transpose: L lower gives an upper solve, against the twin on the
/// host transpose; A's values changed afterwards reach the solve (the transpose holds a
/// permutation, not values).
#[test]
fn transposed_solve_matches_twin() {
    let seed = common::seed("transposed_solve_matches_twin");
    let mut rng = Rng::new(seed);
    for (mode, ctx) in common::contexts_for::<f32>() {
        let lower = generate::solvable_triangle(&generate::rmat(8, 6, 0.57, 0.19, 0.19, seed), false);
        let mut matrix = GpuSparse::from_csr(ctx, &lower, Conversion::Csr).unwrap();
        for algorithm in [SptrsvAlgorithm::RowOrder, SptrsvAlgorithm::Auto] {
            let plan =
                TriangularSolve::transposed(ctx, &matrix, Triangle::Lower, Diagonal::NonUnit, algorithm).unwrap();
            assert_eq!(plan.triangle(), Triangle::Upper);
            let b = rhs::<f32>(lower.rows(), &mut rng);
            let want = twin(&lower.transpose(), true, false, &b, 1);
            let err = relative_error(&solve(ctx, &plan, &b, 1), &want);
            assert!(err < 1e-5, "{mode} {}: {err:e}", algorithm.name());
        }
        // New values, same pattern: the kept transpose and levels serve them.
        let mut scaled = lower.clone();
        scaled.values_mut().iter_mut().for_each(|v| *v *= 2.0);
        matrix.update_values(&scaled).unwrap();
        let plan = TriangularSolve::transposed(ctx, &matrix, Triangle::Lower, Diagonal::NonUnit, SptrsvAlgorithm::Auto)
            .unwrap();
        let b = rhs::<f32>(lower.rows(), &mut rng);
        let want = twin(&scaled.transpose(), true, false, &b, 1);
        assert!(plan.levels().is_some(), "{mode}: the levels survive new values");
        let err = relative_error(&solve(ctx, &plan, &b, 1), &want);
        assert!(err < 1e-5, "{mode} after update_values: {err:e}");

        // The frontier walks the transpose's rows (a matrix of its own: no levels known yet),
        // and the first solve runs by the levels it found.
        let fresh = GpuSparse::from_csr(ctx, &scaled, Conversion::Csr).unwrap();
        let options = SptrsvOptions { capture: LevelCapture::Frontier, ..Default::default() };
        let (side, diagonal, order) = (Triangle::Lower, Diagonal::NonUnit, SptrsvAlgorithm::LevelOrder);
        let plan = TriangularSolve::transposed_with_options(ctx, &fresh, side, diagonal, order, options).unwrap();
        let mut x = ctx.upload(&vec![f32::NAN; b.len()]).unwrap();
        let report = plan.solve(&ctx.upload(&b).unwrap(), &mut x).unwrap();
        let err = relative_error(&x.read_blocking().unwrap(), &want);
        assert!(err < 1e-5 && report.level_order, "{mode} by the frontier: {err:e}, {report:?}");
        assert_eq!(plan.levels(), Some(level_count(&scaled.transpose(), true)), "{mode}: the frontier's levels");
    }
}

/// `Auto` on wide levels (more than `WIDE_LEVELS` rows a level) keeps row order, so its
/// first solve keeps the level count and no level sets; a `LevelOrder` plan on the same
/// matrix then learns the levels again and keeps the sets: found by the frontier before its
/// first solve, which then runs by level, or captured during that solve (in row order),
/// used from the second. The `Auto` plan stays in row order. Every solve against the twin.
#[test]
fn auto_on_wide_levels_keeps_the_count_and_sorts_nothing() {
    let seed = common::seed("auto_on_wide_levels_keeps_the_count_and_sorts_nothing");
    let mut rng = Rng::new(seed);
    let ctx = common::context();
    // Two levels of `half` rows: the second half's rows each need one row of the first (and
    // enough rows in all that the matrix is not small, which keeps row order too).
    let half = (wgsparse::ops::sptrsv::WIDE_LEVELS + 1000).max(wgsparse::ops::sptrsv::ROW_ORDER_ROWS / 2);
    let rows = (0..2 * half)
        .map(|i| {
            let pivot = (i as u32, 2.0 + rng.next_f64() as f32);
            if i < half {
                vec![pivot]
            } else {
                vec![((i - half) as u32, rng.next_f64() as f32 - 0.5), pivot]
            }
        })
        .collect();
    let lower = square_from_rows(rows);
    let b = rhs::<f32>(lower.rows(), &mut rng);
    let want = twin(&lower, false, false, &b, 1);
    let b_gpu = ctx.upload(&b).unwrap();
    let run = |plan: &TriangularSolve<f32>, what: &str| -> SolveReport {
        let mut x = ctx.upload(&vec![f32::NAN; b.len()]).unwrap();
        let report = plan.solve(&b_gpu, &mut x).unwrap();
        let err = relative_error(&x.read_blocking().unwrap(), &want);
        assert!(err < 1e-5, "{what}: {err:e}");
        report
    };
    for capture in [LevelCapture::Frontier, LevelCapture::DuringSolve] {
        let matrix = GpuSparse::from_csr(ctx, &lower, Conversion::Csr).unwrap();
        let names = || matrix.analyses().into_iter().map(|a| a.name).collect::<Vec<_>>();
        let options = SptrsvOptions { capture, ..Default::default() };
        let plan = |algorithm| {
            TriangularSolve::with_options(ctx, &matrix, Triangle::Lower, Diagonal::NonUnit, algorithm, options).unwrap()
        };
        let auto = plan(SptrsvAlgorithm::Auto);
        let report = run(&auto, "auto, first solve");
        assert_eq!((report.levels, report.level_order), (Some(2), false), "{capture:?}");
        assert_eq!(names(), ["level count (lower)"], "{capture:?}: the count alone");
        assert_eq!((auto.levels(), auto.level_sets_bytes()), (Some(2), 0));
        assert!(!run(&auto, "auto, second solve").level_order);
        assert_eq!(names(), ["level count (lower)"], "{capture:?}: no sets for a plan in row order");

        let by_level = plan(SptrsvAlgorithm::LevelOrder);
        assert_eq!(by_level.levels(), Some(2), "the count is the pattern's");
        let first_by_level = run(&by_level, "level order, first solve").level_order;
        assert_eq!(first_by_level, capture == LevelCapture::Frontier, "{capture:?}: the first solve's order");
        assert_eq!(names(), ["level count (lower)", "level sets (lower)"]);
        assert_eq!(by_level.level_sets_bytes(), 4 * lower.rows() as u64);
        assert!(run(&by_level, "level order, second solve").level_order);
        assert!(!run(&auto, "auto, after the sort").level_order, "auto still keeps row order");
    }
}

/// `Auto` on a deep matrix of fewer than `ROW_ORDER_ROWS` rows keeps row order (a large GPU
/// holds all its rows at once) and keeps no level sets; from `ROW_ORDER_ROWS` rows it runs by
/// level from its second solve. Both against the twin.
#[test]
fn auto_keeps_row_order_on_small_matrices() {
    let seed = common::seed("auto_keeps_row_order_on_small_matrices");
    let mut rng = Rng::new(seed);
    let ctx = common::context();
    let small = generate::solvable_triangle(&generate::laplacian_2d(30), false);
    let side = (wgsparse::ops::sptrsv::ROW_ORDER_ROWS as f64).sqrt().ceil() as usize;
    let large = generate::solvable_triangle(&generate::laplacian_2d(side), false);
    for (lower, by_level) in [(small, false), (large, true)] {
        assert_eq!(lower.rows() >= wgsparse::ops::sptrsv::ROW_ORDER_ROWS, by_level);
        let matrix = GpuSparse::from_csr(ctx, &lower, Conversion::Csr).unwrap();
        let plan =
            TriangularSolve::new(ctx, &matrix, Triangle::Lower, Diagonal::NonUnit, SptrsvAlgorithm::Auto).unwrap();
        let b = rhs::<f32>(lower.rows(), &mut rng);
        let want = twin(&lower, false, false, &b, 1);
        for round in 0..2 {
            let what = format!("{} rows, solve {round}", lower.rows());
            let mut x = ctx.upload(&vec![f32::NAN; b.len()]).unwrap();
            let report = plan.solve(&ctx.upload(&b).unwrap(), &mut x).unwrap();
            let err = relative_error(&x.read_blocking().unwrap(), &want);
            assert!(err < 1e-5, "{what}: {err:e}");
            assert_eq!(report.level_order, by_level && round == 1, "{what}");
        }
        assert_eq!(plan.level_sets_bytes() > 0, by_level, "{} rows: the sets kept", lower.rows());
    }
}

/// `Auto` keeps row order, capturing no levels, where one row in `SOLO_ROW_ORDER_SHARE` or
/// more has a team of its own: a random lower triangle of 140,000 rows (past
/// `ROW_ORDER_ROWS`, its levels not wide) with every row of 4 entries or more alone runs in
/// row order on both solves with subgroups; with no row alone (or without subgroups, where
/// there are no segments) its second solve runs by level.
#[test]
fn auto_keeps_row_order_where_many_rows_are_alone() {
    let seed = common::seed("auto_keeps_row_order_where_many_rows_are_alone");
    let mut rng = Rng::new(seed);
    let lower = generate::solvable_triangle(&generate::random(140_000, 140_000, 6.0 / 140_000.0, seed), false);
    assert!(lower.rows() >= wgsparse::ops::sptrsv::ROW_ORDER_ROWS);
    let b = rhs::<f32>(lower.rows(), &mut rng);
    let want = twin(&lower, false, false, &b, 1);
    for (mode, ctx) in common::contexts_for::<f32>() {
        for (entries, alone) in [(4, ctx.subgroups()), (usize::MAX, false)] {
            // A matrix of its own: levels another plan kept would be used at once.
            let matrix = GpuSparse::from_csr(ctx, &lower, Conversion::Csr).unwrap();
            let options = SptrsvOptions { solo_row_entries: Some(entries), ..Default::default() };
            let plan = TriangularSolve::with_options(
                ctx,
                &matrix,
                Triangle::Lower,
                Diagonal::NonUnit,
                SptrsvAlgorithm::Auto,
                options,
            )
            .unwrap();
            for round in 0..2 {
                let what = format!("{mode}, rows of {entries} alone, solve {round}");
                let mut x = ctx.upload(&vec![f32::NAN; b.len()]).unwrap();
                let report = plan.solve(&ctx.upload(&b).unwrap(), &mut x).unwrap();
                let err = relative_error(&x.read_blocking().unwrap(), &want);
                assert!(err < 1e-5, "{what}: {err:e}");
                assert_eq!(report.level_order, !alone && round == 1, "{what}");
                assert_eq!(report.levels.is_none(), alone, "{what}: levels captured");
            }
        }
    }
}

/// The 3,000-row chain solved with a spin bound of 0 (a team gives up at its first round
/// without progress) and one relaunch recorded per round, by a plan's first solve (in row
/// order; a level-order plan learns the levels as well, by `capture`): the solve's report
/// and its relative error against the twin.
fn solve_chain(
    ctx: &Context,
    chain: &CsrMatrix<f32>,
    (algorithm, capture): (SptrsvAlgorithm, LevelCapture),
    max_workgroups: Option<u32>,
    rng: &mut Rng,
) -> (SolveReport, f64) {
    let matrix = GpuSparse::from_csr(ctx, chain, Conversion::Csr).unwrap();
    let options = SptrsvOptions { spin_limit: 0, relaunch_rounds: 1, max_workgroups, capture, ..Default::default() };
    let plan =
        TriangularSolve::with_options(ctx, &matrix, Triangle::Lower, Diagonal::NonUnit, algorithm, options).unwrap();
    let b = rhs::<f32>(chain.rows(), rng);
    let mut x = ctx.upload(&vec![f32::NAN; chain.rows()]).unwrap();
    let report = plan.solve(&ctx.upload(&b).unwrap(), &mut x).unwrap();
    let err = relative_error(&x.read_blocking().unwrap(), &twin(chain, false, false, &b, 1));
    (report, err)
}

/// With a spin bound of 0 a team gives up at its first round without progress: on lavapipe
/// (workgroups on two CPU threads) the later workgroups of a chain find their predecessor
/// unsolved and leave their rows to relaunches, many times, and the answer is still exact,
/// with launches of one workgroup per 64 rows and of 4 workgroups taking ticket after ticket;
/// in row order, and in level order with the levels captured across the relaunches or found
/// by the frontier.
#[test]
fn tiny_spin_bound_relaunches_and_still_solves() {
    let seed = common::seed("tiny_spin_bound_relaunches_and_still_solves");
    let mut rng = Rng::new(seed);
    let (_, chain) = triangles(seed).into_iter().find(|(n, _)| n == "chain_3000").unwrap();
    let mut relaunched = 0;
    let runs = common::contexts_for::<f32>().into_iter().flat_map(|c| [None, Some(4)].map(|cap| (c, cap)));
    for ((mode, ctx), max_workgroups) in runs {
        let plans = [
            (SptrsvAlgorithm::RowOrder, LevelCapture::DuringSolve),
            (SptrsvAlgorithm::LevelOrder, LevelCapture::DuringSolve),
            (SptrsvAlgorithm::LevelOrder, LevelCapture::Frontier),
        ];
        for (algorithm, capture) in plans {
            let (report, err) = solve_chain(ctx, &chain, (algorithm, capture), max_workgroups, &mut rng);
            relaunched += report.relaunches;
            let what = format!("{mode} {} {capture:?} cap {max_workgroups:?}", algorithm.name());
            eprintln!("{what}: {} relaunches, error {err:e}", report.relaunches);
            assert!(err < 1e-5, "{what}: {err:e}");
            if algorithm == SptrsvAlgorithm::LevelOrder {
                // Counted over launches: rows a batch left unsolved are not levels.
                assert_eq!(report.levels, Some(chain.rows()), "{what}: the chain's levels");
            }
        }
    }
    assert!(relaunched > 0, "a spin bound of 0 on a 3,000-row chain should need relaunches");
}

/// A launch of one workgroup takes every ticket in turn: without subgroups the workgroup is
/// one team, whose predecessors on the chain are its own earlier rows, so it never waits a
/// round without progress, and even a spin bound of 0 needs no relaunch. (With subgroups the
/// workgroup holds several teams, which may wait on one another: only the answer is checked.)
#[test]
fn one_workgroup_takes_every_ticket() {
    let seed = common::seed("one_workgroup_takes_every_ticket");
    let mut rng = Rng::new(seed);
    let (_, chain) = triangles(seed).into_iter().find(|(n, _)| n == "chain_3000").unwrap();
    for (mode, ctx) in common::contexts_for::<f32>() {
        let plan = (SptrsvAlgorithm::RowOrder, LevelCapture::DuringSolve);
        let (report, err) = solve_chain(ctx, &chain, plan, Some(1), &mut rng);
        assert!(err < 1e-5, "{mode}: {err:e}");
        if ctx.subgroup_size_range().is_none() {
            assert_eq!(report.relaunches, 0, "{mode}: one workgroup solves the chain alone");
        }
    }
}

/// Repeated solves give the same bits: each row's sum runs in its entries' order whatever
/// the scheduling (and a long row's blocks are grouped by position, not by timing).
#[test]
fn solves_are_deterministic() {
    let seed = common::seed("solves_are_deterministic");
    let mut rng = Rng::new(seed);
    let ctx = common::context();
    let triangle = generate::solvable_triangle(&generate::dense_row_mix(2000, 1500, seed), false);
    let matrix = GpuSparse::from_csr(ctx, &triangle, Conversion::Csr).unwrap();
    let plan = TriangularSolve::new(ctx, &matrix, Triangle::Lower, Diagonal::NonUnit, SptrsvAlgorithm::Auto).unwrap();
    let b = rhs::<f32>(triangle.rows(), &mut rng);
    let first = solve(ctx, &plan, &b, 1);
    for _ in 0..3 {
        let again = solve(ctx, &plan, &b, 1);
        assert!(first.iter().zip(&again).all(|(a, b)| a.to_bits() == b.to_bits()));
    }
}

/// A back-off between rounds without progress changes when a team polls, never what it
/// sums: row order and level order (the second solve, on the captured levels), with and
/// without subgroups, give the twin's answer and the bits of the solve without back-off.
#[test]
fn back_off_changes_when_not_what() {
    let seed = common::seed("back_off_changes_when_not_what");
    let mut rng = Rng::new(seed);
    let picked = ["chain_3000", "lap2d_12", "dense_row"];
    for (name, l) in triangles(seed).into_iter().filter(|(n, _)| picked.contains(&n.as_str())) {
        let l = generate::solvable_triangle(&l, false);
        let b = rhs::<f32>(l.rows(), &mut rng);
        let twin = twin(&l, false, false, &b, 1);
        for (mode, ctx) in common::contexts_for::<f32>() {
            let matrix = GpuSparse::from_csr(ctx, &l, Conversion::Csr).unwrap();
            for algorithm in [SptrsvAlgorithm::RowOrder, SptrsvAlgorithm::LevelOrder] {
                let runs: Vec<Vec<f32>> = [Some(0), Some(8), None]
                    .into_iter()
                    .flat_map(|backoff| {
                        let options = SptrsvOptions { backoff, ..Default::default() };
                        let plan = TriangularSolve::with_options(
                            ctx,
                            &matrix,
                            Triangle::Lower,
                            Diagonal::NonUnit,
                            algorithm,
                            options,
                        )
                        .unwrap();
                        // The first solve captures levels; the second runs on them in level order.
                        [solve(ctx, &plan, &b, 1), solve(ctx, &plan, &b, 1)]
                    })
                    .collect();
                let what = format!("{name} {mode} {algorithm:?}");
                for (i, x) in runs.iter().enumerate() {
                    let err = relative_error(x, &twin);
                    assert!(err < 1e-5, "{what} run {i}: {err:e}");
                    let same = x.iter().zip(&runs[i % 2]).all(|(a, b)| a.to_bits() == b.to_bits());
                    assert!(same, "{what}: run {i}'s back-off changed the bits of solve {}", i % 2);
                }
            }
        }
    }
}

/// The n × n band of half-width `half` (a row holds the `half` columns on each side of its
/// diagonal), values in [-1, 1].
fn band(n: u32, half: u32, rng: &mut Rng) -> CsrMatrix<f32> {
    let row = |i: u32| (i.saturating_sub(half)..=(i + half).min(n - 1)).collect::<Vec<u32>>();
    square_from_rows((0..n).map(|i| row(i).into_iter().map(|j| (j, rng.next_f32() * 2.0 - 1.0)).collect()).collect())
}

/// A lane's walk capped at 1 or 2 batches of 4 entries a round
/// (`SptrsvOptions::walk_batches`), or not at all: the same sums in the same order, so the
/// same bits, each the twin's answer. A band of 40 (rows of 40 entries each side) and R-MAT
/// (hubs of ~100), so that capped walks resume round after round, also where the walk
/// stopped at a predecessor and kept its columns; row order and level order (the second
/// solve, on the captured levels), f32 and f64, lower and upper, with and without subgroups.
#[test]
fn capped_walks_give_the_same_bits() {
    let seed = common::seed("capped_walks_give_the_same_bits");
    let mut rng = Rng::new(seed);
    let shapes = [("band_40", band(300, 40, &mut rng)), ("rmat_s8", generate::rmat(8, 8, 0.57, 0.19, 0.19, seed))];
    for (name, a) in shapes {
        for upper in [false, true] {
            let l = generate::solvable_triangle(&a, upper);
            same_bits_capped_or_not::<f32>(name, &l, upper, &mut rng);
            same_bits_capped_or_not::<f64>(name, &l.map_values(|v| v as f64), upper, &mut rng);
        }
    }
}

fn same_bits_capped_or_not<T: Scalar>(name: &str, l: &CsrMatrix<T>, upper: bool, rng: &mut Rng) {
    let b = rhs::<T>(l.rows(), rng);
    let twin = twin(l, upper, false, &b, 1);
    let side = if upper { Triangle::Upper } else { Triangle::Lower };
    for (mode, ctx) in common::contexts_for::<T>() {
        let matrix = GpuSparse::from_csr(ctx, l, Conversion::Csr).unwrap();
        for algorithm in [SptrsvAlgorithm::RowOrder, SptrsvAlgorithm::LevelOrder] {
            let runs: Vec<Vec<T>> = [u32::MAX, 1, 2]
                .into_iter()
                .flat_map(|walk_batches| {
                    let options = SptrsvOptions { walk_batches, ..Default::default() };
                    let plan = TriangularSolve::with_options(ctx, &matrix, side, Diagonal::NonUnit, algorithm, options)
                        .unwrap();
                    [solve(ctx, &plan, &b, 1), solve(ctx, &plan, &b, 1)]
                })
                .collect();
            let what = format!("{name} {} upper={upper} {mode} {algorithm:?}", T::KIND.name());
            for (i, x) in runs.iter().enumerate() {
                let err = relative_error(x, &twin);
                assert!(err < common::tolerance::<T>(), "{what} run {i}: {err:e}");
                let differ = x.iter().zip(&runs[i % 2]).filter(|(a, b)| a.to_f64().to_bits() != b.to_f64().to_bits());
                assert_eq!(differ.count(), 0, "{what}: run {i} changed the bits of the uncapped run {}", i % 2);
            }
        }
    }
}

/// Rows given teams of their own (`solo_row_entries`: row order's tickets become segments)
/// change no bit: R-MAT s8, a dense row, a band and the chain, lower and upper, 1, 4 and 33
/// right-hand sides (33 spans several segments of a row's items), with every row of 1, 8 or
/// 20 entries or more alone, against the same plan without segments and the twin, f32 and
/// f64, both subgroup paths (segments need subgroups); with subgroups the segments are there
/// (kept with the matrix). Then a chain with a spin bound of 0 and every fifth row alone:
/// relaunches restart at the lowest segment left, in launches of a workgroup per 64 rows and
/// of 4 taking ticket after ticket.
#[test]
fn solo_rows_give_the_same_bits() {
    let seed = common::seed("solo_rows_give_the_same_bits");
    let mut rng = Rng::new(seed);
    let shapes = [
        ("rmat_s8", generate::rmat(8, 8, 0.57, 0.19, 0.19, seed)),
        ("dense_row", generate::dense_row_mix(300, 200, seed)),
        ("band_40", band(200, 40, &mut rng)),
        ("chain_300", chain(300)),
    ];
    for (name, a) in shapes {
        for upper in [false, true] {
            let l = if name.starts_with("chain") { a.clone() } else { generate::solvable_triangle(&a, upper) };
            let upper = upper && !name.starts_with("chain");
            for k in [1, 4, 33] {
                same_bits_solo_or_not::<f32>(name, &l, upper, k, &mut rng);
                same_bits_solo_or_not::<f64>(name, &l.map_values(|v| v as f64), upper, k, &mut rng);
            }
        }
    }
    // A chain whose every fifth row also needs the three rows before the one before it: with
    // rows of 4 entries or more alone, a segment's index is not its first row.
    let chain = square_from_rows(
        (0..3000u32)
            .map(|i| {
                let reach = if i % 5 == 0 { 4 } else { 1 };
                let mut row: Vec<(u32, f32)> = (i.saturating_sub(reach)..i).map(|j| (j, -0.9 / reach as f32)).collect();
                row.push((i, 1.0));
                row
            })
            .collect(),
    );
    let b = rhs::<f32>(chain.rows(), &mut rng);
    let want = twin(&chain, false, false, &b, 1);
    let mut relaunched = 0;
    for (mode, ctx) in common::contexts_for::<f32>() {
        let matrix = GpuSparse::from_csr(ctx, &chain, Conversion::Csr).unwrap();
        for max_workgroups in [None, Some(4)] {
            let options =
                SptrsvOptions { spin_limit: 0, solo_row_entries: Some(4), max_workgroups, ..SptrsvOptions::default() };
            let plan = row_order_plan(ctx, &matrix, Triangle::Lower, options);
            let b_gpu = ctx.upload(&b).unwrap();
            let mut x = ctx.upload(&vec![f32::NAN; chain.rows()]).unwrap();
            let report = plan.solve(&b_gpu, &mut x).unwrap();
            relaunched += report.relaunches;
            let err = relative_error(&x.read_blocking().unwrap(), &want);
            assert!(err < 1e-5, "chain {mode} cap {max_workgroups:?}: {err:e} after {} relaunches", report.relaunches);
        }
    }
    assert!(relaunched > 0, "a spin bound of 0 on a 3,000-row chain should need relaunches");
}

fn same_bits_solo_or_not<T: Scalar>(name: &str, l: &CsrMatrix<T>, upper: bool, k: usize, rng: &mut Rng) {
    let b = rhs::<T>(l.rows() * k, rng);
    let twin = twin(l, upper, false, &b, k);
    let side = if upper { Triangle::Upper } else { Triangle::Lower };
    for (mode, ctx) in common::contexts_for::<T>() {
        let matrix = GpuSparse::from_csr(ctx, l, Conversion::Csr).unwrap();
        let runs: Vec<Vec<T>> = [usize::MAX, 1, 8, 20]
            .into_iter()
            .map(|entries| {
                let options = SptrsvOptions { rhs: k, solo_row_entries: Some(entries), ..Default::default() };
                let plan = row_order_plan(ctx, &matrix, side, options);
                solve(ctx, &plan, &b, k)
            })
            .collect();
        let what = format!("{name} {} upper={upper} k={k} {mode}", T::KIND.name());
        let segments = matrix.analyses().iter().filter(|a| a.name.starts_with("team segments")).count();
        assert_eq!(segments > 0, ctx.subgroups(), "{what}: {segments} segment analyses");
        for (i, x) in runs.iter().enumerate() {
            let err = relative_error(x, &twin);
            assert!(err < common::tolerance::<T>(), "{what} run {i}: {err:e}");
            let differ = x.iter().zip(&runs[0]).filter(|(a, b)| a.to_f64().to_bits() != b.to_f64().to_bits());
            assert_eq!(differ.count(), 0, "{what}: run {i} changed the bits of the run without segments");
        }
    }
}

/// A recorded solve in a batch with other work; `check` reports its outcome.
#[test]
fn recorded_solve_and_check() {
    let seed = common::seed("recorded_solve_and_check");
    let mut rng = Rng::new(seed);
    let ctx = common::context();
    let triangle = generate::solvable_triangle(&generate::laplacian_2d(30), true);
    let matrix = GpuSparse::from_csr(ctx, &triangle, Conversion::Csr).unwrap();
    let plan = TriangularSolve::new(ctx, &matrix, Triangle::Upper, Diagonal::NonUnit, SptrsvAlgorithm::Auto).unwrap();
    let b = rhs::<f32>(triangle.rows(), &mut rng);
    let b_gpu = ctx.upload(&b).unwrap();
    let mut x = ctx.upload(&vec![f32::NAN; b.len()]).unwrap();
    let mut batch = ctx.batch();
    wgsparse::ops::blas1::fill(&mut batch.recorder(), 3.0f32, &mut x).unwrap();
    plan.record(&mut batch.recorder(), &b_gpu, &mut x).unwrap();
    batch.submit().unwrap();
    let report = plan.check().unwrap();
    assert!(!report.level_order, "no levels before a blocking solve");
    let want = twin(&triangle, true, false, &b, 1);
    assert!(relative_error(&x.read_blocking().unwrap(), &want) < 1e-5);
}

/// A recorded solve holds its relaunch rounds, each sized on the GPU: the 3,000-row chain
/// with a spin bound of 0 (teams leave their rows at their first round without progress),
/// recorded with 16 rounds and with 3,000, in launches of a workgroup per 64 rows and of 4
/// taking ticket after ticket. Either the rounds solved it (as many relaunches as ran, the
/// twin's answer), or every round ran and `check` says rows were left (NaN, not wrong
/// values); a round per row always solves it (each launch solves at least the lowest row
/// left). Rounds that never launch, or that restart past the lowest row left, fail it.
#[test]
fn recorded_relaunch_rounds_solve_or_say_so() {
    let seed = common::seed("recorded_relaunch_rounds_solve_or_say_so");
    let mut rng = Rng::new(seed);
    let (_, chain) = triangles(seed).into_iter().find(|(n, _)| n == "chain_3000").unwrap();
    let b = rhs::<f32>(chain.rows(), &mut rng);
    let want = twin(&chain, false, false, &b, 1);
    let mut relaunched = 0;
    for (mode, ctx) in common::contexts_for::<f32>() {
        let matrix = GpuSparse::from_csr(ctx, &chain, Conversion::Csr).unwrap();
        let b_gpu = ctx.upload(&b).unwrap();
        let enough = chain.rows() as u32;
        for (rounds, max_workgroups) in [16, enough].into_iter().flat_map(|r| [(r, None), (r, Some(4))]) {
            let what = format!("{mode}, {rounds} rounds, cap {max_workgroups:?}");
            let options =
                SptrsvOptions { spin_limit: 0, relaunch_rounds: rounds, max_workgroups, ..Default::default() };
            let plan = row_order_plan(ctx, &matrix, Triangle::Lower, options);
            let mut x = ctx.upload(&vec![f32::NAN; chain.rows()]).unwrap();
            let mut batch = ctx.batch();
            plan.record(&mut batch.recorder(), &b_gpu, &mut x).unwrap();
            batch.submit().unwrap();
            let got = x.read_blocking().unwrap();
            match plan.check() {
                Ok(report) => {
                    eprintln!("{what}: solved with {} relaunches", report.relaunches);
                    assert!(report.relaunches <= rounds, "{what}: {} relaunches", report.relaunches);
                    relaunched += report.relaunches;
                    let err = relative_error(&got, &want);
                    assert!(err < 1e-5, "{what}: {err:e}");
                }
                Err(Error::Timeout(why)) if rounds < enough => {
                    eprintln!("{what}: {why}");
                    assert!(why.contains(&format!("after {rounds} relaunches")), "{what}: not every round ran: {why}");
                    relaunched += rounds;
                    let (left, right) = got.iter().zip(&want).partition::<Vec<_>, _>(|(g, _)| g.is_nan());
                    assert!(!left.is_empty(), "{what}: rows left unsolved, yet none is NaN");
                    assert!(right.iter().all(|(g, w)| (**g as f64 - **w).abs() <= 1e-4 * w.abs().max(1.0)), "{what}");
                }
                Err(e) => panic!("{what}: {e}"),
            }
        }
    }
    assert!(relaunched > 0, "a spin bound of 0 on a 3,000-row chain should need relaunches");
}

/// Input that cannot be solved is a typed error naming the first offending row, and b is
/// untouched; misuse is refused before anything runs.
#[test]
fn unsolvable_input_and_misuse_are_typed_errors() {
    let ctx = common::context();
    let matrix_of =
        |rows: Vec<Vec<(u32, f32)>>| GpuSparse::from_csr(ctx, &square_from_rows(rows), Conversion::Csr).unwrap();
    let good = || vec![(0, 2.0)];
    type Case = (&'static str, Vec<Vec<(u32, f32)>>, usize, SolveProblem);
    let cases: Vec<Case> = vec![
        (
            "entry above the diagonal",
            vec![good(), vec![(1, 1.0), (3, 1.0)], vec![(2, 1.0)], vec![(3, 1.0)]],
            1,
            SolveProblem::OutsideTriangle,
        ),
        (
            "missing diagonal",
            vec![good(), vec![(1, 1.0)], vec![(0, 1.0)], vec![(0, 1.0)]],
            2,
            SolveProblem::MissingDiagonal,
        ),
        (
            "zero pivot",
            vec![good(), vec![(0, 1.0), (1, 0.0)], vec![(2, 0.0)], vec![(3, 1.0)]],
            1,
            SolveProblem::ZeroPivot,
        ),
    ];
    // The same problems inside a chain, where a row is solved by its team's forwarding (row
    // 203 sits mid-team for subgroups of 8 and of 32).
    let chain_with = |problem_row: Vec<(u32, f32)>| -> Vec<Vec<(u32, f32)>> {
        (0..300u32)
            .map(|i| match i {
                0 => good(),
                203 => problem_row.clone(),
                _ => vec![(i - 1, -0.5), (i, 2.0)],
            })
            .collect()
    };
    let in_chains: Vec<Case> = vec![
        ("zero pivot in a chain", chain_with(vec![(202, -0.5), (203, 0.0)]), 203, SolveProblem::ZeroPivot),
        ("missing diagonal in a chain", chain_with(vec![(202, -0.5)]), 203, SolveProblem::MissingDiagonal),
    ];
    // Levels captured during the solve or found by the frontier before it: neither is kept.
    let captures = [LevelCapture::DuringSolve, LevelCapture::Frontier];
    for ((what, rows, row, problem), capture) in
        cases.into_iter().chain(in_chains).flat_map(|case| captures.map(|c| (case.clone(), c)))
    {
        let b: Vec<f32> = (1..=rows.len()).map(|i| i as f32).collect();
        let matrix = matrix_of(rows);
        let options = SptrsvOptions { capture, ..Default::default() };
        let (side, diagonal) = (Triangle::Lower, Diagonal::NonUnit);
        let plan =
            TriangularSolve::with_options(ctx, &matrix, side, diagonal, SptrsvAlgorithm::LevelOrder, options).unwrap();
        let b_gpu = ctx.upload(&b).unwrap();
        let mut x = ctx.zeros::<f32>(b.len()).unwrap();
        let err = plan.solve(&b_gpu, &mut x).unwrap_err();
        assert_eq!(err, Error::NotSolvable { op: "sptrsv", row, problem }, "{what} {capture:?}");
        assert_eq!(b_gpu.read_blocking().unwrap(), b, "{what}: b untouched");
        assert!(plan.levels().is_none(), "{what} {capture:?}: no levels kept from a failed solve");
        assert!(matrix.analyses().is_empty(), "{what} {capture:?}: no analyses kept");
    }
    // Misuse.
    let matrix = matrix_of(vec![good(), vec![(0, 1.0), (1, 1.0)]]);
    let plan = TriangularSolve::new(ctx, &matrix, Triangle::Lower, Diagonal::NonUnit, SptrsvAlgorithm::Auto).unwrap();
    let b2 = ctx.upload(&[1.0f32, 1.0]).unwrap();
    let mut x3 = ctx.zeros::<f32>(3).unwrap();
    assert!(matches!(plan.solve(&b2, &mut x3), Err(Error::DimensionMismatch { .. })));
    let rect = GpuSparse::from_csr(ctx, &generate::random(3, 4, 0.5, 1), Conversion::Csr).unwrap();
    let refused = TriangularSolve::new(ctx, &rect, Triangle::Lower, Diagonal::NonUnit, SptrsvAlgorithm::Auto);
    assert!(matches!(refused, Err(Error::DimensionMismatch { .. })));
    let ell = GpuSparse::from_csr(ctx, &generate::laplacian_2d(3), Conversion::Ell(Default::default())).unwrap();
    let refused = TriangularSolve::new(ctx, &ell, Triangle::Lower, Diagonal::NonUnit, SptrsvAlgorithm::Auto);
    assert!(matches!(refused, Err(Error::InvalidArgument(_))));
    for options in [
        SptrsvOptions { rhs: 0, ..Default::default() },
        SptrsvOptions { max_workgroups: Some(0), ..Default::default() },
        SptrsvOptions { walk_batches: 0, ..Default::default() },
        SptrsvOptions { solo_row_entries: Some(0), ..Default::default() },
    ] {
        let refused = TriangularSolve::with_options(
            ctx,
            &matrix,
            Triangle::Lower,
            Diagonal::NonUnit,
            SptrsvAlgorithm::Auto,
            options,
        );
        assert!(matches!(refused, Err(Error::InvalidArgument(_))), "{options:?}");
    }
    if let Some((_, other)) = common::contexts().get(1) {
        let foreign = other.upload(&[1.0f32, 1.0]).unwrap();
        let mut x = ctx.zeros::<f32>(2).unwrap();
        assert!(matches!(plan.solve(&foreign, &mut x), Err(Error::ContextMismatch(_))));
    }
    // 0 × 0: nothing to do, every algorithm, transposed or not, one or four right-hand sides.
    let empty = GpuSparse::from_csr(ctx, &CsrMatrix::<f32>::zeros(0, 0).unwrap(), Conversion::Csr).unwrap();
    let algorithms = [SptrsvAlgorithm::RowOrder, SptrsvAlgorithm::LevelOrder, SptrsvAlgorithm::Auto];
    for (algorithm, transposed) in algorithms.into_iter().flat_map(|a| [(a, false), (a, true)]) {
        let what = format!("0 x 0 {} transposed {transposed}", algorithm.name());
        let plan = |rhs| {
            let options = SptrsvOptions { rhs, ..Default::default() };
            let (side, unit) = (Triangle::Upper, Diagonal::Unit);
            match transposed {
                true => TriangularSolve::transposed_with_options(ctx, &empty, side, unit, algorithm, options),
                false => TriangularSolve::with_options(ctx, &empty, side, unit, algorithm, options),
            }
            .expect(&what)
        };
        let (b0, mut x0) = (ctx.zeros::<f32>(0).unwrap(), ctx.zeros::<f32>(0).unwrap());
        assert_eq!(plan(1).solve(&b0, &mut x0).expect(&what).relaunches, 0, "{what}");
        let dense = |cols| GpuDense::zeros(ctx, 0, cols, DenseLayout::RowMajor).unwrap();
        let (b4, mut x4) = (dense(4), dense(4));
        assert_eq!(plan(4).solve_dense(&b4, &mut x4).expect(&what).relaunches, 0, "{what}");
    }
}

/// A lower triangle of `n` rows whose last row needs `n − 1` rows before it (the others
/// stand alone): one walk of `n` entries.
fn long_last_row(n: usize) -> CsrMatrix<f32> {
    square_from_rows(
        (0..n as u32)
            .map(|i| {
                if i + 1 < n as u32 {
                    vec![(i, 2.0)]
                } else {
                    (0..=i).map(|j| (j, if j == i { 4.0 } else { 0.5 / n as f32 })).collect()
                }
            })
            .collect(),
    )
}

/// One workgroup solving a 70,000-row chain alone runs more loop iterations than lavapipe
/// lets one invocation run (65,535 in all its loops, after which llvmpipe ends every loop,
/// silently): the solve counts its own and leaves its rows to a relaunch before that, and
/// the answer is exact; so is a row of 20,000 entries walked by one lane after the chain.
/// (Without the count, teams whose 8-lane chunks reached the cap at different rounds fell
/// out of step at their barriers and launches solved nothing: tests/sptrsv.rs timed out or
/// failed under load in CI, session 52.)
#[test]
fn long_solves_stay_within_the_adapters_loop_limit() {
    let seed = common::seed("long_solves_stay_within_the_adapters_loop_limit");
    let mut rng = Rng::new(seed);
    for (name, l) in [("chain_70000", chain(70_000)), ("last row of 20,000", long_last_row(20_000))] {
        let b = rhs::<f32>(l.rows(), &mut rng);
        let want = twin(&l, false, false, &b, 1);
        for (mode, ctx) in common::contexts_for::<f32>() {
            let matrix = GpuSparse::from_csr(ctx, &l, Conversion::Csr).unwrap();
            for algorithm in [SptrsvAlgorithm::RowOrder, SptrsvAlgorithm::LevelOrder] {
                let options = SptrsvOptions { max_workgroups: Some(1), ..Default::default() };
                let plan =
                    TriangularSolve::with_options(ctx, &matrix, Triangle::Lower, Diagonal::NonUnit, algorithm, options)
                        .unwrap();
                for round in 0..2 {
                    let what = format!("{mode} {name} {} round {round}", algorithm.name());
                    let mut x = ctx.upload(&vec![f32::NAN; b.len()]).unwrap();
                    let report = plan.solve(&ctx.upload(&b).unwrap(), &mut x).unwrap_or_else(|e| panic!("{what}: {e}"));
                    let err = relative_error(&x.read_blocking().unwrap(), &want);
                    assert!(err < 1e-5, "{what}: {err:e}");
                    if name == "chain_70000" && ctx.loop_iteration_limit().is_some() {
                        assert!(report.relaunches > 0, "{what}: no team left its rows before the loop cap");
                    }
                }
            }
        }
    }
}

/// Where the adapter caps an invocation's loop iterations, a row too long for one team to
/// walk within them is refused when the solve is planned, with the limit named: a launch
/// could not solve even the lowest row.
#[test]
fn a_row_past_the_loop_limit_is_refused() {
    let l = long_last_row(400_000);
    for (mode, ctx) in common::contexts_for::<f32>() {
        let matrix = GpuSparse::from_csr(ctx, &l, Conversion::Csr).unwrap();
        let plan = TriangularSolve::new(ctx, &matrix, Triangle::Lower, Diagonal::NonUnit, SptrsvAlgorithm::RowOrder);
        common::planned_unless_refused(plan, ctx.loop_iteration_limit().is_some(), mode);
    }
}
