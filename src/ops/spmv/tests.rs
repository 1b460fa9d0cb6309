//! The completing groups' fallback, which hardware takes when a piece's published sum is not
//! visible yet: every piece recomputed must give the twin's result, bit for bit the result
//! from the published sums. Only a test can force that path (`RECOMPUTE_PIECES`).

use crate::format::HybSplit;
use crate::generate::{self, Rng};
use crate::ops::common::RECOMPUTE_PIECES;
use crate::ops::{Spmv, SpmvAlgorithm, SpmvOptions};
use crate::reference::{relative_error, spmv_csr};
use crate::{Context, ContextOptions, Conversion, CsrMatrix, ElementKind, GpuSparse, Scalar};

/// Each algorithm that cuts rows into pieces, tuned so that long rows have many pieces: a
/// group of 64 lanes (or a subgroup) takes one entry a lane (csr-split, COO, HYB's tail),
/// csr-merge tiles hold 128 merge items. COO and HYB also with intervals of 8 steps, longer
/// than their window, so that rows of two pieces are published too (with one step, every
/// row crossing one boundary is finished by the interval after it).
fn piecewise_algorithms() -> [(SpmvAlgorithm, Conversion, SpmvOptions); 6] {
    let small = SpmvOptions::default().workgroup_size(64);
    let hyb = Conversion::Hyb(HybSplit::Width(2));
    [
        (SpmvAlgorithm::CsrSplit, Conversion::Csr, small.split_threshold(32).chunk_steps(1)),
        (SpmvAlgorithm::CsrMerge, Conversion::Csr, small.merge_items(2)),
        (SpmvAlgorithm::CooSegmented, Conversion::Coo, small.coo_steps(1)),
        (SpmvAlgorithm::CooSegmented, Conversion::Coo, small.coo_steps(8)),
        (SpmvAlgorithm::Hyb, hyb, small.coo_steps(1)),
        (SpmvAlgorithm::Hyb, hyb, small.coo_steps(8)),
    ]
}

fn recomputed_pieces_match<T: Scalar>() {
    let seed = 0x5b11;
    let mut rng = Rng::new(seed);
    let tolerance = match T::KIND {
        ElementKind::F32 => 1e-5,
        ElementKind::F64 => 1e-12,
    };
    // A dense row among empty and short rows; R-MAT's power-law rows.
    let matrices = [generate::dense_row_mix(3000, 2900, seed), generate::rmat(10, 6, 0.57, 0.19, 0.19, seed)];
    for subgroups in [true, false] {
        let ctx = Context::new_blocking(ContextOptions { subgroups, ..ContextOptions::from_env().unwrap() }).unwrap();
        if !ctx.supports::<T>() {
            continue;
        }
        for a in &matrices {
            let a: CsrMatrix<T> = a.map_values(|v| T::from_f64(v as f64));
            for (algorithm, conversion, options) in piecewise_algorithms() {
                let matrix = GpuSparse::from_csr(&ctx, &a, conversion).unwrap();
                let plan = Spmv::with_options(&ctx, &matrix, algorithm, &options).unwrap();
                let what =
                    format!("seed {seed} {} {} subgroups {subgroups} {options:?}", algorithm.name(), T::KIND.name());
                let mut results = Vec::new();
                for recompute in [false, true, false] {
                    RECOMPUTE_PIECES.set(recompute);
                    let x: Vec<T> = generate::random_vector(a.cols(), rng.next_u64())
                        .into_iter()
                        .map(|v| T::from_f64(v as f64))
                        .collect();
                    let mut y = ctx.upload(&vec![T::from_f64(f64::NAN); a.rows()]).unwrap();
                    let run = plan.run(T::from_f64(1.0), &ctx.upload(&x).unwrap(), T::from_f64(0.0), &mut y);
                    RECOMPUTE_PIECES.set(false);
                    run.unwrap();
                    let got = y.read_blocking().unwrap();
                    let error = relative_error(&got, &spmv_csr(1.0, &a, &x, 0.0, &[]));
                    assert!(error <= tolerance, "{what} recompute {recompute}: {error:e}");
                    results.push((x, got));
                }
                // Once more on the second x, published sums only: the same bits.
                let (x, recomputed) = &results[1];
                let mut y = ctx.upload(&vec![T::from_f64(f64::NAN); a.rows()]).unwrap();
                plan.run(T::from_f64(1.0), &ctx.upload(x).unwrap(), T::from_f64(0.0), &mut y).unwrap();
                let published = y.read_blocking().unwrap();
                let same = published.iter().zip(recomputed).all(|(p, r)| p.to_f64().to_bits() == r.to_f64().to_bits());
                assert!(same, "{what}: bits differ");
            }
        }
    }
}

#[test]
fn recomputed_pieces_match_f32() {
    recomputed_pieces_match::<f32>();
}

#[test]
fn recomputed_pieces_match_f64() {
    recomputed_pieces_match::<f64>();
}

/// `SpmvOptions::coo_steps`'s default: a step an interval for every 2¹⁷ entries, from 1 to
/// 32; a value set is kept whatever the matrix.
#[test]
fn coo_intervals_grow_with_the_entries() {
    let default = SpmvOptions::default();
    for (nnz, steps) in [(0, 1), (1, 1), (1 << 17, 1), ((1 << 17) + 1, 2), (800_000, 7), (1 << 22, 32), (1 << 30, 32)] {
        assert_eq!(default.coo_steps_for(nnz), steps, "{nnz} entries");
    }
    assert_eq!(default.coo_steps(5).coo_steps_for(1 << 30), 5);
    assert_eq!(default.coo_steps(64).coo_steps_for(10), 64);
}
