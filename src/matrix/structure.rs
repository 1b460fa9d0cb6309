//! What a device matrix knows of its sparsity pattern, apart from its values: row-length
//! statistics, a fingerprint, and the analyses built from it.
//!
//! An analysis (a row decomposition, a merge-path partition, later level sets) depends only
//! on the pattern, so it is built once, shared (`Arc`) by every plan that needs it, and
//! survives [`GpuSparse::update_values`](super::GpuSparse::update_values). The matrix lists
//! its analyses with their device bytes and can drop them; a plan that holds one keeps it,
//! and a plan made later builds it again.

use std::any::Any;
use std::sync::{Arc, Mutex};

use crate::Result;

/// Cheap row-length statistics, taken on upload, that drive the automatic choices.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RowStats {
    /// Rows.
    pub rows: usize,
    /// Stored entries.
    pub nnz: usize,
    /// Longest row.
    pub max_len: usize,
    /// Rows with no entry.
    pub empty_rows: usize,
    /// Mean row length.
    pub mean: f64,
    /// Standard deviation of the row lengths.
    pub std_dev: f64,
    /// Rows by the bit length of their length: entry b counts the rows of 2^(b-1) ≤ length
    /// < 2^b (entry 0 the empty rows).
    pub rows_by_bit_length: [usize; 65],
}

impl RowStats {
    /// Statistics of CSR row offsets (which never decrease; a row whose offsets do counts as
    /// empty).
    pub fn from_offsets(row_offsets: &[u32]) -> Self {
        Self::from_lengths(row_offsets.windows(2).map(|w| w[1].saturating_sub(w[0]) as usize))
    }

    /// Statistics of a sequence of row lengths.
    pub fn from_lengths(lengths: impl Iterator<Item = usize>) -> Self {
        let (mut rows, mut nnz, mut max_len, mut empty_rows, mut sum_sq) = (0usize, 0usize, 0usize, 0usize, 0f64);
        let mut rows_by_bit_length = [0; 65];
        for len in lengths {
            rows += 1;
            nnz += len;
            max_len = max_len.max(len);
            empty_rows += (len == 0) as usize;
            sum_sq += (len as f64) * (len as f64);
            rows_by_bit_length[(usize::BITS - len.leading_zeros()) as usize] += 1;
        }
        let mean = if rows == 0 { 0.0 } else { nnz as f64 / rows as f64 };
        let variance = if rows == 0 { 0.0 } else { (sum_sq / rows as f64 - mean * mean).max(0.0) };
        RowStats { rows, nnz, max_len, empty_rows, mean, std_dev: variance.sqrt(), rows_by_bit_length }
    }

    /// The rows at least `len` entries long, `len` rounded down to a power of two.
    ///
    /// ```
    /// # use wgsparse::matrix::RowStats;
    /// let stats = RowStats::from_lengths([0, 1, 255, 256, 300, 1024].into_iter());
    /// assert_eq!(stats.rows_at_least(256), 3);
    /// assert_eq!(stats.rows_at_least(300), 3); // as 256
    /// assert_eq!(stats.rows_at_least(1), 5);
    /// assert_eq!(stats.rows_at_least(0), 6);
    /// ```
    pub fn rows_at_least(&self, len: usize) -> usize {
        let bits = if len == 0 { 0 } else { len.ilog2() as usize + 1 };
        self.rows_by_bit_length[bits..].iter().sum()
    }
}

impl Default for RowStats {
    /// The statistics of no rows.
    fn default() -> Self {
        RowStats::from_lengths(std::iter::empty())
    }
}

/// An analysis a matrix holds: what it is and how much device memory it takes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AnalysisInfo {
    /// What it is, with the parameters it was built for.
    pub name: String,
    /// Device bytes it holds.
    pub device_bytes: u64,
}

/// An analysis object: built from the pattern on the GPU, read by plans.
pub(crate) trait Analysis: Any + Send + Sync {
    /// Device bytes it holds.
    fn device_bytes(&self) -> u64;
}

struct Entry {
    name: String,
    analysis: Arc<dyn Any + Send + Sync>,
    bytes: u64,
}

/// The pattern side of a device matrix, shared by the matrix and the plans made for it.
pub(crate) struct Structure {
    stats: RowStats,
    /// A hash of the shape, row offsets and columns of the uploaded pattern.
    fingerprint: u64,
    analyses: Mutex<Vec<Entry>>,
}

impl Structure {
    pub(crate) fn new(stats: RowStats, fingerprint: u64) -> Self {
        Structure { stats, fingerprint, analyses: Mutex::new(Vec::new()) }
    }

    pub(crate) fn stats(&self) -> &RowStats {
        &self.stats
    }

    pub(crate) fn fingerprint(&self) -> u64 {
        self.fingerprint
    }

    /// The analysis named `name`, built by `build` on first use. Builds are serialised per
    /// matrix (they are rare and run on the GPU anyway); a failed build caches nothing.
    pub(crate) fn get_or_build<A: Analysis>(&self, name: &str, build: impl FnOnce() -> Result<A>) -> Result<Arc<A>> {
        let mut analyses = self.analyses.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(found) = analyses.iter().find(|e| e.name == name) {
            if let Ok(a) = found.analysis.clone().downcast::<A>() {
                return Ok(a);
            }
        }
        let built = Arc::new(build()?);
        analyses.push(Entry { name: name.to_string(), analysis: built.clone(), bytes: built.device_bytes() });
        Ok(built)
    }

    /// The analysis named `name`, if it was built.
    pub(crate) fn get<A: Analysis>(&self, name: &str) -> Option<Arc<A>> {
        let analyses = self.analyses.lock().unwrap_or_else(|p| p.into_inner());
        analyses.iter().find(|e| e.name == name).and_then(|e| e.analysis.clone().downcast::<A>().ok())
    }

    pub(crate) fn list(&self) -> Vec<AnalysisInfo> {
        let analyses = self.analyses.lock().unwrap_or_else(|p| p.into_inner());
        analyses.iter().map(|e| AnalysisInfo { name: e.name.clone(), device_bytes: e.bytes }).collect()
    }

    pub(crate) fn drop_all(&self) {
        self.analyses.lock().unwrap_or_else(|p| p.into_inner()).clear();
    }
}

/// A 64-bit hash of a pattern (FxHash-style, one multiply per word), for checking that new
/// values belong to the pattern a matrix was uploaded with.
pub(crate) fn fingerprint(rows: usize, cols: usize, row_offsets: &[u32], col_indices: &[u32]) -> u64 {
    const K: u64 = 0x517c_c1b7_2722_0a95;
    let eat = |hash: u64, word: u64| (hash.rotate_left(5) ^ word).wrapping_mul(K);
    let shape = eat(eat(0, rows as u64), cols as u64);
    row_offsets.iter().chain(col_indices).fold(shape, |h, &w| eat(h, w as u64))
}
