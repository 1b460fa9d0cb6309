//! Batched LU `P·A = L·U` and its solve, against the f64 twin's conventions: the backward
//! error `‖P·A − L·U‖ / ‖A‖` within a few n·ε, multipliers |l_ik| ≤ 1 (partial pivoting),
//! pivots equal to the twin's where no two candidates are close (and by a tournament where
//! the pivots are forced), info of singular matrices (the others of the
//! batch factored), the solve's residual; f32 and f64, subgroups on and off; misuse.

mod common;

use wgsparse::generate::Rng;
use wgsparse::ops::{BatchedLu, LuAlgorithm, LuOptions, Pivoting, TallPanels};
use wgsparse::reference::{lu_backward_error, lu_factor, lu_residual_along};
use wgsparse::{Context, DenseLayout, DenseMatrix, Error, GpuDense, Scalar};

/// Kinds of matrices a batch mixes.
#[derive(Debug, Clone, Copy)]
enum Kind {
    Random,
    /// Rows dominated by their diagonal: the pivots are the identity.
    Dominant,
    /// Columns scaled from 1 to 1e-6 (f32) / 1e-12 (f64): ill-conditioned.
    Graded,
    /// Column `n / 2` zero: info = n/2 + 1.
    Singular,
    /// Column 0 all ±1: every row ties for the first pivot, which goes to row 0.
    Tied,
    /// Random, with column 0's largest entry in the last row: a tournament must carry it
    /// through every round to the first pivot.
    LastPivot,
    /// A dominant matrix's rows shuffled: every column's pivot is the row holding its
    /// dominant entry, whichever way of pivoting, so the interchanges are known (rows named
    /// twice, pivots inside a panel's block).
    Shuffled,
    /// Shuffled, scaled by 1e-60 in f64 (1e-30 in f32): past f32's range, where magnitudes
    /// rounded to f32 would all tie at zero.
    Tiny,
    /// Shuffled, scaled by 1e60 in f64 (1e30 in f32): where they would all tie at infinity.
    Huge,
}

fn matrix<T: Scalar>(n: usize, kind: Kind, rng: &mut Rng) -> Vec<T> {
    let tiny: f64 = if T::KIND == wgsparse::ElementKind::F32 { 1e-6 } else { 1e-12 };
    let mut m: Vec<f64> = (0..n * n).map(|_| rng.next_f64() * 2.0 - 1.0).collect();
    match kind {
        Kind::Random => {}
        Kind::Dominant => (0..n).for_each(|i| m[i * n + i] = n as f64 + 1.0),
        Kind::Graded => {
            for (e, v) in m.iter_mut().enumerate() {
                *v *= tiny.powf((e % n) as f64 / n.max(2) as f64);
            }
        }
        Kind::Singular => (0..n).for_each(|i| m[i * n + n / 2] = 0.0),
        Kind::Tied => (0..n).for_each(|i| m[i * n] = if m[i * n] < 0.0 { -1.0 } else { 1.0 }),
        Kind::LastPivot => m[(n - 1) * n] = -2.0,
        Kind::Shuffled | Kind::Tiny | Kind::Huge => {
            (0..n).for_each(|i| m[i * n + i] = n as f64 + 1.0);
            // Fisher–Yates on the rows.
            for i in (1..n).rev() {
                let j = (rng.next_u64() % (i as u64 + 1)) as usize;
                for c in 0..n {
                    m.swap(i * n + c, j * n + c);
                }
            }
        }
    }
    let exponent = if T::KIND == wgsparse::ElementKind::F32 { 30 } else { 60 };
    let scale = match kind {
        Kind::Tiny => 10f64.powi(-exponent),
        Kind::Huge => 10f64.powi(exponent),
        _ => 1.0,
    };
    m.into_iter().map(|v| T::from_f64(v * scale)).collect()
}

fn epsilon<T: Scalar>() -> f64 {
    match T::KIND {
        wgsparse::ElementKind::F32 => f32::EPSILON as f64,
        wgsparse::ElementKind::F64 => f64::EPSILON,
    }
}

/// The largest n a team of lanes takes on `ctx`.
fn team_limit(ctx: &Context) -> usize {
    ctx.subgroup_size_range().map_or(32, |(min, _)| min.min(32)) as usize
}

/// Factors a batch of `kinds` (cycled) on `ctx` with every algorithm that takes n, and
/// checks every matrix.
fn check_batch<T: Scalar>(ctx: &Context, n: usize, batch: usize, pivoting: Pivoting, kinds: &[Kind], rng: &mut Rng) {
    for algorithm in LuAlgorithm::ALL {
        let skip = match algorithm {
            LuAlgorithm::Team => n > team_limit(ctx),
            LuAlgorithm::Blocked => pivoting == Pivoting::None,
            _ => false,
        };
        if skip {
            continue;
        }
        check_algorithm::<T>(ctx, n, batch, pivoting, algorithm, kinds, rng);
    }
}

fn check_algorithm<T: Scalar>(
    ctx: &Context,
    n: usize,
    batch: usize,
    pivoting: Pivoting,
    algorithm: LuAlgorithm,
    kinds: &[Kind],
    rng: &mut Rng,
) {
    let options = LuOptions { algorithm, ..Default::default() };
    check_options::<T>(ctx, n, batch, pivoting, &options, kinds, rng);
}

fn check_options<T: Scalar>(
    ctx: &Context,
    n: usize,
    batch: usize,
    pivoting: Pivoting,
    options: &LuOptions,
    kinds: &[Kind],
    rng: &mut Rng,
) {
    let kind_of = |b: usize| kinds[b % kinds.len()];
    let data: Vec<T> = (0..batch).flat_map(|b| matrix::<T>(n, kind_of(b), rng)).collect();
    let host = DenseMatrix::try_new(batch * n, n, data.clone()).unwrap();
    let plan = BatchedLu::<T>::with_options(ctx, n, batch, pivoting, options).unwrap();
    let mut a = GpuDense::upload(ctx, &host, DenseLayout::RowMajor).unwrap();
    let mut pivots = ctx.zeros::<u32>(batch * n).unwrap();
    // Odd sizes factor out of place (A kept, the factors NaN-poisoned first), even ones in place.
    let (info, factors) = if n % 2 == 1 {
        let poison = DenseMatrix::try_new(batch * n, n, vec![T::from_f64(f64::NAN); batch * n * n]).unwrap();
        let mut lu = GpuDense::upload(ctx, &poison, DenseLayout::RowMajor).unwrap();
        let mut info = ctx.zeros::<u32>(batch).unwrap();
        let mut run = ctx.batch();
        plan.record_factor(&mut run.recorder(), &a, &mut lu, &mut pivots, &mut info).unwrap();
        run.submit().unwrap();
        assert_eq!(a.read_blocking().unwrap(), host, "the out-of-place factorization changed A");
        (info.read_blocking().unwrap(), lu.read_blocking().unwrap())
    } else {
        let info = plan.factor(&mut a, &mut pivots).unwrap();
        (info, a.read_blocking().unwrap())
    };
    let pivots_host = pivots.read_blocking().unwrap();
    let bound = 8.0 * n as f64 * epsilon::<T>();
    for b in 0..batch {
        let one = DenseMatrix::try_new(n, n, data[b * n * n..(b + 1) * n * n].to_vec()).unwrap();
        let lu = &factors.data()[b * n * n..(b + 1) * n * n];
        let piv = &pivots_host[b * n..(b + 1) * n];
        // The twin pivots partially (a tournament gets the same info: a column that is zero
        // after elimination is zero whichever rows were eliminated).
        let (twin_factors, twin_pivots, twin_info) = lu_factor(&one, pivoting != Pivoting::None);
        let what = format!(
            "{} n {n} batch {batch} matrix {b} {:?} {pivoting:?} {}",
            plan.describe(),
            kind_of(b),
            T::KIND.name()
        );
        // Singular by chance: where the twin keeps a pivot of rounding size, an exact zero in
        // one precision and a tiny value in the other are both right (f32 rounds the last
        // pivot to 0 about once in 10⁸ random matrices while the f64 twin keeps ~1e-8; see
        // tests/bitmap.rs's LU). Rounding size is measured against the pivot's column of A,
        // to which u_kk scales (A·D = L·(U·D)), so a graded matrix's small columns are not
        // taken for cancellations. The planted zero column is a zero pivot in any precision.
        let by_chance = !matches!(kind_of(b), Kind::Singular)
            && (0..n).any(|k| {
                let column = (0..n).fold(0.0f64, |m, i| m.max(one.data()[i * n + k].to_f64().abs()));
                twin_factors[k * n + k].abs() <= 100.0 * n as f64 * epsilon::<T>() * column
            });
        if by_chance {
            assert!(info[b] as usize <= n, "{what}: info {} past {n} columns", info[b]);
        } else {
            assert_eq!(info[b], twin_info, "{what}: info");
        }
        if info[b] != 0 || twin_info != 0 {
            continue; // a singular matrix: the rest of its factors are LAPACK's, unchecked here
        }
        // The bench's O(n²) check agrees: small on these factors, large on a wrong one.
        let v: Vec<f64> = (0..n).map(|i| 1.0 + (i % 7) as f64 * 0.125).collect();
        // A pivot of rounding size (a tournament's multipliers past it are not bounded): the
        // backward error is left unchecked on that matrix, as in tests/bitmap.rs.
        if !by_chance {
            let error = lu_backward_error(&one, lu, piv);
            assert!(error <= bound, "{what}: ‖PA − LU‖/‖A‖ = {error:e} > {bound:e}");
            let along = lu_residual_along(&one, lu, piv, &v);
            assert!(along <= bound, "{what}: along a vector {along:e} > {bound:e}");
        }
        // (Past n ≈ 64 a dominant matrix's norm hides the planted error.)
        if n > 1 && !matches!(kind_of(b), Kind::Shuffled | Kind::Tiny | Kind::Huge) {
            let mut wrong = lu.to_vec();
            wrong[n * n - 1] = T::from_f64(wrong[n * n - 1].to_f64() + 1.0);
            assert!(lu_residual_along(&one, &wrong, piv, &v) > bound, "{what}: a wrong factor passes");
        }
        if pivoting == Pivoting::Partial {
            let largest = (0..n).flat_map(|i| (0..i).map(move |j| lu[i * n + j].to_f64().abs())).fold(0.0, f64::max);
            assert!(largest <= 1.0 + 1e-6, "{what}: a multiplier of {largest}");
        }
        if matches!(kind_of(b), Kind::Dominant | Kind::Shuffled | Kind::Tiny | Kind::Huge) || pivoting == Pivoting::None
        {
            assert_eq!(piv, &twin_pivots[..], "{what}: pivots");
        }
        if pivoting != Pivoting::None {
            // The largest first entry, the first of equals: every way of pivoting agrees.
            assert_eq!(piv[0], twin_pivots[0], "{what}: the first pivot");
        }
        if matches!(kind_of(b), Kind::Tied) && pivoting != Pivoting::None {
            assert_eq!(piv[0], 0, "{what}: a tie for the first pivot goes to the first row");
        }
    }
}

const SIZES: [usize; 11] = [1, 2, 3, 5, 8, 16, 31, 32, 33, 48, 63];

#[test]
fn batched_lu_factors_every_size_and_kind() {
    let seed = common::seed("batched lu");
    let mut rng = Rng::new(seed);
    let kinds = [Kind::Random, Kind::Dominant, Kind::Graded, Kind::Singular, Kind::Tied];
    for (mode, ctx) in common::contexts() {
        eprintln!("{mode}");
        for n in SIZES {
            check_batch::<f32>(ctx, n, 7, Pivoting::Partial, &kinds, &mut rng);
            check_batch::<f32>(ctx, n, 3, Pivoting::None, &[Kind::Dominant], &mut rng);
            if ctx.supports::<f64>() {
                check_batch::<f64>(ctx, n, 5, Pivoting::Partial, &kinds, &mut rng);
            }
        }
    }
}

#[test]
fn blocked_lu_factors_matrices_of_several_panels_and_tiles() {
    let seed = common::seed("blocked lu");
    let mut rng = Rng::new(seed);
    let options = LuOptions { algorithm: LuAlgorithm::Blocked, ..Default::default() };
    let kinds = [Kind::Random, Kind::Graded, Kind::Singular, Kind::Tied, Kind::Shuffled];
    // f64 factorizations with a GEMM beside a tall panel, and whether any context has f64.
    let (mut f64_beside, mut f64_contexts) = (0, 0);
    for (_, ctx) in common::contexts() {
        f64_contexts += ctx.supports::<f64>() as usize;
        // 65: a panel of one column; 100: a GEMM tile cut short; 129: five panels, 2 × 2 tiles.
        // By default with rows in registers, then with each panel in workgroup memory.
        let staged = LuOptions { staged_panel: true, ..options.clone() };
        for n in [65, 100, 129] {
            check_algorithm::<f32>(ctx, n, 4, Pivoting::Partial, LuAlgorithm::Blocked, &kinds, &mut rng);
            if ctx.supports::<f64>() {
                check_algorithm::<f64>(ctx, n, 2, Pivoting::Partial, LuAlgorithm::Blocked, &kinds, &mut rng);
            }
            // (129 × 32 does not fit lavapipe's 32 KiB of workgroup memory.)
            if n < 129 {
                check_options::<f32>(ctx, n, 4, Pivoting::Partial, &staged, &kinds, &mut rng);
                if ctx.supports::<f64>() {
                    check_options::<f64>(ctx, n, 2, Pivoting::Partial, &staged, &kinds, &mut rng);
                }
            }
        }
        // The panel in workgroup memory: partial pivoting's, without a round's rows, and only
        // where the first panel fits.
        let rows = LuOptions { tournament_rows: Some(64), ..staged.clone() };
        for (pivoting, options) in [(Pivoting::Tournament, &staged), (Pivoting::Partial, &rows)] {
            let e = BatchedLu::<f32>::with_options(ctx, 300, 1, pivoting, options).unwrap_err();
            assert!(matches!(e, Error::InvalidArgument(_)), "{pivoting:?}: {e:?}");
        }
        let e = BatchedLu::<f32>::with_options(ctx, 40_000, 1, Pivoting::Partial, &staged).unwrap_err();
        assert!(matches!(e, Error::LimitExceeded { .. }), "{e:?}");
        // Partial pivoting with rows in registers, 64 a workgroup: panels of more rows step
        // their columns in workgroups of 64 (n = 300: five, then fewer), the rest in one
        // workgroup's round (65: the first panel tall, the second in one round); with 256 a
        // workgroup, n = 300's first two panels in two workgroups of 256. Tall panels
        // cooperatively, with the default wait (on lavapipe, which runs two workgroups at a
        // time, most waits run out and the finishing step plays the rest), no wait at all
        // (every column played by the finishing step) and one poll; and by columns.
        let tall = [
            (TallPanels::Cooperative, None),
            (TallPanels::Cooperative, Some(0)),
            (TallPanels::Cooperative, Some(1)),
            (TallPanels::ByColumns, None),
        ];
        for (n, rows) in [(65, 64), (129, 64), (300, 64), (300, 256)] {
            for (tall_panels, panel_polls) in tall {
                let options = LuOptions {
                    tournament_rows: Some(rows),
                    tall_panels: Some(tall_panels),
                    panel_polls,
                    ..options.clone()
                };
                check_options::<f32>(ctx, n, 4, Pivoting::Partial, &options, &kinds, &mut rng);
                if ctx.supports::<f64>() && n == 300 {
                    check_options::<f64>(ctx, n, 2, Pivoting::Partial, &options, &kinds, &mut rng);
                }
            }
        }
        // A tall panel's GEMM beside the next tall panel's cooperative dispatch (the
        // look-ahead, in workgroups of 256): n = 300 on vec4s (panels of 300 and 268 rows,
        // then rounds) and 299 on elements (299 and 267); by default in f32 and f64, and
        // not with the look-ahead off.
        for n in [300, 299] {
            for (look_ahead, beside) in [(None, true), (Some(false), false)] {
                let tall = LuOptions {
                    tournament_rows: Some(256),
                    tall_panels: Some(TallPanels::Cooperative),
                    look_ahead,
                    ..options.clone()
                };
                let plan = BatchedLu::<f32>::with_options(ctx, n, 3, Pivoting::Partial, &tall).unwrap();
                assert_eq!(plan.describe().ends_with("beside the GEMM before"), beside, "{}", plan.describe());
                check_options::<f32>(ctx, n, 3, Pivoting::Partial, &tall, &kinds, &mut rng);
                if ctx.supports::<f64>() {
                    // (Where its stage fits: not beside lavapipe's candidate rows of 4-lane
                    // subgroups in 32 KiB.)
                    let plan = BatchedLu::<f64>::with_options(ctx, n, 2, Pivoting::Partial, &tall).unwrap();
                    let plan_beside = plan.describe().ends_with("beside the GEMM before");
                    assert!(beside || !plan_beside, "{}", plan.describe());
                    f64_beside += plan_beside as usize;
                    check_options::<f64>(ctx, n, 2, Pivoting::Partial, &tall, &kinds, &mut rng);
                }
            }
        }
        // Every panel in one round, the first included (whose ties the checks pin to the
        // first row): 64 rows in 64 lanes, 200 in 256.
        for (n, rows) in [(64, 64), (200, 256)] {
            let options = LuOptions { tournament_rows: Some(rows), ..options.clone() };
            check_options::<f32>(ctx, n, 4, Pivoting::Partial, &options, &kinds, &mut rng);
            if ctx.supports::<f64>() {
                check_options::<f64>(ctx, n, 2, Pivoting::Partial, &options, &kinds, &mut rng);
            }
        }
        // Each panel after its predecessor's update (no look-ahead), and the look-ahead asked
        // for (in f64 too, where it is not the default); asked for with a tournament or a
        // staged panel, it is refused.
        for look_ahead in [Some(false), Some(true)] {
            let options = LuOptions { look_ahead, ..options.clone() };
            check_options::<f32>(ctx, 129, 3, Pivoting::Partial, &options, &kinds, &mut rng);
            if ctx.supports::<f64>() {
                check_options::<f64>(ctx, 129, 2, Pivoting::Partial, &options, &kinds, &mut rng);
            }
        }
        // Rounds that are not powers of two: with subgroups a one-round panel of more than
        // 256 rows takes the next multiple of 128 lanes (n = 299 on A's elements: 384 lanes for
        // the panels of 299 and 267 rows; n = 1000's test takes them on vec4s).
        check_options::<f32>(ctx, 299, 2, Pivoting::Partial, &options, &kinds, &mut rng);
        if ctx.supports::<f64>() {
            check_options::<f64>(ctx, 299, 1, Pivoting::Partial, &options, &kinds, &mut rng);
        }
        let ahead = LuOptions { look_ahead: Some(true), ..options.clone() };
        let staged_ahead = LuOptions { staged_panel: true, ..ahead.clone() };
        for (pivoting, options) in [(Pivoting::Tournament, &ahead), (Pivoting::Partial, &staged_ahead)] {
            let e = BatchedLu::<f32>::with_options(ctx, 300, 1, pivoting, options).unwrap_err();
            assert!(matches!(e, Error::InvalidArgument(_)), "{pivoting:?} {options:?}: {e:?}");
        }
        // The triangular solve's workgroups wider than the default 32 (n = 300: 268 columns
        // past the first panel in 5 or 3 workgroups, the last cut short); 48 is not a width.
        for trsm_columns in [64, 128] {
            let options = LuOptions { trsm_columns: Some(trsm_columns), ..options.clone() };
            check_options::<f32>(ctx, 300, 2, Pivoting::Partial, &options, &kinds, &mut rng);
        }
        let e = BatchedLu::<f32>::with_options(ctx, 40, 1, Pivoting::None, &options).unwrap_err();
        assert!(matches!(e, Error::InvalidArgument(_)), "{e:?}");
        let odd = LuOptions { trsm_columns: Some(48), ..options.clone() };
        let e = BatchedLu::<f32>::with_options(ctx, 300, 1, Pivoting::Partial, &odd).unwrap_err();
        assert!(matches!(e, Error::InvalidArgument(_)), "{e:?}");
    }
    assert!(f64_contexts == 0 || f64_beside > 0, "no f64 factorization ran a GEMM beside a tall panel");
}

/// Tournament pivoting: blocks of 64 rows make several rounds (n = 129: 3 leaves, then 2
/// workgroups, then 1; n = 300: 5, 3, 2, 1), panels cut short, and the default block of 256
/// rows (n = 129 in one leaf, partial pivoting then; n = 300 in two rounds). Checked as partial pivoting is, except
/// the multipliers' bound, which holds only where one round chose the rows.
#[test]
fn tournament_lu_factors_matrices_of_several_rounds() {
    let mut rng = Rng::new(common::seed("tournament lu"));
    // (No dominant kind: past n ≈ 64 its norm hides the wrong factor the check plants.)
    let kinds = [Kind::Random, Kind::Graded, Kind::Singular, Kind::Tied, Kind::LastPivot, Kind::Shuffled];
    let blocked = |rows| LuOptions { algorithm: LuAlgorithm::Blocked, tournament_rows: rows, ..Default::default() };
    for (mode, ctx) in common::contexts() {
        eprintln!("{mode}");
        for (n, rows) in [
            (65, Some(64)),
            (96, Some(64)),
            (128, Some(64)),
            (129, Some(64)),
            (300, Some(64)),
            (129, None),
            (300, None),
        ] {
            check_options::<f32>(ctx, n, 5, Pivoting::Tournament, &blocked(rows), &kinds, &mut rng);
            if ctx.supports::<f64>() {
                check_options::<f64>(ctx, n, 5, Pivoting::Tournament, &blocked(rows), &kinds, &mut rng);
            }
        }
        // A tournament of one round is partial pivoting: its multipliers are at most 1.
        let data = DenseMatrix::try_new(100, 100, matrix::<f32>(100, Kind::Random, &mut rng)).unwrap();
        let plan = BatchedLu::<f32>::with_options(ctx, 100, 1, Pivoting::Tournament, &blocked(None)).unwrap();
        let mut a = GpuDense::upload(ctx, &data, DenseLayout::RowMajor).unwrap();
        let mut pivots = ctx.zeros::<u32>(100).unwrap();
        assert_eq!(plan.factor(&mut a, &mut pivots).unwrap(), [0]);
        let lu = a.read_blocking().unwrap();
        let largest = (0..100).flat_map(|i| (0..i).map(move |j| (i, j))).map(|(i, j)| lu.data()[i * 100 + j].abs());
        let largest = largest.fold(0.0, f32::max);
        assert!(largest <= 1.0 + 1e-5, "{mode}: a multiplier of {largest} after one round");
        // Small and larger matrices take the other kernels, which pivot partially.
        check_batch::<f32>(ctx, 20, 3, Pivoting::Tournament, &kinds, &mut rng);
        // Misuse: the knob without pivoting, or out of range.
        for (pivoting, rows) in [(Pivoting::None, 64), (Pivoting::Tournament, 32), (Pivoting::Partial, 96)] {
            let e = BatchedLu::<f32>::with_options(ctx, 300, 1, pivoting, &blocked(Some(rows))).unwrap_err();
            assert!(matches!(e, Error::InvalidArgument(_)), "{pivoting:?} {rows}: {e:?}");
        }
    }
}

/// Pivot order past f32's range: shuffled dominant matrices scaled by 1e∓60 (f64), whose
/// pivots are known, through every kernel's search (the team, the small and workgroup
/// kernels, the blocked LU's panel in workgroup memory, by rows in registers in one round,
/// cooperatively and by a dispatch per column, the tournament). Keys rounded to f32 tie there and pick the
/// first row left.
#[test]
fn lu_pivots_past_f32_range() {
    let mut rng = Rng::new(common::seed("lu past f32 range"));
    let kinds = [Kind::Tiny, Kind::Huge];
    let blocked = |rows| LuOptions { algorithm: LuAlgorithm::Blocked, tournament_rows: rows, ..Default::default() };
    for (mode, ctx) in common::contexts() {
        if !ctx.supports::<f64>() {
            continue;
        }
        eprintln!("{mode}");
        for n in [5, 33, 63] {
            check_batch::<f64>(ctx, n, 2, Pivoting::Partial, &kinds, &mut rng);
        }
        for (n, rows) in [(65, None), (129, Some(64)), (300, Some(64))] {
            check_options::<f64>(ctx, n, 2, Pivoting::Partial, &blocked(rows), &kinds, &mut rng);
        }
        let staged = LuOptions { staged_panel: true, ..blocked(None) };
        check_options::<f64>(ctx, 65, 2, Pivoting::Partial, &staged, &kinds, &mut rng);
        // (Tall panels cooperatively above, by default; by columns here.)
        let by_columns = LuOptions { tall_panels: Some(TallPanels::ByColumns), ..blocked(Some(64)) };
        check_options::<f64>(ctx, 129, 2, Pivoting::Partial, &by_columns, &kinds, &mut rng);
        check_options::<f64>(ctx, 129, 2, Pivoting::Tournament, &blocked(Some(64)), &kinds, &mut rng);
        // f32 in its own range: 1e∓30.
        check_options::<f32>(ctx, 129, 2, Pivoting::Partial, &blocked(Some(64)), &kinds, &mut rng);
    }
}

#[test]
fn lu_of_the_issue_sizes_256_and_1000_and_a_batch_of_10000() {
    let mut rng = Rng::new(common::seed("lu issue sizes"));
    let ctx = common::context();
    // n = 256 and 1000 (blocked): checked along random vectors (O(n²)), multipliers ≤ 1.
    for (n, batch) in [(256, 2), (1000, 1)] {
        let data: Vec<f32> = (0..batch).flat_map(|_| matrix::<f32>(n, Kind::Random, &mut rng)).collect();
        let host = DenseMatrix::try_new(batch * n, n, data.clone()).unwrap();
        let plan = BatchedLu::<f32>::new(ctx, n, batch, Pivoting::Partial).unwrap();
        let mut a = GpuDense::upload(ctx, &host, DenseLayout::RowMajor).unwrap();
        let mut pivots = ctx.zeros::<u32>(batch * n).unwrap();
        assert!(plan.factor(&mut a, &mut pivots).unwrap().iter().all(|&i| i == 0), "n {n}: info");
        let (factors, piv) = (a.read_blocking().unwrap(), pivots.read_blocking().unwrap());
        for b in 0..batch {
            let one = DenseMatrix::try_new(n, n, data[b * n * n..(b + 1) * n * n].to_vec()).unwrap();
            let lu = &factors.data()[b * n * n..(b + 1) * n * n];
            let v: Vec<f64> = (0..n).map(|_| rng.next_f64() - 0.5).collect();
            let error = lu_residual_along(&one, lu, &piv[b * n..(b + 1) * n], &v);
            assert!(error <= 8.0 * n as f64 * 1.2e-7, "{} n {n} matrix {b}: {error:e}", plan.describe());
            let largest = (0..n).flat_map(|i| (0..i).map(move |j| lu[i * n + j].abs())).fold(0.0, f32::max);
            assert!(largest <= 1.0 + 1e-6, "n {n}: a multiplier of {largest}");
        }
    }
    // 10,000 matrices of 2 × 2 (a few singular), in one dispatch.
    check_batch::<f32>(ctx, 2, 10_000, Pivoting::Partial, &[Kind::Random, Kind::Tied, Kind::Singular], &mut rng);
}

#[test]
fn batched_lu_of_many_small_matrices() {
    let mut rng = Rng::new(common::seed("batched lu, many"));
    for (_, ctx) in common::contexts() {
        check_batch::<f32>(ctx, 8, 2000, Pivoting::Partial, &[Kind::Random, Kind::Singular, Kind::Tied], &mut rng);
        check_batch::<f32>(ctx, 65, 3, Pivoting::Partial, &[Kind::Random], &mut rng);
    }
}

/// Factors `batch` random matrices of order n and solves for `nrhs` right-hand sides each;
/// checks every column's residual ‖A·x − b‖∞ / (‖A‖∞·‖x‖∞ + ‖b‖∞) ≤ 8·n·ε.
fn check_solve<T: Scalar>(
    (mode, ctx): (&str, &Context),
    (n, batch, nrhs): (usize, usize, usize),
    pivoting: Pivoting,
    options: &LuOptions,
    rng: &mut Rng,
) {
    let data: Vec<T> = (0..batch).flat_map(|_| matrix::<T>(n, Kind::Random, rng)).collect();
    let host = DenseMatrix::try_new(batch * n, n, data.clone()).unwrap();
    let rhs = common::dense::<T>(batch * n, nrhs, rng.next_u64());
    let plan = BatchedLu::<T>::with_options(ctx, n, batch, pivoting, options).unwrap();
    let mut a = GpuDense::upload(ctx, &host, DenseLayout::RowMajor).unwrap();
    let mut pivots = ctx.zeros::<u32>(batch * n).unwrap();
    assert!(plan.factor(&mut a, &mut pivots).unwrap().iter().all(|&i| i == 0));
    let mut b = GpuDense::upload(ctx, &rhs, DenseLayout::RowMajor).unwrap();
    plan.solve(&a, &pivots, &mut b).unwrap();
    let x = b.read_blocking().unwrap();
    for m in 0..batch {
        for c in 0..nrhs {
            let at = |i: usize, j: usize| data[m * n * n + i * n + j].to_f64();
            let xc = |j: usize| x.data()[(m * n + j) * nrhs + c].to_f64();
            let bc = |i: usize| rhs.data()[(m * n + i) * nrhs + c].to_f64();
            let residual = (0..n).map(|i| ((0..n).map(|j| at(i, j) * xc(j)).sum::<f64>() - bc(i)).abs());
            let norm_a = (0..n).map(|i| (0..n).map(|j| at(i, j).abs()).sum::<f64>()).fold(0.0, f64::max);
            let norm_x = (0..n).map(|j| xc(j).abs()).fold(0.0, f64::max);
            let norm_b = (0..n).map(|i| bc(i).abs()).fold(0.0, f64::max);
            let r = residual.fold(0.0, f64::max) / (norm_a * norm_x + norm_b);
            // f64::max passes over NaN: a NaN in x would leave every norm finite.
            assert!(
                (0..n).all(|j| xc(j).is_finite()),
                "{mode} {} n {n} nrhs {nrhs} {options:?} matrix {m} column {c}: x not finite",
                T::KIND.name()
            );
            assert!(
                r <= 8.0 * n as f64 * epsilon::<T>(),
                "{mode} {} n {n} nrhs {nrhs} {options:?} matrix {m} column {c}: residual {r:e}",
                T::KIND.name()
            );
        }
    }
}

#[test]
fn batched_lu_solve_has_a_small_residual() {
    let mut rng = Rng::new(common::seed("batched lu solve"));
    let by = |columns| LuOptions { solve_by_columns: Some(columns), ..Default::default() };
    for (mode, ctx) in common::contexts() {
        // Orders around the solve's blocks of 32 rows and its lanes; more than one
        // right-hand side of order 64 or less take a lane each by default. n = 130 also by a tournament of 64-row rounds
        // (its factors in getrf's form); n = 300 by lanes walks more than lavapipe's loop cap
        // in one dispatch, so there in bands of rows.
        let shapes = [(1, 2, 1), (17, 5, 1), (31, 2, 1), (32, 3, 3), (33, 2, 2), (40, 4, 70), (65, 1, 1), (300, 1, 2)];
        for shape in shapes {
            check_solve::<f32>((*mode, ctx), shape, Pivoting::Partial, &LuOptions::default(), &mut rng);
        }
        let tournament = LuOptions { tournament_rows: Some(64), ..Default::default() };
        check_solve::<f32>((*mode, ctx), (130, 2, 2), Pivoting::Tournament, &tournament, &mut rng);
        // Each way forced where the default takes the other.
        check_solve::<f32>((*mode, ctx), (40, 2, 33), Pivoting::Partial, &by(true), &mut rng);
        check_solve::<f32>((*mode, ctx), (300, 1, 2), Pivoting::Partial, &by(false), &mut rng);
        check_solve::<f32>((*mode, ctx), (33, 2, 2), Pivoting::Partial, &by(true), &mut rng);
        // In panels (the default only past n = 1024): bands whose dot products take their own
        // columns, each followed by an update of the rows left; orders that are and are not
        // multiples of the panel, panels of one block and of two, and on lavapipe panels cut
        // further into bands by its loop cap. n = 520 takes workgroups of 1,024 lanes, a row
        // a lane, which load a block's triangle beside its dot products.
        let panels = |rows| LuOptions { solve_panel: Some(rows), ..Default::default() };
        for (shape, rows) in
            [((130, 1, 1), 32), ((97, 2, 1), 64), ((300, 1, 2), 64), ((128, 1, 1), 64), ((520, 1, 1), 128)]
        {
            check_solve::<f32>((*mode, ctx), shape, Pivoting::Partial, &panels(rows), &mut rng);
        }
        if ctx.supports::<f64>() {
            for shape in [(17, 3, 1), (33, 2, 2), (40, 2, 40), (130, 1, 1)] {
                check_solve::<f64>((*mode, ctx), shape, Pivoting::Partial, &LuOptions::default(), &mut rng);
            }
            check_solve::<f64>((*mode, ctx), (130, 1, 1), Pivoting::Partial, &by(false), &mut rng);
            check_solve::<f64>((*mode, ctx), (130, 1, 1), Pivoting::Partial, &panels(32), &mut rng);
        }
    }
}

#[test]
fn batched_lu_misuse_gets_typed_errors() {
    let ctx = common::context();
    let too_big = ctx.limits().max_compute_workgroup_storage_size as usize / 4;
    let n = (too_big as f64).sqrt() as usize + 1;
    let workgroup = LuOptions { algorithm: LuAlgorithm::Workgroup, ..Default::default() };
    let e = BatchedLu::<f32>::with_options(ctx, n, 1, Pivoting::Partial, &workgroup).unwrap_err();
    assert!(matches!(e, Error::LimitExceeded { .. }), "{e:?}");
    // A solve by columns asked for where a column does not fit workgroup memory.
    let by_columns = LuOptions { solve_by_columns: Some(true), ..Default::default() };
    let e = BatchedLu::<f32>::with_options(ctx, too_big + 1, 1, Pivoting::Partial, &by_columns).unwrap_err();
    assert!(matches!(e, Error::LimitExceeded { .. }), "{e:?}");
    // The solve's panels are whole blocks of 32 rows.
    let panel = LuOptions { solve_panel: Some(48), ..Default::default() };
    let e = BatchedLu::<f32>::with_options(ctx, 100, 1, Pivoting::Partial, &panel).unwrap_err();
    assert!(matches!(e, Error::InvalidArgument(_)), "{e:?}");
    // A cooperative panel whose stage (a candidate of 33 words from each of 625 workgroups
    // of 64 rows) passes workgroup memory is refused when asked for; Auto steps such panels
    // by columns.
    let tall = |tall_panels| LuOptions {
        algorithm: LuAlgorithm::Blocked,
        tournament_rows: Some(64),
        tall_panels,
        ..Default::default()
    };
    let e = BatchedLu::<f32>::with_options(ctx, 40_000, 1, Pivoting::Partial, &tall(Some(TallPanels::Cooperative)))
        .unwrap_err();
    assert!(matches!(e, Error::LimitExceeded { .. }), "{e:?}");
    let auto = BatchedLu::<f32>::with_options(ctx, 40_000, 1, Pivoting::Partial, &tall(None)).unwrap();
    assert!(auto.describe().ends_with("taller by columns"), "{}", auto.describe());
    // Where the adapter caps loop iterations (llvmpipe), a panel of 1,000 rows in 16
    // workgroups of 64 would pass the cap in the finishing step's replay: refused when asked
    // for, by columns under Auto.
    if ctx.loop_iteration_limit().is_some() {
        let e = BatchedLu::<f32>::with_options(ctx, 1000, 1, Pivoting::Partial, &tall(Some(TallPanels::Cooperative)))
            .unwrap_err();
        assert!(matches!(e, Error::LimitExceeded { limit, .. } if limit.contains("loop")), "{e:?}");
        let auto = BatchedLu::<f32>::with_options(ctx, 1000, 1, Pivoting::Partial, &tall(None)).unwrap();
        assert!(auto.describe().ends_with("taller by columns"), "{}", auto.describe());
    }
    // Auto takes the cooperative panel where its dispatch has at most 64 workgroups: 13
    // matrices of 300 rows in workgroups of 64 (five each) make 65.
    for (batch, tall_panels) in [(12, "cooperatively"), (13, "by columns")] {
        let auto = BatchedLu::<f32>::with_options(ctx, 300, batch, Pivoting::Partial, &tall(None)).unwrap();
        assert!(auto.describe().ends_with(tall_panels), "{batch}: {}", auto.describe());
    }
    let plan = BatchedLu::<f32>::new(ctx, 4, 3, Pivoting::Partial).unwrap();
    let host = common::dense::<f32>(12, 4, 1);
    let mut pivots = ctx.zeros::<u32>(12).unwrap();
    let mut info = ctx.zeros::<u32>(3).unwrap();
    let dimension = |e: Error| assert!(matches!(e, Error::DimensionMismatch { .. }), "{e:?}");
    let mut wrong_rows = GpuDense::upload(ctx, &common::dense::<f32>(8, 4, 2), DenseLayout::RowMajor).unwrap();
    let mut batch = ctx.batch();
    dimension(plan.record_factor_in_place(&mut batch.recorder(), &mut wrong_rows, &mut pivots, &mut info).unwrap_err());
    let mut a = GpuDense::upload(ctx, &host, DenseLayout::RowMajor).unwrap();
    let mut short = ctx.zeros::<u32>(11).unwrap();
    dimension(plan.record_factor_in_place(&mut batch.recorder(), &mut a, &mut short, &mut info).unwrap_err());
    let mut col_major = GpuDense::upload(ctx, &host, DenseLayout::ColMajor).unwrap();
    let e = plan.record_factor_in_place(&mut batch.recorder(), &mut col_major, &mut pivots, &mut info).unwrap_err();
    assert!(matches!(e, Error::InvalidArgument(_)), "{e:?}");
    let other = &common::contexts().last().unwrap().1;
    if !std::ptr::eq(other, ctx) {
        let mut foreign = GpuDense::upload(other, &host, DenseLayout::RowMajor).unwrap();
        assert!(plan.record_factor_in_place(&mut batch.recorder(), &mut foreign, &mut pivots, &mut info).is_err());
    }
    batch.submit().unwrap();
    assert_eq!(a.read_blocking().unwrap(), host, "a refused call changed A");
}

/// One matrix factored by `plan.profile_factor`: the names of the steps it timed, and the
/// factors' backward error.
fn profiled_steps<T: Scalar>(ctx: &Context, plan: &BatchedLu<T>, data: &DenseMatrix<T>) -> (Vec<String>, f64) {
    let mut a = GpuDense::upload(ctx, data, DenseLayout::RowMajor).unwrap();
    let mut pivots = ctx.zeros::<u32>(data.rows()).unwrap();
    let profile = plan.profile_factor(&mut a, &mut pivots).unwrap();
    let names = profile.into_iter().map(|(name, _)| name).collect();
    let error = lu_backward_error(data, a.read_blocking().unwrap().data(), &pivots.read_blocking().unwrap());
    (names, error)
}

/// `profile_factor` times every step of the blocked LU, partial and by tournament, and
/// factors A as a run does; the tournament's picks are the plan's extra bytes.
#[test]
fn lu_profile_names_every_step() {
    let mut rng = Rng::new(common::seed("lu profile"));
    let ctx = common::context();
    if !ctx.has_timestamps() {
        eprintln!("no timestamps here: skipped");
        return;
    }
    let n = 200;
    let data = DenseMatrix::try_new(n, n, matrix::<f32>(n, Kind::Random, &mut rng)).unwrap();
    let blocked = |rows, tall_panels, staged_panel, look_ahead| LuOptions {
        algorithm: LuAlgorithm::Blocked,
        tournament_rows: rows,
        tall_panels,
        staged_panel,
        look_ahead,
        ..Default::default()
    };
    // Partial pivoting: every panel in one round (by default beside the previous panel's
    // update, which needs no step of its own; or without the look-ahead), or
    // in workgroup memory; with 64 rows a workgroup, panels of more rows cooperatively (by
    // default; their swaps and triangular solve in strips) or by columns, the last (40 rows)
    // in one round.
    let by_columns = Some(TallPanels::ByColumns);
    let (ahead, plain) = (None, Some(false));
    for (pivoting, rows, tall, staged, look_ahead, steps) in [
        (Pivoting::Partial, None, None, false, ahead, &["rounds", "swap"][..]),
        (Pivoting::Partial, None, None, false, plain, &["rounds", "swap", "trsm", "gemm"][..]),
        (Pivoting::Partial, None, None, true, ahead, &["panel", "swap", "trsm", "gemm"][..]),
        (
            Pivoting::Partial,
            Some(64),
            None,
            false,
            ahead,
            &["cooperative", "finish", "strips", "gemm", "rounds", "swap"][..],
        ),
        (
            Pivoting::Partial,
            Some(64),
            None,
            false,
            plain,
            &["cooperative", "finish", "strips", "gemm", "rounds", "swap", "trsm"][..],
        ),
        (Pivoting::Partial, Some(64), by_columns, false, ahead, &["columns", "swap", "trsm", "gemm", "rounds"][..]),
        (Pivoting::Tournament, Some(64), None, false, ahead, &["rounds", "swap", "lower", "trsm", "gemm"][..]),
    ] {
        let options = blocked(rows, tall, staged, look_ahead);
        let plan = BatchedLu::<f32>::with_options(ctx, n, 1, pivoting, &options).unwrap();
        assert_eq!(plan.extra_bytes() > 0, !staged, "{pivoting:?}: picks held");
        let (names, error) = profiled_steps(ctx, &plan, &data);
        assert_eq!(names, steps, "{pivoting:?}");
        assert!(error <= 8.0 * n as f64 * 1.2e-7, "{pivoting:?}: {error:e}");
    }
}

/// The blocked LU's defaults in f64: one-round panels of at most 512 rows (an f64 row fills a
/// lane's registers in rounds of 1,024; f32 keeps 1,024 where the adapter has them: the
/// H200), and the rounds' look-ahead from n = 256 (no step of its own: `rounds, swap`), not
/// below.
#[test]
fn f64_rounds_take_at_most_512_rows_and_look_ahead_from_256() {
    let mut rng = Rng::new(common::seed("lu f64 defaults"));
    let ctx = common::context();
    if !ctx.supports::<f64>() {
        eprintln!("no f64 here: skipped");
        return;
    }
    let rows_of = |described: String| {
        let rows = described.split(", ").find_map(|part| part.strip_suffix(" a workgroup")).map(str::to_owned);
        rows.unwrap_or_else(|| panic!("no rows in {described}")).parse::<u32>().unwrap()
    };
    let widest = rows_of(BatchedLu::<f32>::new(ctx, 2048, 1, Pivoting::Partial).unwrap().describe());
    let rows = rows_of(BatchedLu::<f64>::new(ctx, 2048, 1, Pivoting::Partial).unwrap().describe());
    // (Where workgroup memory holds fewer f64 rows, as llvmpipe's, it bounds them first.)
    assert!(rows <= widest.min(512), "f64 rounds of {rows} (f32's: {widest})");
    if !ctx.has_timestamps() {
        eprintln!("no timestamps here: the look-ahead's steps not checked");
        return;
    }
    for (n, steps) in [(192, &["rounds", "swap", "trsm", "gemm"][..]), (256, &["rounds", "swap"][..])] {
        let data = DenseMatrix::try_new(n, n, matrix::<f64>(n, Kind::Random, &mut rng)).unwrap();
        let plan = BatchedLu::<f64>::new(ctx, n, 1, Pivoting::Partial).unwrap();
        let (names, error) = profiled_steps(ctx, &plan, &data);
        assert_eq!(names, steps, "f64 n {n}");
        assert!(error <= 8.0 * n as f64 * 2.3e-16, "f64 n {n}: {error:e}");
    }
}

/// Auto takes a team up to the team's size, the workgroup LU below n = 56 in f32 (64 in
/// f64), and the blocked LU with pivoting from there on even where a matrix fits in workgroup
/// memory (its rows in registers win there on the H200); without pivoting, which the blocked
/// LU does not take, the workgroup LU.
#[test]
fn auto_takes_the_blocked_lu_from_56_in_f32_and_64_in_f64() {
    fn plan<T: Scalar>(ctx: &Context, n: usize, pivoting: Pivoting) -> String {
        BatchedLu::<T>::new(ctx, n, 100, pivoting).unwrap().describe()
    }
    let ctx = common::context();
    for (n, pivoting, algorithm) in [
        (55, Pivoting::Partial, "workgroup"),
        (56, Pivoting::Partial, "blocked"),
        (64, Pivoting::Tournament, "blocked"),
        (64, Pivoting::None, "workgroup"),
    ] {
        let described = plan::<f32>(ctx, n, pivoting);
        assert!(described.starts_with(algorithm), "f32 n {n} {pivoting:?}: {described}");
    }
    if ctx.supports::<f64>() {
        for (n, algorithm) in [(63, "workgroup"), (64, "blocked")] {
            let described = plan::<f64>(ctx, n, Pivoting::Partial);
            assert!(described.starts_with(algorithm), "f64 n {n}: {described}");
        }
    }
}

/// Empty batches and 0 × 0 matrices plan and factor (nothing to do) on every kernel that
/// takes them.
#[test]
fn lu_of_empty_batches_and_matrices() {
    let ctx = common::context();
    for algorithm in [LuAlgorithm::Auto, LuAlgorithm::Workgroup, LuAlgorithm::Blocked] {
        for (n, batch) in [(0, 3), (5, 0), (0, 0)] {
            let options = LuOptions { algorithm, ..Default::default() };
            let what = format!("{algorithm:?} n {n} batch {batch}");
            let plan = BatchedLu::<f32>::with_options(ctx, n, batch, Pivoting::Partial, &options).expect(&what);
            let host = DenseMatrix::try_new(batch * n, n, Vec::<f32>::new()).unwrap();
            let mut a = GpuDense::upload(ctx, &host, DenseLayout::RowMajor).expect(&what);
            let mut pivots = ctx.zeros::<u32>(batch * n).expect(&what);
            assert_eq!(plan.factor(&mut a, &mut pivots).expect(&what), vec![0; batch], "{what}");
        }
    }
}
