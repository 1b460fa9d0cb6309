//! What the solvers' unit tests share: an operator that is never applied, random values,
//! and a context for each subgroup mode that supports the element type.

use super::LinOp;
use crate::element::Scalar;
use crate::generate::random_vector;
use crate::gpu::GpuVec;
use crate::record::Recorder;
use crate::{Context, ContextOptions, Result};

/// An operator of the given size that the passes under test never apply.
pub struct Unused(pub usize);

impl<T: Scalar> LinOp<T> for Unused {
    fn shape(&self) -> (usize, usize) {
        (self.0, self.0)
    }

    fn apply(&self, _: &mut Recorder<'_, '_>, _: &GpuVec<T>, _: &mut GpuVec<T>) -> Result<()> {
        unreachable!("not applied")
    }
}

/// `len` random values in (−1, 1).
pub fn values<T: Scalar>(len: usize, seed: u64) -> Vec<T> {
    random_vector(len, seed).into_iter().map(|v| T::from_f64(v as f64)).collect()
}

pub fn as_f64<T: Scalar>(v: &[T]) -> Vec<f64> {
    v.iter().map(|e| e.to_f64()).collect()
}

/// A context with subgroups and one without, each where it supports `T`.
pub fn contexts<T: Scalar>() -> Vec<(bool, Context)> {
    [true, false]
        .into_iter()
        .map(|subgroups| {
            (
                subgroups,
                Context::new_blocking(ContextOptions { subgroups, ..ContextOptions::from_env().unwrap() }).unwrap(),
            )
        })
        .filter(|(_, ctx)| ctx.supports::<T>())
        .collect()
}

/// What an f64 twin allows a pass in `T`.
pub fn tolerance<T: Scalar>() -> f64 {
    if T::KIND == crate::ElementKind::F64 {
        1e-13
    } else {
        1e-5
    }
}
