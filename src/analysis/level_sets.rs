//! The level sets of a triangular matrix: its rows ordered by level (1 + the largest level
//! of the rows a row depends on), captured by the first sync-free solve
//! (`ops::sptrsv`, seed 003: the completion flags store levels) and kept with the matrix's
//! analyses, so that later solves of the pattern take their rows level by level. The
//! pattern alone decides the levels: new values keep them.
//!
//! Built from the levels a solve left in its aux words: a stable radix sort of the rows by
//! level, so that within a level rows stay in order (neighbouring rows, neighbouring
//! entries). Every capture also keeps the level count alone ([`LevelCount`]): a plan that
//! runs wide matrices in row order needs nothing more, and skips the sort.

use super::radix_sort::RadixSort;
use super::scan::Scan;
use crate::context::Context;
use crate::gpu::GpuVec;
use crate::kernel::shaders::sptrsv_levels as frontier;
use crate::kernel::shaders::sptrsv_steps as steps;
use crate::matrix::Analysis;
use crate::record::{ReadTicket, Recorder};
use crate::Result;
use std::collections::VecDeque;

/// Rows in level order.
pub(crate) struct LevelSets {
    /// Every row, by level: in row order within a level when sorted from a capture, in the
    /// order the frontier released them when found by [`LevelSets::by_frontier`].
    pub(crate) order: GpuVec<u32>,
    /// Rows of the widest level, rounded down to a power of two.
    pub(crate) widest: usize,
}

impl Analysis for LevelSets {
    fn device_bytes(&self) -> u64 {
        self.order.byte_len()
    }
}

/// How many levels a pattern has: what a capture learns before any sort.
pub(crate) struct LevelCount {
    pub(crate) levels: usize,
}

impl LevelCount {
    /// The name the level count of a solve is kept under (`what` as for [`LevelSets::name`]).
    pub(crate) fn name(what: &str) -> String {
        format!("level count ({what})")
    }
}

impl Analysis for LevelCount {
    fn device_bytes(&self) -> u64 {
        0
    }
}

/// Where the levels of a solve are: its aux words, one per item of `k` right-hand sides,
/// the level of row r at item r·k (encoded with the value in f64).
pub(crate) struct CapturedLevels<'a> {
    pub(crate) aux: &'a GpuVec<u32>,
    pub(crate) rows: usize,
    pub(crate) k: usize,
    pub(crate) f64_values: bool,
    /// The largest level (from the solve's status).
    pub(crate) levels: usize,
}

impl LevelSets {
    /// The name the level sets of a solve are kept under, per triangle: `what` says which
    /// (e.g. "lower", "upper of the transpose").
    pub(crate) fn name(what: &str) -> String {
        format!("level sets ({what})")
    }

    /// Sorts the rows by their captured levels and measures the widest level (waited for:
    /// a launch's size follows it).
    pub(crate) fn build(ctx: &Context, captured: CapturedLevels<'_>) -> Result<Self> {
        let rows = captured.rows;
        let (keys, order) = (ctx.zeros::<u32>(rows)?, ctx.zeros::<u32>(rows)?);
        let sort = RadixSort::new(ctx, rows)?;
        // The widest level's rows (WIDEST's `status`).
        let widest = ctx.zeros::<u32>(1)?;
        // Stand-ins for the bindings these steps do not use (one each: no two outputs may
        // share a buffer).
        let (unused_x, unused_args) = (ctx.zeros::<u32>(1)?, ctx.zeros::<u32>(1)?);
        let kernel = ctx.plain_kernel::<steps::Shader>(Default::default(), Default::default())?;
        let step = |step: SolveStep| steps::Params {
            step: step as u32,
            rows: rows as u32,
            k: captured.k as u32,
            f64_values: captured.f64_values as u32,
            ..Default::default()
        };
        let bindings = |keys| steps::Bindings {
            x: unused_x.bind(),
            aux: captured.aux.bind(),
            status: widest.bind(),
            args: unused_args.bind(),
            keys,
            rows_out: order.bind(),
        };
        let mut batch = ctx.batch();
        let in_spares = {
            let mut rec = batch.recorder();
            rec.dispatch_items(&kernel, step(SolveStep::Levels), bindings(keys.bind()), rows as u64)?;
            // Keys are levels − 1 < levels.
            let bits = u32::BITS - (captured.levels.max(1) as u32 - 1).leading_zeros();
            let in_spares = sort.record(&mut rec, &keys, &order, rows, bits)?;
            let sorted_keys = if in_spares { sort.spare_pair().0 } else { &keys };
            rec.dispatch_items(&kernel, step(SolveStep::Widest), bindings(sorted_keys.bind()), rows as u64)?;
            in_spares
        };
        let widest = batch.read_back(&widest)?;
        batch.submit()?;
        let widest = widest.wait()?[0] as usize;
        let order = if in_spares { sort.spares().1 } else { order };
        Ok(LevelSets { order, widest })
    }
}

/// The triangle a frontier analysis reads: the CSR arrays the solve walks.
pub(crate) struct FrontierInput<'a> {
    pub(crate) row_offsets: &'a GpuVec<u32>,
    pub(crate) col_indices: &'a GpuVec<u32>,
    pub(crate) rows: usize,
    pub(crate) upper: bool,
    /// A word per row at least, for the rows' pending dependencies (the plan's scratch).
    pub(crate) pending: &'a GpuVec<u32>,
}

/// The most items (entries, successors) a lane walks itself in `shaders/sptrsv_levels.wgsl`
/// (`LANE_ITEMS`): longer ranges are cut into chunks of 128, at most one per 16 items.
const FRONTIER_LANE_ITEMS: usize = 16;

/// Levels a frontier analysis records a submission (two kept in flight, so that recording
/// overlaps the GPU's work).
const LEVELS_PER_SUBMISSION: usize = 64;
/// Workgroups of 64 lanes an EXPAND launch has at most (its lanes stride over the level).
const FRONTIER_WORKGROUPS: usize = 512;
/// The state words of `shaders/sptrsv_levels.wgsl`.
const FRONTIER_STATE_WORDS: usize = 9;
const FRONTIER_LEVELS: usize = 6;
const FRONTIER_WIDEST: usize = 7;
const FRONTIER_PLACED: usize = 8;

impl LevelSets {
    /// The level sets of a triangle found before any solve, by Kahn's frontier
    /// (`shaders/sptrsv_levels.wgsl`): each row's dependencies counted, the rows with none
    /// taken as level 0, the triangle's successor lists built, then a dispatch a level
    /// releases the next. The lists and the chunks of long ranges take ~6 bytes an entry and
    /// 4 a row, dropped on return. Returns the sets and the level count. Waits for the GPU.
    pub(crate) fn by_frontier(ctx: &Context, input: FrontierInput<'_>) -> Result<(Self, usize)> {
        let rows = input.rows;
        let entries = input.col_indices.len();
        let kernel = ctx.plain_kernel::<frontier::Shader>(Default::default(), Default::default())?;
        let (successor_ends, successors) = (ctx.zeros::<u32>(rows.max(1))?, ctx.zeros::<u32>(entries.max(1))?);
        let (order, state) = (ctx.zeros::<u32>(rows.max(1))?, ctx.zeros::<u32>(FRONTIER_STATE_WORDS)?);
        // Four lists of chunks (COUNT's, and three levels'), each as long as can be, two words
        // a chunk, and their counts.
        let chunk_cap = entries / FRONTIER_LANE_ITEMS + 1;
        let chunks = ctx.zeros::<u32>(4 + 8 * chunk_cap)?;
        let (scan, total) = (Scan::new(ctx, rows)?, ctx.zeros::<u32>(1)?);
        // COUNT, ROOTS and FILL give each row a lane; the other steps' lanes stride over
        // chunks or a level's rows.
        let lanes = |step| match step {
            FrontierStep::Count | FrontierStep::Roots | FrontierStep::Fill => rows.div_ceil(64) * 64,
            _ => rows.div_ceil(64).clamp(1, FRONTIER_WORKGROUPS) * 64,
        };
        let params = |step: FrontierStep, level: usize| frontier::Params {
            step: step as u32,
            rows: rows as u32,
            upper: input.upper as u32,
            level: level as u32,
            lanes: lanes(step) as u32,
            chunk_cap: chunk_cap as u32,
        };
        let bindings = || frontier::Bindings {
            row_offsets: input.row_offsets.bind(),
            col_indices: input.col_indices.bind(),
            pending: input.pending.bind_range(0..rows.max(1)),
            successor_ends: successor_ends.bind(),
            successors: successors.bind(),
            order: order.bind(),
            state: state.bind(),
            chunks: chunks.bind(),
        };
        // Records levels first..end (and before them, with `setup`, the counts and lists).
        let submit = |first: usize, end: usize, setup: bool| -> Result<ReadTicket<u32>> {
            let mut batch = ctx.batch();
            {
                let mut rec = batch.recorder();
                let dispatch = |rec: &mut Recorder<'_, '_>, step, level| {
                    rec.dispatch_items(&kernel, params(step, level), bindings(), lanes(step) as u64)
                };
                if setup {
                    for step in [FrontierStep::Count, FrontierStep::CountChunks, FrontierStep::Roots] {
                        dispatch(&mut rec, step, 0)?;
                    }
                    scan.record(&mut rec, &successor_ends, rows, &total)?;
                    for step in [FrontierStep::Fill, FrontierStep::FillChunks] {
                        dispatch(&mut rec, step, 0)?;
                    }
                }
                for level in first..end {
                    dispatch(&mut rec, FrontierStep::Expand, level)?;
                }
            }
            let ticket = batch.read_back(&state)?;
            batch.submit()?;
            Ok(ticket)
        };
        let mut in_flight = VecDeque::new();
        let mut recorded = LEVELS_PER_SUBMISSION.min(rows);
        in_flight.push_back(submit(0, recorded, true)?);
        while let Some(ticket) = in_flight.pop_front() {
            let words = ticket.wait()?;
            let placed = words[FRONTIER_PLACED] as usize;
            if placed >= rows {
                let widest = words[FRONTIER_WIDEST].max(1);
                let widest = 1usize << (u32::BITS - 1 - widest.leading_zeros());
                return Ok((LevelSets { order, widest }, words[FRONTIER_LEVELS] as usize));
            }
            // Every level places a row at least: at most `rows` levels.
            while in_flight.len() < 2 && recorded < rows {
                let next = (recorded + LEVELS_PER_SUBMISSION).min(rows);
                in_flight.push_back(submit(recorded, next, false)?);
                recorded = next;
            }
        }
        Err(crate::Error::Validation("sptrsv: the frontier analysis placed fewer rows than the matrix has".into()))
    }
}

/// The steps of `shaders/sptrsv_levels.wgsl` (its `params.step`).
#[derive(Debug, Clone, Copy)]
enum FrontierStep {
    Count = 0,
    CountChunks = 1,
    Roots = 2,
    Fill = 3,
    FillChunks = 4,
    Expand = 5,
}

/// The steps of `shaders/sptrsv_steps.wgsl` (its `params.step`; the numbers are its
/// `STEP_*` constants).
#[derive(Debug, Clone, Copy)]
pub(crate) enum SolveStep {
    Init = 0,
    Relaunch = 1,
    Finish = 2,
    Levels = 3,
    Widest = 4,
    MaxLevel = 5,
}
