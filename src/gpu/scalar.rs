//! Scalars on the device, and the α/β arguments of ops: a host value or a device scalar.

use std::fmt;

use super::device::Device;
use super::vector::GpuVec;
use crate::element::Scalar;
use crate::Result;

/// One value in device memory: the result of a reduction (`dot`, `nrm2`) or a coefficient
/// that stays on the GPU between ops, so a solver's `α = r·r / p·Ap` never visits the host.
pub struct GpuScalar<T: Scalar> {
    value: GpuVec<T>,
}

impl<T: Scalar> GpuScalar<T> {
    pub(crate) fn new_on(device: &Device, value: T) -> Result<Self> {
        Ok(GpuScalar { value: GpuVec::upload_on(device, &[value])? })
    }

    /// The value, waiting on this thread.
    pub fn read_blocking(&self) -> Result<T> {
        Ok(self.value.read_blocking()?[0])
    }

    /// The value; the future never blocks the thread.
    pub async fn read(&self) -> Result<T> {
        Ok(self.value.read().await?[0])
    }

    /// Sets the value for work submitted afterwards.
    pub fn write(&self, value: T) -> Result<()> {
        self.value.write(&[value])
    }

    /// The one-element vector holding the value.
    pub fn as_vec(&self) -> &GpuVec<T> {
        &self.value
    }
}

impl<T: Scalar> fmt::Debug for GpuScalar<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GpuScalar").field("device", &self.value.device_id()).finish()
    }
}

/// An α or β: a host value, captured when the op is recorded, or an element of a device
/// vector, read by the kernel when it runs (so it can be the result of an earlier op in the
/// same batch).
pub enum ScalarArg<'a, T: Scalar> {
    /// A value known on the host.
    Host(T),
    /// `vector[index]` at the time the op runs.
    Device {
        /// The vector holding the value.
        vector: &'a GpuVec<T>,
        /// Which element.
        index: usize,
    },
}

impl<T: Scalar> Clone for ScalarArg<'_, T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T: Scalar> Copy for ScalarArg<'_, T> {}

impl<T: Scalar> ScalarArg<'_, T> {
    /// The host value, if this is one.
    pub fn host(&self) -> Option<T> {
        match self {
            ScalarArg::Host(v) => Some(*v),
            ScalarArg::Device { .. } => None,
        }
    }
}

impl<T: Scalar> From<T> for ScalarArg<'_, T> {
    fn from(v: T) -> Self {
        ScalarArg::Host(v)
    }
}
impl<'a, T: Scalar> From<&'a GpuScalar<T>> for ScalarArg<'a, T> {
    fn from(s: &'a GpuScalar<T>) -> Self {
        ScalarArg::Device { vector: &s.value, index: 0 }
    }
}

impl<T: Scalar> fmt::Debug for ScalarArg<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ScalarArg::Host(v) => write!(f, "Host({v:?})"),
            ScalarArg::Device { vector, index } => write!(f, "Device({:?}[{index}])", vector.device_id()),
        }
    }
}
