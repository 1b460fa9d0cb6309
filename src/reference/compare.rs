//! Error measures between a result and its f64 reference that never let a NaN pass.
//!
//! Positions where the reference is not finite must match it exactly (the same infinity, or
//! NaN for NaN) and then contribute nothing; any other non-finite value in `y`, or a mismatch
//! there, makes the error infinite. The reference norm counts its finite entries only.

use crate::format::Scalar;

/// `‖y − y_ref‖₂ / ‖y_ref‖₂`, the measure of the house rules (below 1e-5 for f32 SpMV).
/// 0 when `y` equals the reference (both zero included); infinite when the reference is zero
/// and `y` is not. Panics if the lengths differ.
pub fn relative_error<T: Scalar>(y: &[T], y_ref: &[f64]) -> f64 {
    relative_with(y, y_ref, norm_2)
}

/// `‖y − y_ref‖∞ / ‖y_ref‖∞`: the worst entry, relative to the largest reference entry, so a
/// single bad row cannot hide in a long vector. Same conventions as [`relative_error`].
pub fn max_relative_error<T: Scalar>(y: &[T], y_ref: &[f64]) -> f64 {
    relative_with(y, y_ref, norm_inf)
}

/// `‖y − y_ref‖₂ / ‖terms‖₂`, where `terms` is the twin run on the operands' magnitudes
/// (`|α|·|A|·|x| + |β|·|y₀|` for GEMV): the scale of the rounding, which does not shrink when
/// the terms cancel. Where nothing cancels it equals [`relative_error`]; where `α·A·x` and
/// `β·y₀` nearly cancel, [`relative_error`] divides rounding by a tiny result and fails
/// a correct kernel. Same conventions as [`relative_error`] otherwise.
pub fn error_relative_to_terms<T: Scalar>(y: &[T], y_ref: &[f64], terms: &[f64]) -> f64 {
    assert_eq!(terms.len(), y_ref.len(), "terms and reference lengths differ");
    scaled_with(y, y_ref, terms, norm_2)
}

/// `‖y − y_ref‖∞ / ‖terms‖∞`: [`error_relative_to_terms`] by the worst entry, as
/// [`max_relative_error`] is [`relative_error`] by the worst entry (in a matrix of a handful
/// of entries the largest reference entry may itself be a cancelled sum).
pub fn max_error_relative_to_terms<T: Scalar>(y: &[T], y_ref: &[f64], terms: &[f64]) -> f64 {
    assert_eq!(terms.len(), y_ref.len(), "terms and reference lengths differ");
    scaled_with(y, y_ref, terms, norm_inf)
}

fn relative_with<T: Scalar>(y: &[T], y_ref: &[f64], norm: fn(&[f64]) -> f64) -> f64 {
    scaled_with(y, y_ref, y_ref, norm)
}

/// `norm(y − y_ref) / norm(scale)` over the finite entries, with the NaN conventions above.
fn scaled_with<T: Scalar>(y: &[T], y_ref: &[f64], scale: &[f64], norm: fn(&[f64]) -> f64) -> f64 {
    assert_eq!(y.len(), y_ref.len(), "result and reference lengths differ");
    let mut differences = Vec::with_capacity(y.len());
    for (yi, &ri) in y.iter().zip(y_ref) {
        let yi = yi.to_f64();
        if yi.is_finite() && ri.is_finite() {
            differences.push(yi - ri);
        } else if !(yi == ri || (yi.is_nan() && ri.is_nan())) {
            return f64::INFINITY;
        }
    }
    let finite_ref: Vec<f64> = scale.iter().copied().filter(|r| r.is_finite()).collect();
    let (difference, reference) = (norm(&differences), norm(&finite_ref));
    if difference == 0.0 {
        0.0
    } else if reference == 0.0 {
        f64::INFINITY
    } else {
        difference / reference
    }
}

/// Euclidean norm, scaled by the largest magnitude so that squares neither overflow nor
/// underflow.
fn norm_2(v: &[f64]) -> f64 {
    let scale = norm_inf(v);
    if scale == 0.0 || !scale.is_finite() {
        return scale;
    }
    scale * v.iter().map(|x| (x / scale).powi(2)).sum::<f64>().sqrt()
}

fn norm_inf(v: &[f64]) -> f64 {
    v.iter().fold(0.0, |m, x| m.max(x.abs()))
}
