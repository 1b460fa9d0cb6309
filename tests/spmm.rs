//! SpMM `C ← α·op(A)·B + β·C` (op(A) = A or Aᵀ) for every algorithm against the f64 CPU
//! twin, for f32 and f64, with and without subgroups, at every width of `common::WIDTHS`;
//! outputs poisoned with NaN before runs with β = 0.

mod common;

use common::WidthCase;

use wgsparse::generate::Rng;
use wgsparse::ops::{Sddmm, SddmmAlgorithm, Spmm, SpmmAlgorithm, SpmmOptions, TransposedReads};
use wgsparse::reference::{error_relative_to_terms, relative_error, sddmm_csr, spmm_csr};
use wgsparse::{Context, Conversion, CsrMatrix, DenseLayout, DenseMatrix, Error, GpuDense, GpuSparse, Scalar};

/// The algorithms that exist for `T`.
fn algorithms<T: Scalar>() -> Vec<SpmmAlgorithm> {
    SpmmAlgorithm::ALL.into_iter().filter(|a| a.supports::<T>()).collect()
}

/// Which product a plan computes.
#[derive(Clone, Copy, PartialEq)]
enum Op {
    /// `A·B`.
    Plain,
    /// `Aᵀ·B`, on the transpose built on the GPU.
    Transposed,
}

/// Runs the plan (or, for `Aᵀ`, a plan for each way of reading A's values) twice (β = 0
/// over NaN-poisoned C, then β ≠ 0 over random C) and returns the worst error against the
/// twin, relative to the terms' magnitudes (signed rows and `β·c₀` can cancel).
fn spmm_error<T: Scalar>(
    ctx: &Context,
    a: &CsrMatrix<T>,
    op: Op,
    k: usize,
    algorithm: SpmmAlgorithm,
    options: &SpmmOptions,
    rng: &mut Rng,
) -> f64 {
    let matrix = GpuSparse::from_csr(ctx, a, Conversion::Csr).unwrap();
    match op {
        Op::Plain => plan_error(ctx, &Spmm::with_options(ctx, &matrix, k, algorithm, options).unwrap(), a, k, rng),
        Op::Transposed => {
            let a = a.transpose();
            let mut worst = 0f64;
            for reads in [TransposedReads::Permuted, TransposedReads::Ordered] {
                let options = options.transposed_reads(reads);
                let plan = Spmm::transposed_with_options(ctx, &matrix, k, algorithm, &options).unwrap();
                assert!(plan.is_transposed() && plan.transpose_bytes() > 0);
                assert_eq!(plan.transposed_reads(), Some(reads));
                worst = worst.max(plan_error(ctx, &plan, &a, k, rng));
            }
            worst
        }
    }
}

/// [`spmm_error`] for one plan of `op_a·B`.
fn plan_error<T: Scalar>(ctx: &Context, plan: &Spmm<T>, op_a: &CsrMatrix<T>, k: usize, rng: &mut Rng) -> f64 {
    let a = op_a;
    let b = common::dense::<T>(a.cols(), k, rng.next_u64());
    let b_gpu = GpuDense::upload(ctx, &b, DenseLayout::RowMajor).unwrap();
    let magnitudes = a.map_values(|v| T::from_f64(v.to_f64().abs()));
    let mut worst = 0f64;
    for (alpha, beta) in [(0.5 + rng.next_f64(), 0.0), (-1.5, 0.25 + rng.next_f64())] {
        let c0 = if beta == 0.0 {
            DenseMatrix::try_new(a.rows(), k, vec![T::from_f64(f64::NAN); a.rows() * k]).unwrap()
        } else {
            common::dense::<T>(a.rows(), k, rng.next_u64())
        };
        let mut c = GpuDense::upload(ctx, &c0, DenseLayout::RowMajor).unwrap();
        plan.run(T::from_f64(alpha), &b_gpu, T::from_f64(beta), &mut c).unwrap();
        let got = c.read_blocking().unwrap();
        let (alpha, beta) = (T::from_f64(alpha).to_f64(), T::from_f64(beta).to_f64());
        let want = spmm_csr(alpha, a, &b, beta, c0.data());
        let terms = spmm_csr(alpha.abs(), &magnitudes, &b, beta.abs(), c0.data());
        worst = worst.max(error_relative_to_terms(got.data(), &want, &terms));
    }
    worst
}

/// Checks `algorithms` on each case at its widths in every context; reports all failures.
fn check_all<T: Scalar>(cases: &[WidthCase<T>], op: Op, algorithms: &[SpmmAlgorithm], seed: u64) {
    check_in(&common::contexts_for::<T>(), cases, op, algorithms, &SpmmOptions::default(), seed)
}

fn check_in<T: Scalar>(
    contexts: &[(&str, &Context)],
    cases: &[WidthCase<T>],
    op: Op,
    algorithms: &[SpmmAlgorithm],
    options: &SpmmOptions,
    seed: u64,
) {
    common::check_widths(contexts, cases, algorithms, SpmmAlgorithm::name, seed, |ctx, a, k, algorithm, rng| {
        spmm_error(ctx, a, op, k, algorithm, options, rng)
    })
}

#[test]
fn spmm_matches_twin_on_generated_matrices_f32() {
    let seed = common::seed("spmm generated f32");
    check_all(&common::generated_widths::<f32>(seed), Op::Plain, &algorithms::<f32>(), seed);
}

#[test]
fn spmm_matches_twin_on_generated_matrices_f64() {
    let seed = common::seed("spmm generated f64");
    check_all(&common::generated_widths::<f64>(seed), Op::Plain, &algorithms::<f64>(), seed);
}

#[test]
fn spmm_matches_twin_on_real_matrices_f32() {
    let seed = common::seed("spmm real f32");
    check_all(&common::real_widths::<f32>(0), Op::Plain, &algorithms::<f32>(), seed);
}

#[test]
fn transposed_spmm_matches_twin_f32() {
    let seed = common::seed("spmm transposed f32");
    let mut cases = common::generated_widths::<f32>(seed);
    cases.extend(common::real_widths::<f32>(3));
    check_all(&cases, Op::Transposed, &algorithms::<f32>(), seed);
}

#[test]
fn spmm_matches_twin_on_real_matrices_f64() {
    let seed = common::seed("spmm real f64");
    check_all(&common::real_widths::<f64>(0), Op::Plain, &algorithms::<f64>(), seed);
}

#[test]
fn transposed_spmm_matches_twin_f64() {
    let seed = common::seed("spmm transposed f64");
    let mut cases = common::generated_widths::<f64>(seed);
    cases.extend(common::real_widths::<f64>(3));
    check_all(&cases, Op::Transposed, &algorithms::<f64>(), seed);
}

/// One row per length around the boundaries the kernels cut at: a tile (one entry per lane
/// of a group) and a chunk (set to two tiles, so that rows of a few dozen entries already
/// make several chunks).
fn boundary_rows<T: Scalar>(tile: usize, seed: u64) -> CsrMatrix<T> {
    let chunk = 2 * tile;
    let lengths = [0, 1, tile - 1, tile, tile + 1, chunk - 1, chunk, chunk + 1, 2 * chunk + 1, 3 * chunk - 1];
    let cols = 3 * chunk + 7;
    let mut rng = Rng::new(seed);
    let mut offsets = vec![0u32];
    let (mut indices, mut values) = (Vec::new(), Vec::new());
    for len in lengths {
        let start = rng.below((cols - len) as u64) as u32;
        indices.extend(start..start + len as u32);
        values.extend((0..len).map(|_| T::from_f64(rng.next_f64() * 2.0 - 1.0)));
        offsets.push(indices.len() as u32);
    }
    CsrMatrix::try_from_csr_data(lengths.len(), cols, offsets, indices, values).unwrap()
}

/// The largest group size of a context: its largest subgroup, or the default workgroup
/// without subgroups.
fn tile(ctx: &Context) -> usize {
    ctx.subgroup_size_range().map_or(64, |r| r.1 as usize)
}

fn check_boundaries<T: Scalar>() {
    let seed = common::seed("spmm boundaries");
    for (mode, ctx) in common::contexts_for::<T>() {
        let tile = tile(ctx);
        let rows = boundary_rows::<T>(tile, seed);
        let options = SpmmOptions::default().chunk_len(2 * tile as u32);
        let mut rng = Rng::new(seed);
        // The transposed product runs on `rows` too: the transpose of its transpose.
        for (op, a) in [(Op::Plain, rows.clone()), (Op::Transposed, rows.transpose())] {
            for k in common::WIDTHS {
                for algorithm in algorithms::<T>() {
                    let error = spmm_error(ctx, &a, op, k, algorithm, &options, &mut rng);
                    assert!(
                        error <= common::tolerance::<T>(),
                        "seed {seed} {mode} k={k} {} transposed={}: error {error:e}",
                        algorithm.name(),
                        op == Op::Transposed
                    );
                }
            }
        }
    }
}

#[test]
fn spmm_is_exact_around_tile_and_chunk_boundaries_f32() {
    check_boundaries::<f32>();
}

#[test]
fn spmm_is_exact_around_tile_and_chunk_boundaries_f64() {
    check_boundaries::<f64>();
}

/// Rows shared by several slots (`row_parts`), their sums added in workgroup memory: 2, 4
/// and 8 slots a row on rows around the tile and chunk lengths (the chunked ones are not
/// split) and a wide matrix, both products, with subgroups and without, f32 and f64; and
/// `bcsstk13`, whose rows the default splits.
fn check_split_rows<T: Scalar>(parts: &[u32]) {
    let seed = common::seed("spmm split rows");
    let bcsstk13 = common::real_matrices::<T>().into_iter().find(|(n, _)| n == "bcsstk13.mtx").unwrap().1;
    let wide = wgsparse::generate::random(20, 300, 0.2, seed).map_values(|v| T::from_f64(v as f64));
    for (mode, ctx) in common::contexts_for::<T>() {
        let tile = tile(ctx);
        let widths = vec![3, 33, 129];
        let cases = vec![
            ("boundary rows".to_string(), boundary_rows::<T>(tile, seed), widths.clone()),
            ("wide 20x300".to_string(), wide.clone(), widths),
        ];
        let algorithms: Vec<_> = algorithms::<T>().into_iter().filter(|&a| a != SpmmAlgorithm::RowGroup).collect();
        for &parts in parts {
            // 256 invocations: at least 8 slots of up to 32 lanes.
            let options = SpmmOptions::default().workgroup_size(256).chunk_len(2 * tile as u32).row_parts(parts);
            for op in [Op::Plain, Op::Transposed] {
                check_in(&[(mode, ctx)], &cases, op, &algorithms, &options, seed);
            }
        }
        // By default bcsstk13 (2,003 rows of ~42 entries) is split.
        let matrix = GpuSparse::from_csr(ctx, &bcsstk13, Conversion::Csr).unwrap();
        let plan = Spmm::new(ctx, &matrix, 32, SpmmAlgorithm::Auto).unwrap();
        assert!(plan.row_parts() > 1, "{mode}: {plan:?}");
        let error = plan_error(ctx, &plan, &bcsstk13, 32, &mut Rng::new(seed));
        assert!(error <= common::tolerance::<T>(), "seed {seed} {mode} bcsstk13 default: error {error:e}");
    }
}

#[test]
fn split_rows_match_twin_f32() {
    check_split_rows::<f32>(&[2, 4, 8]);
}

#[test]
fn split_rows_match_twin_f64() {
    check_split_rows::<f64>(&[4]);
}

#[test]
fn spmm_is_correct_for_every_tuning() {
    let seed = common::seed("spmm tunings");
    let cases: Vec<_> = common::sparse_dense_cases::<f32>(seed)
        .into_iter()
        .filter(|(n, _)| n.starts_with("rmat") || n.starts_with("dense row"))
        .map(|(n, a)| (n, a, vec![3, 129]))
        .collect();
    for (mode, ctx) in common::contexts() {
        let smallest = ctx.subgroup_size_range().map_or(32, |r| r.0);
        let mut lanes = 1;
        while lanes <= smallest.min(32) {
            let options = SpmmOptions::default().lanes(lanes).workgroup_size(if lanes == 1 { 64 } else { 256 });
            eprintln!("{mode}: lanes {lanes}");
            check_in(&[(mode, ctx)], &cases, Op::Plain, &algorithms::<f32>(), &options, seed);
            lanes *= 4;
        }
    }
}

/// Groups of rows taken as one run of entries: groups of one, of a few rows and of more rows
/// than a tile holds entries, over empty rows, rows ending inside a batch and tails shorter
/// than a group; both products.
#[test]
fn grouped_rows_match_twin() {
    let seed = common::seed("spmm grouped rows");
    let cases: Vec<_> = common::sparse_dense_cases::<f32>(seed)
        .into_iter()
        .filter(|(n, _)| !n.starts_with("dense row"))
        .chain([("sparse 300x40 (empty rows)".to_string(), wgsparse::generate::random(300, 40, 0.02, seed))])
        .map(|(n, a)| (n, a, vec![3, 33]))
        .collect();
    for group in [1, 2, 7, 45] {
        let options = SpmmOptions::default().group_rows(group);
        for op in [Op::Plain, Op::Transposed] {
            eprintln!("group_rows {group}");
            check_in(&common::contexts_for::<f32>(), &cases, op, &[SpmmAlgorithm::Rode], &options, seed);
        }
    }
}

#[test]
fn auto_is_rode_and_deterministic() {
    let seed = common::seed("spmm determinism");
    let a = wgsparse::generate::dense_row_mix(1500, 1400, seed);
    let ctx = common::context();
    let b = GpuDense::upload(ctx, &common::dense::<f32>(1500, 40, seed), DenseLayout::RowMajor).unwrap();
    // The transposed plan runs on Aᵀ's transpose, whose long row is then split into chunks.
    for op in [Op::Plain, Op::Transposed] {
        let input = if op == Op::Plain { a.clone() } else { a.transpose() };
        let matrix = GpuSparse::from_csr(ctx, &input, Conversion::Csr).unwrap();
        let plans = [SpmmAlgorithm::Auto, SpmmAlgorithm::RowGroup].into_iter().flat_map(|algorithm| match op {
            Op::Plain => vec![Spmm::new(ctx, &matrix, 40, algorithm).unwrap()],
            Op::Transposed => [TransposedReads::Permuted, TransposedReads::Ordered]
                .map(|reads| {
                    let options = SpmmOptions::default().transposed_reads(reads);
                    Spmm::transposed_with_options(ctx, &matrix, 40, algorithm, &options).unwrap()
                })
                .into(),
        });
        for plan in plans {
            assert!(plan.algorithm().deterministic());
            let mut runs = Vec::new();
            for _ in 0..3 {
                let mut c = GpuDense::zeros(ctx, 1500, 40, DenseLayout::RowMajor).unwrap();
                plan.run(1.0f32, &b, 0.0, &mut c).unwrap();
                runs.push(c.read_blocking().unwrap().into_data().iter().map(|v| v.to_bits()).collect::<Vec<_>>());
            }
            assert!(runs.windows(2).all(|w| w[0] == w[1]), "{} differs between runs", plan.algorithm().name());
        }
    }
    let matrix = GpuSparse::from_csr(ctx, &a, Conversion::Csr).unwrap();
    assert_eq!(Spmm::new(ctx, &matrix, 40, SpmmAlgorithm::Auto).unwrap().algorithm(), SpmmAlgorithm::Rode);
}

#[test]
fn spmm_with_alpha_zero_only_scales_c() {
    // NaN in A and B must not leak into C ← β·C, and β = 0 ignores NaN in C.
    let a = CsrMatrix::try_from_csr_data(3, 2, vec![0, 1, 2, 2], vec![0, 1], vec![f32::NAN, 1.0]).unwrap();
    let b = DenseMatrix::try_new(2, 3, vec![1.0, f32::INFINITY, 2.0, f32::NAN, 1.0, 1.0]).unwrap();
    for (mode, ctx) in common::contexts() {
        let matrix = GpuSparse::from_csr(ctx, &a, Conversion::Csr).unwrap();
        let b = GpuDense::upload(ctx, &b, DenseLayout::RowMajor).unwrap();
        for algorithm in algorithms::<f32>() {
            let plan = Spmm::new(ctx, &matrix, 3, algorithm).unwrap();
            let c0 = DenseMatrix::try_new(3, 3, (1..=9).map(|v| v as f32).collect()).unwrap();
            let mut c = GpuDense::upload(ctx, &c0, DenseLayout::RowMajor).unwrap();
            plan.run(0.0f32, &b, 2.0, &mut c).unwrap();
            let want: Vec<f32> = (1..=9).map(|v| 2.0 * v as f32).collect();
            assert_eq!(c.read_blocking().unwrap().data(), &want[..], "{mode} {}", algorithm.name());
            let nan = DenseMatrix::try_new(3, 3, vec![f32::NAN; 9]).unwrap();
            let mut c = GpuDense::upload(ctx, &nan, DenseLayout::RowMajor).unwrap();
            plan.run(0.0f32, &b, 0.0, &mut c).unwrap();
            assert_eq!(c.read_blocking().unwrap().data(), &[0.0; 9], "{mode} {}", algorithm.name());
        }
    }
}

#[test]
fn spmm_takes_alpha_and_beta_from_device_scalars() {
    let seed = common::seed("spmm device scalars");
    let a = wgsparse::generate::rmat(8, 6, 0.57, 0.19, 0.19, seed);
    let ctx = common::context();
    let matrix = GpuSparse::from_csr(ctx, &a, Conversion::Csr).unwrap();
    let b = common::dense::<f32>(a.cols(), 5, seed);
    let c0 = common::dense::<f32>(a.rows(), 5, seed + 1);
    let scalars = ctx.upload(&[7.0f32, 1.5, -0.75]).unwrap();
    for algorithm in algorithms::<f32>() {
        let plan = Spmm::new(ctx, &matrix, 5, algorithm).unwrap();
        let mut c = GpuDense::upload(ctx, &c0, DenseLayout::RowMajor).unwrap();
        let mut batch = ctx.batch();
        plan.record(
            &mut batch.recorder(),
            wgsparse::ScalarArg::Device { vector: &scalars, index: 1 },
            &GpuDense::upload(ctx, &b, DenseLayout::RowMajor).unwrap(),
            wgsparse::ScalarArg::Device { vector: &scalars, index: 2 },
            &mut c,
        )
        .unwrap();
        batch.submit().unwrap();
        let error = relative_error(c.read_blocking().unwrap().data(), &spmm_csr(1.5, &a, &b, -0.75, c0.data()));
        assert!(error <= 1e-5, "{}: error {error:e}", algorithm.name());
    }
}

#[test]
fn spmm_refuses_misuse_before_dispatching() {
    let ctx = common::context();
    let a = wgsparse::generate::random(40, 30, 0.2, 5);
    let matrix = GpuSparse::from_csr(ctx, &a, Conversion::Csr).unwrap();
    let plan = Spmm::new(ctx, &matrix, 4, SpmmAlgorithm::Auto).unwrap();
    let nan = |rows, cols| DenseMatrix::try_new(rows, cols, vec![f32::NAN; rows * cols]).unwrap();
    let b = GpuDense::upload(ctx, &common::dense::<f32>(30, 4, 1), DenseLayout::RowMajor).unwrap();
    let mut c = GpuDense::upload(ctx, &nan(40, 4), DenseLayout::RowMajor).unwrap();
    let cases: Vec<(&str, GpuDense<f32>, bool)> = vec![
        ("B rows", GpuDense::zeros(ctx, 31, 4, DenseLayout::RowMajor).unwrap(), false),
        ("B columns", GpuDense::zeros(ctx, 30, 5, DenseLayout::RowMajor).unwrap(), false),
        ("C rows", GpuDense::zeros(ctx, 39, 4, DenseLayout::RowMajor).unwrap(), true),
        ("C columns", GpuDense::zeros(ctx, 40, 3, DenseLayout::RowMajor).unwrap(), true),
    ];
    for (what, m, is_c) in cases {
        let mut m = m;
        let result = if is_c { plan.run(1.0f32, &b, 0.0, &mut m) } else { plan.run(1.0f32, &m, 0.0, &mut c) };
        assert!(matches!(result, Err(Error::DimensionMismatch { what: w, .. }) if w == what), "{what}: {result:?}");
    }
    // The transposed plan takes B with A's rows and C with A's columns.
    let transposed = Spmm::transposed(ctx, &matrix, 4, SpmmAlgorithm::Auto).unwrap();
    let result = transposed.run(1.0f32, &b, 0.0, &mut c);
    assert!(matches!(result, Err(Error::DimensionMismatch { what: "B rows", .. })), "{result:?}");
    let col_major = GpuDense::upload(ctx, &common::dense::<f32>(30, 4, 1), DenseLayout::ColMajor).unwrap();
    assert!(matches!(plan.run(1.0f32, &col_major, 0.0, &mut c), Err(Error::Unsupported(_))));
    // Nothing was dispatched: C is still all NaN.
    assert!(c.read_blocking().unwrap().data().iter().all(|v| v.is_nan()));
    // Operands of another context.
    let other = &common::contexts().last().unwrap().1;
    let b_other = GpuDense::upload(other, &common::dense::<f32>(30, 4, 1), DenseLayout::RowMajor).unwrap();
    assert!(plan.run(1.0f32, &b_other, 0.0, &mut c).is_err());
    // Bad tunings and f64 atomics.
    for options in [
        SpmmOptions::default().lanes(3),
        SpmmOptions::default().lanes(2).chunk_len(7),
        SpmmOptions::default().workgroup_size(100),
        SpmmOptions::default().group_rows(0),
        SpmmOptions::default().group_rows(1025),
        // How to read A's values on its transpose means nothing for A·B.
        SpmmOptions::default().transposed_reads(TransposedReads::Permuted),
        // Slots per row: powers of two within a workgroup's slots, with one-row groups.
        SpmmOptions::default().row_parts(3),
        SpmmOptions::default().workgroup_size(64).lanes(1).row_parts(128),
        SpmmOptions::default().group_rows(2).row_parts(2),
    ] {
        assert!(
            matches!(
                Spmm::with_options(ctx, &matrix, 4, SpmmAlgorithm::Rode, &options),
                Err(Error::InvalidArgument(_))
            ),
            "{options:?}"
        );
        // A transposed plan checks the same options (except the reads, which it takes)
        // before it builds the transpose.
        if options.transposed_reads.is_none() {
            let transposed = Spmm::transposed_with_options(ctx, &matrix, 4, SpmmAlgorithm::Rode, &options);
            assert!(matches!(transposed, Err(Error::InvalidArgument(_))), "Aᵀ: {options:?}");
        }
    }
    let a64 = GpuSparse::from_csr(ctx, &a.map_values(|v| v as f64), Conversion::Csr).unwrap();
    assert!(matches!(Spmm::new(ctx, &a64, 4, SpmmAlgorithm::RodeAtomic), Err(Error::Unsupported(_))));
    let baseline = Spmm::with_options(ctx, &matrix, 4, SpmmAlgorithm::RowGroup, &SpmmOptions::default().row_parts(2));
    assert!(matches!(baseline, Err(Error::InvalidArgument(_))), "{baseline:?}");
    let ell = GpuSparse::from_csr(ctx, &a, Conversion::Ell(Default::default())).unwrap();
    assert!(matches!(Spmm::new(ctx, &ell, 4, SpmmAlgorithm::Rode), Err(Error::InvalidArgument(_))));
    for sddmm_options in [
        wgsparse::ops::SddmmOptions::default().transposed_reads(TransposedReads::Ordered),
        wgsparse::ops::SddmmOptions::default().row_parts(2),
    ] {
        let refused = Sddmm::with_options(ctx, &matrix, 4, SddmmAlgorithm::Auto, &sddmm_options);
        assert!(matches!(refused, Err(Error::InvalidArgument(_))), "{refused:?}");
    }
}

/// The default way a transposed plan reads A's values follows the size of A's values:
/// through the permutation up to `TransposedReads::PERMUTED_MAX_BYTES`, from the plan's
/// ordered copy above it (which costs the copy's bytes).
#[test]
fn transposed_reads_default_by_size() {
    let limit = TransposedReads::PERMUTED_MAX_BYTES;
    assert_eq!(TransposedReads::default_for(limit), TransposedReads::Permuted);
    assert_eq!(TransposedReads::default_for(limit + 1), TransposedReads::Ordered);
    let ctx = common::context();
    // 4 MiB of f32 values and one value more.
    let entries = (limit / 4) as usize;
    for (nnz, reads) in [(entries, TransposedReads::Permuted), (entries + 1, TransposedReads::Ordered)] {
        let (rows, cols) = (1 + nnz / 1024, 1024);
        let offsets: Vec<u32> = (0..=rows).map(|r| (r * cols).min(nnz) as u32).collect();
        let indices: Vec<u32> = (0..nnz).map(|e| (e % cols) as u32).collect();
        let a = CsrMatrix::try_from_csr_data(rows, cols, offsets, indices, vec![1.0f32; nnz]).unwrap();
        let matrix = GpuSparse::from_csr(ctx, &a, Conversion::Csr).unwrap();
        let plan = Spmm::transposed(ctx, &matrix, 1, SpmmAlgorithm::Auto).unwrap();
        assert_eq!(plan.transposed_reads(), Some(reads), "{nnz} entries");
        let pattern = (cols as u64 + 1 + 2 * nnz as u64) * 4;
        let copies = match reads {
            TransposedReads::Permuted => 0,
            _ => nnz as u64 * 12,
        };
        assert_eq!(plan.transpose_bytes(), pattern + copies, "{nnz} entries");
        assert_eq!(Spmm::new(ctx, &matrix, 1, SpmmAlgorithm::Auto).unwrap().transposed_reads(), None);
    }
}

/// `a`'s pattern with `values`.
fn with_values<T: Scalar>(a: &CsrMatrix<T>, values: Vec<T>) -> CsrMatrix<T> {
    CsrMatrix::try_from_csr_data(a.rows(), a.cols(), a.row_offsets().to_vec(), a.col_indices().to_vec(), values)
        .unwrap()
}

/// A transposed plan that reads A's values from its ordered copy copies them into the
/// transpose's order and then copies only what changed, and one that reads them through the
/// permutation reads them at every run: either way, every way A's values can change between
/// runs must reach the product. Through
/// `update_values`; across a run with α = 0 (which records no product) and a batch recorded
/// and dropped unsubmitted; through the caller's own write to the buffer; and inside one
/// batch, an SDDMM writing a matrix between two runs on it (a graph network's attention
/// scores, then `scoresᵀ·B`).
fn transposed_plan_follows_a_values<T: Scalar>() {
    let seed = common::seed("spmm transposed values");
    let a = wgsparse::generate::rmat(8, 6, 0.57, 0.19, 0.19, seed).map_values(|v| T::from_f64(v as f64));
    let k = 5;
    let mut rng = Rng::new(seed);
    let b = common::dense::<T>(a.rows(), k, rng.next_u64());
    let check = |c: &GpuDense<T>, values: &CsrMatrix<T>, what: &str| {
        let want = spmm_csr(1.0, &values.transpose(), &b, 0.0, &[]);
        let error = relative_error(c.read_blocking().unwrap().data(), &want);
        assert!(error <= common::tolerance::<T>(), "{} {what}: error {error:e}", T::KIND.name());
    };
    let contexts = common::contexts_for::<T>();
    let runs = contexts.iter().flat_map(|c| [TransposedReads::Permuted, TransposedReads::Ordered].map(|r| (c, r)));
    for (&(mode, ctx), reads) in runs {
        let what = |step: &str| format!("{mode} {} reads: {step}", reads.name());
        let options = SpmmOptions::default().transposed_reads(reads);
        let mut matrix = GpuSparse::from_csr(ctx, &a, Conversion::Csr).unwrap();
        let plan = Spmm::transposed_with_options(ctx, &matrix, k, SpmmAlgorithm::Auto, &options).unwrap();
        let b_gpu = GpuDense::upload(ctx, &b, DenseLayout::RowMajor).unwrap();
        let mut c = GpuDense::zeros(ctx, a.cols(), k, DenseLayout::RowMajor).unwrap();
        let run = |c: &mut GpuDense<T>| plan.run(T::from_f64(1.0), &b_gpu, T::default(), c).unwrap();
        run(&mut c);
        check(&c, &a, &what("first run"));
        // Every third value changed (one to 0.0) through the matrix.
        let mut values = a.values().to_vec();
        values.iter_mut().step_by(3).for_each(|v| *v = T::from_f64(v.to_f64() * -2.0 + 0.5));
        values[1] = T::from_f64(0.0);
        let changed = with_values(&a, values);
        matrix.update_values(&changed).unwrap();
        run(&mut c);
        check(&c, &changed, &what("after update_values"));
        // A change, then a run with α = 0 (no product, C ← β·C), then a run with α = 1.
        let negated = with_values(&a, changed.values().iter().map(|v| T::from_f64(-v.to_f64())).collect());
        matrix.update_values(&negated).unwrap();
        plan.run(T::default(), &b_gpu, T::from_f64(1.0), &mut c).unwrap();
        check(&c, &changed, &what("a run with α = 0 leaves C"));
        run(&mut c);
        check(&c, &negated, &what("after a run with α = 0"));
        // A change, then a run recorded into a batch that is dropped unsubmitted.
        let halved = with_values(&a, a.values().iter().map(|v| T::from_f64(v.to_f64() * 0.5)).collect());
        matrix.update_values(&halved).unwrap();
        let mut dropped = ctx.batch();
        plan.record(&mut dropped.recorder(), T::from_f64(1.0), &b_gpu, T::default(), &mut c).unwrap();
        drop(dropped);
        run(&mut c);
        check(&c, &halved, &what("after a dropped batch"));
        // All of them, through the buffer, behind the matrix's back.
        let wgsparse::matrix::PanelStorage::Csr(csr) = matrix.panels()[0].storage() else { unreachable!() };
        let rewritten = with_values(&a, (0..a.nnz()).map(|i| T::from_f64((i % 13) as f64 - 6.0)).collect());
        csr.values().write(rewritten.values()).unwrap();
        run(&mut c);
        check(&c, &rewritten, &what("after a write to the buffer"));
        // SDDMM into a matrix of A's pattern between two runs of one batch on it.
        let h = [common::dense::<T>(a.rows(), 4, rng.next_u64()), common::dense::<T>(a.rows(), 4, rng.next_u64())];
        let h_gpu = h.each_ref().map(|h| GpuDense::upload(ctx, h, DenseLayout::RowMajor).unwrap());
        let sddmm = Sddmm::new(ctx, &matrix, 4, SddmmAlgorithm::Auto).unwrap();
        let mut scores = matrix.zeros_like(ctx).unwrap();
        let scores_plan = Spmm::transposed_with_options(ctx, &scores, k, SpmmAlgorithm::Auto, &options).unwrap();
        let mut outputs = [c, GpuDense::zeros(ctx, a.cols(), k, DenseLayout::RowMajor).unwrap()];
        let mut batch = ctx.batch();
        for (h, out) in h_gpu.iter().zip(outputs.iter_mut()) {
            let mut rec = batch.recorder();
            sddmm.record(&mut rec, T::from_f64(1.0), h, h, T::default(), &mut scores).unwrap();
            scores_plan.record(&mut rec, T::from_f64(1.0), &b_gpu, T::default(), out).unwrap();
        }
        batch.submit().unwrap();
        for (h, out) in h.iter().zip(&outputs) {
            let scores = sddmm_csr(1.0, &rewritten, h, h, 0.0, &[]).into_iter().map(T::from_f64).collect();
            check(out, &with_values(&a, scores), &what("after SDDMM in the same batch"));
        }
    }
}

#[test]
fn transposed_plan_follows_a_values_f32() {
    transposed_plan_follows_a_values::<f32>();
}

#[test]
fn transposed_plan_follows_a_values_f64() {
    transposed_plan_follows_a_values::<f64>();
}
