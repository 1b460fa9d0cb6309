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

/// How far the computed solution `x` (k right-hand sides) of the triangle in `a` is from
/// what rounding in `T`'s precision allows: the largest `|b − T·x|ᵢ / (γᵢ·(|T|·|x| + |b|)ᵢ)`
/// over rows and right-hand sides, computed in f64, with `γᵢ = mᵢ·u / (1 − mᵢ·u)` (mᵢ the
/// row's entries plus b and 5 for a division WGSL allows 2.5 ULP, u the unit roundoff). Substitution in any order
/// keeps it ≤ 1 (Higham, *Accuracy and Stability of Numerical Algorithms*, §8.1: the
/// computed x solves `(T + ΔT)·x = b` with `|ΔTᵢ| ≤ γᵢ·|Tᵢ|`), however ill-conditioned T is;
/// a solve that drops or repeats a term, or reads a stale x, is far above 1. It is the test
/// for f32 solves whose forward error the condition of T makes larger than the house
/// tolerance (a real matrix's unit lower triangle); NaN where x is not finite. In f64 the
/// f64 residual is no finer than the bound, so f64 solves are checked by forward error.
pub fn triangular_backward_error<T: Scalar>(
    a: &CsrMatrix<T>,
    unit_diagonal: bool,
    b: &[f64],
    x: &[T],
    k: usize,
) -> f64 {
    let n = a.rows();
    assert_eq!(x.len(), n * k, "triangular_backward_error: x has {} elements, not {n} x {k}", x.len());
    assert_eq!(b.len(), n * k, "triangular_backward_error: b has {} elements, not {n} x {k}", b.len());
    let u = match T::KIND {
        crate::ElementKind::F32 => f32::EPSILON as f64 / 2.0,
        crate::ElementKind::F64 => f64::EPSILON / 2.0,
    };
    let mut worst = 0.0f64;
    for i in 0..n {
        let (cols, vals) = a.row(i);
        // The row's entries and b, plus 5 for the division (WGSL allows f32 division
        // 2.5 ULP, not one correctly rounded operation).
        let m = (cols.len() + 6) as f64;
        let gamma = m * u / (1.0 - m * u);
        for c in 0..k {
            let xi = x[i * k + c].to_f64();
            if !xi.is_finite() {
                return f64::NAN;
            }
            // T·x and |T|·|x| over the row, the unit diagonal where the pivot is ignored.
            let (mut product, mut magnitude) = if unit_diagonal { (xi, xi.abs()) } else { (0.0, 0.0) };
            for (&j, v) in cols.iter().zip(vals) {
                if !(unit_diagonal && j as usize == i) {
                    let term = v.to_f64() * x[j as usize * k + c].to_f64();
                    product += term;
                    magnitude += term.abs();
                }
            }
            let residual = (b[i * k + c] - product).abs();
            let allowed = gamma * (magnitude + b[i * k + c].abs());
            let ratio = if residual == 0.0 { 0.0 } else { residual / allowed };
            worst = worst.max(ratio);
        }
    }
    worst
}
