//! BLAS level 1 on device vectors, recorded like every op (α and β may be device scalars).
//!
//! Semantics are BLAS's, and hold for NaN and infinities: with α = 0 the vector α
//! multiplies is not read (a NaN in it does not leak), with β = 0 the output is not read.

use super::common::{check_len, Operands, ScalarBinds};
use crate::element::Scalar;
use crate::gpu::{Bind, GpuVec, ScalarArg};
use crate::kernel::shaders::{copy_vector, vector_axpby, vector_fill, vector_scale};
use crate::record::Recorder;
use crate::Result;

/// `y ← α·y`.
pub fn scal<'s, T: Scalar>(
    rec: &mut Recorder<'_, '_>,
    alpha: impl Into<ScalarArg<'s, T>>,
    y: &mut GpuVec<T>,
) -> Result<()> {
    let alpha = alpha.into();
    Operands::new(rec.context(), "scal")?.scalar("alpha", &alpha)?.output("y", y)?;
    let ctx = rec.context().clone();
    let s = ScalarBinds::new(&ctx, alpha, ScalarArg::Host(T::default()))?;
    scal_range(rec, &s, y.bind(), y.len())
}

/// `y ← α·x + β·y`.
pub fn axpby<'s, T: Scalar>(
    rec: &mut Recorder<'_, '_>,
    alpha: impl Into<ScalarArg<'s, T>>,
    x: &GpuVec<T>,
    beta: impl Into<ScalarArg<'s, T>>,
    y: &mut GpuVec<T>,
) -> Result<()> {
    let (alpha, beta) = (alpha.into(), beta.into());
    Operands::new(rec.context(), "axpby")?.scalar("alpha", &alpha)?.scalar("beta", &beta)?.input("x", x)?.output("y", y)?;
    check_len("axpby", "y length", x.len(), y.len())?;
    let ctx = rec.context().clone();
    let s = ScalarBinds::new(&ctx, alpha, beta)?;
    axpby_range(rec, &s, x.bind(), y.bind(), y.len())
}

/// `y ← α·x + y`.
pub fn axpy<'s, T: Scalar>(
    rec: &mut Recorder<'_, '_>,
    alpha: impl Into<ScalarArg<'s, T>>,
    x: &GpuVec<T>,
    y: &mut GpuVec<T>,
) -> Result<()> {
    axpby(rec, alpha, x, ScalarArg::Host(T::from_f64(1.0)), y)
}

/// `y[i] ← value` for every element.
pub fn fill<'s, T: Scalar>(
    rec: &mut Recorder<'_, '_>,
    value: impl Into<ScalarArg<'s, T>>,
    y: &mut GpuVec<T>,
) -> Result<()> {
    let value = value.into();
    Operands::new(rec.context(), "fill")?.scalar("value", &value)?.output("y", y)?;
    let ctx = rec.context().clone();
    let s = ScalarBinds::new(&ctx, value, ScalarArg::Host(T::default()))?;
    fill_range(rec, &s, y.bind(), y.len())
}

/// `y ← x` (same length), for vectors of any element type: 16 bytes per invocation
/// (allocations are padded to 16 bytes, so whole words cover a vector). Also the
/// benchmark's yardstick for device bandwidth.
pub fn copy<E: crate::element::Stored>(rec: &mut Recorder<'_, '_>, x: &GpuVec<E>, y: &mut GpuVec<E>) -> Result<()> {
    Operands::new(rec.context(), "copy")?.input("x", x)?.output("y", y)?;
    check_len("copy", "y length", x.len(), y.len())?;
    let words = x.byte_len().div_ceil(16).max(1);
    let kernel = rec.context().plain_kernel::<copy_vector::Shader>(Default::default(), Default::default())?;
    rec.dispatch_items(
        &kernel,
        copy_vector::Params { len: words as u32 },
        copy_vector::Bindings { src: x.bind().reinterpret(words * 16), dst: y.bind().reinterpret(words * 16) },
        words,
    )
}

/// `y[..len] ← α·y[..len]`, operands checked by the caller.
pub(crate) fn scal_range<T: Scalar>(
    rec: &mut Recorder<'_, '_>,
    s: &ScalarBinds<'_, T>,
    y: Bind<'_, T>,
    len: usize,
) -> Result<()> {
    let kernel = rec.context().kernel::<vector_scale::Shader, T>(Default::default(), Default::default())?;
    let params = vector_scale::Params { len: len as u32, scaling: s.params };
    let bindings = vector_scale::Bindings { alpha_dev: s.alpha_dev, beta_dev: s.beta_dev, y };
    rec.dispatch_items(&kernel, params, bindings, len as u64)
}

/// `y[..len] ← α·x[..len] + β·y[..len]`, operands checked by the caller.
pub(crate) fn axpby_range<T: Scalar>(
    rec: &mut Recorder<'_, '_>,
    s: &ScalarBinds<'_, T>,
    x: Bind<'_, T>,
    y: Bind<'_, T>,
    len: usize,
) -> Result<()> {
    let kernel = rec.context().kernel::<vector_axpby::Shader, T>(Default::default(), Default::default())?;
    let params = vector_axpby::Params { len: len as u32, scaling: s.params };
    let bindings = vector_axpby::Bindings { x, alpha_dev: s.alpha_dev, beta_dev: s.beta_dev, y };
    rec.dispatch_items(&kernel, params, bindings, len as u64)
}

/// `y[..len] ← α`, operands checked by the caller.
pub(crate) fn fill_range<T: Scalar>(
    rec: &mut Recorder<'_, '_>,
    s: &ScalarBinds<'_, T>,
    y: Bind<'_, T>,
    len: usize,
) -> Result<()> {
    let kernel = rec.context().kernel::<vector_fill::Shader, T>(Default::default(), Default::default())?;
    let params = vector_fill::Params { len: len as u32, scaling: s.params };
    let bindings = vector_fill::Bindings { alpha_dev: s.alpha_dev, beta_dev: s.beta_dev, y };
    rec.dispatch_items(&kernel, params, bindings, len as u64)
}
