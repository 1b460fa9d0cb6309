//! Device-wide exclusive prefix sums of u32, the building block of structure analyses
//! (placing each row's pieces, counting outputs). Deterministic and free of inter-workgroup
//! waits: block sums, a scan of the block sums (recursively, until one block remains), and a
//! pass that finishes each block.

use crate::context::Context;
use crate::gpu::GpuVec;
use crate::kernel::shaders::{scan_apply, scan_reduce};
use crate::kernel::Kernel;
use crate::record::Recorder;
use crate::Result;

/// Values per workgroup: 256 lanes × 4 values.
const LANES: u32 = 256;
const ITEMS: u32 = 4;
const BLOCK: usize = (LANES * ITEMS) as usize;

/// The kernels and scratch of scans of up to `capacity` values.
pub(crate) struct Scan {
    reduce: Kernel<scan_reduce::Shader>,
    apply: Kernel<scan_apply::Shader>,
    /// Block sums of each level.
    levels: Vec<GpuVec<u32>>,
    /// Bound as the offsets of a single-block scan, which reads none.
    no_offsets: GpuVec<u32>,
}

impl Scan {
    pub(crate) fn new(ctx: &Context, capacity: usize) -> Result<Self> {
        let mut levels = Vec::new();
        let mut len = capacity;
        while len > BLOCK {
            len = len.div_ceil(BLOCK);
            levels.push(ctx.zeros(len)?);
        }
        Ok(Scan {
            reduce: ctx.plain_kernel::<scan_reduce::Shader>(
                Default::default(),
                scan_reduce::Overrides { wg_size: LANES, items: ITEMS },
            )?,
            apply: ctx.plain_kernel::<scan_apply::Shader>(
                Default::default(),
                scan_apply::Overrides { wg_size: LANES, items: ITEMS },
            )?,
            levels,
            no_offsets: ctx.zeros(1)?,
        })
    }

    /// Records `data[..len] ← exclusive prefix sums of data[..len]` and `total[0] ← their
    /// sum`. `len` is at most the capacity.
    pub(crate) fn record(
        &self,
        rec: &mut Recorder<'_, '_>,
        data: &GpuVec<u32>,
        len: usize,
        total: &GpuVec<u32>,
    ) -> Result<()> {
        self.record_level(rec, data, len, total, 0)
    }

    fn record_level(
        &self,
        rec: &mut Recorder<'_, '_>,
        data: &GpuVec<u32>,
        len: usize,
        total: &GpuVec<u32>,
        level: usize,
    ) -> Result<()> {
        let blocks = len.div_ceil(BLOCK).max(1);
        let offsets = if blocks > 1 {
            let sums = &self.levels[level];
            rec.dispatch(
                &self.reduce,
                scan_reduce::Params { len: len as u32 },
                scan_reduce::Bindings { data: data.bind_range(0..len), block_sums: sums.bind_range(0..blocks) },
                blocks as u64,
            )?;
            self.record_level(rec, sums, blocks, total, level + 1)?;
            Some(sums)
        } else {
            None
        };
        rec.dispatch(
            &self.apply,
            scan_apply::Params { len: len as u32, has_offsets: offsets.is_some() as u32 },
            scan_apply::Bindings {
                block_offsets: offsets.map_or(self.no_offsets.bind(), |o| o.bind_range(0..blocks)),
                data: data.bind_range(0..len),
                total: total.bind(),
            },
            blocks as u64,
        )
    }
}
