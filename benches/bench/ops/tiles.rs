//! What the sparse × dense ops (SpMM, SDDMM) share in the bench: their widths, their
//! tuning knobs on the command line, and their dense operands.

use wgsparse::ops::{TileOptions, TransposedReads};
use wgsparse::{Context, CsrMatrix, DenseLayout, DenseMatrix, GpuDense, Scalar};

use super::OpError;
use crate::suite::{dense_operand, Scale};

/// The widths K each matrix is run at.
pub fn widths(scale: Scale) -> Vec<usize> {
    match scale {
        Scale::Quick | Scale::Small => vec![32],
        Scale::Large => vec![32, 128],
    }
}

/// Splits `name:key=value…` into the algorithm's name and its tuning knobs: `wg`, `chunk`,
/// `lanes`, `group` (SpMM's rows per slot), `parts` (SpMM's slots per row), `reads` (SpMM-T's `permuted` or `ordered`).
pub fn parse(name: &str) -> Option<(&str, TileOptions)> {
    let mut parts = name.split(':');
    let algorithm = parts.next()?;
    let mut options = TileOptions::default();
    for part in parts {
        let (key, value) = part.split_once('=')?;
        options = match (key, value.parse::<u32>()) {
            ("wg", Ok(value)) => options.workgroup_size(value),
            ("chunk", Ok(value)) => options.chunk_len(value),
            ("lanes", Ok(value)) => options.lanes(value),
            ("group", Ok(value)) => options.group_rows(value),
            ("parts", Ok(value)) => options.row_parts(value),
            ("reads", _) => options.transposed_reads(TransposedReads::from_name(value)?),
            _ => return None,
        };
    }
    Some((algorithm, options))
}

/// A `rows × k` dense operand drawn from `seed` (the same stream for every algorithm).
pub fn operand<T: Scalar>(rows: usize, k: usize, seed: u64) -> DenseMatrix<T> {
    let data = dense_operand(rows * k, seed).into_iter().map(|v| T::from_f64(v as f64)).collect();
    DenseMatrix::try_new(rows, k, data).expect("rows × k fits")
}

/// Uploads `m` row-major.
pub fn upload<T: Scalar>(ctx: &Context, m: &DenseMatrix<T>) -> Result<GpuDense<T>, OpError> {
    Ok(GpuDense::upload(ctx, m, DenseLayout::RowMajor)?)
}

/// `a` with values of type `T`.
pub fn values_as<T: Scalar>(a: &CsrMatrix<f32>) -> CsrMatrix<T> {
    a.map_values(|v| T::from_f64(v as f64))
}
