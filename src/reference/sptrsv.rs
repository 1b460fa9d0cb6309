//! The triangular-solve twin: forward substitution for `L·x = b`, backward for `U·x = b`,
//! in f64, with the GPU solve's conventions: entries on the diagonal are the pivot (ignored
//! with a unit diagonal), entries on the other side of it are an error, as are a missing or
//! zero pivot (non-unit). b and x hold k right-hand sides, row-major (n × k).

use crate::error::SolveProblem;
use crate::format::{CsrMatrix, Scalar};

/// x with `T·x = b` for the lower (or `upper`) triangle stored in `a`; the first offending
/// row and its problem otherwise.
pub fn triangular_solve<T: Scalar>(
    a: &CsrMatrix<T>,
    upper: bool,
    unit_diagonal: bool,
    b: &[f64],
    k: usize,
) -> Result<Vec<f64>, (usize, SolveProblem)> {
    let n = a.rows();
    assert_eq!(b.len(), n * k, "triangular_solve: b has {} elements, not {n} x {k}", b.len());
    let mut x = vec![0.0; n * k];
    let order: Box<dyn Iterator<Item = usize>> = if upper { Box::new((0..n).rev()) } else { Box::new(0..n) };
    for i in order {
        let (cols, vals) = a.row(i);
        let mut pivot = None;
        let mut sums = vec![0.0; k];
        for (&j, v) in cols.iter().zip(vals) {
            let j = j as usize;
            if j == i {
                pivot = Some(v.to_f64());
            } else if (j < i) != upper {
                for (c, s) in sums.iter_mut().enumerate() {
                    *s += v.to_f64() * x[j * k + c];
                }
            } else {
                return Err((i, SolveProblem::OutsideTriangle));
            }
        }
        let pivot = match (unit_diagonal, pivot) {
            (true, _) => 1.0,
            (false, None) => return Err((i, SolveProblem::MissingDiagonal)),
            (false, Some(0.0)) => return Err((i, SolveProblem::ZeroPivot)),
            (false, Some(p)) => p,
        };
        for (c, s) in sums.iter().enumerate() {
            x[i * k + c] = (b[i * k + c] - s) / pivot;
        }
    }
    Ok(x)
}
