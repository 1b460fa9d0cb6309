//! The transpose of a CSR matrix's pattern (its CSC), built on the GPU and kept with the
//! matrix's analyses: SpMM with `Aᵀ` (a graph network's backward pass) and the triangular
//! solve with `Lᵀ` run on it. Values are not copied here: `perm` maps each entry of the
//! transpose to the original entry, so the transpose stays valid when they change (the
//! solve reads A's values through it; an SpMM plan keeps its own copy in this order, checked
//! against A's before every run, through the inverse, [`Transpose::inverse`]).
//!
//! Built by a stable radix sort of the entries by column (`radix_sort`): within a column the
//! entries keep their row order, so sums over them run in a fixed order and SpMM on the
//! transpose is deterministic.

use super::radix_sort::RadixSort;
use super::scan::Scan;
use crate::context::Context;
use crate::element::Scalar;
use crate::gpu::GpuVec;
use crate::kernel::shaders::csr_transpose as kernel;
use crate::matrix::{Analysis, GpuCsr, GpuSparse, PanelStorage, RowStats};
use crate::{Error, Result};
use std::sync::{Arc, OnceLock};

/// `Aᵀ` in CSR form, pattern only.
pub(crate) struct Transpose {
    /// `cols + 1` offsets: row j of the transpose is column j of A.
    pub(crate) row_offsets: GpuVec<u32>,
    /// The original row of each entry.
    pub(crate) col_indices: GpuVec<u32>,
    /// The original entry (index into A's arrays) of each entry.
    pub(crate) perm: GpuVec<u32>,
    /// Its row statistics (A's column counts), read back on first use.
    stats: OnceLock<RowStats>,
}

impl Analysis for Transpose {
    fn device_bytes(&self) -> u64 {
        self.row_offsets.byte_len() + self.col_indices.byte_len() + self.perm.byte_len()
    }
}

impl Transpose {
    /// The statistics of its rows (A's columns), from its row offsets read back on first use:
    /// a plan of `Aᵀ·B` sizes its chunks by them.
    pub(crate) fn row_stats(&self) -> Result<RowStats> {
        if let Some(stats) = self.stats.get() {
            return Ok(*stats);
        }
        let stats = RowStats::from_offsets(&self.row_offsets.read_blocking()?);
        Ok(*self.stats.get_or_init(|| stats))
    }

    /// The name it is kept under in the matrix's analyses.
    pub(crate) const NAME: &'static str = "transpose (CSC pattern and entry permutation)";

    /// `a`'s transpose, built on first use and kept with its analyses. A matrix in more than
    /// one panel is refused: the permutation indexes one array of values.
    pub(crate) fn of<T: Scalar>(ctx: &Context, a: &GpuSparse<T>) -> Result<Arc<Self>> {
        let csr = match a.panels() {
            [] => None,
            [panel] => match panel.storage() {
                PanelStorage::Csr(csr) => Some(csr),
                _ => return Err(Error::InvalidArgument("the transpose of a matrix not stored as CSR".into())),
            },
            panels => {
                return Err(Error::LimitExceeded {
                    what: format!("the transpose of a matrix in {} row panels", panels.len()),
                    limit: "max_storage_buffer_binding_size",
                    requested: a.device_bytes(),
                    max: ctx.limits().max_storage_buffer_binding_size,
                })
            }
        };
        a.structure().get_or_build(Self::NAME, || Self::build(ctx, csr, a.cols()))
    }

    /// The transpose of `a` (`None`: no rows), a matrix of `cols` columns.
    fn build<T: Scalar>(ctx: &Context, a: Option<&GpuCsr<T>>, cols: usize) -> Result<Self> {
        let row_offsets = ctx.zeros::<u32>(cols + 1)?;
        let a = match a {
            Some(a) if a.nnz() > 0 => a,
            // No entries: all offsets 0.
            _ => {
                let (col_indices, perm, stats) = (ctx.zeros(0)?, ctx.zeros(0)?, OnceLock::new());
                return Ok(Transpose { row_offsets, col_indices, perm, stats });
            }
        };
        let (rows, nnz) = (a.rows(), a.nnz());
        let (keys, values) = (ctx.zeros::<u32>(nnz)?, ctx.zeros::<u32>(nnz)?);
        let sort = RadixSort::new(ctx, nnz)?;
        let (scan, total) = (Scan::new(ctx, cols)?, ctx.zeros::<u32>(1)?);
        let kernel = |iota, count| {
            ctx.plain_kernel::<kernel::Shader>(kernel::Flags { iota, count, invert: false }, Default::default())
        };
        let params = kernel::Params { rows: rows as u32, nnz: nnz as u32 };
        let mut batch = ctx.batch();
        let in_spares = {
            let mut rec = batch.recorder();
            // Column counts, scanned into the transpose's row offsets; the columns copied as
            // the sort's keys, and the entries numbered as its values.
            rec.dispatch_items(&kernel(false, true)?, params, bindings(a, &row_offsets, &values, &keys), nnz as u64)?;
            scan.record(&mut rec, &row_offsets, cols, &total)?;
            rec.dispatch_items(&kernel(true, false)?, params, bindings(a, &row_offsets, &keys, &values), nnz as u64)?;
            // Sorted by column, stably: within a column the entries stay in row order.
            let bits = u32::BITS - (cols.max(1) as u32 - 1).leading_zeros();
            let in_spares = sort.record(&mut rec, &keys, &values, nnz, bits)?;
            // The permutation (sorted values) and, into the sorted keys' place, the original
            // row of each entry of the transpose.
            let (sorted_keys, sorted_values) = if in_spares { sort.spare_pair() } else { (&keys, &values) };
            let rows_of = bindings(a, &row_offsets, sorted_values, sorted_keys);
            rec.dispatch_items(&kernel(false, false)?, params, rows_of, nnz as u64)?;
            in_spares
        };
        // The last offset (queued writes land before the batch, whose scan writes the others).
        row_offsets.write_at(cols, &[nnz as u32])?;
        batch.submit()?;
        let (rows_out, perm) = if in_spares { sort.spares() } else { (keys, values) };
        Ok(Transpose { row_offsets, col_indices: rows_out, perm, stats: OnceLock::new() })
    }
}

/// The inverse of a transpose's `perm`: for each of A's entries, its entry in the
/// transpose. Kept with A's analyses beside the transpose, for the SpMM plans that keep A's
/// values in the transpose's order.
pub(crate) struct InversePermutation {
    pub(crate) inverse: GpuVec<u32>,
}

impl Analysis for InversePermutation {
    fn device_bytes(&self) -> u64 {
        self.inverse.byte_len()
    }
}

impl InversePermutation {
    const NAME: &'static str = "transpose's inverse permutation";

    /// The inverse of `a`'s transpose's permutation, built on first use and kept with `a`'s
    /// analyses.
    pub(crate) fn of<T: Scalar>(ctx: &Context, a: &GpuSparse<T>, transpose: &Transpose) -> Result<Arc<Self>> {
        a.structure().get_or_build(Self::NAME, || {
            let inverse = match a.panels().first().map(|p| p.storage()) {
                Some(PanelStorage::Csr(csr)) => transpose.inverse(ctx, csr)?,
                Some(_) => return Err(Error::Validation("the inverse permutation of a panel that is not CSR".into())),
                None => ctx.zeros(0)?,
            };
            Ok(InversePermutation { inverse })
        })
    }
}

impl Transpose {
    /// The inverse of `perm`, built on the GPU (`a`: A's one panel).
    fn inverse<T: Scalar>(&self, ctx: &Context, a: &GpuCsr<T>) -> Result<GpuVec<u32>> {
        let nnz = self.perm.len();
        let inverse = ctx.zeros::<u32>(nnz)?;
        if nnz > 0 {
            let flags = kernel::Flags { iota: false, count: false, invert: true };
            let kernel = ctx.plain_kernel::<kernel::Shader>(flags, Default::default())?;
            let params = kernel::Params { rows: a.rows() as u32, nnz: nnz as u32 };
            // Not read by this variant, but bound: its own buffer, as writable bindings must
            // not alias.
            let counts = ctx.zeros::<u32>(1)?;
            let mut batch = ctx.batch();
            batch.recorder().dispatch_items(&kernel, params, bindings(a, &counts, &self.perm, &inverse), nnz as u64)?;
            batch.submit()?;
        }
        Ok(inverse)
    }
}

/// The transpose kernel's bindings: A's pattern, the column counts, and a permutation to
/// read and an array to write (each variant uses some).
fn bindings<'a, T: Scalar>(
    a: &'a GpuCsr<T>,
    counts: &'a GpuVec<u32>,
    perm: &'a GpuVec<u32>,
    out: &'a GpuVec<u32>,
) -> kernel::Bindings<'a> {
    kernel::Bindings {
        row_offsets: a.row_offsets().bind(),
        col_indices: a.col_indices().bind(),
        perm: perm.bind(),
        counts: counts.bind(),
        out: out.bind(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{generate, ContextOptions, Conversion, CsrMatrix};

    /// The GPU transpose is the host's, exactly: offsets, rows in order within each column
    /// (the sort is stable), and the permutation back to A's entries. Column counts make the
    /// sort take 0, 2, 3 and 5 passes (an odd count leaves the result in its spare buffers).
    #[test]
    fn gpu_transpose_is_the_host_transpose() {
        let ctx = Context::new_blocking(ContextOptions::from_env().unwrap()).unwrap();
        let seed = 0x7a5e;
        let wide = generate::random(40, 70_000, 0.001, seed);
        let cases = [
            generate::rmat(9, 8, 0.57, 0.19, 0.19, seed),
            generate::dense_row_mix(1200, 1100, seed),
            generate::random(300, 1, 0.5, seed),
            generate::random(50, 200, 0.1, seed),
            wide,
            CsrMatrix::zeros(5, 7).unwrap(),
            CsrMatrix::zeros(0, 3).unwrap(),
        ];
        for a in cases {
            let matrix = GpuSparse::from_csr(&ctx, &a, Conversion::Csr).unwrap();
            let t = Transpose::of(&ctx, &matrix).unwrap();
            let want = a.transpose();
            let label = format!("{}x{} nnz {}", a.rows(), a.cols(), a.nnz());
            assert_eq!(t.row_offsets.read_blocking().unwrap(), want.row_offsets(), "{label}: offsets");
            assert_eq!(t.col_indices.read_blocking().unwrap(), want.col_indices(), "{label}: rows");
            let perm = t.perm.read_blocking().unwrap();
            let values: Vec<f32> = perm.iter().map(|&e| a.values()[e as usize]).collect();
            assert_eq!(values, want.values(), "{label}: permutation");
        }
    }
}
