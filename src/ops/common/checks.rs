//! Operand checks done before anything is recorded, so that a refused call leaves the batch
//! (and every output) as it was.

use crate::context::Context;
use crate::element::Stored;
use crate::gpu::{DeviceId, GpuVec, ScalarArg};
use crate::matrix::GpuDense;
use crate::{Error, Result};

/// Fails with [`Error::DimensionMismatch`] unless `found == expected`.
pub(crate) fn check_len(op: &'static str, what: &'static str, expected: usize, found: usize) -> Result<()> {
    if found != expected {
        return Err(Error::dimension(op, what, expected, found));
    }
    Ok(())
}

/// The operands of one call: each must belong to the context, and no output may share a
/// buffer with another operand.
pub(crate) struct Operands<'c> {
    ctx: &'c Context,
    op: &'static str,
    /// (name, buffer id, written)
    seen: Vec<(&'static str, u64, bool)>,
}

impl<'c> Operands<'c> {
    pub(crate) fn new(ctx: &'c Context, op: &'static str) -> Result<Self> {
        ctx.check_known_alive()?;
        Ok(Operands { ctx, op, seen: Vec::new() })
    }

    /// Something of the op that is not a buffer (a plan, a matrix).
    pub(crate) fn owned(self, what: &str, owner: DeviceId) -> Result<Self> {
        if owner != self.ctx.id() {
            self.ctx.check_owner(&format!("{}: {what}", self.op), owner)?;
        }
        Ok(self)
    }

    pub(crate) fn input<T: Stored>(self, name: &'static str, v: &GpuVec<T>) -> Result<Self> {
        self.add(name, v.id(), v.device_id(), false)
    }

    pub(crate) fn output<T: Stored>(self, name: &'static str, v: &GpuVec<T>) -> Result<Self> {
        self.add(name, v.id(), v.device_id(), true)
    }

    pub(crate) fn scalar<T: crate::Scalar>(self, name: &'static str, s: &ScalarArg<'_, T>) -> Result<Self> {
        match s {
            ScalarArg::Host(_) => Ok(self),
            ScalarArg::Device { vector, .. } => self.input(name, vector),
        }
    }

    /// Every panel of a dense operand, read.
    pub(crate) fn dense_input<T: crate::Scalar>(self, name: &'static str, m: &GpuDense<T>) -> Result<Self> {
        m.panels().iter().try_fold(self, |ops, p| ops.input(name, p))
    }

    /// Every panel of a dense operand, written.
    pub(crate) fn dense_output<T: crate::Scalar>(self, name: &'static str, m: &GpuDense<T>) -> Result<Self> {
        m.panels().iter().try_fold(self, |ops, p| ops.output(name, p))
    }

    fn add(mut self, name: &'static str, buffer: u64, owner: DeviceId, written: bool) -> Result<Self> {
        if owner != self.ctx.id() {
            self.ctx.check_owner(&format!("{}: {name}", self.op), owner)?;
        }
        if let Some((other, _, _)) = self.seen.iter().find(|(_, b, w)| *b == buffer && (*w || written)) {
            return Err(Error::Aliasing(format!(
                "{}: {name} and {other} are in one buffer (the same vector, or two of a block), and one of them is \
                 written",
                self.op
            )));
        }
        self.seen.push((name, buffer, written));
        Ok(self)
    }
}
