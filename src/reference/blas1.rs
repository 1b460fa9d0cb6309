//! BLAS level 1 twins in f64, with the GPU ops' conventions: the vector α multiplies is not
//! read when α = 0, the output not when β = 0.

use crate::format::Scalar;

/// `α·x + β·y`.
pub fn axpby<T: Scalar>(alpha: f64, x: &[T], beta: f64, y: &[T]) -> Vec<f64> {
    assert_eq!(x.len(), y.len(), "axpby: x and y lengths differ");
    x.iter()
        .zip(y)
        .map(|(xi, yi)| {
            let a = if alpha != 0.0 { alpha * xi.to_f64() } else { 0.0 };
            if beta != 0.0 {
                a + beta * yi.to_f64()
            } else {
                a
            }
        })
        .collect()
}

/// `α·y` (zeros when α = 0, whatever y holds).
pub fn scal<T: Scalar>(alpha: f64, y: &[T]) -> Vec<f64> {
    y.iter().map(|v| if alpha != 0.0 { alpha * v.to_f64() } else { 0.0 }).collect()
}

/// `x·y`.
pub fn dot<T: Scalar>(x: &[T], y: &[T]) -> f64 {
    assert_eq!(x.len(), y.len(), "dot: x and y lengths differ");
    x.iter().zip(y).map(|(a, b)| a.to_f64() * b.to_f64()).sum()
}

/// `‖x‖₂`, scaled so that squares neither overflow nor underflow.
pub fn nrm2<T: Scalar>(x: &[T]) -> f64 {
    let scale = x.iter().fold(0f64, |m, v| m.max(v.to_f64().abs()));
    if x.iter().any(|v| v.to_f64().is_nan()) {
        return f64::NAN;
    }
    if scale == 0.0 || scale.is_infinite() {
        return scale;
    }
    scale * x.iter().map(|v| (v.to_f64() / scale).powi(2)).sum::<f64>().sqrt()
}

/// `x ⊙ y`, or `x ⊘ y` with `divide`.
pub fn elementwise<T: Scalar>(x: &[T], y: &[T], divide: bool) -> Vec<f64> {
    assert_eq!(x.len(), y.len(), "elementwise: x and y lengths differ");
    x.iter().zip(y).map(|(a, b)| if divide { a.to_f64() / b.to_f64() } else { a.to_f64() * b.to_f64() }).collect()
}
