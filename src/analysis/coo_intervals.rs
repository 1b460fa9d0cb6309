//! The interval bounds of a COO matrix's segmented reduction (`shaders/shared/coo_walk.wgsl`):
//! for every interval of `interval_len` entries, the first interval of the row its first
//! entry belongs to and the last interval of the row its last entry belongs to, so that the
//! pieces of a row that crosses interval boundaries know how many they are; and one bit per
//! row that has an entry. Built on the GPU once per pattern, panel and interval length.

use crate::context::Context;
use crate::element::Scalar;
use crate::gpu::GpuVec;
use crate::kernel::shaders::coo_intervals as kernel;
use crate::matrix::{Analysis, GpuCoo};
use crate::Result;

pub(crate) struct CooIntervals {
    /// (first interval of the first entry's row, last interval of the last entry's row) per
    /// interval.
    pub(crate) bounds: GpuVec<[u32; 2]>,
    /// Bit `r % 32` of word `r / 32`: row r has an entry.
    pub(crate) occupied: GpuVec<u32>,
}

impl Analysis for CooIntervals {
    fn device_bytes(&self) -> u64 {
        self.bounds.byte_len() + self.occupied.byte_len()
    }
}

impl CooIntervals {
    /// The name the bounds of `source` (`panel 2`, `panel 0 tail`) are kept under.
    pub(crate) fn name(source: &str, interval_len: u32) -> String {
        format!("COO intervals ({source}, {interval_len} entries)")
    }

    /// Intervals of `interval_len` entries over `nnz` entries.
    pub(crate) fn count(nnz: usize, interval_len: u32) -> usize {
        nnz.div_ceil(interval_len as usize)
    }

    pub(crate) fn build<T: Scalar>(ctx: &Context, a: &GpuCoo<T>, interval_len: u32) -> Result<Self> {
        let intervals = Self::count(a.nnz(), interval_len);
        let bounds = ctx.zeros(intervals)?;
        let occupied = ctx.zeros(a.rows().div_ceil(32))?;
        let kernel = ctx.plain_kernel::<kernel::Shader>(Default::default(), Default::default())?;
        let mut batch = ctx.batch();
        batch.recorder().dispatch_items(
            &kernel,
            kernel::Params { nnz: a.nnz() as u32, intervals: intervals as u32, interval_len },
            kernel::Bindings { row_indices: a.row_indices().bind(), bounds: bounds.bind(), occupied: occupied.bind() },
            a.nnz() as u64,
        )?;
        // Submitted now, read by the plan's runs later: queue order is enough, no wait.
        batch.submit()?;
        Ok(CooIntervals { bounds, occupied })
    }
}
