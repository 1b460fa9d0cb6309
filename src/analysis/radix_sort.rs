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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::generate::Rng;
    use crate::ContextOptions;

    /// The GPU sort is the host's stable sort by the low `bits` bits: keys and the values that
    /// travel with them. Lengths around the block of 256 (one pair, a part block, a block and
    /// one, many blocks with a short last one), digits crowded (a few keys) and spread, one to
    /// four passes (odd counts leave the result in the spares), keys equal in long runs.
    #[test]
    fn gpu_sort_is_the_stable_host_sort() {
        let ctx = Context::new_blocking(ContextOptions::from_env().unwrap()).unwrap();
        let mut rng = Rng::new(0x5027);
        for (len, bits, distinct) in
            [(1, 4, 1), (255, 4, 3), (256, 7, 100), (257, 13, 9000), (4097, 16, 2), (70_001, 12, 4096), (3000, 8, 1)]
        {
            let keys: Vec<u32> = (0..len).map(|_| rng.below(distinct) as u32).collect();
            let values: Vec<u32> = (0..len as u32).map(|i| i ^ 0x5a5a).collect();
            let sort = RadixSort::new(&ctx, len).unwrap();
            let (gpu_keys, gpu_values) = (ctx.upload(&keys).unwrap(), ctx.upload(&values).unwrap());
            let mut batch = ctx.batch();
            let in_spares = sort.record(&mut batch.recorder(), &gpu_keys, &gpu_values, len, bits).unwrap();
            batch.submit().unwrap();
            let (sorted_keys, sorted_values) = if in_spares { sort.spare_pair() } else { (&gpu_keys, &gpu_values) };
            let mut want: Vec<(u32, u32)> = keys.iter().copied().zip(values.iter().copied()).collect();
            want.sort_by_key(|&(key, _)| key);
            let label = format!("{len} pairs, {bits} bits, {distinct} keys");
            let want_keys: Vec<u32> = want.iter().map(|p| p.0).collect();
            let want_values: Vec<u32> = want.iter().map(|p| p.1).collect();
            assert_eq!(sorted_keys.read_blocking().unwrap(), want_keys, "{label}: keys");
            assert_eq!(sorted_values.read_blocking().unwrap(), want_values, "{label}: values (stability)");
        }
    }
}
