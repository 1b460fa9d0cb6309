//! Device limits are data: matrices past the binding or buffer size are split into row
//! panels, dispatches past 65,535 workgroups fold into two dimensions, and what cannot be
//! split is refused with an error naming the limit. Run on a context opened with
//! deliberately small limits.

mod common;

use wgsparse::format::{EllOptions, MAX_VALUE_TABLE};
use wgsparse::generate::{self, Rng};
use wgsparse::matrix::PanelStorage;
use wgsparse::ops::{
    Gemv, GemvOptions, Sddmm, SddmmAlgorithm, SddmmOptions, Spmm, SpmmAlgorithm, Spmv, SpmvAlgorithm, SpmvOptions,
    Transpose,
};
use wgsparse::reference::{gemv_dense, gemv_dense_t, relative_error, sddmm_csr, spmm_csr, spmv_csr};
use wgsparse::{
    Context, ContextOptions, Conversion, CsrMatrix, DenseLayout, DenseMatrix, Error, Format, GpuDense, GpuSparse,
};

const BINDING: u64 = 16 * 1024;

/// A context whose storage bindings hold 4096 words, whose buffers hold 1 MiB, and which
/// dispatches at most 16 workgroups per dimension.
fn small_context(subgroups: bool) -> Context {
    let probe = &common::contexts()[0].1;
    let mut limits = probe.limits().clone();
    limits.max_storage_buffer_binding_size = BINDING;
    limits.max_buffer_size = 64 * BINDING;
    limits.max_compute_workgroups_per_dimension = 16;
    limits.min_storage_buffer_offset_alignment = 256;
    let options =
        ContextOptions { limits: Some(limits), ..ContextOptions::from_env().unwrap() }.with_subgroups(subgroups);
    Context::new_blocking(options).unwrap()
}

fn check(
    ctx: &Context,
    a: &CsrMatrix<f32>,
    algorithm: SpmvAlgorithm,
    options: SpmvOptions,
    rng: &mut Rng,
) -> (usize, f64) {
    let format = algorithm.format().unwrap();
    let conversion = match format {
        Format::Ell => Conversion::Ell(wgsparse::format::EllOptions::with_max_padding_ratio(f64::INFINITY)),
        f => Conversion::of(f),
    };
    let matrix = GpuSparse::from_csr(ctx, a, conversion).unwrap();
    if matches!(format, Format::Ell | Format::Hyb) {
        // Panels past the first offset their diagonal by their first row: exercise that.
        assert_eq!(matrix.index_bits(), 16, "{} stores 16-bit diagonal offsets", algorithm.name());
    }
    let plan = Spmv::with_options(ctx, &matrix, algorithm, &options).unwrap();
    let x = generate::random_vector(a.cols(), rng.next_u64());
    let y0 = generate::random_vector(a.rows(), rng.next_u64());
    let mut y = ctx.upload(&y0).unwrap();
    plan.run(1.25, &ctx.upload(&x).unwrap(), -0.5, &mut y).unwrap();
    let error = relative_error(&y.read_blocking().unwrap(), &spmv_csr(1.25, a, &x, -0.5, &y0));
    (matrix.panel_count(), error)
}

#[test]
fn matrices_past_the_binding_limit_are_split_into_row_panels() {
    let seed = common::seed("row panels");
    let mut rng = Rng::new(seed);
    // 20,000 rows × ~5 entries: 400 KB of indices against 16 KB bindings. x (2,000
    // columns) fits one binding; y is bound panel by panel.
    let a = generate::random(20_000, 2_000, 5.0 / 2_000.0, seed);
    for subgroups in [true, false] {
        let ctx = small_context(subgroups);
        for algorithm in SpmvAlgorithm::ALL {
            let (panels, error) = check(&ctx, &a, algorithm, SpmvOptions::default(), &mut rng);
            assert!(panels > 20, "{}: only {panels} panels", algorithm.name());
            assert!(error <= 1e-5, "seed {seed} subgroups={subgroups} {}: error {error:e}", algorithm.name());
        }
    }
}

/// ELL with its values coded, cut into row panels: each panel's offsets count from its own
/// first row, and an update that one panel's table cannot hold is refused before any panel
/// is written.
#[test]
fn coded_panels_offset_their_rows_and_refuse_updates_whole() {
    let seed = common::seed("coded panels");
    let mut rng = Rng::new(seed);
    let quantized = |a: &CsrMatrix<f32>, levels: usize| a.map_values(|v| (v * levels as f32).floor() - 3.0);
    let a = quantized(&generate::random(20_000, 2_000, 5.0 / 2_000.0, seed), 7);
    let options =
        EllOptions { value_table_limit: MAX_VALUE_TABLE, ..EllOptions::with_max_padding_ratio(f64::INFINITY) };
    let x = generate::random_vector(a.cols(), rng.next_u64());
    for subgroups in [true, false] {
        let ctx = small_context(subgroups);
        let x_gpu = ctx.upload(&x).unwrap();
        let mut matrix = GpuSparse::from_csr(&ctx, &a, Conversion::Ell(options)).unwrap();
        assert!(matrix.panel_count() > 20, "{} panels", matrix.panel_count());
        assert!(
            matrix.panels().iter().all(|p| matches!(p.storage(), PanelStorage::Ell(m) if m.value_table())),
            "every panel coded"
        );
        let plan = Spmv::new(&ctx, &matrix, SpmvAlgorithm::Ell).unwrap();
        let mut y = ctx.zeros::<f32>(a.rows()).unwrap();
        let mut product = |b: &CsrMatrix<f32>, what: &str| {
            y.write(&vec![f32::NAN; a.rows()]).unwrap();
            plan.run(1.0, &x_gpu, 0.0, &mut y).unwrap();
            let error = relative_error(&y.read_blocking().unwrap(), &spmv_csr(1.0, b, &x, 0.0, &[]));
            assert!(error <= 1e-5, "seed {seed} subgroups={subgroups} {what}: {error:e}");
        };
        product(&a, "uploaded");
        let b = quantized(&a, 3);
        matrix.update_values(&b).unwrap();
        product(&b, "updated");
        // New values everywhere, the last rows' all distinct: more than their panels' tables
        // hold (a quarter of their entries), where the first panels' would fit. Refused, and
        // every panel keeps b.
        let last_rows = b.row_offsets()[19_000] as usize;
        let mut c = quantized(&a, 5);
        c.values_mut().iter_mut().enumerate().skip(last_rows).for_each(|(e, v)| *v = e as f32);
        let err = matrix.update_values(&c).unwrap_err();
        assert!(matches!(err, Error::Unsupported(_)), "{err}");
        product(&b, "after a refused update");
    }
}

#[test]
fn dispatches_past_the_workgroup_limit_fold_into_two_dimensions() {
    let seed = common::seed("folded dispatch");
    let mut rng = Rng::new(seed);
    // Workgroups of 32 over 1,500 rows (or entries): 47 to 188 workgroups per
    // dispatch against a limit of 16 per dimension. A dispatch that did not fold would be
    // rejected by wgpu and leave y wrong.
    let a = generate::random(1_500, 300, 1.0 / 300.0, seed);
    let ctx = small_context(true);
    for algorithm in SpmvAlgorithm::ALL {
        let (_, error) = check(&ctx, &a, algorithm, SpmvOptions::default().workgroup_size(32).merge_items(1), &mut rng);
        assert!(error <= 1e-5, "seed {seed} {}: error {error:e}", algorithm.name());
    }
}

/// A grid folded into two dimensions can hold more workgroups than asked (61 as 6 × 11):
/// the kernels that index their work by workgroup must ignore the extra ones. The transpose's
/// sort (about 120 blocks of 256 entries, in a 12 × 12 grid at most), SpMM's chunk
/// combine (a workgroup per long row) and SDDMM's groups per entry are; SDDMM's entries past
/// the grid the device allows are taken in rounds.
#[test]
fn extra_workgroups_of_a_folded_grid_do_nothing() {
    let seed = common::seed("folded grid extras");
    let probe = &common::contexts()[0].1;
    let mut limits = probe.limits().clone();
    limits.max_compute_workgroups_per_dimension = 12;
    let ctx =
        Context::new_blocking(ContextOptions { limits: Some(limits.clone()), ..ContextOptions::from_env().unwrap() })
            .unwrap();
    let k = 32;
    // 61 rows of about 500 entries, each split into chunks: 61 long rows to combine. About
    // 30,500 entries (± 150): the transpose's 256-entry blocks stay far below the 144 a
    // 12 × 12 grid holds (at density 0.3, 36,600 ± 160 entries went past it for some seeds).
    let wide = generate::random(61, 2_000, 0.25, seed);
    for (a, transposed) in [(wide.clone(), false), (wide.transpose(), true)] {
        let matrix = GpuSparse::from_csr(&ctx, &a, Conversion::Csr).unwrap();
        let op_a = if transposed { a.transpose() } else { a.clone() };
        let b = common::dense::<f32>(op_a.cols(), k, seed);
        let c0 = common::dense::<f32>(op_a.rows(), k, seed + 1);
        let plan = match transposed {
            true => Spmm::transposed(&ctx, &matrix, k, SpmmAlgorithm::Rode),
            false => Spmm::new(&ctx, &matrix, k, SpmmAlgorithm::Rode),
        }
        .unwrap();
        let mut c = GpuDense::upload(&ctx, &c0, DenseLayout::RowMajor).unwrap();
        plan.run(1.25, &GpuDense::upload(&ctx, &b, DenseLayout::RowMajor).unwrap(), -0.5, &mut c).unwrap();
        let error = relative_error(c.read_blocking().unwrap().data(), &spmm_csr(1.25, &op_a, &b, -0.5, c0.data()));
        assert!(error <= 1e-5, "seed {seed} transposed={transposed}: error {error:e}");
    }
    // SDDMM by entries, 128 groups of 2 lanes a workgroup, β applied once per entry: 7,750
    // entries are 61 workgroups, folded as 6 × 11 (5 extra, which must take no entry);
    // 31,000 are 243, past the 144 the grid allows, so each group takes two (the no-subgroup
    // path then meets its barriers in two rounds).
    for (rows, row_len) in [(62u32, 125u32), (62, 500)] {
        for subgroups in [true, false] {
            let ctx = Context::new_blocking(ContextOptions {
                limits: Some(limits.clone()),
                ..ContextOptions::from_env().unwrap().with_subgroups(subgroups)
            })
            .unwrap();
            let nnz = (rows * row_len) as usize;
            let pattern = |values: Vec<f32>| {
                CsrMatrix::try_from_csr_data(
                    rows as usize,
                    2_000,
                    (0..=rows).map(|r| r * row_len).collect(),
                    (0..rows).flat_map(|r| (0..row_len).map(move |j| j * 3 + r)).collect(),
                    values,
                )
                .unwrap()
            };
            let a = pattern(common::dense::<f32>(1, nnz, seed).into_data());
            let matrix = GpuSparse::from_csr(&ctx, &a, Conversion::Csr).unwrap();
            let options = SddmmOptions::default().lanes(2).workgroup_size(256);
            let plan = Sddmm::with_options(&ctx, &matrix, k, SddmmAlgorithm::Entries, &options).unwrap();
            let (b1, b2) = (common::dense::<f32>(rows as usize, k, seed + 2), common::dense::<f32>(2_000, k, seed + 3));
            let c0 = common::dense::<f32>(1, nnz, seed + 4).into_data();
            let mut c = GpuSparse::from_csr(&ctx, &pattern(c0.clone()), Conversion::Csr).unwrap();
            let upload = |m: &DenseMatrix<f32>| GpuDense::upload(&ctx, m, DenseLayout::RowMajor).unwrap();
            plan.run(0.75, &upload(&b1), &upload(&b2), -0.5, &mut c).unwrap();
            let PanelStorage::Csr(values) = c.panels()[0].storage() else { unreachable!() };
            let got = values.values().read_blocking().unwrap();
            let error = relative_error(&got, &sddmm_csr(0.75, &a, &b1, &b2, -0.5, &c0));
            assert!(error <= 1e-5, "seed {seed} sddmm entries, {nnz} entries, subgroups={subgroups}: error {error:e}");
        }
    }
}

#[test]
fn what_cannot_be_split_is_refused_with_the_limit_named() {
    let ctx = small_context(true);
    // One row of 5,000 entries: 20 KB of column indices in a single row block.
    let len = 5_000u32;
    let long_row =
        CsrMatrix::try_from_csr_data(1, len as usize, vec![0, len], (0..len).collect(), vec![1.0; len as usize])
            .unwrap();
    let err = GpuSparse::from_csr(&ctx, &long_row, Conversion::Csr).unwrap_err();
    assert!(matches!(err, Error::LimitExceeded { limit: "max_storage_buffer_binding_size", .. }), "{err}");

    // x of 5,000 columns does not fit one binding: the product is refused, y untouched.
    let wide = generate::random(100, 5_000, 0.001, 1);
    let matrix = GpuSparse::from_csr(&ctx, &wide, Conversion::Csr).unwrap();
    let plan = Spmv::new(&ctx, &matrix, SpmvAlgorithm::CsrThread).unwrap();
    let x = ctx.upload(&vec![1.0f32; 5_000]).unwrap();
    let mut y = ctx.upload(&[3.0f32; 100]).unwrap();
    let err = plan.run(1.0, &x, 0.0, &mut y).unwrap_err();
    assert!(matches!(err, Error::LimitExceeded { limit: "max_storage_buffer_binding_size", .. }), "{err}");
    assert_eq!(y.read_blocking().unwrap(), vec![3.0; 100]);

    // A vector past max_buffer_size is refused before wgpu sees it.
    let err = ctx.zeros::<f32>(BINDING as usize * 16 + 1).unwrap_err();
    assert!(matches!(err, Error::LimitExceeded { limit: "max_buffer_size", .. }), "{err}");
}

#[test]
fn dense_operands_past_the_binding_limit_are_kept_in_row_panels() {
    let seed = common::seed("dense panels");
    let mut rng = Rng::new(seed);
    // k = 20 f32 columns: 204 rows per 16 KB binding, 192 rows per panel. B (700 rows) is 4
    // panels, gathered; C and B1 (1,000 rows) 6 panels, bound block by block; A (≈5,000
    // entries) 2 panels, whose rows cross C's panel boundaries.
    let k = 20;
    let a = generate::random(1_000, 700, 5.0 / 700.0, seed);
    let b = common::dense::<f32>(700, k, rng.next_u64());
    let b1 = common::dense::<f32>(1_000, k, rng.next_u64());
    let c0 = common::dense::<f32>(1_000, k, rng.next_u64());
    for subgroups in [true, false] {
        let ctx = small_context(subgroups);
        let matrix = GpuSparse::from_csr(&ctx, &a, Conversion::Csr).unwrap();
        assert!(matrix.panel_count() >= 2);
        // Aᵀ's permutation indexes one array of A's values: A in panels is refused.
        let refused = Spmm::transposed(&ctx, &matrix, k, SpmmAlgorithm::Auto).unwrap_err();
        assert!(matches!(refused, Error::LimitExceeded { .. }), "{refused}");
        let b_gpu = GpuDense::upload(&ctx, &b, DenseLayout::RowMajor).unwrap();
        assert_eq!(b_gpu.panels().len(), 4);
        // Upload and read back in both layouts, panel by panel.
        for layout in [DenseLayout::RowMajor, DenseLayout::ColMajor] {
            let m = GpuDense::upload(&ctx, &c0, layout).unwrap();
            assert_eq!(m.panels().len(), 6);
            assert_eq!(m.read_blocking().unwrap(), c0, "{layout:?}");
        }
        for algorithm in SpmmAlgorithm::ALL {
            let plan = Spmm::new(&ctx, &matrix, k, algorithm).unwrap();
            let mut c = GpuDense::upload(&ctx, &c0, DenseLayout::RowMajor).unwrap();
            plan.run(1.25, &b_gpu, -0.5, &mut c).unwrap();
            let error = relative_error(c.read_blocking().unwrap().data(), &spmm_csr(1.25, &a, &b, -0.5, c0.data()));
            assert!(error <= 1e-5, "seed {seed} subgroups={subgroups} spmm {}: error {error:e}", algorithm.name());
        }
        let b1_gpu = GpuDense::upload(&ctx, &b1, DenseLayout::RowMajor).unwrap();
        for algorithm in SddmmAlgorithm::ALL {
            let plan = Sddmm::new(&ctx, &matrix, k, algorithm).unwrap();
            let mut c = matrix.zeros_like(&ctx).unwrap();
            plan.run(0.75, &b1_gpu, &b_gpu, 0.0, &mut c).unwrap();
            let got: Vec<f32> = c
                .panels()
                .iter()
                .flat_map(|p| match p.storage() {
                    PanelStorage::Csr(m) => m.values().read_blocking().unwrap(),
                    _ => unreachable!(),
                })
                .collect();
            let error = relative_error(&got, &sddmm_csr(0.75, &a, &b1, &b, 0.0, &[]));
            assert!(error <= 1e-5, "seed {seed} subgroups={subgroups} sddmm {}: error {error:e}", algorithm.name());
        }
        // Five panels of B are more than the kernels gather from: refused, C untouched.
        let wide_a = generate::random(100, 900, 0.01, seed);
        let plan =
            Spmm::new(&ctx, &GpuSparse::from_csr(&ctx, &wide_a, Conversion::Csr).unwrap(), k, SpmmAlgorithm::Auto)
                .unwrap();
        let big_b = GpuDense::zeros(&ctx, 900, k, DenseLayout::RowMajor).unwrap();
        assert_eq!(big_b.panels().len(), 5);
        let mut c = GpuDense::upload(&ctx, &common::dense::<f32>(100, k, 3), DenseLayout::RowMajor).unwrap();
        let err = plan.run(1.0, &big_b, 0.0, &mut c).unwrap_err();
        assert!(matches!(err, Error::LimitExceeded { .. }), "{err}");
        assert_eq!(c.read_blocking().unwrap(), common::dense::<f32>(100, k, 3));
    }
}

#[test]
fn gemv_runs_on_every_panel_of_a_paneled_matrix_in_both_layouts() {
    let seed = common::seed("gemv panels");
    let mut rng = Rng::new(seed);
    for subgroups in [true, false] {
        let ctx = small_context(subgroups);
        // Row panels of 64 rows under 4,096-word bindings (the last one short), ragged row
        // lengths included; the column-major copies keep the same row panels.
        for (rows, cols) in [(300, 40), (150, 60), (1000, 7)] {
            let a = common::dense::<f32>(rows, cols, rng.next_u64());
            for layout in [DenseLayout::RowMajor, DenseLayout::ColMajor] {
                let a_gpu = GpuDense::upload(&ctx, &a, layout).unwrap();
                assert!(a_gpu.panels().len() > 1, "{rows}x{cols}: one panel");
                for t in [Transpose::No, Transpose::Yes] {
                    let (out_len, in_len) = if t == Transpose::No { (rows, cols) } else { (cols, rows) };
                    let x = generate::random_vector(in_len, rng.next_u64());
                    let y0 = generate::random_vector(out_len, rng.next_u64());
                    let mut y = ctx.upload(&y0).unwrap();
                    let plan = Gemv::new(&ctx, &a_gpu, t).unwrap();
                    plan.run(1.25, &a_gpu, &ctx.upload(&x).unwrap(), -0.5, &mut y).unwrap();
                    let want = match t {
                        Transpose::No => gemv_dense(1.25, &a, &x, -0.5, &y0),
                        Transpose::Yes => gemv_dense_t(1.25, &a, &x, -0.5, &y0),
                    };
                    let error = relative_error(&y.read_blocking().unwrap(), &want);
                    assert!(error <= 1e-5, "{rows}x{cols} {layout:?} {t:?}: error {error:e} (seed {seed})");
                }
            }
        }
    }
}

/// Where the adapter caps an invocation's loop iterations (llvmpipe: 65,535 in all), SpMM and
/// SDDMM plans whose slots would walk a row past it (the row algorithms, which do not cut
/// rows) are refused with the limit named; the same row at a length within it is planned, and
/// RoDe's chunks take the long row.
#[test]
fn row_walks_past_the_loop_limit_are_refused() {
    let ctx = common::context();
    let capped = ctx.loop_iteration_limit().is_some();
    let one_row = |len: usize| {
        let a = CsrMatrix::try_from_csr_data(1, len, vec![0, len as u32], (0..len as u32).collect(), vec![1.0f32; len]);
        GpuSparse::from_csr(ctx, &a.unwrap(), Conversion::Csr).unwrap()
    };
    let (short, long) = (one_row(2_000), one_row(300_000));
    let planned = |spmm: wgsparse::Result<Spmm<f32>>, sddmm: wgsparse::Result<Sddmm<f32>>, refused, what: &str| {
        common::planned_unless_refused(spmm, refused, &format!("SpMM, {what}"));
        common::planned_unless_refused(sddmm, refused, &format!("SDDMM, {what}"));
    };
    for (a, refused, what) in [(&short, false, "2,000 entries"), (&long, capped, "300,000 entries")] {
        let spmm = Spmm::new(ctx, a, 4, SpmmAlgorithm::RowGroup);
        let sddmm = Sddmm::new(ctx, a, 4, SddmmAlgorithm::RowGroup);
        planned(spmm, sddmm, refused, what);
    }
    planned(
        Spmm::new(ctx, &long, 4, SpmmAlgorithm::Rode),
        Sddmm::new(ctx, &long, 4, SddmmAlgorithm::Rode),
        false,
        "RoDe",
    );
}

/// The same for SpMV's row algorithms, a lane (csr-thread) or a group of lanes (csr-vector) a
/// row: a row of 600,000 entries is refused where the loop cap would end the walk, and one
/// of 200,000 is summed right (eight entries a step: within the cap).
#[test]
fn spmv_row_walks_past_the_loop_limit_are_refused() {
    let ctx = common::context();
    let capped = ctx.loop_iteration_limit().is_some();
    for (len, refused) in [(200_000usize, false), (600_000, capped)] {
        let values: Vec<f32> = (0..len).map(|j| 1.0 + (j % 5) as f32 / 4.0).collect();
        let a = CsrMatrix::try_from_csr_data(1, len, vec![0, len as u32], (0..len as u32).collect(), values).unwrap();
        let gpu = GpuSparse::from_csr(ctx, &a, Conversion::Csr).unwrap();
        // Positive terms: a walk the cap ended would miss most of them.
        let x: Vec<f32> = (0..len).map(|j| ((j * 13) % 11) as f32 / 10.0 + 0.5).collect();
        let want = spmv_csr(1.0, &a, &x, 0.0, &[0.0]);
        for algorithm in [SpmvAlgorithm::CsrThread, SpmvAlgorithm::CsrVector] {
            let what = format!("{} on {len} entries", algorithm.name());
            if let Some(plan) = common::planned_unless_refused(Spmv::new(ctx, &gpu, algorithm), refused, &what) {
                let mut y = ctx.upload(&[f32::NAN][..]).unwrap();
                plan.run(1.0, &ctx.upload(&x).unwrap(), 0.0, &mut y).unwrap();
                let error = relative_error(&y.read_blocking().unwrap(), &want);
                assert!(error < 1e-4, "{what}: {error:e}");
            }
        }
    }
}

/// Options that lengthen an invocation's walk past the cap are refused there too: GEMV with
/// one lane and one segment for a row of 400,000 elements (100,000 vec4 steps; the default
/// shape cuts it, and is exact), and COO SpMV intervals of 60,000 steps (the default is 32).
#[test]
fn options_past_the_loop_limit_are_refused() {
    let ctx = common::context();
    let capped = ctx.loop_iteration_limit().is_some();
    let cols = 400_000;
    let data: Vec<f32> = (0..cols).map(|j| 0.5 + (j % 3) as f32 / 4.0).collect();
    let host = DenseMatrix::try_new(1, cols, data).unwrap();
    let a = GpuDense::upload(ctx, &host, DenseLayout::RowMajor).unwrap();
    let narrow = GemvOptions { lanes: Some(1), splits: Some(1), ..Default::default() };
    common::planned_unless_refused(Gemv::with_options(ctx, &a, Transpose::No, &narrow), capped, "gemv, one lane");
    let plan = Gemv::new(ctx, &a, Transpose::No).unwrap();
    let x: Vec<f32> = (0..cols).map(|j| ((j * 7) % 5) as f32 / 4.0 + 0.5).collect();
    let mut y = ctx.upload(&[f32::NAN][..]).unwrap();
    plan.run(1.0, &a, &ctx.upload(&x).unwrap(), 0.0, &mut y).unwrap();
    let error = relative_error(&y.read_blocking().unwrap(), &gemv_dense(1.0, &host, &x, 0.0, &[0.0]));
    assert!(error < 1e-5, "gemv, default shape: {error:e}");

    let coo = GpuSparse::from_csr(ctx, &generate::laplacian_2d(8), Conversion::Coo).unwrap();
    for (steps, refused) in [(32, false), (60_000, capped)] {
        let options = SpmvOptions::default().coo_steps(steps);
        let got = Spmv::with_options(ctx, &coo, SpmvAlgorithm::CooSegmented, &options);
        common::planned_unless_refused(got, refused, &format!("coo_steps {steps}"));
    }
}

/// Sizes past what the kernels index (u32 elements) or past usize's arithmetic are typed
/// errors before anything is sized from them: never a panic (a division by a wrapped row size,
/// an overflowed product) nor a wrapped size planned as if small.
#[test]
fn sizes_past_u32_are_refused_without_a_panic() {
    use wgsparse::ops::bitmap::BitmapLu;
    use wgsparse::ops::{BatchedLu, Pivoting};
    let ctx = common::context();
    let limited = |got: Result<(), Error>, what: &str, named: &str| match got {
        Err(Error::LimitExceeded { limit, .. }) => assert!(limit.contains(named), "{what}: refused for {limit}"),
        other => panic!("{what}: {other:?}"),
    };
    let invalid =
        |got: Result<(), Error>, what: &str| assert!(matches!(got, Err(Error::InvalidArgument(_))), "{what}: {got:?}");
    // A vector whose bytes pass u64 once rounded up, and one past u32 elements.
    limited(ctx.zeros::<f32>((1 << 62) - 1).map(drop), "2^62 floats", "");
    limited(ctx.zeros::<f32>(u32::MAX as usize + 1).map(drop), "2^32 floats", "2^32 elements");
    // No rows of 2^62 columns: its row's bytes pass u64.
    limited(GpuDense::<f32>::zeros(ctx, 0, 1 << 62, DenseLayout::RowMajor).map(drop), "0 x 2^62", "");
    let a = GpuSparse::from_csr(ctx, &generate::random(8, 8, 0.5, 1), Conversion::Csr).unwrap();
    invalid(Spmm::<f32>::new(ctx, &a, 1 << 62, SpmmAlgorithm::Auto).map(drop), "SpMM at k = 2^62");
    invalid(Sddmm::<f32>::new(ctx, &a, 1 << 62, SddmmAlgorithm::Auto).map(drop), "SDDMM at k = 2^62");
    // An empty batch of 2^32 x 2^32 matrices (its team of lanes wrapped to 0 before).
    invalid(BatchedLu::<f32>::new(ctx, 1 << 32, 0, Pivoting::Partial).map(drop), "LU of order 2^32");
    invalid(BitmapLu::<f32>::new(ctx, 32, 1 << 58, Pivoting::Partial).map(drop), "2^58 bitmap LUs");
    if ctx.has_timestamps() {
        invalid(wgsparse::record::Profiler::new(ctx, usize::MAX).map(drop), "a profiler of usize::MAX sections");
    }
}
