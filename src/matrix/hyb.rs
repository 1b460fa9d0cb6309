//! HYB on the GPU: an ELL part and a row-sorted COO tail.

use super::ell::EllEncoding;
use super::{GpuCoo, GpuEll};
use crate::element::Scalar;
use crate::format::HybMatrix;
use crate::gpu::Device;
use crate::Result;

/// HYB on the GPU: the first `width` entries of each row in ELL, the rest in COO.
#[derive(Debug)]
pub struct GpuHyb<T: Scalar> {
    ell: GpuEll<T>,
    coo: GpuCoo<T>,
}

impl<T: Scalar> GpuHyb<T> {
    pub(crate) fn upload(device: &Device, a: &HybMatrix<T>, first_row: usize, encoding: EllEncoding) -> Result<Self> {
        Ok(GpuHyb { ell: GpuEll::upload(device, a.ell(), first_row, encoding)?, coo: GpuCoo::upload(device, a.coo())? })
    }

    pub(crate) fn write_values(&self, a: &HybMatrix<T>) -> Result<()> {
        self.ell.write_values(a.ell())?;
        self.coo.write_values(a.coo().values())
    }

    /// The ELL part.
    pub fn ell(&self) -> &GpuEll<T> {
        &self.ell
    }
    /// The COO tail.
    pub fn coo(&self) -> &GpuCoo<T> {
        &self.coo
    }
    pub(crate) fn device_bytes(&self) -> u64 {
        self.ell.device_bytes() + self.coo.device_bytes()
    }
}
