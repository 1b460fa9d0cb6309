//! Generators: shapes, entry counts, structure and determinism (small sizes, CPU only).

use wgsparse::generate::{self, Rng};
use wgsparse::CsrMatrix;

/// Re-validates through the public constructor and checks sorted columns.
fn assert_valid(m: &CsrMatrix<f32>) {
    let (rows, cols, offsets, indices, values) = m.clone().into_parts();
    let checked = CsrMatrix::try_from_csr_data(rows, cols, offsets, indices, values).expect("valid CSR");
    assert!(checked.columns_sorted());
    assert!(m.columns_sorted());
}

fn row_lengths(m: &CsrMatrix<f32>) -> Vec<usize> {
    (0..m.rows()).map(|i| m.row_len(i)).collect()
}

#[test]
fn laplacians_have_the_stencil_shape() {
    for n in 0..6 {
        let a = generate::laplacian_2d(n);
        assert_valid(&a);
        assert_eq!((a.rows(), a.cols(), a.nnz()), (n * n, n * n, (5 * n * n).saturating_sub(4 * n)));
        let b = generate::laplacian_3d(n);
        assert_valid(&b);
        assert_eq!((b.rows(), b.nnz()), (n * n * n, (7 * n * n * n).saturating_sub(6 * n * n)));
        for (m, diagonal) in [(&a, 4.0), (&b, 6.0)] {
            for i in 0..m.rows() {
                let (cols, vals) = m.row(i);
                for (&c, &v) in cols.iter().zip(vals) {
                    assert_eq!(v, if c as usize == i { diagonal } else { -1.0 });
                }
                // Row sums are 0 inside the grid and positive on its faces.
                assert!(vals.iter().sum::<f32>() >= 0.0);
            }
        }
    }
    // Interior point (1, 1) of a 3 x 3 grid has all four neighbours.
    assert_eq!(generate::laplacian_2d(3).row(4).0, &[1, 3, 4, 5, 7]);
    assert_eq!(generate::laplacian_3d(3).row(13).0, &[4, 10, 12, 13, 14, 16, 22]);
}

#[test]
fn rmat_is_valid_deterministic_and_skewed() {
    let a = generate::rmat(10, 8, 0.57, 0.19, 0.19, 3);
    assert_valid(&a);
    assert_eq!((a.rows(), a.cols()), (1024, 1024));
    assert!(a.nnz() <= 8 * 1024 && a.nnz() > 6 * 1024, "nnz {}", a.nnz());
    assert_eq!(generate::rmat(10, 8, 0.57, 0.19, 0.19, 3), a);
    assert_ne!(generate::rmat(10, 8, 0.57, 0.19, 0.19, 4), a);
    let lengths = row_lengths(&a);
    let mean = a.nnz() as f64 / a.rows() as f64;
    assert!(*lengths.iter().max().unwrap() as f64 > 8.0 * mean, "max row {:?}", lengths.iter().max());
    assert!(lengths.iter().filter(|&&l| l == 0).count() > 100, "R-MAT leaves many rows empty");
    // Uniform quadrant probabilities give no skew.
    let flat = generate::rmat(10, 8, 0.25, 0.25, 0.25, 3);
    assert!(*row_lengths(&flat).iter().max().unwrap() < 30);
    assert_eq!(generate::rmat(0, 3, 0.57, 0.19, 0.19, 1).nnz(), 1);
}

#[test]
fn uniform_random_has_exactly_per_row_distinct_columns() {
    for (rows, cols, per_row) in [(100, 50, 7), (10, 10, 10), (20, 1000, 3), (5, 8, 0), (0, 4, 2), (30, 12, 4)] {
        let m = generate::uniform_random(rows, cols, per_row, 9);
        assert_valid(&m);
        assert_eq!((m.rows(), m.cols(), m.nnz()), (rows, cols, rows * per_row));
        assert!(row_lengths(&m).iter().all(|&l| l == per_row));
    }
    // Columns are spread over the whole range.
    let m = generate::uniform_random(200, 100, 5, 1);
    let mut hit = [false; 100];
    m.col_indices().iter().for_each(|&c| hit[c as usize] = true);
    assert!(hit.iter().all(|&h| h));
}

#[test]
fn dense_row_mix_has_one_dense_row_and_many_empty_ones() {
    let m = generate::dense_row_mix(1000, 900, 5);
    assert_valid(&m);
    assert_eq!((m.rows(), m.cols()), (1000, 1000));
    let lengths = row_lengths(&m);
    assert_eq!(lengths[500], 900);
    let empty = lengths.iter().filter(|&&l| l == 0).count();
    assert!((500..700).contains(&empty), "{empty} empty rows");
    assert!(lengths.iter().enumerate().all(|(i, &l)| i == 500 || l <= 8));
    let tiny = generate::dense_row_mix(3, 3, 5);
    assert_eq!(row_lengths(&tiny)[1], 3);
    assert_eq!(generate::dense_row_mix(0, 0, 5).rows(), 0);
}

#[test]
fn random_density_is_respected() {
    let m = generate::random(200, 300, 0.05, 2);
    assert_valid(&m);
    assert!((2500..3500).contains(&m.nnz()), "nnz {}", m.nnz());
    assert_eq!(generate::random(10, 10, 0.0, 2).nnz(), 0);
    assert_eq!(generate::random(10, 7, 1.0, 2).nnz(), 70);
    assert_eq!(generate::random(0, 7, 0.5, 2).rows(), 0);
}

#[test]
fn random_coo_is_unsorted_with_duplicates() {
    let m = generate::random_coo(5, 5, 100, 1);
    assert_eq!(m.nnz(), 100);
    assert!(!m.is_row_sorted());
    assert!(m.to_csr().nnz() <= 25);
    assert_eq!(generate::random_coo(0, 0, 0, 1).nnz(), 0);
}

#[test]
fn random_values_are_in_range_and_never_zero() {
    let v = generate::random_vector(100_000, 42);
    assert_eq!(v, generate::random_vector(100_000, 42));
    assert!(v.iter().all(|&x| x > -1.0 && x < 1.0 && x != 0.0));
    let mean = v.iter().map(|&x| x as f64).sum::<f64>() / v.len() as f64;
    assert!(mean.abs() < 0.01, "mean {mean}");
    for m in [generate::rmat(8, 4, 0.57, 0.19, 0.19, 1), generate::uniform_random(50, 50, 5, 1)] {
        assert!(m.values().iter().all(|&x| x != 0.0 && x.abs() < 1.0));
    }
}

#[test]
fn rng_is_reproducible_and_bounded() {
    let (mut a, mut b) = (Rng::new(7), Rng::new(7));
    assert!((0..100).all(|_| a.next_u64() == b.next_u64()));
    assert_ne!(Rng::new(0).next_u64(), Rng::new(1).next_u64());
    let mut rng = Rng::new(1);
    let mut seen = [0usize; 7];
    for _ in 0..7000 {
        seen[rng.below(7) as usize] += 1;
    }
    assert!(seen.iter().all(|&s| (800..1200).contains(&s)), "{seen:?}");
    assert_eq!(rng.below(0), 0);
    assert!((0..1000).all(|_| (0.0..1.0).contains(&rng.next_f64())));
}

#[test]
#[should_panic(expected = "distinct columns")]
fn uniform_random_refuses_more_columns_than_exist() {
    generate::uniform_random(3, 4, 5, 0);
}

#[test]
#[should_panic(expected = "more than u32::MAX")]
fn laplacian_refuses_grids_beyond_u32() {
    generate::laplacian_2d(1 << 16);
}
