//! Host formats: validation errors, conversions and round trips (CPU only).

use proptest::prelude::*;
use wgsparse::format::{
    CooMatrix, CsrMatrix, DenseMatrix, EllMatrix, EllOptions, FormatError, HybMatrix, HybSplit, ELL_PADDING,
};
use wgsparse::generate;

const NO_PADDING_LIMIT: EllOptions = EllOptions::with_max_padding_ratio(f64::INFINITY);

fn csr(rows: usize, cols: usize, offsets: &[u32], indices: &[u32]) -> Result<CsrMatrix<f32>, FormatError> {
    let values = (1..=indices.len()).map(|v| v as f32).collect();
    CsrMatrix::try_from_csr_data(rows, cols, offsets.to_vec(), indices.to_vec(), values)
}

fn coo(rows: usize, cols: usize, entries: &[(u32, u32, f32)]) -> Result<CooMatrix<f32>, FormatError> {
    CooMatrix::try_new(
        rows,
        cols,
        entries.iter().map(|e| e.0).collect(),
        entries.iter().map(|e| e.1).collect(),
        entries.iter().map(|e| e.2).collect(),
    )
}

// ---- every FormatError the formats produce, from a minimal input ----

#[test]
fn csr_rejects_offsets_of_wrong_length() {
    assert!(matches!(
        csr(2, 2, &[0, 1], &[0]),
        Err(FormatError::LengthMismatch { what: "row_offsets", expected: 3, found: 2 })
    ));
}

#[test]
fn csr_rejects_values_of_wrong_length() {
    let err = CsrMatrix::try_from_csr_data(1, 2, vec![0, 2], vec![0, 1], vec![1.0f32]).unwrap_err();
    assert_eq!(err, FormatError::LengthMismatch { what: "values", expected: 2, found: 1 });
}

#[test]
fn csr_rejects_nonzero_first_offset() {
    assert!(matches!(csr(1, 2, &[1, 1], &[]), Err(FormatError::InvalidOffsets { position: 0, .. })));
}

#[test]
fn csr_rejects_decreasing_offsets() {
    assert!(matches!(csr(3, 3, &[0, 2, 1, 3], &[0, 1, 2]), Err(FormatError::InvalidOffsets { position: 2, .. })));
}

#[test]
fn csr_rejects_last_offset_other_than_nnz() {
    assert!(matches!(csr(1, 3, &[0, 1], &[0, 1]), Err(FormatError::InvalidOffsets { position: 1, .. })));
    assert!(matches!(csr(1, 3, &[0, 3], &[0, 1]), Err(FormatError::InvalidOffsets { position: 1, .. })));
}

#[test]
fn csr_rejects_column_equal_to_cols() {
    assert_eq!(
        csr(2, 3, &[0, 1, 2], &[0, 3]).unwrap_err(),
        FormatError::IndexOutOfBounds { what: "column", position: 1, index: 3, bound: 3 }
    );
}

#[test]
fn csr_rejects_duplicates_sorted_or_not() {
    assert_eq!(csr(1, 3, &[0, 2], &[1, 1]).unwrap_err(), FormatError::DuplicateEntry { row: 0, col: 1 });
    assert_eq!(csr(2, 3, &[0, 1, 4], &[0, 2, 0, 2]).unwrap_err(), FormatError::DuplicateEntry { row: 1, col: 2 });
}

#[test]
fn csr_accepts_unsorted_columns_and_sorts_them() {
    let mut m = csr(2, 3, &[0, 2, 3], &[2, 0, 1]).unwrap();
    assert!(!m.columns_sorted());
    m.sort_columns();
    assert!(m.columns_sorted());
    assert_eq!(m.row(0), (&[0, 2][..], &[2.0, 1.0][..]));
}

#[test]
fn csr_rejects_sizes_beyond_u32_before_allocating() {
    let huge = u32::MAX as usize + 1;
    assert!(matches!(csr(huge, 1, &[0], &[]), Err(FormatError::TooLarge { what: "rows", .. })));
    assert!(matches!(csr(1, huge, &[0, 0], &[]), Err(FormatError::TooLarge { what: "cols", .. })));
    assert!(matches!(CsrMatrix::<f32>::zeros(usize::MAX, 1), Err(FormatError::TooLarge { what: "rows", .. })));
    // Unsorted rows of a matrix with u32::MAX columns are checked without a column-sized array.
    assert!(csr(1, u32::MAX as usize, &[0, 2], &[7, 3]).is_ok());
}

#[test]
fn coo_rejects_bad_lengths_and_indices() {
    let err = CooMatrix::try_new(2, 2, vec![0, 1], vec![0], vec![1.0f32, 2.0]).unwrap_err();
    assert_eq!(err, FormatError::LengthMismatch { what: "col_indices", expected: 2, found: 1 });
    let err = CooMatrix::try_new(2, 2, vec![0], vec![0], vec![1.0f32, 2.0]).unwrap_err();
    assert_eq!(err, FormatError::LengthMismatch { what: "row_indices", expected: 2, found: 1 });
    assert_eq!(
        coo(2, 3, &[(0, 0, 1.0), (2, 0, 1.0)]).unwrap_err(),
        FormatError::IndexOutOfBounds { what: "row", position: 1, index: 2, bound: 2 }
    );
    assert_eq!(
        coo(2, 3, &[(1, 3, 1.0)]).unwrap_err(),
        FormatError::IndexOutOfBounds { what: "column", position: 0, index: 3, bound: 3 }
    );
    assert!(matches!(coo(u32::MAX as usize + 1, 1, &[]), Err(FormatError::TooLarge { what: "rows", .. })));
}

#[test]
fn ell_refuses_too_much_padding() {
    // One row of 4 and three empty rows: 16 slots for 4 entries, ratio 4 > 3.
    let m = csr(4, 4, &[0, 4, 4, 4, 4], &[0, 1, 2, 3]).unwrap();
    assert_eq!(
        EllMatrix::from_csr(&m, &EllOptions::default()).unwrap_err(),
        FormatError::EllPaddingTooLarge { width: 4, rows: 4, padded: 16, nnz: 4, max_ratio: 3.0 }
    );
    assert!(EllMatrix::from_csr(&m, &EllOptions::with_max_padding_ratio(4.0)).is_ok());
    assert!(EllMatrix::from_csr(&m, &EllOptions::with_max_padding_ratio(f64::NAN)).is_err());
    // Nothing to store is never too much padding.
    for empty in [CsrMatrix::<f32>::zeros(0, 5).unwrap(), CsrMatrix::zeros(5, 5).unwrap()] {
        let ell = EllMatrix::from_csr(&empty, &EllOptions::default()).unwrap();
        assert_eq!((ell.width(), ell.nnz(), ell.col_indices().len()), (0, 0, 0));
    }
}

#[test]
fn ell_data_is_validated() {
    let pad = ELL_PADDING;
    // 2 rows, width 2, column-major: row 0 = [0, 1], row 1 = [2, padding].
    let ok = EllMatrix::try_from_ell_data(2, 3, 2, vec![0, 2, 1, pad], vec![1.0f32, 2.0, 3.0, 0.0]).unwrap();
    assert_eq!(ok.nnz(), 3);
    let expected = CsrMatrix::try_from_csr_data(2, 3, vec![0, 2, 3], vec![0, 1, 2], vec![1.0, 3.0, 2.0]).unwrap();
    assert_eq!(ok.to_csr(), expected);
    let err = EllMatrix::try_from_ell_data(2, 3, 2, vec![0, 2, 1], vec![1.0f32; 4]).unwrap_err();
    assert_eq!(err, FormatError::LengthMismatch { what: "col_indices", expected: 4, found: 3 });
    let err = EllMatrix::try_from_ell_data(2, 3, 2, vec![0, 2, 1, pad], vec![1.0f32; 3]).unwrap_err();
    assert_eq!(err, FormatError::LengthMismatch { what: "values", expected: 4, found: 3 });
    let err = EllMatrix::try_from_ell_data(2, 3, 2, vec![0, 3, 1, pad], vec![1.0f32; 4]).unwrap_err();
    assert_eq!(err, FormatError::IndexOutOfBounds { what: "column", position: 1, index: 3, bound: 3 });
    let err = EllMatrix::try_from_ell_data(2, 3, 2, vec![1, 2, 1, pad], vec![1.0f32; 4]).unwrap_err();
    assert_eq!(err, FormatError::DuplicateEntry { row: 0, col: 1 });
    let err = EllMatrix::try_from_ell_data(1 << 20, 3, 1 << 20, vec![], Vec::<f32>::new()).unwrap_err();
    assert!(matches!(err, FormatError::TooLarge { what: "ELL slots", .. }));
    // No rows, so no slots: the width alone is past u32 (it sized a scratch row before).
    let err = EllMatrix::try_from_ell_data(0, 0, usize::MAX, vec![], Vec::<f32>::new()).unwrap_err();
    assert!(matches!(err, FormatError::TooLarge { what: "width", .. }));
}

/// Row statistics of offsets that decrease (not CSR's) count the row as empty, not as a
/// wrapped length (or a panic).
#[test]
fn row_stats_of_decreasing_offsets_do_not_wrap() {
    let stats = wgsparse::matrix::RowStats::from_offsets(&[3, 1, 4]);
    assert_eq!((stats.rows, stats.nnz, stats.max_len, stats.empty_rows), (2, 3, 3, 1));
}

#[test]
fn hyb_refuses_an_absurd_explicit_width() {
    // One row of 20 and 99 empty rows: width 20 means 2000 slots for 20 entries.
    let cols: Vec<u32> = (0..20).collect();
    let mut offsets = vec![20u32; 101];
    offsets[0] = 0;
    let m = csr(100, 20, &offsets, &cols).unwrap();
    assert!(matches!(
        HybMatrix::from_csr(&m, HybSplit::Width(20)),
        Err(FormatError::EllPaddingTooLarge { width: 20, rows: 100, .. })
    ));
    // Auto keeps it all in COO.
    let hyb = HybMatrix::from_csr(&m, HybSplit::Auto).unwrap();
    assert_eq!((hyb.width(), hyb.coo().nnz()), (0, 20));
}

#[test]
fn dense_rejects_bad_shapes() {
    let err = DenseMatrix::try_new(2, 3, vec![0.0f32; 5]).unwrap_err();
    assert_eq!(err, FormatError::LengthMismatch { what: "data", expected: 6, found: 5 });
    assert!(matches!(DenseMatrix::<f32>::zeros(1 << 20, 1 << 20), Err(FormatError::TooLarge { .. })));
}

// ---- conversions ----

#[test]
fn coo_to_csr_sums_duplicates_from_any_order() {
    let entries = [(1, 2, 1.0), (0, 1, 2.0), (1, 2, 0.5), (1, 0, 3.0), (0, 1, -2.0), (1, 2, 0.25)];
    let m = coo(2, 3, &entries).unwrap().to_csr();
    assert!(m.columns_sorted());
    assert_eq!(m.row_offsets(), &[0, 1, 3]);
    assert_eq!(m.col_indices(), &[1, 0, 2]);
    // The cancelled (0, 1) stays as an explicit zero: conversion never drops entries.
    assert_eq!(m.values(), &[0.0, 3.0, 1.75]);
    assert_eq!(CsrMatrix::from_coo(&coo(2, 3, &entries).unwrap()), m);
}

#[test]
fn coo_sorted_by_row_is_stable_and_keeps_duplicates() {
    let m = coo(3, 3, &[(2, 0, 1.0), (0, 2, 2.0), (2, 0, 3.0), (0, 1, 4.0), (1, 1, 5.0)]).unwrap();
    assert!(!m.is_row_sorted());
    let s = m.sorted_by_row();
    assert!(s.is_row_sorted());
    assert_eq!(s.row_indices(), &[0, 0, 1, 2, 2]);
    assert_eq!(s.col_indices(), &[2, 1, 1, 0, 0]);
    assert_eq!(s.values(), &[2.0, 4.0, 5.0, 1.0, 3.0]);
}

#[test]
fn f64_values_follow() {
    let m = CooMatrix::try_new(2, 2, vec![1, 0, 1], vec![1, 0, 1], vec![0.1f64, 0.2, 0.3]).unwrap().to_csr();
    assert_eq!(m.values(), &[0.2, 0.1 + 0.3]);
    let ell = EllMatrix::from_csr(&m, &EllOptions::default()).unwrap();
    assert_eq!(ell.to_csr(), m);
}

#[test]
fn ell_layout_is_column_major_with_padding_sentinel() {
    let m = csr(3, 4, &[0, 2, 2, 3], &[1, 3, 0]).unwrap();
    let ell = EllMatrix::from_csr(&m, &EllOptions::default()).unwrap();
    assert_eq!((ell.rows(), ell.cols(), ell.width(), ell.nnz()), (3, 4, 2, 3));
    assert_eq!(ell.col_indices(), &[1, ELL_PADDING, 0, 3, ELL_PADDING, ELL_PADDING]);
    assert_eq!(ell.values(), &[1.0, 0.0, 3.0, 2.0, 0.0, 0.0]);
    assert_eq!(ell.to_csr(), m);
}

#[test]
fn hyb_auto_width_follows_the_one_third_rule() {
    let with_lengths = |lengths: &[u32]| {
        let mut offsets = vec![0];
        let mut cols = Vec::new();
        for &l in lengths {
            cols.extend(0..l);
            offsets.push(cols.len() as u32);
        }
        csr(lengths.len(), 10, &offsets, &cols).unwrap()
    };
    assert_eq!(HybMatrix::auto_width(&with_lengths(&[])), 0);
    assert_eq!(HybMatrix::auto_width(&with_lengths(&[0, 0])), 0);
    assert_eq!(HybMatrix::auto_width(&with_lengths(&[5, 5, 5, 5])), 5);
    // Rows of length >= k must be at least a third of the rows.
    assert_eq!(HybMatrix::auto_width(&with_lengths(&[9, 3, 1, 1, 1, 1])), 3);
    assert_eq!(HybMatrix::auto_width(&with_lengths(&[4, 0, 0])), 4);
    assert_eq!(HybMatrix::auto_width(&with_lengths(&[4, 0, 0, 0])), 0);
    let m = with_lengths(&[9, 3, 1, 1, 1, 1]);
    let hyb = HybMatrix::from_csr(&m, HybSplit::Auto).unwrap();
    assert_eq!((hyb.width(), hyb.ell().nnz(), hyb.coo().nnz(), hyb.nnz()), (3, 10, 6, 16));
    assert_eq!(hyb.coo().row_indices(), &[0; 6]);
    assert_eq!(hyb.to_csr(), m);
}

#[test]
fn dense_round_trip_drops_exact_zeros_only() {
    let d = DenseMatrix::try_new(2, 3, vec![0.0f32, -0.0, 1.5, f32::NAN, 0.0, -2.0]).unwrap();
    assert_eq!(d.get(0, 2), Some(1.5));
    assert_eq!(d.get(2, 0), None);
    let m = d.to_csr();
    assert_eq!(m.row_offsets(), &[0, 1, 3]);
    assert_eq!(m.col_indices(), &[2, 0, 2]);
    let back = DenseMatrix::from_csr(&m).unwrap();
    assert_eq!(back.get(1, 2), Some(-2.0));
    assert!(back.get(1, 0).unwrap().is_nan());
    let empty = DenseMatrix::<f32>::zeros(3, 0).unwrap();
    assert_eq!(empty.to_csr(), CsrMatrix::zeros(3, 0).unwrap());
}

#[test]
fn generated_matrices_survive_every_conversion() {
    let matrices = [
        generate::laplacian_2d(9),
        generate::rmat(8, 6, 0.57, 0.19, 0.19, 11),
        generate::dense_row_mix(300, 250, 12),
        generate::uniform_random(40, 70, 5, 13),
        generate::random(50, 30, 0.1, 14),
    ];
    for m in &matrices {
        assert_eq!(m.to_coo().to_csr(), *m);
        let ell = EllMatrix::from_csr(m, &NO_PADDING_LIMIT).unwrap();
        assert_eq!(ell.to_csr(), *m);
        for split in [HybSplit::Auto, HybSplit::Width(0), HybSplit::Width(3), HybSplit::Width(usize::MAX)] {
            match HybMatrix::from_csr(m, split) {
                Ok(hyb) => assert_eq!(hyb.to_csr(), *m, "{split:?}"),
                Err(e) => assert!(matches!(e, FormatError::EllPaddingTooLarge { .. }), "{split:?}: {e}"),
            }
        }
        assert_eq!(DenseMatrix::from_csr(m).unwrap().to_csr(), *m);
    }
}

// ---- property tests on small random matrices ----

/// Entries of a `rows × cols` matrix (0..=20 each, empty included), in any order, with repeats.
fn coo_strategy() -> impl Strategy<Value = CooMatrix<f32>> {
    (0..=20usize, 0..=20usize)
        .prop_flat_map(|(rows, cols)| {
            let entries = if rows > 0 && cols > 0 {
                prop::collection::vec((0..rows as u32, 0..cols as u32, -8i8..8), 0..60).boxed()
            } else {
                Just(Vec::new()).boxed()
            };
            (Just(rows), Just(cols), entries)
        })
        .prop_map(|(rows, cols, entries)| {
            // Small integers and quarters: sums are exact, so comparisons can be exact.
            let entries: Vec<_> = entries.into_iter().map(|(r, c, v)| (r, c, v as f32 / 4.0)).collect();
            coo(rows, cols, &entries).unwrap()
        })
}

/// Sum of every entry per position, in f64: what `to_csr` must produce.
fn dense_sum(m: &CooMatrix<f32>) -> Vec<f64> {
    let mut dense = vec![0.0; m.rows() * m.cols()];
    for ((&r, &c), &v) in m.row_indices().iter().zip(m.col_indices()).zip(m.values()) {
        dense[r as usize * m.cols() + c as usize] += v as f64;
    }
    dense
}

/// One way to break a valid CSR matrix; each must be refused.
#[derive(Debug, Clone)]
enum Corruption {
    FirstOffset(u32),
    LastOffset(u32),
    DecreasingOffset(usize),
    ColumnOutOfBounds(usize, u32),
    Duplicate(usize),
    OffsetsLength(bool),
    ValuesLength(bool),
}

fn corruption_strategy() -> impl Strategy<Value = Corruption> {
    prop_oneof![
        (1..5u32).prop_map(Corruption::FirstOffset),
        (1..5u32).prop_map(Corruption::LastOffset),
        any::<usize>().prop_map(Corruption::DecreasingOffset),
        (any::<usize>(), 0..3u32).prop_map(|(p, extra)| Corruption::ColumnOutOfBounds(p, extra)),
        any::<usize>().prop_map(Corruption::Duplicate),
        any::<bool>().prop_map(Corruption::OffsetsLength),
        any::<bool>().prop_map(Corruption::ValuesLength),
    ]
}

type CsrParts = (usize, usize, Vec<u32>, Vec<u32>, Vec<f32>);

/// Applies a corruption; `None` when this matrix has no place for it (e.g. no entries).
fn corrupt(parts: &CsrParts, corruption: &Corruption) -> Option<CsrParts> {
    let (rows, cols, mut offsets, mut indices, mut values) = parts.clone();
    let nnz = indices.len();
    match *corruption {
        Corruption::FirstOffset(by) => offsets[0] += by,
        Corruption::LastOffset(by) => offsets[rows] += by,
        Corruption::DecreasingOffset(pick) => {
            let candidates: Vec<usize> = (1..=rows).filter(|&i| offsets[i - 1] > 0).collect();
            let i = *candidates.get(pick % candidates.len().max(1))?;
            offsets[i] = offsets[i - 1] - 1;
        }
        Corruption::ColumnOutOfBounds(pick, extra) if nnz > 0 => indices[pick % nnz] = cols as u32 + extra,
        Corruption::Duplicate(pick) => {
            let rows_with_two: Vec<usize> = (0..rows).filter(|&i| offsets[i + 1] - offsets[i] >= 2).collect();
            let row = *rows_with_two.get(pick % rows_with_two.len().max(1))?;
            let start = offsets[row] as usize;
            let len = offsets[row + 1] as usize - start;
            indices[start + 1 + pick % (len - 1)] = indices[start];
        }
        Corruption::OffsetsLength(longer) => {
            if longer {
                offsets.push(nnz as u32)
            } else {
                offsets.pop();
            }
        }
        Corruption::ValuesLength(longer) => {
            if longer {
                values.push(1.0)
            } else {
                values.pop()?;
            }
        }
        _ => return None,
    }
    Some((rows, cols, offsets, indices, values))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn coo_to_csr_matches_a_dense_sum(m in coo_strategy()) {
        let c = m.to_csr();
        prop_assert!(c.columns_sorted());
        let (rows, cols, offsets, indices, values) = c.clone().into_parts();
        prop_assert!(CsrMatrix::try_from_csr_data(rows, cols, offsets, indices, values).is_ok());
        let expected = dense_sum(&m);
        let got = DenseMatrix::from_csr(&c).unwrap();
        prop_assert!(got.data().iter().zip(&expected).all(|(&g, &e)| g as f64 == e));
        let distinct: std::collections::BTreeSet<_> = m.row_indices().iter().zip(m.col_indices()).collect();
        prop_assert_eq!(c.nnz(), distinct.len());
    }

    #[test]
    fn coo_row_sort_is_a_stable_permutation(m in coo_strategy()) {
        let s = m.sorted_by_row();
        prop_assert!(s.is_row_sorted());
        let mut expected: Vec<_> = (0..m.nnz()).map(|k| (m.row_indices()[k], k)).collect();
        expected.sort();
        let expected: Vec<_> = expected.iter().map(|&(r, k)| (r, m.col_indices()[k], m.values()[k])).collect();
        let got: Vec<_> = (0..s.nnz()).map(|k| (s.row_indices()[k], s.col_indices()[k], s.values()[k])).collect();
        prop_assert_eq!(got, expected);
        prop_assert_eq!(s.to_csr(), m.to_csr());
    }

    #[test]
    fn round_trips_through_every_format(m in coo_strategy(), width in 0..6usize) {
        let c = m.to_csr();
        prop_assert_eq!(&c.to_coo().to_csr(), &c);
        let ell = EllMatrix::from_csr(&c, &NO_PADDING_LIMIT).unwrap();
        prop_assert_eq!(ell.width(), c.max_row_len());
        prop_assert_eq!(ell.nnz(), c.nnz());
        prop_assert_eq!(&ell.to_csr(), &c);
        let rebuilt = EllMatrix::try_from_ell_data(
            ell.rows(), ell.cols(), ell.width(), ell.col_indices().to_vec(), ell.values().to_vec(),
        ).unwrap();
        prop_assert_eq!(&rebuilt, &ell);
        for split in [HybSplit::Auto, HybSplit::Width(width)] {
            if let Ok(hyb) = HybMatrix::from_csr(&c, split) {
                prop_assert!(hyb.coo().is_row_sorted());
                prop_assert_eq!(hyb.nnz(), c.nnz());
                prop_assert_eq!(&hyb.to_csr(), &c);
            }
        }
        let dense = DenseMatrix::from_csr(&c).unwrap();
        prop_assert_eq!(DenseMatrix::from_csr(&dense.to_csr()).unwrap(), dense);
    }

    #[test]
    fn validators_refuse_exactly_the_corrupted(m in coo_strategy(), corruption in corruption_strategy()) {
        let parts = m.to_csr().into_parts();
        let (rows, cols, offsets, indices, values) = parts.clone();
        prop_assert!(CsrMatrix::try_from_csr_data(rows, cols, offsets, indices, values).is_ok());
        if let Some((rows, cols, offsets, indices, values)) = corrupt(&parts, &corruption) {
            let err = CsrMatrix::try_from_csr_data(rows, cols, offsets, indices, values).unwrap_err();
            let expected = match corruption {
                Corruption::FirstOffset(_) | Corruption::LastOffset(_) | Corruption::DecreasingOffset(_) => {
                    matches!(err, FormatError::InvalidOffsets { .. })
                }
                Corruption::ColumnOutOfBounds(..) => matches!(err, FormatError::IndexOutOfBounds { .. }),
                Corruption::Duplicate(_) => matches!(err, FormatError::DuplicateEntry { .. }),
                Corruption::OffsetsLength(_) | Corruption::ValuesLength(_) => {
                    matches!(err, FormatError::LengthMismatch { .. })
                }
            };
            prop_assert!(expected, "{:?} gave {:?}", corruption, err);
        }
    }

    #[test]
    fn coo_and_ell_validators_refuse_out_of_range_indices(m in coo_strategy(), pick in any::<usize>()) {
        let (rows, cols, r, c, v) = m.clone().into_parts();
        prop_assert!(CooMatrix::try_new(rows, cols, r.clone(), c.clone(), v.clone()).is_ok());
        if !v.is_empty() {
            let mut bad_rows = r.clone();
            bad_rows[pick % v.len()] = rows as u32;
            let refused = CooMatrix::try_new(rows, cols, bad_rows, c.clone(), v.clone());
            prop_assert!(matches!(refused, Err(FormatError::IndexOutOfBounds { what: "row", .. })), "{:?}", refused);
            let mut bad_cols = c;
            bad_cols[pick % v.len()] = cols as u32;
            let refused = CooMatrix::try_new(rows, cols, r, bad_cols, v);
            prop_assert!(matches!(refused, Err(FormatError::IndexOutOfBounds { what: "column", .. })), "{:?}", refused);
        }
        let ell = EllMatrix::from_csr(&m.to_csr(), &NO_PADDING_LIMIT).unwrap();
        let real: Vec<usize> = (0..ell.col_indices().len()).filter(|&k| ell.col_indices()[k] != ELL_PADDING).collect();
        if !real.is_empty() {
            let mut bad = ell.col_indices().to_vec();
            bad[real[pick % real.len()]] = cols as u32;
            let refused = EllMatrix::try_from_ell_data(rows, cols, ell.width(), bad, ell.values().to_vec());
            prop_assert!(matches!(refused, Err(FormatError::IndexOutOfBounds { .. })), "{:?}", refused);
        }
    }
}
