//! The bitmap format (seed 004) on the GPU against its host type and f64 twins: conversions
//! (CSR, COO with repeats, dense, both ways), element reads and writes (absent and
//! out-of-range queries reported), A ± B, A·B, SpMV and batched LU; densities from 0.1% to
//! 100%, widths 1, 31, 32, 33, 64, 1000 and 100,000 columns, empty rows and columns, 0×0,
//! the repository's real matrices; f32 and f64, subgroups on and off; misuse.

mod common;

use common::{contexts_for, real_matrices, seed, tolerance};
use wgsparse::format::{BitmapMatrix, BitmapOptions};
use wgsparse::generate::{self, Rng};
use wgsparse::matrix::GpuBitmap;
use wgsparse::ops::bitmap::{self, BitmapLu, BitmapSpmv, ElementAccess, MultiplyAlgorithm};
use wgsparse::ops::Pivoting;
use wgsparse::reference::{self, max_relative_error};
use wgsparse::{
    Context, Conversion, CooMatrix, CsrMatrix, DenseLayout, DenseMatrix, Error, Format, FormatError, GpuDense,
    GpuSparse, Scalar,
};

const ANY_RATIO: BitmapOptions = BitmapOptions { max_flag_ratio: f64::INFINITY };

fn to<T: Scalar>(a: CsrMatrix<f32>) -> CsrMatrix<T> {
    a.map_values(|v| T::from_f64(v as f64))
}

fn bitmap<T: Scalar>(a: &CsrMatrix<T>) -> BitmapMatrix<T> {
    BitmapMatrix::from_csr(a, &ANY_RATIO).unwrap()
}

/// Generated shapes: every width the issue names, densities 0.1% to 100%, empty rows and
/// columns, no entries, 0×0, 7×0, 0×7, and rows of 63 nearly full words.
fn generated<T: Scalar>(seed: u64) -> Vec<(String, CsrMatrix<T>)> {
    let shapes: [(usize, usize, f64); 15] = [
        (40, 1, 0.5),
        (37, 31, 0.3),
        (33, 32, 0.1),
        (31, 33, 0.2),
        (64, 64, 1.0),
        (70, 64, 0.001),
        (50, 1000, 0.01),
        (65, 257, 0.05),
        (3, 100_000, 0.001),
        (100, 200, 0.02),
        (20, 300, 0.0),
        (9, 2000, 0.9),
        (0, 0, 0.5),
        (7, 0, 0.5),
        (0, 7, 0.5),
    ];
    shapes
        .iter()
        .enumerate()
        .map(|(s, &(r, c, d))| (format!("{r}x{c} at {d}"), to(generate::random(r, c, d, seed + s as u64))))
        .collect()
}

fn all_cases<T: Scalar>(seed: u64) -> Vec<(String, CsrMatrix<T>)> {
    let mut cases = generated(seed);
    cases.extend(real_matrices::<T>());
    cases
}

/// Compares a GPU result with the twin: the same pattern exactly, values within `tol`.
fn check_same<T: Scalar>(label: &str, got: &BitmapMatrix<T>, want: &BitmapMatrix<f64>, tol: f64) {
    assert_eq!((got.rows(), got.cols()), (want.rows(), want.cols()), "{label}: shape");
    assert_eq!(got.flags(), want.flags(), "{label}: flags");
    assert_eq!(got.row_offsets(), want.row_offsets(), "{label}: row offsets");
    assert_eq!(got.rank_directory(), want.rank_directory(), "{label}: rank directory");
    let error = max_relative_error(got.values(), want.values());
    assert!(error <= tol, "{label}: values off by {error:e} (tolerance {tol:e})");
}

fn conversions<T: Scalar>() {
    let seed = seed("conversions");
    for (mode, ctx) in contexts_for::<T>() {
        for (name, a) in all_cases::<T>(seed) {
            let label = format!("{mode} {} {name}", T::KIND.name());
            let want = bitmap(&a);
            let up = GpuBitmap::upload(ctx, &want).unwrap();
            assert_eq!(up.read_blocking().unwrap(), want, "{label}: upload");

            let csr = GpuSparse::from_csr(ctx, &a, Conversion::Csr).unwrap();
            let from_csr = GpuBitmap::from_sparse(ctx, &csr, &ANY_RATIO).unwrap();
            assert_eq!(from_csr.read_blocking().unwrap(), want, "{label}: from CSR on the GPU");

            let back = up.to_sparse(ctx, Format::Csr).unwrap();
            assert!(back.columns_sorted(), "{label}");
            let host_csr = want.to_csr();
            let mut y = ctx.upload(&vec![T::from_f64(f64::NAN); a.rows()]).unwrap();
            let x: Vec<T> = (0..a.cols()).map(|j| T::from_f64(1.0 + (j % 7) as f64)).collect();
            wgsparse::ops::Spmv::new(ctx, &back, wgsparse::ops::SpmvAlgorithm::Auto)
                .unwrap()
                .run(T::from_f64(1.0), &ctx.upload(&x).unwrap(), T::from_f64(0.0), &mut y)
                .unwrap();
            let zeros = vec![T::from_f64(0.0); a.rows()];
            let y_ref = reference::spmv_csr(1.0, &host_csr, &x, 0.0, &zeros);
            // A's signed entries can cancel in a row, and with a handful of entries (70x64 at
            // 0.001) the largest row may be such a sum: measured against |A|·x (x > 0).
            let terms = reference::spmv_csr(1.0, &common::matrix_magnitudes(&host_csr), &x, 0.0, &zeros);
            let error = reference::max_error_relative_to_terms(&y.read_blocking().unwrap(), &y_ref, &terms);
            assert!(error <= tolerance::<T>(), "{label}: to CSR: error {error:e}");
            let mut back = back;
            back.update_values(&host_csr).expect("the pattern built on the GPU is the host's");

            let coo = up.to_sparse(ctx, Format::Coo).unwrap();
            assert_eq!(
                GpuBitmap::from_sparse(ctx, &coo, &ANY_RATIO).unwrap().read_blocking().unwrap(),
                want,
                "{label}: COO"
            );

            if a.rows() * a.cols() <= 1 << 20 {
                let dense = DenseMatrix::from_csr(&a).unwrap();
                // Stored zeros (one.mtx has some) are not entries of the dense form.
                let want_dense = BitmapMatrix::from_dense(&dense);
                for layout in [DenseLayout::RowMajor, DenseLayout::ColMajor] {
                    let d = up.to_dense(ctx, layout).unwrap();
                    assert_eq!(d.read_blocking().unwrap(), dense, "{label}: to dense {layout:?}");
                    let from = GpuBitmap::from_dense(ctx, &GpuDense::upload(ctx, &dense, layout).unwrap()).unwrap();
                    assert_eq!(from.read_blocking().unwrap(), want_dense, "{label}: from dense {layout:?}");
                }
            }
        }
        // COO with repeated positions, in no order: they add up, as on the host.
        let coo = generate::random_coo(60, 90, 2000, seed);
        let coo = CooMatrix::try_new(
            60,
            90,
            coo.row_indices().to_vec(),
            coo.col_indices().to_vec(),
            coo.values().iter().map(|&v| T::from_f64(v as f64)).collect(),
        )
        .unwrap();
        let want = BitmapMatrix::from_coo(&coo, &ANY_RATIO).unwrap();
        let gpu = GpuBitmap::from_sparse(ctx, &GpuSparse::from_coo(ctx, &coo).unwrap(), &ANY_RATIO).unwrap();
        let got = gpu.read_blocking().unwrap();
        check_same(&format!("{mode} COO with repeats"), &got, &want.map_values(|v| v.to_f64()), tolerance::<T>());
    }
}

#[test]
fn conversions_f32() {
    conversions::<f32>();
}

#[test]
fn conversions_f64() {
    conversions::<f64>();
}

/// Queries: every stored entry of a few rows, positions around them (absent), and
/// positions outside the matrix.
fn queries(a: &CsrMatrix<impl Scalar>, rng: &mut Rng) -> (Vec<u32>, Vec<u32>) {
    let (mut rows, mut cols) = (Vec::new(), Vec::new());
    for _ in 0..300 {
        if a.rows() == 0 || a.cols() == 0 {
            break;
        }
        let i = rng.below(a.rows() as u64) as usize;
        let (columns, _) = a.row(i);
        let j = match columns.len() {
            0 => rng.below(a.cols() as u64) as u32,
            len if rng.below(2) == 0 => columns[rng.below(len as u64) as usize],
            _ => rng.below(a.cols() as u64) as u32,
        };
        rows.push(i as u32);
        cols.push(j);
    }
    for (i, j) in [(a.rows() as u32, 0), (0, a.cols() as u32), (u32::MAX, u32::MAX)] {
        rows.push(i);
        cols.push(j);
    }
    (rows, cols)
}

fn access<T: Scalar>() {
    let seed = seed("access");
    let mut rng = Rng::new(seed);
    for (mode, ctx) in contexts_for::<T>() {
        let plan = ElementAccess::new(ctx).unwrap();
        for (name, a) in all_cases::<T>(seed) {
            let label = format!("{mode} {} {name}", T::KIND.name());
            let mut host = bitmap(&a);
            let mut gpu = GpuBitmap::upload(ctx, &host).unwrap();
            let (rows, cols) = queries(&a, &mut rng);
            let count = rows.len();
            let (q_rows, q_cols) = (ctx.upload(&rows).unwrap(), ctx.upload(&cols).unwrap());
            let mut values = ctx.upload(&vec![T::from_f64(f64::NAN); count]).unwrap();
            let mut present = ctx.upload(&vec![7u32; count]).unwrap();
            let report = plan.get(&gpu, &q_rows, &q_cols, &mut values, &mut present).unwrap();
            assert_eq!(report.out_of_range, 3, "{label}: out of range");
            assert_eq!(report.first_refused, Some(count as u32 - 3), "{label}");
            let (values, present) = (values.read_blocking().unwrap(), present.read_blocking().unwrap());
            for q in 0..count {
                let want = host.get(rows[q] as usize, cols[q] as usize);
                assert_eq!(present[q], want.is_some() as u32, "{label}: query {q} present");
                assert_eq!(values[q], want.unwrap_or_default(), "{label}: query {q} value");
            }
            // The CSR baseline answers the same.
            let csr = GpuSparse::from_csr(ctx, &a, Conversion::Csr).unwrap();
            let mut csr_values = ctx.zeros::<T>(count).unwrap();
            let mut csr_present = ctx.zeros::<u32>(count).unwrap();
            let mut batch = ctx.batch();
            plan.record_get_csr(&mut batch.recorder(), &csr, &q_rows, &q_cols, &mut csr_values, &mut csr_present)
                .unwrap();
            batch.submit().unwrap();
            assert_eq!(plan.check().unwrap(), report, "{label}: CSR report");
            assert_eq!(csr_values.read_blocking().unwrap(), values, "{label}: CSR values");
            assert_eq!(csr_present.read_blocking().unwrap(), present, "{label}: CSR present");

            // Writes: stored positions change, absent ones are counted and change nothing.
            let new: Vec<T> = (0..count).map(|q| T::from_f64(1000.0 + q as f64)).collect();
            let report = plan.set(&mut gpu, &q_rows, &q_cols, &ctx.upload(&new).unwrap()).unwrap();
            let absent = (0..count - 3).filter(|&q| present[q] == 0).count() as u32;
            assert_eq!(report.absent_writes, absent, "{label}: absent writes");
            assert_eq!(report.out_of_range, 3, "{label}");
            // Repeated positions: the last write on the host; the GPU keeps one of them, so
            // each query's position is checked against the set of values written there.
            let mut written = std::collections::HashMap::<usize, Vec<T>>::new();
            for q in 0..count - 3 {
                if let Some(p) = host.position(rows[q] as usize, cols[q] as usize) {
                    written.entry(p).or_default().push(new[q]);
                }
            }
            let got = gpu.read_blocking().unwrap();
            assert_eq!(got.flags(), host.flags(), "{label}: a write changed the pattern");
            for (p, v) in got.values().iter().enumerate() {
                match written.get(&p) {
                    Some(options) => assert!(options.contains(v), "{label}: entry {p} holds {v:?}"),
                    None => assert_eq!(*v, host.values()[p], "{label}: entry {p} was not written to"),
                }
            }
            host.values_mut().copy_from_slice(got.values());
        }
    }
}

#[test]
fn access_f32() {
    access::<f32>();
}

#[test]
fn access_f64() {
    access::<f64>();
}

/// A with its columns mirrored (j ↦ cols − 1 − j): the bench's B of A ± B.
fn mirrored<T: Scalar>(a: &CsrMatrix<T>) -> CsrMatrix<T> {
    let coo = a.to_coo();
    let cols = coo.col_indices().iter().map(|&j| (a.cols() - 1) as u32 - j).collect();
    CooMatrix::try_new(a.rows(), a.cols(), coo.row_indices().to_vec(), cols, coo.values().to_vec()).unwrap().to_csr()
}

fn add_sub<T: Scalar>() {
    let seed = seed("add_sub");
    for (mode, ctx) in contexts_for::<T>() {
        for (s, (name, a)) in all_cases::<T>(seed).into_iter().enumerate() {
            let others = [
                ("mirrored", mirrored(&a)),
                ("random", to(generate::random(a.rows(), a.cols(), 0.05, seed + 100 + s as u64))),
                ("itself", a.clone()),
            ];
            for (other, b) in others {
                let label = format!("{mode} {} {name} ± {other}", T::KIND.name());
                let (ha, hb) = (bitmap(&a), bitmap(&b));
                let (ga, gb) = (GpuBitmap::upload(ctx, &ha).unwrap(), GpuBitmap::upload(ctx, &hb).unwrap());
                for subtract in [false, true] {
                    let c = if subtract { bitmap::sub(ctx, &ga, &gb) } else { bitmap::add(ctx, &ga, &gb) }.unwrap();
                    let want = reference::bitmap_add(&ha, &hb, subtract);
                    // Values are one rounding each: exact up to it.
                    check_same(&label, &c.read_blocking().unwrap(), &want, tolerance::<T>());
                }
            }
        }
        let (a, b) = (GpuBitmap::<T>::upload(ctx, &bitmap(&to(generate::random(5, 6, 0.5, seed)))).unwrap(), {
            GpuBitmap::<T>::upload(ctx, &bitmap(&to(generate::random(5, 7, 0.5, seed)))).unwrap()
        });
        assert!(matches!(bitmap::add(ctx, &a, &b), Err(Error::DimensionMismatch { .. })));
        assert!(matches!(bitmap::sub(ctx, &a, &b), Err(Error::DimensionMismatch { .. })));
        assert!(matches!(bitmap::multiply(ctx, &a, &a, MultiplyAlgorithm::Auto), Err(Error::DimensionMismatch { .. })));
    }
}

#[test]
fn add_sub_f32() {
    add_sub::<f32>();
}

#[test]
fn add_sub_f64() {
    add_sub::<f64>();
}

fn multiply<T: Scalar>() {
    let seed = seed("multiply");
    for (mode, ctx) in contexts_for::<T>() {
        let mut pairs: Vec<(String, CsrMatrix<T>, CsrMatrix<T>)> = Vec::new();
        for (s, &(m, k, n, d)) in [
            (33usize, 40usize, 31usize, 0.2),
            (20, 64, 65, 0.3),
            (50, 1000, 70, 0.02),
            (64, 64, 64, 1.0),
            (40, 300, 1000, 0.05),
            (7, 9, 1, 0.5),
            // A's rows past one staged segment (the row-wise pattern kernel stages WG_SIZE
            // words of A's row at a time, the values kernel 4·WG_SIZE), and C's rows past one
            // chunk of words in either kernel.
            (30, 3000, 40, 0.02),
            (6, 9000, 50, 0.05),
            (5, 40, 9000, 0.02),
            (3, 20, 20000, 0.05),
            // Batches of k's whose entries of B take many rounds of the values kernel's
            // loads, over two chunks of C's columns (the second partial).
            (12, 70, 1500, 0.4),
            // C of more than 4 MiB of positions, f32 and f64: its values are sized by the
            // entry count read back between pattern and values (smaller Cs are one pass).
            (1100, 30, 1000, 0.02),
            (0, 0, 5, 0.5),
            (6, 0, 5, 0.5),
            (10, 20, 30, 0.0),
        ]
        .iter()
        .enumerate()
        {
            let a = to(generate::random(m, k, d, seed + s as u64));
            let b = to(generate::random(k, n, d, seed + 50 + s as u64));
            pairs.push((format!("{m}x{k} · {k}x{n} at {d}"), a, b));
        }
        for (name, a) in real_matrices::<T>().into_iter().filter(|(_, a)| a.rows() <= 2500 && a.nnz() <= 50_000) {
            let t = a.transpose();
            pairs.push((format!("{name} · its transpose"), a, t));
        }
        for (name, a, b) in pairs {
            let label = format!("{mode} {} {name}", T::KIND.name());
            let (ha, hb) = (bitmap(&a), bitmap(&b));
            let (ga, gb) = (GpuBitmap::upload(ctx, &ha).unwrap(), GpuBitmap::upload(ctx, &hb).unwrap());
            let want = reference::bitmap_multiply(&ha, &hb);
            for algorithm in MultiplyAlgorithm::ALL {
                let c = bitmap::multiply(ctx, &ga, &gb, algorithm).unwrap();
                let got = c.read_blocking().unwrap();
                // Sums of products of either sign: relative to the largest entry of each row
                // is what a dot product can promise; the whole matrix's largest is checked.
                check_same(&format!("{label} {}", algorithm.name()), &got, &want, 100.0 * tolerance::<T>());
            }
            let transposed = gb.transpose(ctx).unwrap().read_blocking().unwrap();
            assert_eq!(transposed, bitmap(&b.transpose()), "{label}: transpose of B");
        }
    }
}

#[test]
fn multiply_f32() {
    multiply::<f32>();
}

#[test]
fn multiply_f64() {
    multiply::<f64>();
}

fn spmv<T: Scalar>() {
    let seed = seed("spmv");
    let mut rng = Rng::new(seed);
    for (mode, ctx) in contexts_for::<T>() {
        for (name, a) in all_cases::<T>(seed) {
            let label = format!("{mode} {} {name}", T::KIND.name());
            let host = bitmap(&a);
            let gpu = GpuBitmap::upload(ctx, &host).unwrap();
            // The automatic plan, whole rows, and rows cut into up to 5 segments.
            let plans = [
                BitmapSpmv::new(ctx, &gpu).unwrap(),
                BitmapSpmv::with_segments(ctx, &gpu, 1).unwrap(),
                BitmapSpmv::with_segments(ctx, &gpu, 5).unwrap(),
            ];
            assert_eq!(plans[1].segments(), 1, "{label}");
            // Segments hold whole runs of 32 words, so only rows of more than one are cut.
            let cut = plans[2].segments();
            assert!(cut <= 5 && (cut > 1) == (a.cols() > 32 * 32), "{label}: {cut} segments");
            let x: Vec<T> = (0..a.cols()).map(|_| T::from_f64(rng.next_f64() + 0.5)).collect();
            let y0: Vec<T> = (0..a.rows()).map(|_| T::from_f64(rng.next_f64())).collect();
            let gx = ctx.upload(&x).unwrap();
            // Signed entries (and β·y₀ against α·A·x) can cancel, and a matrix of a handful
            // of entries (70x64 at 0.001) may have a cancelled sum as its largest entry: the
            // error is measured against the terms' scale, |α|·|A|·x + |β|·|y₀| (x > 0).
            let (a_magnitudes, y0_magnitudes) = (common::matrix_magnitudes(&a), common::magnitudes(&y0));
            let terms =
                |alpha: f64, beta: f64| reference::spmv_csr(alpha.abs(), &a_magnitudes, &x, beta.abs(), &y0_magnitudes);
            for (p, plan) in plans.iter().enumerate() {
                for (alpha, beta) in [(1.0, 0.0), (-2.5, 0.5), (0.0, 2.0), (1.5, 1.0)] {
                    let start = if beta == 0.0 { vec![T::from_f64(f64::NAN); a.rows()] } else { y0.clone() };
                    let mut y = ctx.upload(&start).unwrap();
                    plan.run(T::from_f64(alpha), &gpu, &gx, T::from_f64(beta), &mut y).unwrap();
                    let want = reference::spmv_csr(alpha, &a, &x, beta, &y0);
                    let got = y.read_blocking().unwrap();
                    let error = reference::max_error_relative_to_terms(&got, &want, &terms(alpha, beta));
                    assert!(error <= tolerance::<T>(), "{label}: plan {p} α {alpha} β {beta}: error {error:e}");
                }
                // α and β as device scalars (read by the pass that stores y).
                let (alpha, beta) = (ctx.scalar(T::from_f64(-2.5)).unwrap(), ctx.scalar(T::from_f64(0.5)).unwrap());
                let mut y = ctx.upload(&y0).unwrap();
                plan.run(&alpha, &gpu, &gx, &beta, &mut y).unwrap();
                let want = reference::spmv_csr(-2.5, &a, &x, 0.5, &y0);
                let error =
                    reference::max_error_relative_to_terms(&y.read_blocking().unwrap(), &want, &terms(-2.5, 0.5));
                assert!(error <= tolerance::<T>(), "{label}: plan {p}, device α and β: error {error:e}");
            }
            // A plan that cuts rows takes matrices of its row count only.
            if plans[2].segments() > 1 {
                let other = GpuBitmap::upload(
                    ctx,
                    &bitmap(
                        &generate::random(a.rows() + 1, a.cols(), 0.01, seed).map_values(|v| T::from_f64(v as f64)),
                    ),
                )
                .unwrap();
                let mut y = ctx.zeros::<T>(a.rows() + 1).unwrap();
                assert!(
                    matches!(
                        plans[2].run(T::from_f64(1.0), &other, &gx, T::from_f64(0.0), &mut y),
                        Err(Error::DimensionMismatch { .. })
                    ),
                    "{label}"
                );
            }
            assert!(matches!(BitmapSpmv::with_segments(ctx, &gpu, 0), Err(Error::InvalidArgument(_))));
            let plan = &plans[0];
            let short = ctx.zeros::<T>(a.cols() + 1).unwrap();
            let mut y = ctx.zeros::<T>(a.rows()).unwrap();
            assert!(matches!(
                plan.run(T::from_f64(1.0), &gpu, &short, T::from_f64(0.0), &mut y),
                Err(Error::DimensionMismatch { .. })
            ));
        }
    }
}

#[test]
fn spmv_f32() {
    spmv::<f32>();
}

#[test]
fn spmv_f64() {
    spmv::<f64>();
}

/// A stacked batch of `batch` n × n matrices at `density` with a dominant diagonal (or none:
/// `dominant` false), `singular` matrices with column n/2 cleared.
fn lu_batch<T: Scalar>(
    n: usize,
    batch: usize,
    density: f64,
    dominant: bool,
    singular: &[usize],
    seed: u64,
) -> CsrMatrix<T> {
    let mut dense = DenseMatrix::<T>::zeros(batch * n, n).unwrap();
    let a = generate::random(batch * n, n, density, seed);
    for i in 0..batch * n {
        let (cols, vals) = a.row(i);
        for (&j, &v) in cols.iter().zip(vals) {
            dense.data_mut()[i * n + j as usize] = T::from_f64(v as f64);
        }
        if dominant {
            dense.data_mut()[i * n + i % n] = T::from_f64(n as f64 + 1.0);
        }
    }
    for &m in singular {
        for i in 0..n {
            dense.data_mut()[(m * n + i) * n + n / 2] = T::from_f64(0.0);
        }
    }
    dense.to_csr()
}

/// Every output of an LU plan overwritten with garbage, so that a factorization that leaves
/// any of it unwritten fails the comparisons.
fn poison_lu<T: Scalar>(plan: &BitmapLu<T>) {
    for m in [plan.l(), plan.u()] {
        for words in [m.flags(), m.rank_directory(), m.row_offsets()] {
            words.write(&vec![0x5eed_5eed; words.len()]).unwrap();
        }
        m.values().write(&vec![T::from_f64(f64::NAN); m.values().len()]).unwrap();
    }
    plan.pivots().write(&vec![u32::MAX; plan.pivots().len()]).unwrap();
}

fn lu<T: Scalar>() {
    let seed = seed("lu");
    for (mode, ctx) in contexts_for::<T>() {
        // Around the teams (a power of two ≥ n lanes), lavapipe's subgroup of 8 (wider teams
        // exchange through workgroup memory) and the fused kernel's 32 rows (33: the dense
        // route); batches around the 32-lane workgroups of teams of 1, 2 and 4.
        for n in [1usize, 2, 3, 8, 9, 16, 31, 32, 33] {
            for batch in [1usize, 7, 33] {
                let label = format!("{mode} {} {batch} x {n}²", T::KIND.name());
                // Seed 004's elimination (no pivoting) on a dominant diagonal: the factors'
                // pattern (the fill) is the twin's exactly.
                let a = lu_batch::<T>(n, batch, 0.2, true, &[], seed + n as u64);
                let host = bitmap(&a);
                let gpu = GpuBitmap::upload(ctx, &host).unwrap();
                let mut plan = BitmapLu::<T>::new(ctx, n, batch, Pivoting::None).unwrap();
                let route = if n <= 32 { "fused" } else { "dense" };
                assert!(plan.describe().starts_with(route), "{label}: {}", plan.describe());
                poison_lu(&plan);
                let info = plan.factor(&gpu).unwrap();
                let pivots = plan.pivots().read_blocking().unwrap();
                assert!(pivots.iter().enumerate().all(|(i, &p)| p as usize == i % n), "{label}: pivots {pivots:?}");
                let (l, u, want_info) = reference::bitmap_lu(&host, n, false);
                assert_eq!(info, want_info, "{label}: info");
                let tol = 100.0 * n as f64 * tolerance::<T>();
                check_same(&format!("{label} L"), &plan.l().read_blocking().unwrap(), &l, tol);
                check_same(&format!("{label} U"), &plan.u().read_blocking().unwrap(), &u, tol);

                // Partial pivoting on random matrices, one singular: checked by the backward
                // error (pivot orders may differ where candidates tie within rounding).
                let singular = [batch / 2];
                let a = lu_batch::<T>(n, batch, 0.5, false, &singular, seed + 7 * n as u64);
                let host = bitmap(&a);
                let gpu = GpuBitmap::upload(ctx, &host).unwrap();
                let mut plan = BitmapLu::<T>::new(ctx, n, batch, Pivoting::Partial).unwrap();
                poison_lu(&plan);
                let info = plan.factor(&gpu).unwrap();
                let pivots = plan.pivots().read_blocking().unwrap();
                let (l, u) = (plan.l().read_blocking().unwrap(), plan.u().read_blocking().unwrap());
                let (l, u) = (l.to_dense().unwrap(), u.to_dense().unwrap());
                let dense = host.to_dense().unwrap();
                for m in 0..batch {
                    let block = |d: &DenseMatrix<T>| d.data()[m * n * n..(m + 1) * n * n].to_vec();
                    let packed: Vec<T> =
                        block(&l).iter().zip(block(&u)).map(|(&x, y)| T::from_f64(x.to_f64() + y.to_f64())).collect();
                    let original = DenseMatrix::try_new(n, n, block(&dense)).unwrap();
                    let (factor, _, want_info) = reference::lu_factor(&original, true);
                    let error = reference::lu_backward_error(&original, &packed, &pivots[m * n..(m + 1) * n]);
                    // Singular by chance (a small random pattern): exact cancellation in one
                    // precision leaves a pivot of rounding size in the other, either way
                    // (f32 nonzero where f64 cancelled: seed 1795503993145207524, 7 × 3²;
                    // f32 zero where f64 kept 1e-17: seed 1795596976423406097, 33 × 3²).
                    let largest = original.data().iter().fold(0.0f64, |x, v| x.max(v.to_f64().abs()));
                    let smallest_pivot = (0..n).fold(f64::INFINITY, |x, k| x.min(factor[k * n + k].abs()));
                    let by_chance = smallest_pivot <= 100.0 * n as f64 * tolerance::<T>() * largest;
                    if singular.contains(&m) {
                        // A zero column: a zero pivot in any precision.
                        assert_ne!(info[m], 0, "{label}: matrix {m} is singular");
                    } else if want_info == 0 && !by_chance {
                        assert_eq!(info[m], 0, "{label}: matrix {m} info");
                        assert!(error <= 10.0 * n as f64 * tolerance::<T>(), "{label}: matrix {m} error {error:e}");
                    }
                }
            }
        }
        // Batches past one counting workgroup (1,024 lanes: 256 matrices of 3², 64 of 9²).
        for (n, batch) in [(3usize, 1100usize), (9, 300)] {
            let label = format!("{mode} {} {batch} x {n}²", T::KIND.name());
            let host = bitmap(&lu_batch::<T>(n, batch, 0.3, true, &[], seed + 3 * n as u64));
            let mut plan = BitmapLu::<T>::new(ctx, n, batch, Pivoting::None).unwrap();
            poison_lu(&plan);
            let info = plan.factor(&GpuBitmap::upload(ctx, &host).unwrap()).unwrap();
            let (l, u, want_info) = reference::bitmap_lu(&host, n, false);
            assert_eq!(info, want_info, "{label}: info");
            let tol = 100.0 * n as f64 * tolerance::<T>();
            check_same(&format!("{label} L"), &plan.l().read_blocking().unwrap(), &l, tol);
            check_same(&format!("{label} U"), &plan.u().read_blocking().unwrap(), &u, tol);
        }
        let a = GpuBitmap::<T>::upload(ctx, &bitmap(&lu_batch::<T>(4, 3, 0.5, true, &[], seed))).unwrap();
        let mut plan = BitmapLu::<T>::new(ctx, 4, 2, Pivoting::None).unwrap();
        assert!(matches!(plan.factor(&a), Err(Error::DimensionMismatch { .. })));
    }
}

/// Partial pivoting decides as LAPACK's getrf (the twin) where candidates tie exactly: a tie
/// after a swap goes to the row at the lower position, an all-zero column keeps row k (no
/// swap, info set); and rows already pivoted stay as they are when a later pivot row holds
/// an infinity.
fn lu_ties<T: Scalar>() {
    let inf = f64::INFINITY;
    let matrices: [[f64; 9]; 3] = [
        // Step 0 takes row 2, so row 0 moves to position 2; at step 1 rows 0 and 1 tie at 1.
        [1.0, 1.0, 0.0, 2.0, 1.0, 0.0, 4.0, 0.0, 1.0],
        // Column 0 is zero: no swap at step 0, info 1.
        [0.0, 1.0, 2.0, 0.0, 3.0, 4.0, 0.0, 5.0, 6.0],
        // Step 1's pivot row holds ∞ in column 2, where row 0 (pivoted at step 0) holds 1.
        [2.0, 0.0, 1.0, 1.0, 1.0, inf, 0.0, 0.0, 1.0],
    ];
    let n = 3;
    let stacked: Vec<T> = matrices.iter().flatten().map(|&v| T::from_f64(v)).collect();
    let dense = DenseMatrix::try_new(matrices.len() * n, n, stacked).unwrap();
    let host = bitmap(&dense.to_csr());
    for (mode, ctx) in contexts_for::<T>() {
        let label = format!("{mode} {}", T::KIND.name());
        let gpu = GpuBitmap::upload(ctx, &host).unwrap();
        let mut plan = BitmapLu::<T>::new(ctx, n, matrices.len(), Pivoting::Partial).unwrap();
        poison_lu(&plan);
        let info = plan.factor(&gpu).unwrap();
        let pivots = plan.pivots().read_blocking().unwrap();
        let u = plan.u().read_blocking().unwrap().to_dense().unwrap();
        for (m, values) in matrices.iter().enumerate() {
            let original = DenseMatrix::try_new(n, n, values.iter().map(|&v| T::from_f64(v)).collect()).unwrap();
            let (_, want_pivots, want_info) = reference::lu_factor(&original, true);
            assert_eq!(&pivots[m * n..(m + 1) * n], &want_pivots[..], "{label}: matrix {m} pivots");
            assert_eq!(info[m], want_info, "{label}: matrix {m} info");
        }
        assert_eq!(u.data()[2 * n * n + 2].to_f64(), 1.0, "{label}: U(0, 2) of the third matrix");
    }
}

#[test]
fn lu_ties_follow_lapack() {
    lu_ties::<f32>();
    lu_ties::<f64>();
}

/// Without pivoting the factors store the elimination's pattern, whatever the values: a
/// fill entry whose two updates cancel to exactly zero stays stored (with value 0), on the
/// fused route (n ≤ 32) and on the dense one (n = 33), as the twin's pattern says.
fn lu_pattern_keeps_cancelled_fill<T: Scalar>() {
    // Rows 0 and 1 both reach column 3 of row 2 (fill): -1·1 - 1·(-1) = 0.
    let block = [[1.0, 0.0, 0.0, 1.0], [0.0, 1.0, 0.0, -1.0], [1.0, 1.0, 1.0, 0.0], [0.0, 0.0, 0.0, 1.0]];
    for n in [4usize, 33] {
        let mut dense = DenseMatrix::<T>::zeros(2 * n, n).unwrap();
        for m in 0..2 {
            for i in 0..n {
                dense.data_mut()[(m * n + i) * n + i] = T::from_f64(1.0);
            }
            for (i, row) in block.iter().enumerate() {
                for (j, &v) in row.iter().enumerate() {
                    dense.data_mut()[(m * n + i) * n + j] = T::from_f64(v);
                }
            }
        }
        let host = bitmap(&dense.to_csr());
        let (l, u, _) = reference::bitmap_lu(&host, n, false);
        assert_eq!(u.get(2, 3), Some(0.0), "the twin keeps the cancelled fill");
        for (mode, ctx) in contexts_for::<T>() {
            let label = format!("{mode} {} n = {n}", T::KIND.name());
            let gpu = GpuBitmap::upload(ctx, &host).unwrap();
            let mut plan = BitmapLu::<T>::new(ctx, n, 2, Pivoting::None).unwrap();
            poison_lu(&plan);
            assert_eq!(plan.factor(&gpu).unwrap(), vec![0, 0], "{label}: info");
            let (got_l, got_u) = (plan.l().read_blocking().unwrap(), plan.u().read_blocking().unwrap());
            check_same(&format!("{label} L"), &got_l, &l, 0.0);
            check_same(&format!("{label} U"), &got_u, &u, 0.0);
            assert_eq!(got_u.get(n + 2, 3).map(|v| v.to_f64()), Some(0.0), "{label}: second matrix's U(2, 3)");
        }
    }
}

#[test]
fn lu_pattern_keeps_cancelled_fill_f32() {
    lu_pattern_keeps_cancelled_fill::<f32>();
}

#[test]
fn lu_pattern_keeps_cancelled_fill_f64() {
    lu_pattern_keeps_cancelled_fill::<f64>();
}

#[test]
fn lu_f32() {
    lu::<f32>();
}

#[test]
fn lu_f64() {
    lu::<f64>();
}

/// The flag bound refuses on the host and on the GPU alike, and the caller can raise it.
#[test]
fn flag_bound_is_a_typed_error() {
    let ctx: &Context = common::context();
    let a = generate::random(2000, 100_000, 0.00002, seed("bound"));
    assert!(matches!(
        BitmapMatrix::from_csr(&a, &BitmapOptions::default()),
        Err(FormatError::BitmapFlagsTooLarge { .. })
    ));
    let gpu = GpuSparse::from_csr(ctx, &a, Conversion::Csr).unwrap();
    assert!(matches!(
        GpuBitmap::from_sparse(ctx, &gpu, &BitmapOptions::default()),
        Err(Error::Format(FormatError::BitmapFlagsTooLarge { .. }))
    ));
    let raised = BitmapOptions { max_flag_ratio: 1e4 };
    assert_eq!(GpuBitmap::from_sparse(ctx, &gpu, &raised).unwrap().nnz(), a.nnz());
    let ell = GpuSparse::from_csr(ctx, &generate::random(10, 10, 0.3, 1), Conversion::Ell(Default::default())).unwrap();
    assert!(matches!(GpuBitmap::from_sparse(ctx, &ell, &ANY_RATIO), Err(Error::InvalidArgument(_))));
}

/// The numeric phases: new values of A and B with the same patterns give the new sum and
/// product; a matrix of another pattern is refused.
#[test]
fn numeric_phase_reuses_the_pattern() {
    let seed = seed("numeric_phase");
    for (mode, ctx) in contexts_for::<f32>() {
        let a = generate::random(40, 70, 0.1, seed);
        let b = generate::random(70, 50, 0.1, seed + 1);
        let (ha, hb) = (bitmap(&a), bitmap(&b));
        let (mut ga, mut gb) = (GpuBitmap::upload(ctx, &ha).unwrap(), GpuBitmap::upload(ctx, &hb).unwrap());
        let product = bitmap::BitmapProduct::new(ctx, &ga, &gb, MultiplyAlgorithm::RowWise).unwrap();
        let outputs = bitmap::BitmapProduct::new(ctx, &ga, &gb, MultiplyAlgorithm::Outputs).unwrap();
        let bt = generate::random(40, 70, 0.2, seed + 2);
        let hbt = bitmap(&bt);
        let gbt = GpuBitmap::upload(ctx, &hbt).unwrap();
        let sum = bitmap::BitmapSum::new(ctx, &ga, &gbt, true).unwrap();
        let (mut ha2, mut hb2) = (ha.clone(), hb.clone());
        ha2.values_mut().iter_mut().for_each(|v| *v = 2.0 * *v - 1.0);
        hb2.values_mut().iter_mut().for_each(|v| *v *= -3.0);
        ga.update_values(&ha2).unwrap();
        gb.update_values(&hb2).unwrap();
        let mut batch = ctx.batch();
        product.record(&mut batch.recorder(), &ga, &gb).unwrap();
        outputs.record(&mut batch.recorder(), &ga, &gb).unwrap();
        sum.record(&mut batch.recorder(), &ga, &gbt).unwrap();
        batch.submit().unwrap();
        let label = format!("{mode} numeric phase");
        let want = reference::bitmap_multiply(&ha2, &hb2);
        check_same(&label, &product.output().read_blocking().unwrap(), &want, 1e-4);
        check_same(&label, &outputs.output().read_blocking().unwrap(), &want, 1e-4);
        check_same(&label, &sum.output().read_blocking().unwrap(), &reference::bitmap_add(&ha2, &hbt, true), 1e-5);
        let other = GpuBitmap::upload(ctx, &ha2).unwrap();
        let mut batch = ctx.batch();
        assert!(matches!(product.record(&mut batch.recorder(), &other, &gb), Err(Error::InvalidArgument(_))));
        assert!(matches!(sum.record(&mut batch.recorder(), &ga, &other), Err(Error::InvalidArgument(_))));
        let different = bitmap(&generate::random(70, 50, 0.1, seed + 9));
        assert!(matches!(gb.update_values(&different), Err(Error::InvalidArgument(_))));
    }
}

/// Matrix Market through CSR: read into the bitmap format, written back, read again.
#[test]
fn matrix_market_round_trip() {
    use wgsparse::format::matrix_market;
    let dir = common::matrices_dir();
    let path = dir.join("west0479.mtx");
    let a: BitmapMatrix<f64> = matrix_market::read_bitmap(&path, &BitmapOptions::default()).unwrap();
    assert_eq!(a, bitmap(&matrix_market::read_csr::<f64>(&path).unwrap()));
    let mut text = Vec::new();
    matrix_market::write_bitmap(&mut text, &a).unwrap();
    let file = std::env::temp_dir().join(format!("wgsparse-bitmap-{}.mtx", std::process::id()));
    std::fs::write(&file, &text).unwrap();
    let again = matrix_market::read_bitmap::<f64>(&file, &BitmapOptions::default());
    std::fs::remove_file(&file).unwrap();
    assert_eq!(again.unwrap(), a);
    // A file the reader refuses is a typed error, as is one past the flag bound.
    assert!(matches!(
        matrix_market::read_bitmap::<f32>(dir.join("mangled1.mtx"), &BitmapOptions::default()),
        Err(Error::MatrixMarket(_))
    ));
    assert!(matches!(
        matrix_market::read_bitmap::<f32>(dir.join("Pd.mtx"), &BitmapOptions::default()),
        Err(Error::Format(FormatError::BitmapFlagsTooLarge { .. }))
    ));
}

/// Operands of another context are refused before anything is recorded, by every op.
#[test]
fn operands_of_another_context_are_refused() {
    let all = common::contexts();
    if all.len() < 2 {
        return;
    }
    let (one, other) = (&all[0].1, &all[1].1);
    let host = bitmap(&generate::random(20, 20, 0.2, seed("contexts")));
    let (a, b) = (GpuBitmap::upload(one, &host).unwrap(), GpuBitmap::upload(other, &host).unwrap());
    let mismatch = |r: Result<(), Error>| assert!(matches!(r, Err(Error::ContextMismatch(_))), "{r:?}");
    mismatch(bitmap::add(one, &a, &b).map(drop));
    mismatch(bitmap::multiply(one, &a, &b, MultiplyAlgorithm::Auto).map(drop));
    mismatch(a.to_sparse(other, Format::Csr).map(drop));
    mismatch(BitmapSpmv::new(other, &a).map(drop));
    let plan = BitmapSpmv::new(one, &a).unwrap();
    let (x, mut y) = (one.zeros::<f32>(20).unwrap(), one.zeros::<f32>(20).unwrap());
    mismatch(plan.run(1.0, &b, &x, 0.0, &mut y));
    let access = ElementAccess::new(one).unwrap();
    let (rows, cols) = (one.zeros::<u32>(3).unwrap(), one.zeros::<u32>(3).unwrap());
    let (mut values, mut present) = (one.zeros::<f32>(3).unwrap(), one.zeros::<u32>(3).unwrap());
    mismatch(access.get(&b, &rows, &cols, &mut values, &mut present).map(drop));
    let mut lu = BitmapLu::<f32>::new(one, 4, 5, Pivoting::None).unwrap();
    mismatch(lu.factor(&b).map(drop));
}

/// Empty batches and 0 × 0 matrices factor (nothing to do) on both pivotings: no entries in
/// L or U, every info 0.
#[test]
fn lu_of_empty_batches_and_matrices() {
    let ctx: &Context = common::context();
    for pivoting in [Pivoting::None, Pivoting::Partial] {
        for (n, batch) in [(0, 3), (5, 0), (0, 0)] {
            let what = format!("{pivoting:?} n {n} batch {batch}");
            let a = GpuBitmap::upload(ctx, &bitmap(&CsrMatrix::<f32>::zeros(n * batch, n).unwrap())).expect(&what);
            let mut plan = BitmapLu::<f32>::new(ctx, n, batch, pivoting).expect(&what);
            assert_eq!(plan.factor(&a).expect(&what), vec![0; batch], "{what}");
            assert_eq!((plan.l().nnz(), plan.u().nnz()), (0, 0), "{what}");
        }
    }
}

/// Where the adapter caps an invocation's loop iterations (llvmpipe: 65,535 in all), the
/// pattern step of a bitmap LU without pivoting (a workgroup of 64 lanes a matrix, each lane
/// walking rows' words for every step) is refused past the orders it can do, with the limit
/// named; smaller orders and the pivoting plans (no pattern step) are planned.
#[test]
fn bitmap_lu_past_the_loop_limit_is_refused() {
    let ctx = common::context();
    let capped = ctx.loop_iteration_limit().is_some();
    for (n, pivoting, refused) in
        [(64, Pivoting::None, false), (800, Pivoting::Partial, false), (800, Pivoting::None, capped)]
    {
        common::planned_unless_refused(
            BitmapLu::<f32>::new(ctx, n, 1, pivoting),
            refused,
            &format!("n {n} {pivoting:?}"),
        );
    }
}

/// Where the adapter caps an invocation's loop iterations (llvmpipe: 65,535 in all), SpMV on
/// a row of 2^20 columns, every one set, is refused with whole rows (a group of lanes would
/// walk 32,768 words) and planned in segments by `new`, against the twin.
#[test]
fn bitmap_spmv_cuts_rows_past_the_loop_limit() {
    let ctx = common::context();
    let cols = 1 << 20;
    let a = CsrMatrix::try_from_csr_data(
        2,
        cols,
        vec![0, cols as u32, cols as u32],
        (0..cols as u32).collect(),
        (0..cols).map(|j| 1.0 + (j % 7) as f32 / 8.0).collect(),
    )
    .unwrap();
    let gpu = GpuBitmap::upload(ctx, &bitmap(&a)).unwrap();
    let capped = ctx.loop_iteration_limit().is_some();
    common::planned_unless_refused(BitmapSpmv::with_segments(ctx, &gpu, 1), capped, "whole rows");
    let plan = BitmapSpmv::new(ctx, &gpu).unwrap();
    let x: Vec<f32> = (0..cols).map(|j| ((j * 31) % 17) as f32 / 16.0 - 0.5).collect();
    let mut y = ctx.upload(&[f32::NAN; 2][..]).unwrap();
    plan.run(1.0, &gpu, &ctx.upload(&x).unwrap(), 0.0, &mut y).unwrap();
    let want = reference::spmv_csr(1.0, &a, &x, 0.0, &[0.0; 2]);
    let error = max_relative_error(&y.read_blocking().unwrap(), &want);
    assert!(error <= tolerance::<f32>(), "{} segments: error {error:e}", plan.segments());
}

/// Where the adapter caps an invocation's loop iterations (llvmpipe: 65,535 in all), a product
/// whose walk over A's row (and row-wise, over B's rows in a chunk of C) would pass the cap is
/// refused by each algorithm that would, and one just within it is computed, against the twin.
/// A is one full row of k columns and B is k × n, full: past the cap the kernels' sums were
/// silently cut short (row-wise at k = 8,000, n = 256 and k = 40,000, n = 1; outputs at k =
/// 80,000).
#[test]
fn bitmap_product_past_the_loop_limit_is_refused() {
    let ctx = common::context();
    let capped = ctx.loop_iteration_limit().is_some();
    let full = |rows: usize, cols: usize, salt: usize| {
        let entries = (0..rows).flat_map(|i| (0..cols).map(move |j| (i, j)));
        CsrMatrix::try_from_csr_data(
            rows,
            cols,
            (0..=rows).map(|i| (i * cols) as u32).collect(),
            entries.clone().map(|(_, j)| j as u32).collect(),
            entries.map(|(i, j)| 1.0 + ((i * 7 + j * 13 + salt) % 11) as f32 / 16.0).collect(),
        )
        .unwrap()
    };
    // (k, n, refused row-wise, refused by outputs)
    for (k, n, row_wise, outputs) in
        [(16_000, 1, false, false), (6000, 256, false, false), (8000, 256, capped, false), (90_000, 1, capped, capped)]
    {
        let (ha, hb) = (bitmap(&full(1, k, 1)), bitmap(&full(k, n, 5)));
        let (ga, gb) = (GpuBitmap::upload(ctx, &ha).unwrap(), GpuBitmap::upload(ctx, &hb).unwrap());
        let want = reference::bitmap_multiply(&ha, &hb);
        for (algorithm, refused) in [(MultiplyAlgorithm::RowWise, row_wise), (MultiplyAlgorithm::Outputs, outputs)] {
            let label = format!("1x{k} · {k}x{n} {}", algorithm.name());
            let got = bitmap::multiply(ctx, &ga, &gb, algorithm);
            if let Some(c) = common::planned_unless_refused(got, refused, &label) {
                check_same(&label, &c.read_blocking().unwrap(), &want, 100.0 * tolerance::<f32>());
            }
        }
    }
}

/// A product whose C has more than 2^32 entries (A 65,536 × 1 and B 1 × 65,537, both full:
/// 65,536 · 65,537 entries) is refused: its entry count, kept in u32, wrapped to 65,536, and C
/// was sized to that while its values were written past it. An adapter whose bindings hold
/// less than C's 537 MB of flags (lavapipe's) refuses it for that first; the count's check
/// is unit-tested in `src/ops/bitmap/multiply.rs`.
#[test]
fn bitmap_product_past_two_to_the_32_entries_is_refused() {
    let ctx = common::context();
    let full = |rows: usize, cols: usize| {
        let entries = rows * cols;
        let a = CsrMatrix::try_from_csr_data(
            rows,
            cols,
            (0..=rows).map(|i| (i * cols) as u32).collect(),
            (0..entries).map(|e| (e % cols) as u32).collect(),
            vec![1.0f32; entries],
        )
        .unwrap();
        GpuBitmap::upload(ctx, &bitmap(&a)).unwrap()
    };
    let (a, b) = (full(65_536, 1), full(1, 65_537));
    for algorithm in MultiplyAlgorithm::ALL {
        match bitmap::multiply(ctx, &a, &b, algorithm) {
            Err(Error::LimitExceeded { limit: "max_storage_buffer_binding_size", .. })
                if ctx.limits().max_storage_buffer_binding_size < 65_536 * 2049 * 4 => {}
            Err(Error::LimitExceeded { limit, requested, .. }) => {
                assert!(limit.contains("2^32 entries"), "{}: refused for {limit}", algorithm.name());
                assert_eq!(requested, 65_536 * 65_537, "{}", algorithm.name());
            }
            Err(e) => panic!("{}: {e}", algorithm.name()),
            Ok(c) => panic!("{}: a product of {} entries", algorithm.name(), c.nnz()),
        }
    }
}
