//! The bitmap format of seed 004: one bit per column per row says where the nonzeros are, the
//! values follow in row order, and a rank directory makes an element's position O(1).

use super::{check_len, check_u32, CooMatrix, CsrMatrix, DenseMatrix, FormatError, Scalar};

/// Flag words per rank-directory entry: an element's position costs one directory read and
/// the popcounts of at most this many words, whatever the row's width.
pub const RANK_BLOCK_WORDS: usize = 8;

/// How far a conversion to the bitmap format may grow the index bytes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BitmapOptions {
    /// The conversion is refused ([`FormatError::BitmapFlagsTooLarge`]) when the flags and
    /// the rank directory take more than this many times the bytes of the CSR arrays
    /// (offsets, columns and values). Default 4: below about one nonzero in 256 columns
    /// (f32) the bitmap costs more than it saves.
    pub max_flag_ratio: f64,
}

impl Default for BitmapOptions {
    fn default() -> Self {
        BitmapOptions { max_flag_ratio: 4.0 }
    }
}

/// A sparse matrix as flags, row starts and values (seed 004).
///
/// - `flags`: `words_per_row = ceil(cols / 32)` u32 words a row, bit `j % 32` of word
///   `j / 32` set ⇔ `(i, j)` is stored; bits past `cols` are zero;
/// - `row_offsets`: `rows + 1` starts into `values` (`P` of the seed);
/// - `values`: the stored entries, row by row, by increasing column;
/// - `rank`: the rank directory, [`blocks_per_row`](Self::blocks_per_row) words a row: the
///   position in `values` of the first entry at or after the block's first column, so that
///   `position(i, j) = rank[i][w / 8] + popcounts of the words of the block before w + the
///   bits of word w below j` with `w = j / 32`.
///
/// Invariants (checked by [`BitmapMatrix::try_new`]): every length as above; offsets start at
/// 0, and each row's count is the popcount of its flags; no bit past the last column.
/// Entries may hold zero values (a stored zero is still stored).
#[derive(Debug, Clone, PartialEq)]
pub struct BitmapMatrix<T = f32> {
    rows: usize,
    cols: usize,
    row_offsets: Vec<u32>,
    flags: Vec<u32>,
    rank: Vec<u32>,
    values: Vec<T>,
}

/// Flag words of a row of `cols` columns.
pub fn words_per_row(cols: usize) -> usize {
    cols.div_ceil(32)
}

/// Rank-directory entries of a row of `cols` columns.
pub fn blocks_per_row(cols: usize) -> usize {
    words_per_row(cols).div_ceil(RANK_BLOCK_WORDS)
}

/// The mask of the bits of the last flag word that lie inside `cols` columns.
fn last_word_mask(cols: usize) -> u32 {
    match cols % 32 {
        0 => u32::MAX,
        r => (1u32 << r) - 1,
    }
}

impl<T: Scalar> BitmapMatrix<T> {
    /// Validates flags, row starts and values and builds the rank directory.
    pub fn try_new(
        rows: usize,
        cols: usize,
        row_offsets: Vec<u32>,
        flags: Vec<u32>,
        values: Vec<T>,
    ) -> Result<Self, FormatError> {
        check_u32("rows", rows)?;
        check_u32("cols", cols)?;
        check_u32("nnz", values.len())?;
        let words = words_per_row(cols);
        let flag_len =
            rows.checked_mul(words).ok_or(FormatError::TooLarge { what: "flag words", value: usize::MAX })?;
        check_u32("flag words", flag_len)?;
        check_len("flags", flag_len, flags.len())?;
        check_len("row_offsets", rows + 1, row_offsets.len())?;
        if row_offsets[0] != 0 {
            return Err(FormatError::InvalidOffsets { position: 0, reason: "first offset must be 0" });
        }
        for i in 0..rows {
            let row = &flags[i * words..(i + 1) * words];
            if let Some(&last) = row.last() {
                if last & !last_word_mask(cols) != 0 {
                    return Err(FormatError::InvalidFlags { row: i, reason: "a bit is set past the last column" });
                }
            }
            let count: u64 = row.iter().map(|w| w.count_ones() as u64).sum();
            if row_offsets[i + 1] < row_offsets[i] {
                return Err(FormatError::InvalidOffsets { position: i + 1, reason: "offsets decrease" });
            }
            if (row_offsets[i + 1] - row_offsets[i]) as u64 != count {
                return Err(FormatError::InvalidFlags {
                    row: i,
                    reason: "the row's offsets do not span the popcount of its flags",
                });
            }
        }
        if row_offsets[rows] as usize != values.len() {
            return Err(FormatError::InvalidOffsets {
                position: rows,
                reason: "last offset must equal the number of stored entries",
            });
        }
        let rank = rank_directory(rows, cols, &row_offsets, &flags);
        Ok(BitmapMatrix { rows, cols, row_offsets, flags, rank, values })
    }

    /// Wraps arrays a conversion of this crate built valid (re-validated in debug builds).
    pub(crate) fn from_parts_unchecked(
        rows: usize,
        cols: usize,
        row_offsets: Vec<u32>,
        flags: Vec<u32>,
        values: Vec<T>,
    ) -> Self {
        if cfg!(debug_assertions) {
            if let Err(e) = Self::try_new(rows, cols, row_offsets.clone(), flags.clone(), values.clone()) {
                panic!("internal conversion built an invalid bitmap matrix: {e}");
            }
        }
        let rank = rank_directory(rows, cols, &row_offsets, &flags);
        BitmapMatrix { rows, cols, row_offsets, flags, rank, values }
    }

    /// The bitmap form of a CSR matrix (columns sorted on the way), refused when its flags
    /// would pass `options`' bound ([`FormatError::BitmapFlagsTooLarge`]).
    pub fn from_csr(csr: &CsrMatrix<T>, options: &BitmapOptions) -> Result<Self, FormatError> {
        let (rows, cols) = (csr.rows(), csr.cols());
        check_flag_bound::<T>(rows, cols, csr.nnz(), options)?;
        let words = words_per_row(cols);
        let flag_len = rows * words;
        check_u32("flag words", flag_len)?;
        let mut flags = vec![0u32; flag_len];
        let mut values = Vec::with_capacity(csr.nnz());
        let mut order = Vec::new();
        for i in 0..rows {
            let (columns, row_values) = csr.row(i);
            order.clear();
            order.extend(0..columns.len());
            if !csr.columns_sorted() {
                order.sort_unstable_by_key(|&e| columns[e]);
            }
            for &e in &order {
                let j = columns[e] as usize;
                flags[i * words + j / 32] |= 1 << (j % 32);
                values.push(row_values[e]);
            }
        }
        Ok(Self::from_parts_unchecked(rows, cols, csr.row_offsets().to_vec(), flags, values))
    }

    /// The bitmap form of a COO matrix: repeated positions add up (through
    /// [`CooMatrix::to_csr`]), and the bound of [`from_csr`](Self::from_csr) applies.
    pub fn from_coo(coo: &CooMatrix<T>, options: &BitmapOptions) -> Result<Self, FormatError> {
        Self::from_csr(&coo.to_csr(), options)
    }

    /// The bitmap form of a dense matrix: every entry that is not exactly zero (NaN kept,
    /// -0.0 dropped). Never refused by the bound: the flags are 1/32 of the dense words.
    pub fn from_dense(dense: &DenseMatrix<T>) -> Self {
        let (rows, cols) = (dense.rows(), dense.cols());
        let words = words_per_row(cols);
        let zero = T::from_f64(0.0);
        let mut flags = vec![0u32; rows * words];
        let mut row_offsets = Vec::with_capacity(rows + 1);
        let mut values = Vec::new();
        row_offsets.push(0);
        for i in 0..rows {
            for (j, &v) in dense.row(i).iter().enumerate() {
                if v != zero {
                    flags[i * words + j / 32] |= 1 << (j % 32);
                    values.push(v);
                }
            }
            row_offsets.push(values.len() as u32);
        }
        Self::from_parts_unchecked(rows, cols, row_offsets, flags, values)
    }

    /// CSR with the same entries, columns sorted.
    pub fn to_csr(&self) -> CsrMatrix<T> {
        let mut col_indices = Vec::with_capacity(self.nnz());
        for i in 0..self.rows {
            col_indices.extend(self.row_columns(i).map(|j| j as u32));
        }
        CsrMatrix::from_parts_unchecked(
            self.rows,
            self.cols,
            self.row_offsets.clone(),
            col_indices,
            self.values.clone(),
        )
    }

    /// Row-sorted COO with the same entries.
    pub fn to_coo(&self) -> CooMatrix<T> {
        self.to_csr().to_coo()
    }

    /// The dense form; refused if `rows * cols` does not fit u32.
    pub fn to_dense(&self) -> Result<DenseMatrix<T>, FormatError> {
        DenseMatrix::from_csr(&self.to_csr())
    }

    /// The value at `(i, j)`: `None` when the position is not stored or lies outside.
    pub fn get(&self, i: usize, j: usize) -> Option<T> {
        self.position(i, j).map(|p| self.values[p])
    }

    /// Where `(i, j)` is in [`values`](Self::values), through the rank directory: `None`
    /// when it is not stored or lies outside.
    pub fn position(&self, i: usize, j: usize) -> Option<usize> {
        if i >= self.rows || j >= self.cols {
            return None;
        }
        let words = self.words_per_row();
        let row = &self.flags[i * words..(i + 1) * words];
        let (w, bit) = (j / 32, j % 32);
        if row[w] >> bit & 1 == 0 {
            return None;
        }
        let block = w / RANK_BLOCK_WORDS;
        let before: u32 = row[block * RANK_BLOCK_WORDS..w].iter().map(|x| x.count_ones()).sum();
        let below = (row[w] & ((1u32 << bit) - 1)).count_ones();
        Some((self.rank[i * self.blocks_per_row() + block] + before + below) as usize)
    }

    /// The stored columns of row `i`, increasing (panics if `i >= rows`, like slice indexing).
    pub fn row_columns(&self, i: usize) -> impl Iterator<Item = usize> + '_ {
        let words = self.words_per_row();
        self.flags[i * words..(i + 1) * words]
            .iter()
            .enumerate()
            .flat_map(|(w, &word)| (0..32).filter(move |b| word >> b & 1 == 1).map(move |b| w * 32 + b))
    }

    /// The same pattern with values mapped by `f`.
    pub fn map_values<U: Scalar>(&self, f: impl Fn(T) -> U) -> BitmapMatrix<U> {
        BitmapMatrix {
            rows: self.rows,
            cols: self.cols,
            row_offsets: self.row_offsets.clone(),
            flags: self.flags.clone(),
            rank: self.rank.clone(),
            values: self.values.iter().map(|&v| f(v)).collect(),
        }
    }
}

impl<T> BitmapMatrix<T> {
    /// Rows.
    pub fn rows(&self) -> usize {
        self.rows
    }
    /// Columns.
    pub fn cols(&self) -> usize {
        self.cols
    }
    /// Stored entries.
    pub fn nnz(&self) -> usize {
        self.values.len()
    }
    /// Flag words a row: `ceil(cols / 32)`.
    pub fn words_per_row(&self) -> usize {
        words_per_row(self.cols)
    }
    /// Rank-directory entries a row: `ceil(words_per_row / 8)`.
    pub fn blocks_per_row(&self) -> usize {
        blocks_per_row(self.cols)
    }
    /// `rows + 1` starts into the values.
    pub fn row_offsets(&self) -> &[u32] {
        &self.row_offsets
    }
    /// The flags, row by row.
    pub fn flags(&self) -> &[u32] {
        &self.flags
    }
    /// The rank directory, row by row.
    pub fn rank_directory(&self) -> &[u32] {
        &self.rank
    }
    /// The stored values, row by row, by increasing column.
    pub fn values(&self) -> &[T] {
        &self.values
    }
    /// The stored values, to change in place (the pattern stays).
    pub fn values_mut(&mut self) -> &mut [T] {
        &mut self.values
    }
}

/// The columns whose flags are set in a row's words, increasing.
pub fn flagged_columns(words: &[u32]) -> impl Iterator<Item = usize> + '_ {
    words.iter().enumerate().flat_map(|(w, &word)| (0..32).filter(move |b| word >> b & 1 == 1).map(move |b| w * 32 + b))
}

/// Refuses a conversion of a `rows × cols` matrix of `nnz` entries whose flags and rank
/// directory would take more than `options.max_flag_ratio` times the bytes of its CSR arrays.
pub(crate) fn check_flag_bound<T: Scalar>(
    rows: usize,
    cols: usize,
    nnz: usize,
    options: &BitmapOptions,
) -> Result<(), FormatError> {
    let flag_bytes = rows as u128 * (words_per_row(cols) + blocks_per_row(cols)) as u128 * 4;
    let csr_bytes = (rows as u128 + 1 + nnz as u128) * 4 + nnz as u128 * T::KIND.size() as u128;
    if flag_bytes as f64 > options.max_flag_ratio * csr_bytes as f64 {
        return Err(FormatError::BitmapFlagsTooLarge {
            flag_bytes: flag_bytes.min(u64::MAX as u128) as u64,
            csr_bytes: csr_bytes as u64,
            max_ratio: options.max_flag_ratio,
        });
    }
    Ok(())
}

/// The rank directory of valid flags and offsets.
fn rank_directory(rows: usize, cols: usize, row_offsets: &[u32], flags: &[u32]) -> Vec<u32> {
    let (words, blocks) = (words_per_row(cols), blocks_per_row(cols));
    let mut rank = Vec::with_capacity(rows * blocks);
    for i in 0..rows {
        let mut position = row_offsets[i];
        for block in flags[i * words..(i + 1) * words].chunks(RANK_BLOCK_WORDS) {
            rank.push(position);
            position += block.iter().map(|w| w.count_ones()).sum::<u32>();
        }
    }
    rank
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::generate;

    #[test]
    fn round_trips_and_positions() {
        for (rows, cols, density) in
            [(5, 1, 0.5), (7, 31, 0.3), (9, 33, 0.2), (3, 1000, 0.05), (0, 4, 0.5), (4, 0, 0.5)]
        {
            let csr = generate::random(rows, cols, density, 11);
            let b = BitmapMatrix::from_csr(&csr, &BitmapOptions { max_flag_ratio: f64::INFINITY }).unwrap();
            assert_eq!(b.to_csr(), csr);
            for i in 0..rows {
                let (cs, vs) = csr.row(i);
                for (&j, &v) in cs.iter().zip(vs) {
                    assert_eq!(b.get(i, j as usize), Some(v));
                }
            }
            let dense = csr_dense(&csr);
            assert_eq!(BitmapMatrix::from_dense(&dense), b);
            assert_eq!(b.to_dense().unwrap(), dense);
        }
    }

    fn csr_dense(csr: &CsrMatrix<f32>) -> DenseMatrix<f32> {
        DenseMatrix::from_csr(csr).unwrap()
    }

    #[test]
    fn validation_names_the_problem() {
        // One row, 40 columns: two words; bit 8 of word 1 (column 40) lies outside.
        let bad = BitmapMatrix::<f32>::try_new(1, 40, vec![0, 1], vec![0, 1 << 8], vec![1.0]);
        assert!(matches!(bad, Err(FormatError::InvalidFlags { row: 0, .. })), "{bad:?}");
        let count = BitmapMatrix::<f32>::try_new(1, 40, vec![0, 2], vec![1, 0], vec![1.0, 2.0]);
        assert!(matches!(count, Err(FormatError::InvalidFlags { row: 0, .. })), "{count:?}");
        let len = BitmapMatrix::<f32>::try_new(2, 40, vec![0, 0, 0], vec![0; 3], vec![]);
        assert!(matches!(len, Err(FormatError::LengthMismatch { what: "flags", .. })), "{len:?}");
        let tall = generate::random(1000, 100_000, 0.00001, 3);
        let refused = BitmapMatrix::from_csr(&tall, &BitmapOptions::default());
        assert!(matches!(refused, Err(FormatError::BitmapFlagsTooLarge { .. })), "{refused:?}");
    }
}
