//! A stable radix sort of (u32 key, u32 value) pairs on the GPU, four bits per pass
//! (`shaders/radix_sort.wgsl`): per pass, each block's digit counts, one exclusive scan of
//! them, and a scatter. Deterministic, no atomics; for structure analyses (the transpose).

use super::scan::Scan;
use crate::context::Context;
use crate::gpu::GpuVec;
use crate::kernel::shaders::radix_sort as kernel;
use crate::kernel::Kernel;
use crate::record::Recorder;
use crate::Result;

/// Pairs per block (one per lane).
const BLOCK: u32 = 256;
/// Key bits per pass.
const DIGIT_BITS: u32 = 4;
const DIGITS: usize = 1 << DIGIT_BITS;

/// Kernels and scratch for sorting up to `capacity` pairs.
pub(crate) struct RadixSort {
    count: Kernel<kernel::Shader>,
    scatter: Kernel<kernel::Shader>,
    spare_keys: GpuVec<u32>,
    spare_values: GpuVec<u32>,
    /// Each block's count of each digit (digit-major), scanned into output slots.
    block_offsets: GpuVec<u32>,
    scan: Scan,
    total: GpuVec<u32>,
}

impl RadixSort {
    pub(crate) fn new(ctx: &Context, capacity: usize) -> Result<Self> {
        let overrides = kernel::Overrides { wg_size: BLOCK };
        let offsets = DIGITS * capacity.div_ceil(BLOCK as usize).max(1);
        Ok(RadixSort {
            count: ctx.plain_kernel::<kernel::Shader>(kernel::Flags { scatter: false }, overrides)?,
            scatter: ctx.plain_kernel::<kernel::Shader>(kernel::Flags { scatter: true }, overrides)?,
            spare_keys: ctx.zeros(capacity)?,
            spare_values: ctx.zeros(capacity)?,
            block_offsets: ctx.zeros(offsets)?,
            scan: Scan::new(ctx, offsets)?,
            total: ctx.zeros(1)?,
        })
    }

    /// Records a stable sort of `keys[..len]`, `values[..len]` by the low `bits` bits of
    /// the keys (higher bits must be zero). The sorted pairs end in `keys` and `values`, or,
    /// when this returns `true`, in [`RadixSort::spares`].
    pub(crate) fn record(
        &self,
        rec: &mut Recorder<'_, '_>,
        keys: &GpuVec<u32>,
        values: &GpuVec<u32>,
        len: usize,
        bits: u32,
    ) -> Result<bool> {
        let blocks = len.div_ceil(BLOCK as usize);
        let mut in_spares = false;
        for pass in 0..bits.div_ceil(DIGIT_BITS) {
            let (from, to) =
                if in_spares { (self.spare_pair(), (keys, values)) } else { ((keys, values), self.spare_pair()) };
            let params = kernel::Params { len: len as u32, shift: pass * DIGIT_BITS, blocks: blocks as u32 };
            let bindings = kernel::Bindings {
                keys_in: from.0.bind_range(0..len),
                values_in: from.1.bind_range(0..len),
                block_offsets: self.block_offsets.bind_range(0..DIGITS * blocks),
                keys_out: to.0.bind_range(0..len),
                values_out: to.1.bind_range(0..len),
            };
            rec.dispatch(&self.count, params, bindings, blocks as u64)?;
            self.scan.record(rec, &self.block_offsets, DIGITS * blocks, &self.total)?;
            rec.dispatch(&self.scatter, params, bindings, blocks as u64)?;
            in_spares = !in_spares;
        }
        Ok(in_spares)
    }

    /// The scratch pair that holds the result after an odd number of passes, to record more
    /// work on it.
    pub(crate) fn spare_pair(&self) -> (&GpuVec<u32>, &GpuVec<u32>) {
        (&self.spare_keys, &self.spare_values)
    }

    /// The scratch pair, kept by the caller once the sort has run.
    pub(crate) fn spares(self) -> (GpuVec<u32>, GpuVec<u32>) {
        (self.spare_keys, self.spare_values)
    }
}
