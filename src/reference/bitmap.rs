//! The bitmap twins (seed 004), in f64: `A ± B` by the seed's per-position rules, `A·B`
//! with the structural pattern (a position is stored when some k has both `a_ik` and `b_kj`
//! stored), and the batched LU whose factors keep, without pivoting, A's pattern with its
//! fill, and with partial pivoting the entries that are not zero.

use super::lu_factor;
use crate::format::{flagged_columns, words_per_row, BitmapMatrix, DenseMatrix, Scalar};

/// `A ± B`: flags OR'ed; both stored: `a ± b`; one stored: `a` or `±b`.
pub fn bitmap_add<T: Scalar>(a: &BitmapMatrix<T>, b: &BitmapMatrix<T>, subtract: bool) -> BitmapMatrix<f64> {
    assert_eq!((a.rows(), a.cols()), (b.rows(), b.cols()), "bitmap_add: shapes differ");
    let sign = if subtract { -1.0 } else { 1.0 };
    let flags: Vec<u32> = a.flags().iter().zip(b.flags()).map(|(x, y)| x | y).collect();
    let (mut offsets, mut values) = (vec![0u32], Vec::new());
    for i in 0..a.rows() {
        let words = &flags[i * a.words_per_row()..(i + 1) * a.words_per_row()];
        for j in flagged_columns(words) {
            let v = match (a.get(i, j), b.get(i, j)) {
                (Some(x), Some(y)) => x.to_f64() + sign * y.to_f64(),
                (Some(x), None) => x.to_f64(),
                (None, Some(y)) => sign * y.to_f64(),
                (None, None) => unreachable!("a flag of neither"),
            };
            values.push(v);
        }
        offsets.push(values.len() as u32);
    }
    BitmapMatrix::try_new(a.rows(), a.cols(), offsets, flags, values).expect("a valid sum")
}

/// `A·B` with the structural pattern, sums in k order.
pub fn bitmap_multiply<T: Scalar>(a: &BitmapMatrix<T>, b: &BitmapMatrix<T>) -> BitmapMatrix<f64> {
    assert_eq!(a.cols(), b.rows(), "bitmap_multiply: A's columns are not B's rows");
    let (rows, cols) = (a.rows(), b.cols());
    let words = words_per_row(cols);
    let (mut flags, mut offsets, mut values) = (vec![0u32; rows * words], vec![0u32], Vec::new());
    let mut sums = vec![0.0f64; cols];
    for i in 0..rows {
        let row = &mut flags[i * words..(i + 1) * words];
        for k in a.row_columns(i) {
            let a_ik = a.get(i, k).expect("a stored entry").to_f64();
            for j in b.row_columns(k) {
                row[j / 32] |= 1 << (j % 32);
                sums[j] += a_ik * b.get(k, j).expect("a stored entry").to_f64();
            }
        }
        for j in flagged_columns(row) {
            values.push(std::mem::take(&mut sums[j]));
        }
        offsets.push(values.len() as u32);
    }
    BitmapMatrix::try_new(rows, cols, offsets, flags, values).expect("a valid product")
}

/// The LU of each `n × n` matrix of a stacked batch (`batch·n` rows): L's strictly lower
/// part and U's part on and above the diagonal, as bitmaps of the input's shape, and each
/// matrix's info (see [`lu_factor`]). Without pivoting the factors store the pattern of the
/// elimination ([`lu_pattern`]: A's entries and their fill, values that cancel to zero
/// included); with partial pivoting, the entries that are not zero.
pub fn bitmap_lu<T: Scalar>(
    a: &BitmapMatrix<T>,
    n: usize,
    pivoting: bool,
) -> (BitmapMatrix<f64>, BitmapMatrix<f64>, Vec<u32>) {
    assert_eq!(a.cols(), n, "bitmap_lu: {} columns, not {n}", a.cols());
    assert_eq!(a.rows() % n.max(1), 0, "bitmap_lu: {} rows are not whole {n} x {n} matrices", a.rows());
    let dense = a.to_dense().expect("a dense batch fits");
    let batch = a.rows().checked_div(n).unwrap_or(0);
    let (mut lower, mut upper) = (vec![0.0; a.rows() * n], vec![0.0; a.rows() * n]);
    let mut infos = Vec::with_capacity(batch);
    for m in 0..batch {
        let block = &dense.data()[m * n * n..(m + 1) * n * n];
        let matrix = DenseMatrix::try_new(n, n, block.to_vec()).expect("a square block");
        let (lu, _, info) = lu_factor(&matrix, pivoting);
        infos.push(info);
        for (e, v) in lu.into_iter().enumerate() {
            let (i, j) = (e / n, e % n);
            let part = if j < i { &mut lower } else { &mut upper };
            part[m * n * n + e] = v;
        }
    }
    let to_bitmap = |data: Vec<f64>| BitmapMatrix::from_dense(&DenseMatrix::try_new(a.rows(), n, data).unwrap());
    if pivoting {
        return (to_bitmap(lower), to_bitmap(upper), infos);
    }
    let pattern = lu_pattern(a, n);
    let keep = |data: &[f64], part: fn(usize, usize) -> bool| {
        let (mut flags, mut offsets, mut values) = (vec![0u32; a.rows() * a.words_per_row()], vec![0u32], Vec::new());
        for (r, row) in pattern.iter().enumerate() {
            for j in (0..n).filter(|&j| row[j] && part(r % n, j)) {
                flags[r * a.words_per_row() + j / 32] |= 1 << (j % 32);
                values.push(data[r * n + j]);
            }
            offsets.push(values.len() as u32);
        }
        BitmapMatrix::try_new(a.rows(), n, offsets, flags, values).expect("a valid factor")
    };
    (keep(&lower, |i, j| j < i), keep(&upper, |i, j| j >= i), infos)
}

/// The pattern of the LU without pivoting of each `n × n` matrix of a stacked batch, from
/// A's flags alone: at step k every row below k whose pattern holds column k gains row k's
/// columns after k (a row a `Vec<bool>` of `n`).
pub fn lu_pattern<T: Scalar>(a: &BitmapMatrix<T>, n: usize) -> Vec<Vec<bool>> {
    let mut rows: Vec<Vec<bool>> = (0..a.rows())
        .map(|r| {
            let mut row = vec![false; n];
            for j in a.row_columns(r) {
                row[j] = true;
            }
            row
        })
        .collect();
    for matrix in rows.chunks_mut(n.max(1)) {
        for k in 0..matrix.len() {
            let (above, below) = matrix.split_at_mut(k + 1);
            for row in below.iter_mut().filter(|row| row[k]) {
                for j in k + 1..n {
                    row[j] |= above[k][j];
                }
            }
        }
    }
    rows
}
