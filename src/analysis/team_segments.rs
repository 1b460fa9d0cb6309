//! The tickets of a row-order triangular solve in which some rows are long: its items cut into
//! segments of at most the least subgroup size, with each long row's items in segments of
//! their own (`shaders/sptrsv_segments.wgsl`), so that a long row's walk holds up no short
//! row of its team and its team's blocks queue behind no other long row's. Kept with the
//! matrix's analyses: the pattern alone decides them.

use super::scan::Scan;
use crate::context::Context;
use crate::gpu::GpuVec;
use crate::kernel::shaders::sptrsv_segments as shader;
use crate::matrix::Analysis;
use crate::Result;

/// Each segment's first item, then the item count; segments past the last are empty.
pub(crate) struct TeamSegments {
    pub(crate) starts: GpuVec<u32>,
    /// Segments the solve's tickets count: at most this many are not empty.
    pub(crate) segments: usize,
    /// Rows that have segments of their own.
    pub(crate) long_rows: usize,
}

impl Analysis for TeamSegments {
    fn device_bytes(&self) -> u64 {
        self.starts.byte_len()
    }
}

/// What the segments are cut from.
pub(crate) struct SegmentInput<'a> {
    /// The CSR row offsets the solve walks.
    pub(crate) row_offsets: &'a GpuVec<u32>,
    pub(crate) rows: usize,
    /// Right-hand sides: a row's items are `k` consecutive ones.
    pub(crate) k: usize,
    /// Positions run from the last row to the first (`U·x = b`).
    pub(crate) upper: bool,
    /// The most items of a segment: the least subgroup size.
    pub(crate) width: usize,
    /// Rows of this many entries or more get segments of their own.
    pub(crate) long_row: usize,
    /// How many rows are that long at most (from the host's row statistics).
    pub(crate) long_rows: usize,
}

impl TeamSegments {
    /// The name the segments of a solve are kept under (`what` says which triangle and how
    /// they are cut).
    pub(crate) fn name(what: &str) -> String {
        format!("team segments ({what})")
    }

    /// Records and submits the cut (nothing is waited for: later work on the queue sees it).
    pub(crate) fn build(ctx: &Context, input: SegmentInput<'_>) -> Result<Self> {
        let items = input.rows * input.k;
        // Every `width`-th item starts one, and a long row adds at most two (its first item
        // and the one after its last).
        let segments = items.div_ceil(input.width) + 2 * input.long_rows;
        let starts = ctx.zeros::<u32>(segments + 1)?;
        let (marks, total, scan) = (ctx.zeros::<u32>(items)?, ctx.zeros::<u32>(1)?, Scan::new(ctx, items)?);
        let kernel = ctx.plain_kernel::<shader::Shader>(Default::default(), Default::default())?;
        let params = |step: SegmentStep| shader::Params {
            step: step as u32,
            items: items as u32,
            rows: input.rows as u32,
            k: input.k as u32,
            upper: input.upper as u32,
            width: input.width as u32,
            long_row: input.long_row.min(u32::MAX as usize) as u32,
            starts_len: (segments + 1) as u32,
        };
        let bindings = || shader::Bindings {
            row_offsets: input.row_offsets.bind(),
            marks: marks.bind(),
            total: total.bind(),
            team_starts: starts.bind(),
        };
        let mut batch = ctx.batch();
        {
            let mut rec = batch.recorder();
            rec.dispatch_items(&kernel, params(SegmentStep::Marks), bindings(), items.max(segments + 1) as u64)?;
            scan.record(&mut rec, &marks, items, &total)?;
            rec.dispatch_items(&kernel, params(SegmentStep::Starts), bindings(), items as u64)?;
        }
        batch.submit()?;
        Ok(TeamSegments { starts, segments, long_rows: input.long_rows })
    }
}

/// The steps of `shaders/sptrsv_segments.wgsl` (its `params.step`).
#[derive(Clone, Copy)]
enum SegmentStep {
    Marks = 0,
    Starts = 1,
}
