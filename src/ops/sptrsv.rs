//! Sparse triangular solve: `T·x = b` with T the lower or upper triangle stored in a CSR
//! matrix (or `Aᵀ·x = b` on A's transpose, [`TriangularSolve::transposed`]), unit or
//! non-unit diagonal, f32 or f64, one right-hand side or k of them (b and x n × k,
//! row-major).
//!
//! Sync-free, as seed 003 describes it: no analysis phase; a lane per row (and right-hand
//! side) walks its entries towards the diagonal, waits for each predecessor's published
//! value, divides by the pivot and publishes its own. WebGPU promises no forward progress
//! between workgroups, so rows are handed out by a ticket counter (a team only waits on teams
//! that started before it), every wait is bounded, and rows left unsolved when a bound runs
//! out are solved by relaunches sized on the GPU (indirect dispatches) until none remain.
//! `shaders/sptrsv.wgsl` says how values and their ready state share atomic words.
//!
//! The first [`TriangularSolve::solve`] of a pattern captures each row's level (1 + the
//! largest level of its predecessors) during its row-order solve (or, on request, finds
//! them before it by Kahn's frontier: [`LevelCapture`]); the level count and, where a plan
//! will use them, the rows by level are kept with the matrix's analyses, and later solves
//! ([`SptrsvAlgorithm::LevelOrder`], `Auto` on deep matrices) hand out rows level by level,
//! which keeps the rows of a team independent. `Auto` on a wide or small matrix keeps row
//! order and sorts nothing. New values keep the levels.
//!
//! Each row's sum runs in the order of its entries whatever the scheduling: results are
//! deterministic. A row that cannot be solved (an entry outside the triangle, a missing or
//! zero pivot) is reported as [`Error::NotSolvable`] with the first such row; b is never
//! written.

use std::sync::Arc;

use super::common::{check_len, check_row_major, Operands};
use crate::analysis::level_sets::{CapturedLevels, FrontierInput, LevelCount, LevelSets, SolveStep};
use crate::analysis::team_segments::{SegmentInput, TeamSegments};
use crate::analysis::transpose::Transpose;
use crate::context::Context;
use crate::element::{ElementKind, Scalar};
use crate::error::SolveProblem;
use crate::gpu::{Bind, GpuVec};
use crate::kernel::shaders::sptrsv as kernel;
use crate::kernel::shaders::sptrsv_steps as steps;
use crate::kernel::Kernel;
use crate::matrix::{Format, GpuDense, GpuSparse, PanelStorage};
use crate::record::{IndirectArgs, Recorder};
use crate::{Error, Result};

/// Which triangle of the matrix holds the system.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Triangle {
    /// Entries on and below the diagonal: forward substitution.
    Lower,
    /// Entries on and above the diagonal: backward substitution.
    Upper,
}

impl Triangle {
    fn flipped(self) -> Self {
        match self {
            Triangle::Lower => Triangle::Upper,
            Triangle::Upper => Triangle::Lower,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Triangle::Lower => "lower",
            Triangle::Upper => "upper",
        }
    }
}

/// Whether the pivots are stored or all one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Diagonal {
    /// Every row stores its pivot; a missing or zero pivot is an error.
    NonUnit,
    /// The pivots are 1; stored diagonal entries are ignored.
    Unit,
}

/// In which order rows are handed out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum SptrsvAlgorithm {
    /// [`SptrsvAlgorithm::LevelOrder`] once the levels are known, unless they are wide
    /// (more than [`WIDE_LEVELS`] rows per level on average: shallow matrices, whose rows
    /// wait little in row order and keep their locality there) or the matrix has fewer than
    /// [`ROW_ORDER_ROWS`] rows (a large GPU holds a team for every row at once, so row order
    /// already runs the critical path, and the first solve pays no sort); row order before.
    /// Always row order, capturing nothing, where at least one row in
    /// [`SOLO_ROW_ORDER_SHARE`] has a team of its own
    /// ([`SptrsvOptions::solo_row_entries`]): power-law graphs, whose hubs held up the teams
    /// of level order too.
    Auto,
    /// Rows in order (reversed for an upper triangle); never captures levels.
    RowOrder,
    /// Rows by level once the pattern's level sets are known (the first
    /// [`TriangularSolve::solve`] runs in row order and captures them).
    LevelOrder,
}

impl SptrsvAlgorithm {
    /// Every concrete algorithm, in the order reports list them.
    pub const ALL: [SptrsvAlgorithm; 2] = [SptrsvAlgorithm::RowOrder, SptrsvAlgorithm::LevelOrder];

    /// Short name used in reports and on the command line.
    pub fn name(self) -> &'static str {
        match self {
            SptrsvAlgorithm::Auto => "auto",
            SptrsvAlgorithm::RowOrder => "row-order",
            SptrsvAlgorithm::LevelOrder => "level-order",
        }
    }

    /// Parses [`SptrsvAlgorithm::name`].
    pub fn from_name(name: &str) -> Option<Self> {
        std::iter::once(SptrsvAlgorithm::Auto).chain(Self::ALL).find(|a| a.name() == name)
    }
}

/// How a plan that runs by level learns a new pattern's levels (on its first
/// [`TriangularSolve::solve`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum LevelCapture {
    /// During the first solve, in row order: each row publishes its level beside its value
    /// (no memory beyond the solve's), then the rows are sorted by level.
    #[default]
    DuringSolve,
    /// Before the first solve, by Kahn's frontier: the rows' dependencies counted, the
    /// triangle's successor lists built (~6 bytes an entry and 4 a row, freed after), then a
    /// dispatch a level. Nothing waits on another workgroup, so the row order's window of
    /// resident teams does not bound it, and the order it leaves (by release within a level)
    /// suits power-law graphs; but it pays three atomics an entry and a dependent dispatch a
    /// level (~6 µs on the H200). On the H200 (benches/NOTES.md, session 51): R-MAT's first
    /// solve 34.5 → 31.9 ms and its later ones 12.3 → 7.6 ms, the 3-D Laplacian's first
    /// 8.4 → 6.8 ms; the 2-D Laplacian's first 12.0 → 37.3 ms (4,095 levels), a uniform
    /// random matrix's 1.0 → 10.4 ms. Not the default.
    Frontier,
}

impl LevelCapture {
    /// Short name used on the bench's command line.
    pub fn name(self) -> &'static str {
        match self {
            LevelCapture::DuringSolve => "solve",
            LevelCapture::Frontier => "frontier",
        }
    }

    /// Parses [`LevelCapture::name`].
    pub fn from_name(name: &str) -> Option<Self> {
        [LevelCapture::DuringSolve, LevelCapture::Frontier].into_iter().find(|c| c.name() == name)
    }
}

/// Tuning and shape of a triangular solve.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SptrsvOptions {
    /// Right-hand sides (columns of b and x), at least 1.
    pub rhs: usize,
    /// Rounds a team goes on waiting with no lane getting further before it leaves its rows
    /// to a relaunch. Small values relaunch often (tests force it); the default waits far
    /// longer than any solve on a GPU that makes progress.
    pub spin_limit: u32,
    /// Relaunches recorded after each launch (zero-sized on the GPU once every row is
    /// solved). [`TriangularSolve::solve`] records more while rows remain; a recorded run
    /// ([`TriangularSolve::record`]) that runs out of them leaves NaN in the unsolved rows and
    /// says so in [`TriangularSolve::check`]. A round costs even when empty (a dispatch that
    /// sizes it and its indirect dispatch: ~5 µs on the H200, a sixth of a small solve), and
    /// on a GPU whose workgroups all make progress none is needed (none was on the H200 over
    /// every suite), so the default records one: the relaunch path stays in every recording.
    pub relaunch_rounds: u32,
    /// Steps a waiting team spins for after a round in which none of its lanes got further,
    /// doubled each such round (at most 32×): fewer polls, so that waiting teams do not slow
    /// the ones they wait on. A step is a shuffle across the team with subgroups (tens of
    /// clocks, one issue slot), a multiply-add without; 0 polls back to back. `None` (the
    /// default): 2 in row order with subgroups on [`ROW_ORDER_ROWS`] rows or more, where on
    /// the H200 it took the 2-D Laplacian's solve (4 M rows) from 15.8 to 12.8 ms and left
    /// the 3-D one as it was (NOTES, sessions 48–49), else 0: on fewer rows the GPU holds
    /// every team at once, and the quick and `--small` suites' row-order solves (1,024–65,536
    /// rows) ran as fast or faster without it (the 2-D Laplacians 11% and 5%, the 3-D one of
    /// 32³ 7%; NOTES, session 71); with level-order launches capped
    /// ([`SptrsvOptions::max_workgroups`]) few teams poll, and on the H100 a back-off of
    /// multiply-adds only slowed those solves (the 2-D Laplacian 9.8 ms at 0, 10.7 at 16).
    pub backoff: Option<u32>,
    /// The most workgroups of 64 lanes a launch has (a team each without subgroups, a team
    /// per subgroup with them); with fewer than one per 64 items, each team takes tickets
    /// until none are left, so that fewer teams poll for predecessors at a time. `None`: in level order twice the widest level's items (its row
    /// count rounded down to a power of two, times the right-hand sides) over 64, from 64 to
    /// 1,024 workgroups (the H100: the 2-D Laplacian's repeated solve 23 → ~10 ms); in row
    /// order one per 64 items (a chain crosses teams there, and the wavefront needs them all).
    pub max_workgroups: Option<u32>,
    /// Skip entries on the other side of the diagonal instead of refusing the matrix
    /// ([`SolveProblem::OutsideTriangle`]): for a matrix that holds two factors, as an
    /// incomplete LU does (L's strict part below the diagonal, U above and on it).
    pub ignore_other_triangle: bool,
    /// How the first solve of a plan that runs by level learns the levels.
    pub capture: LevelCapture,
    /// The most batches of 4 entries a lane walks of its row in a round, at least 1
    /// (`u32::MAX`: no limit). A subgroup runs its lanes' walks together, so one lane's long
    /// walk holds up teammates whose predecessors were published meanwhile; a row longer
    /// than the cap is walked over several rounds (R-MAT's hubs: hundreds of entries). The
    /// default, [`WALK_BATCHES`], took the H200's R-MAT s21 solves from 12.3 to 8.0 ms (lower)
    /// and 24.7 to 14.6 ms (upper), within 4% of the best of 3–8 on every R-MAT of the suites;
    /// matrices of short rows never reach it (NOTES, session 72).
    pub walk_batches: u32,
    /// In row order with subgroups, a row of this many entries or more is solved by a team
    /// of its own (its lanes help with its blocks and hold no other row), at least 1
    /// (`usize::MAX`: never). A subgroup runs its lanes' walks together, so a long row's walk
    /// held up the short rows of its team, and where a team held several long rows their
    /// blocks queued. The tickets are then segments of rows, cut once on the GPU and kept
    /// with the matrix (4 bytes per 32 rows on a GPU of 32-lane subgroups). `None` (the
    /// default): [`SOLO_ROW_ENTRIES_SMALL`] on fewer than [`ROW_ORDER_ROWS`] rows (a large GPU
    /// holds every team at once), else [`SOLO_ROW_ENTRIES`] (each team of one row takes a
    /// place in the window of resident teams that a row-order solve advances by). On the H200
    /// (NOTES, session 73): R-MAT s14's
    /// solves 376 → 335 µs (lower) and 533 → 388 (upper), R-MAT s21's first solves (row
    /// order, levels captured) 16.0 → 6.8 ms and 26.8 → 5.7 ms.
    pub solo_row_entries: Option<usize>,
}

impl Default for SptrsvOptions {
    fn default() -> Self {
        SptrsvOptions {
            rhs: 1,
            spin_limit: 1 << 16,
            relaunch_rounds: 1,
            backoff: None,
            max_workgroups: None,
            ignore_other_triangle: false,
            capture: LevelCapture::DuringSolve,
            walk_batches: WALK_BATCHES,
            solo_row_entries: None,
        }
    }
}

/// What a solve did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SolveReport {
    /// Launches after the first (rows left unsolved when a wait ran out).
    pub relaunches: u32,
    /// The number of levels, when known (captured by this solve or an earlier one).
    pub levels: Option<usize>,
    /// Whether rows were handed out by level.
    pub level_order: bool,
}

/// `Auto` keeps row order for levels wider than this many rows on average.
pub const WIDE_LEVELS: usize = 16 << 10;
/// `Auto` keeps row order on matrices of fewer rows than this: about the rows whose teams a
/// large GPU holds at once (the H200's row-order window is ~152 K rows). H200, the quick and
/// `--small` suites (1,024–65,536 rows): the repeated solve in row order within 8% of level
/// order or faster (the 65,536-row uniform matrix 81 against 154 µs), and the first solve
/// 1.0–2.2× faster without the sort (benches/NOTES.md, session 68); on the 4 M-row
/// Laplacians level order is 1.7× (2-D) and 6× (3-D) faster.
pub const ROW_ORDER_ROWS: usize = 1 << 17;
/// The bounds of the default launch size in level order ([`SptrsvOptions::max_workgroups`]).
const MIN_LEVEL_WORKGROUPS: usize = 64;
const MAX_LEVEL_WORKGROUPS: usize = 1024;

/// The default of [`SptrsvOptions::walk_batches`].
pub const WALK_BATCHES: u32 = 4;
/// [`SptrsvOptions::solo_row_entries`] by default from [`ROW_ORDER_ROWS`] rows: on R-MAT
/// s21 (2 M rows) the first solve took 6.8 ms with it, 7.8 with 128.
pub const SOLO_ROW_ENTRIES: usize = 512;
/// `Auto` keeps row order where one row in this many or more has a team of its own: on the
/// H200, R-MAT s21 (one in 616 and 414 rows of 512 entries or more) solved in 5.6 and 4.5 ms
/// in row order, 7.6 and 14.2 in level order, lower and upper (NOTES, session 73).
pub const SOLO_ROW_ORDER_SHARE: usize = 1024;
/// [`SptrsvOptions::solo_row_entries`] by default below [`ROW_ORDER_ROWS`] rows: on R-MAT
/// s14 and s10, 128 was 0–14% faster than 256 and 512.
pub const SOLO_ROW_ENTRIES_SMALL: usize = 128;
/// Workgroup size of the solve (a multiple of every subgroup size).
const WORKGROUP: u32 = 64;
/// Entries a lane takes of a long row's block (`BLOCK_PER_LANE` in `shaders/sptrsv.wgsl`),
/// and with short blocks of its last blocks (`SHORT_BLOCK_PER_LANE`): a subgroup helps a row
/// longer than a block (short where short blocks are on).
const BLOCK_PER_LANE: usize = 32;
const SHORT_BLOCK_PER_LANE: usize = 8;
/// Short blocks where at most this many rows are as long as a short block (of the smallest
/// subgroup, a power of two) or longer:
/// on the H200 the dense-row matrices' solves took 4.6× (a row of 531 entries) and 4.1× (8,128)
/// less time, R-MAT s14's (22 rows past 256 entries) 12% and s21's (9,850) 20% more.
const SHORT_BLOCK_MOST_ROWS: usize = 8;
/// Back-off steps in row order with subgroups (see [`SptrsvOptions::backoff`]).
const ROW_ORDER_BACKOFF: u32 = 2;
/// Status words the kernels share (`STATUS_*` in `shaders/shared/sptrsv_words.wgsl`).
const STATUS_WORDS: usize = 8;
const STATUS_LOWEST_UNSOLVED: usize = 1;
const STATUS_RELAUNCHES: usize = 2;
const STATUS_MAX_LEVEL: usize = 3;
const STATUS_PROBLEM: usize = 4;
const NONE: u32 = u32::MAX;
/// Rows past this do not fit the level bits of the f64 encoding.
const MAX_ROWS: usize = 1 << 28;

/// A planned triangular solve for one matrix: kernels compiled and scratch allocated once,
/// recorded or solved many times.
pub struct TriangularSolve<T: Scalar> {
    ctx: Context,
    matrix: GpuSparse<T>,
    /// A's transpose, when the plan solves with `Aᵀ`.
    transpose: Option<Arc<Transpose>>,
    /// The triangle of the matrix solved with (A's, or the transpose's).
    triangle: Triangle,
    diagonal: Diagonal,
    algorithm: SptrsvAlgorithm,
    options: SptrsvOptions,
    solve: Kernel<kernel::Shader, T>,
    /// Whether `solve` was built with the team's help for long rows (`LONG_ROWS`).
    long_rows: bool,
    /// Whether a row is long past a short block (`short_blocks`).
    short_blocks: bool,
    /// Every long row's block taken by its own lane alone, as where a team is not whole
    /// (tests compare its bits with the team's).
    lone_blocks: bool,
    /// A long row's block that waited is read again only once its last entry's predecessor
    /// is published (`params.block_hint`; tests compare the bits without it).
    block_hint: bool,
    /// The loop iterations a team runs in a launch, where the adapter caps them
    /// (`LOOP_BUDGET`; NONE: not built in).
    loop_budget: u32,
    /// Row order's tickets as segments, where some rows get a team of their own
    /// ([`SptrsvOptions::solo_row_entries`]).
    segments: Option<Arc<TeamSegments>>,
    /// `Auto` keeps row order: rows with a team of their own are many
    /// ([`SOLO_ROW_ORDER_SHARE`]).
    hubs: bool,
    steps: Kernel<steps::Shader>,
    /// One word per item: its level (f32, when capturing) or the third word of its value (f64).
    aux: GpuVec<u32>,
    status: GpuVec<u32>,
    args: IndirectArgs,
    unused: Unused,
    level_sets_name: String,
    level_count_name: String,
}

/// One-word stand-ins for bindings a dispatch does not use (each its own buffer: writable
/// bindings must not alias).
struct Unused {
    keys: GpuVec<u32>,
    rows: GpuVec<u32>,
    order: GpuVec<u32>,
    perm: GpuVec<u32>,
}

/// Loop iterations a round of a team may run beyond its walk, forwarding, back-off and a long
/// row's block: `ROUND_LOOPS` in `shaders/sptrsv.wgsl`.
const ROUND_LOOPS: u64 = 10;

/// The loop iterations a team of the solve may run in a launch (`LOOP_BUDGET` in
/// `shaders/sptrsv.wgsl`), where the adapter caps an invocation's: the cap less two of the
/// team's rounds at their longest (the round that passes the budget and a first round at the
/// next ticket). `None` where nothing is capped. Refused where the team at the lowest unsolved
/// item could not solve it within the budget: then a launch could leave every row unsolved.
fn loop_budget<T: Scalar>(
    ctx: &Context,
    a: &GpuSparse<T>,
    transposed: bool,
    (long_rows, short_blocks): (bool, bool),
    options: &SptrsvOptions,
) -> Result<Option<u32>> {
    let Some(limit) = ctx.loop_iteration_limit() else {
        return Ok(None);
    };
    let (least, lanes) = ctx.subgroup_size_range().map_or((0, 0), |(least, most)| (least as u64, most as u64));
    // The longest row walked (a transpose's: A's columns, at most as many entries as rows).
    let longest = if transposed { a.rows() } else { a.stats().max_len } as u64;
    // A lane walks a row alone up to `long_row` entries (all of it without LONG_ROWS); a
    // longer row's blocks go one a round, the lowest lane's first: blocks of BLOCK_PER_LANE
    // a lane while more than one is left, then (short blocks) at most
    // BLOCK_PER_LANE / SHORT_BLOCK_PER_LANE short ones.
    let per_lane = if short_blocks { SHORT_BLOCK_PER_LANE } else { BLOCK_PER_LANE } as u64;
    let long_row = if long_rows { per_lane * lanes } else { longest.max(1) };
    // A lane's walk: at most `walk_batches` batches of 4 a round (and one more iteration that
    // finds the row done or the cap reached), over as many rounds as its row needs.
    let batches = longest.min(long_row).div_ceil(4);
    let walk = batches.min(options.walk_batches as u64) + 1;
    let walk_rounds = batches.div_ceil(options.walk_batches as u64);
    let forward = lanes.div_ceil(2) + 1;
    let back_off = ((options.backoff.unwrap_or(ROW_ORDER_BACKOFF) as u64) << 5) + 1;
    // A long row's block: a lane's part and the team's sum, or all the parts alone (a team
    // that is not whole) with their partial sums.
    let block = if long_rows { lanes * (BLOCK_PER_LANE as u64 / 8 + 2) + 8 } else { 0 };
    // A round that gets further backs off not at all.
    let progress_round = ROUND_LOOPS + walk + forward + block;
    let any_round = progress_round + back_off;
    let rounds_for_longest = match long_rows {
        true => longest.div_ceil(BLOCK_PER_LANE as u64 * least) + BLOCK_PER_LANE as u64 / per_lane + walk_rounds.max(1),
        false => 1 + walk_rounds.max(1),
    };
    let needed = rounds_for_longest * progress_round + 1;
    let budget = (limit as u64).saturating_sub(2 * any_round);
    let what = || {
        format!(
            "a triangular solve whose longest row has {longest} entries ({rounds_for_longest} rounds of up to \
             {progress_round} loop iterations for it)"
        )
    };
    ctx.check_loop_iterations(what, needed + 2 * any_round)?;
    Ok(Some(budget as u32))
}

/// Row order's tickets as segments ([`SptrsvOptions::solo_row_entries`]): with subgroups, where
/// some row is that long (a transpose's rows, A's columns, are not counted: none). Cut once
/// per pattern, triangle, right-hand sides and cut, and kept with the matrix.
fn team_segments<T: Scalar>(
    ctx: &Context,
    a: &GpuSparse<T>,
    triangle: Triangle,
    options: &SptrsvOptions,
    transposed: bool,
) -> Result<Option<Arc<TeamSegments>>> {
    let long_row = match options.solo_row_entries {
        Some(entries) => entries,
        None if a.rows() < ROW_ORDER_ROWS => SOLO_ROW_ENTRIES_SMALL,
        None => SOLO_ROW_ENTRIES,
    };
    let long_rows = a.stats().rows_at_least(long_row);
    let Some((least, _)) = ctx.subgroup_size_range() else {
        return Ok(None);
    };
    if transposed || long_rows == 0 || a.rows() == 0 {
        return Ok(None);
    }
    let PanelStorage::Csr(csr) = a.panels()[0].storage() else {
        return Err(Error::Validation("sptrsv: a panel that is not CSR".into()));
    };
    let width = (least as usize).min(WORKGROUP as usize);
    let name = TeamSegments::name(&format!(
        "{}, {} right-hand sides, {width} wide, rows of {} entries alone",
        triangle.name(),
        options.rhs,
        long_row
    ));
    let input = SegmentInput {
        row_offsets: csr.row_offsets(),
        rows: a.rows(),
        k: options.rhs,
        upper: triangle == Triangle::Upper,
        width,
        long_row,
        long_rows,
    };
    a.structure().get_or_build(&name, || TeamSegments::build(ctx, input)).map(Some)
}

/// Whether the solve needs its team's help with long rows (`LONG_ROWS`), and whether with
/// short blocks: only with subgroups, and not where every row is shorter than the smallest
/// subgroup's block (the transpose's rows, A's columns, are not counted: assumed long, no
/// short blocks). Short blocks where a few rows are longer than a short block.
fn long_rows<T: Scalar>(ctx: &Context, a: &GpuSparse<T>, transposed: bool) -> (bool, bool) {
    let Some((least, _)) = ctx.subgroup_size_range() else {
        return (false, false);
    };
    let stats = a.stats();
    let short_block = SHORT_BLOCK_PER_LANE * least as usize;
    let short_blocks =
        !transposed && stats.max_len > short_block && stats.rows_at_least(short_block) <= SHORT_BLOCK_MOST_ROWS;
    (transposed || short_blocks || stats.max_len > BLOCK_PER_LANE * least as usize, short_blocks)
}

impl<T: Scalar> TriangularSolve<T> {
    /// Plans `T·x = b` for the `triangle` of `a` (CSR, square, one row panel), one
    /// right-hand side.
    pub fn new(
        ctx: &Context,
        a: &GpuSparse<T>,
        triangle: Triangle,
        diagonal: Diagonal,
        algorithm: SptrsvAlgorithm,
    ) -> Result<Self> {
        Self::plan(ctx, a, triangle, diagonal, algorithm, SptrsvOptions::default(), false)
    }

    /// [`TriangularSolve::new`] with options (right-hand sides, spin bound, relaunches).
    pub fn with_options(
        ctx: &Context,
        a: &GpuSparse<T>,
        triangle: Triangle,
        diagonal: Diagonal,
        algorithm: SptrsvAlgorithm,
        options: SptrsvOptions,
    ) -> Result<Self> {
        Self::plan(ctx, a, triangle, diagonal, algorithm, options, false)
    }

    /// Plans `Aᵀ·x = b`, where `triangle` is the one A holds (so `Aᵀ` holds the other: the
    /// transpose of a lower triangle is solved by backward substitution). A's transpose is
    /// built once on the GPU and kept with its analyses (shared with `Spmm::transposed`).
    pub fn transposed(
        ctx: &Context,
        a: &GpuSparse<T>,
        triangle: Triangle,
        diagonal: Diagonal,
        algorithm: SptrsvAlgorithm,
    ) -> Result<Self> {
        Self::plan(ctx, a, triangle, diagonal, algorithm, SptrsvOptions::default(), true)
    }

    /// [`TriangularSolve::transposed`] with options.
    pub fn transposed_with_options(
        ctx: &Context,
        a: &GpuSparse<T>,
        triangle: Triangle,
        diagonal: Diagonal,
        algorithm: SptrsvAlgorithm,
        options: SptrsvOptions,
    ) -> Result<Self> {
        Self::plan(ctx, a, triangle, diagonal, algorithm, options, true)
    }

    fn plan(
        ctx: &Context,
        a: &GpuSparse<T>,
        triangle: Triangle,
        diagonal: Diagonal,
        algorithm: SptrsvAlgorithm,
        options: SptrsvOptions,
        transposed: bool,
    ) -> Result<Self> {
        ctx.check_alive()?;
        ctx.check_owner("sptrsv: the matrix", a.device_id())?;
        ctx.check_element::<T>()?;
        if T::KIND == ElementKind::F64 && !ctx.features().contains(wgpu::Features::SHADER_INT64) {
            return Err(Error::Unsupported(format!(
                "the f64 triangular solve needs SHADER_INT64, which {:?} lacks",
                ctx.adapter_info().name
            )));
        }
        if a.format() != Format::Csr {
            return Err(Error::InvalidArgument(format!(
                "sptrsv: the matrix must be stored as CSR, not {}",
                a.format().name()
            )));
        }
        check_len("sptrsv", "columns (the matrix must be square)", a.rows(), a.cols())?;
        if options.rhs == 0 {
            return Err(Error::InvalidArgument("sptrsv: at least one right-hand side".into()));
        }
        if options.max_workgroups == Some(0) {
            return Err(Error::InvalidArgument("sptrsv: max_workgroups must be at least 1".into()));
        }
        if options.walk_batches == 0 {
            return Err(Error::InvalidArgument("sptrsv: walk_batches must be at least 1".into()));
        }
        if options.solo_row_entries == Some(0) {
            return Err(Error::InvalidArgument("sptrsv: solo_row_entries must be at least 1".into()));
        }
        let n = a.rows();
        let items = n.checked_mul(options.rhs).filter(|&i| n < MAX_ROWS && i < (u32::MAX / 2) as usize);
        let Some(items) = items else {
            return Err(Error::LimitExceeded {
                what: format!("a triangular solve of {n} rows with {} right-hand sides", options.rhs),
                limit: "u32 item indices",
                requested: (n as u64).saturating_mul(options.rhs as u64),
                max: (u32::MAX / 2) as u64,
            });
        };
        if a.panel_count() > 1 {
            return Err(Error::LimitExceeded {
                what: format!("a triangular solve on a matrix in {} row panels", a.panel_count()),
                limit: "max_storage_buffer_binding_size",
                requested: a.device_bytes(),
                max: ctx.limits().max_storage_buffer_binding_size,
            });
        }
        let (long_rows, short_blocks) = long_rows(ctx, a, transposed);
        let loop_budget = loop_budget(ctx, a, transposed, (long_rows, short_blocks), &options)?;
        let transpose = if transposed { Some(Transpose::of(ctx, a)?) } else { None };
        let triangle = if transposed { triangle.flipped() } else { triangle };
        let what = format!("{}{}", triangle.name(), if transposed { ", of the transpose" } else { "" });
        let segments = team_segments(ctx, a, triangle, &options, transposed)?;
        let hubs = segments.as_ref().is_some_and(|s| s.long_rows * SOLO_ROW_ORDER_SHARE >= n);
        Ok(TriangularSolve {
            ctx: ctx.clone(),
            matrix: a.clone(),
            transpose,
            triangle,
            diagonal,
            algorithm,
            options,
            solve: ctx.kernel::<kernel::Shader, T>(
                kernel::Flags { long_rows, loop_budget: loop_budget.is_some() },
                kernel::Overrides { wg_size: WORKGROUP },
            )?,
            long_rows,
            short_blocks,
            lone_blocks: false,
            block_hint: true,
            loop_budget: loop_budget.unwrap_or(NONE),
            segments,
            hubs,
            steps: ctx.plain_kernel::<steps::Shader>(Default::default(), Default::default())?,
            aux: ctx.zeros(items.max(1))?,
            // As INIT leaves it: nothing unsolved, no problem (what `check` reads before a run).
            status: ctx.upload(&[0, NONE, 0, 0, NONE, 0, 0, 0][..STATUS_WORDS])?,
            args: IndirectArgs::new(ctx, 1)?,
            unused: Unused { keys: ctx.zeros(1)?, rows: ctx.zeros(1)?, order: ctx.zeros(1)?, perm: ctx.zeros(1)? },
            level_sets_name: LevelSets::name(&what),
            level_count_name: LevelCount::name(&what),
        })
    }

    /// The algorithm asked for.
    pub fn algorithm(&self) -> SptrsvAlgorithm {
        self.algorithm
    }

    /// Whether the kernel has the team's help for rows longer than a block (32 entries a
    /// lane of a subgroup): built in only where the matrix has such a row (or for a
    /// transpose), since it costs every lane registers and so resident teams.
    pub fn long_rows(&self) -> bool {
        self.long_rows
    }

    /// The order a run recorded now would use: `Auto` resolved by the levels known.
    pub fn order_in_use(&self) -> SptrsvAlgorithm {
        match self.level_sets() {
            Some(_) => SptrsvAlgorithm::LevelOrder,
            None => SptrsvAlgorithm::RowOrder,
        }
    }

    /// The triangle solved with (for a transposed plan, the transpose's).
    pub fn triangle(&self) -> Triangle {
        self.triangle
    }

    /// The number of levels, once a solve of the pattern captured them (for a plan that
    /// captures: not [`SptrsvAlgorithm::RowOrder`]).
    pub fn levels(&self) -> Option<usize> {
        self.level_count()
    }

    /// Device bytes this plan allocated beyond the matrix, b and x: a word per item, the
    /// status and row order's segments. Level sets and a transpose are kept with the matrix
    /// ([`GpuSparse::analyses`]), as the segments are.
    pub fn extra_bytes(&self) -> u64 {
        let unused = &self.unused;
        self.segments.as_ref().map_or(0, |s| crate::matrix::Analysis::device_bytes(&**s))
            + self.aux.byte_len()
            + self.status.byte_len()
            + self.args.slots().byte_len()
            + [&unused.keys, &unused.rows, &unused.order, &unused.perm].iter().map(|v| v.byte_len()).sum::<u64>()
    }

    /// Device bytes of the level sets the plan's solves use (kept with the matrix), 0 before
    /// they are captured and where the plan runs in row order.
    pub fn level_sets_bytes(&self) -> u64 {
        self.level_sets().map_or(0, |s| crate::matrix::Analysis::device_bytes(&*s))
    }

    /// The pattern's level count, if this plan captures levels and they are known.
    fn level_count(&self) -> Option<usize> {
        match self.algorithm {
            SptrsvAlgorithm::RowOrder => None,
            _ => self.matrix.structure().get::<LevelCount>(&self.level_count_name).map(|c| c.levels),
        }
    }

    /// Whether runs of `levels` levels go by level: always for `LevelOrder`, for `Auto` unless
    /// the levels are wide or the matrix small.
    fn by_level(&self, levels: usize) -> bool {
        match self.algorithm {
            SptrsvAlgorithm::RowOrder => false,
            SptrsvAlgorithm::LevelOrder => true,
            SptrsvAlgorithm::Auto => {
                !self.hubs && self.matrix.rows() >= ROW_ORDER_ROWS && self.matrix.rows() <= WIDE_LEVELS * levels.max(1)
            }
        }
    }

    /// The level sets a run uses: `None` runs in row order.
    fn level_sets(&self) -> Option<Arc<LevelSets>> {
        if !self.by_level(self.level_count()?) {
            return None;
        }
        self.matrix.structure().get::<LevelSets>(&self.level_sets_name)
    }

    /// Whether the next blocking solve captures levels: none are known, or the plan goes by
    /// level and the sort was skipped (by an `Auto` plan on wide levels, for instance).
    fn needs_capture(&self) -> bool {
        match self.level_count() {
            None => {
                self.algorithm == SptrsvAlgorithm::LevelOrder || (self.algorithm == SptrsvAlgorithm::Auto && !self.hubs)
            }
            Some(levels) => self.by_level(levels) && self.level_sets().is_none(),
        }
    }

    /// Records the solve of `T·x = b` (one right-hand side): a launch and
    /// [`SptrsvOptions::relaunch_rounds`] relaunches. Recording never captures levels (that
    /// needs their count on the host: [`TriangularSolve::solve`] does it). After the batch
    /// has run, [`TriangularSolve::check`] reports unsolvable rows and rows a bound left.
    pub fn record(&self, rec: &mut Recorder<'_, '_>, b: &GpuVec<T>, x: &mut GpuVec<T>) -> Result<()> {
        let (b, x) = self.vector_operands(rec.context(), b, x)?;
        self.record_launches(rec, b, x, Launch::First, false, self.level_sets().as_deref())
    }

    /// [`TriangularSolve::record`] into an x the caller holds by shared reference (a
    /// preconditioner's own scratch vector, written only by its recordings).
    pub(crate) fn record_into_scratch(&self, rec: &mut Recorder<'_, '_>, b: &GpuVec<T>, x: &GpuVec<T>) -> Result<()> {
        let (b, x) = self.vector_operands(rec.context(), b, x)?;
        self.record_launches(rec, b, x, Launch::First, false, self.level_sets().as_deref())
    }

    /// [`TriangularSolve::record`] for k right-hand sides: b and x n × k, row-major, one panel.
    pub fn record_dense(&self, rec: &mut Recorder<'_, '_>, b: &GpuDense<T>, x: &mut GpuDense<T>) -> Result<()> {
        let (b, x) = self.dense_operands(rec.context(), b, x)?;
        self.record_launches(rec, b, x, Launch::First, false, self.level_sets().as_deref())
    }

    /// Solves `T·x = b` and waits for it: relaunches until every row is solved, captures the
    /// pattern's levels on the first solve (kept with the matrix), and reports errors.
    pub fn solve(&self, b: &GpuVec<T>, x: &mut GpuVec<T>) -> Result<SolveReport> {
        let (b, x) = self.vector_operands(&self.ctx, b, x)?;
        self.solve_blocking(b, x)
    }

    /// [`TriangularSolve::solve`] for k right-hand sides.
    pub fn solve_dense(&self, b: &GpuDense<T>, x: &mut GpuDense<T>) -> Result<SolveReport> {
        let (b, x) = self.dense_operands(&self.ctx, b, x)?;
        self.solve_blocking(b, x)
    }

    /// The outcome of the latest run recorded with this plan, once its batch has been
    /// submitted (waits for it): [`Error::NotSolvable`] for a row that cannot be solved,
    /// [`Error::Timeout`] when rows were left unsolved (NaN) after the recorded relaunches.
    pub fn check(&self) -> Result<SolveReport> {
        let status = self.status.read_blocking()?;
        self.outcome(&status, self.level_sets().is_some())
    }

    fn vector_operands<'a>(
        &self,
        ctx: &Context,
        b: &'a GpuVec<T>,
        x: &'a GpuVec<T>,
    ) -> Result<(Bind<'a, T>, Bind<'a, u32>)> {
        Operands::new(ctx, "sptrsv")?.owned("the plan", self.ctx.id())?.input("b", b)?.output("x", x)?;
        check_len("sptrsv", "right-hand sides (vector operands)", 1, self.options.rhs)?;
        check_len("sptrsv", "b length", self.matrix.rows(), b.len())?;
        check_len("sptrsv", "x length", self.matrix.rows(), x.len())?;
        Ok((b.bind(), x.bind().reinterpret(x.byte_len())))
    }

    fn dense_operands<'a>(
        &'a self,
        ctx: &Context,
        b: &'a GpuDense<T>,
        x: &'a GpuDense<T>,
    ) -> Result<(Bind<'a, T>, Bind<'a, u32>)> {
        Operands::new(ctx, "sptrsv")?.owned("the plan", self.ctx.id())?.dense_input("B", b)?.dense_output("X", x)?;
        for (name, m) in [("B", b), ("X", x)] {
            check_row_major("sptrsv", name, m)?;
            check_len("sptrsv", "rows of B and X", self.matrix.rows(), m.rows())?;
            check_len("sptrsv", "columns of B and X (right-hand sides)", self.options.rhs, m.cols())?;
            if m.panels().len() > 1 {
                return Err(Error::LimitExceeded {
                    what: format!("sptrsv: {name} in {} row panels", m.panels().len()),
                    limit: "max_storage_buffer_binding_size",
                    requested: m.byte_len(),
                    max: ctx.limits().max_storage_buffer_binding_size,
                });
            }
        }
        match (b.panels().first(), x.panels().first()) {
            (Some(b), Some(x)) => Ok((b.bind(), x.bind().reinterpret(x.byte_len()))),
            // No rows: bind stand-ins, nothing is dispatched.
            _ => Ok((self.ctx.unused::<T>()?.bind(), self.unused.keys.bind())),
        }
    }

    fn solve_blocking(&self, b: Bind<'_, T>, x: Bind<'_, u32>) -> Result<SolveReport> {
        if self.matrix.rows() == 0 {
            return Ok(SolveReport { relaunches: 0, levels: None, level_order: false });
        }
        let mut capture = self.needs_capture();
        // Levels the frontier found: kept once the solve succeeds (a failed solve keeps none).
        let mut found = None;
        if capture && self.options.capture == LevelCapture::Frontier {
            found = Some(self.levels_by_frontier()?);
            capture = false;
        }
        let kept = self.level_sets();
        let level_sets = found.as_ref().and_then(|(sets, _)| sets.as_ref()).or(kept.as_deref());
        let mut launch = Launch::First;
        // Each round of launches solves at least one row: at most n rounds.
        for _ in 0..=self.matrix.rows() {
            let mut batch = self.ctx.batch();
            self.record_launches(&mut batch.recorder(), b, x, launch, capture, level_sets)?;
            let status = batch.read_back(&self.status)?;
            batch.submit()?;
            let status = status.wait()?;
            if status[STATUS_LOWEST_UNSOLVED] != NONE && status[STATUS_PROBLEM] == NONE {
                launch = Launch::Continue;
                continue;
            }
            let mut report = self.outcome(&status, level_sets.is_some())?;
            // The levels learnt (by the frontier before the launches, or captured by them)
            // are kept now that the solve succeeded: the count, and the sets only for a plan
            // that runs by level (`Auto` on wide levels keeps row order, so its one-shot
            // solve pays no sort).
            let learnt = match &found {
                Some((_, levels)) => Some(*levels),
                None => capture.then_some(status[STATUS_MAX_LEVEL] as usize),
            };
            if let Some(levels) = learnt {
                let structure = self.matrix.structure();
                structure.get_or_build(&self.level_count_name, || Ok(LevelCount { levels }))?;
                match found {
                    Some((Some(sets), _)) => {
                        structure.get_or_build(&self.level_sets_name, || Ok(sets))?;
                    }
                    None if self.by_level(levels) => {
                        let captured = CapturedLevels {
                            aux: &self.aux,
                            rows: self.matrix.rows(),
                            k: self.options.rhs,
                            f64_values: T::KIND == ElementKind::F64,
                            levels,
                        };
                        structure.get_or_build(&self.level_sets_name, || LevelSets::build(&self.ctx, captured))?;
                    }
                    _ => {}
                }
                report.levels = Some(levels);
            }
            return Ok(report);
        }
        Err(Error::Validation("sptrsv: a launch solved no row".into()))
    }

    /// The levels by the frontier: the sets where the plan runs by level (`Auto` on wide
    /// levels keeps row order), and the count.
    fn levels_by_frontier(&self) -> Result<(Option<LevelSets>, usize)> {
        let (row_offsets, col_indices, _) = self.walked()?;
        let input = FrontierInput {
            row_offsets,
            col_indices,
            rows: self.matrix.rows(),
            upper: self.triangle == Triangle::Upper,
            pending: &self.aux,
        };
        let (sets, levels) = LevelSets::by_frontier(&self.ctx, input)?;
        Ok((self.by_level(levels).then_some(sets), levels))
    }

    /// The CSR arrays the solve walks (A's, or its transpose's) and the map to A's entries.
    fn walked(&self) -> Result<(&GpuVec<u32>, &GpuVec<u32>, &GpuVec<u32>)> {
        let PanelStorage::Csr(csr) = self.matrix.panels()[0].storage() else {
            return Err(Error::Validation("sptrsv: a panel that is not CSR".into()));
        };
        Ok(match &self.transpose {
            Some(t) => (&t.row_offsets, &t.col_indices, &t.perm),
            None => (csr.row_offsets(), csr.col_indices(), &self.unused.perm),
        })
    }

    /// The report of a solve from its status words, or its error.
    fn outcome(&self, status: &[u32], level_order: bool) -> Result<SolveReport> {
        let problem = status[STATUS_PROBLEM];
        if problem != NONE {
            let problem_kind = match problem % 4 {
                1 => SolveProblem::OutsideTriangle,
                2 => SolveProblem::MissingDiagonal,
                _ => SolveProblem::ZeroPivot,
            };
            return Err(Error::NotSolvable { op: "sptrsv", row: (problem / 4) as usize, problem: problem_kind });
        }
        let relaunches = status[STATUS_RELAUNCHES];
        if status[STATUS_LOWEST_UNSOLVED] != NONE {
            return Err(Error::Timeout(format!(
                "sptrsv: rows were left unsolved (NaN) after {relaunches} relaunches; record more \
                 (SptrsvOptions::relaunch_rounds) or use solve, which relaunches until none remain"
            )));
        }
        Ok(SolveReport { relaunches, levels: self.levels(), level_order })
    }

    /// Workgroups a launch of `tickets` tickets has, `per_workgroup` a workgroup
    /// ([`SptrsvOptions::max_workgroups`]), and whether that is fewer than the tickets need
    /// (its teams then take ticket after ticket).
    fn launch_size(&self, tickets: usize, per_workgroup: usize, level_sets: Option<&LevelSets>) -> (u32, bool) {
        let all = tickets.div_ceil(per_workgroup);
        let default_cap = |sets: &LevelSets| {
            (2 * sets.widest * self.options.rhs)
                .div_ceil(WORKGROUP as usize)
                .clamp(MIN_LEVEL_WORKGROUPS, MAX_LEVEL_WORKGROUPS)
        };
        let cap = match (self.options.max_workgroups, level_sets) {
            (Some(cap), _) => cap as usize,
            (None, Some(sets)) => default_cap(sets),
            (None, None) => all,
        };
        (all.min(cap) as u32, cap < all)
    }

    /// Records a launch (after resetting x and the status, for `Launch::First`), the
    /// relaunch rounds, in f64 the decoding of x, and with `capture` the level count.
    fn record_launches(
        &self,
        rec: &mut Recorder<'_, '_>,
        b: Bind<'_, T>,
        x: Bind<'_, u32>,
        launch: Launch,
        capture: bool,
        level_sets: Option<&LevelSets>,
    ) -> Result<()> {
        let n = self.matrix.rows();
        if n == 0 {
            return Ok(());
        }
        let f64_values = T::KIND == ElementKind::F64;
        let items = n * self.options.rhs;
        let x_words = if f64_values { 2 * items } else { items };
        let aux_words = if f64_values || capture { items } else { 0 };
        // Row order's segments, a ticket a team (of the widest subgroup, so that a launch has
        // a team for each), or `items` tickets, a position each.
        let segments = self.segments.as_deref().filter(|_| level_sets.is_none());
        let (tickets, per_workgroup) = match (segments, self.ctx.subgroup_size_range()) {
            (Some(segments), Some((_, most))) => (segments.segments, (WORKGROUP / most).max(1) as usize),
            _ => (items, WORKGROUP as usize),
        };
        let (workgroups, persistent) = self.launch_size(tickets, per_workgroup, level_sets);
        let step = |step: SolveStep| steps::Params {
            step: step as u32,
            items: items as u32,
            x_words: x_words as u32,
            aux_words: aux_words as u32,
            rows: n as u32,
            k: self.options.rhs as u32,
            f64_values: f64_values as u32,
            tickets: tickets as u32,
            solve_workgroup: per_workgroup as u32,
            max_solve_workgroups: workgroups,
            max_workgroups_per_dimension: self.ctx.limits().max_compute_workgroups_per_dimension,
        };
        let step_bindings = steps::Bindings {
            x,
            aux: self.aux.bind(),
            status: self.status.bind(),
            args: self.args.slots().bind().reinterpret(16),
            keys: self.unused.keys.bind(),
            rows_out: self.unused.rows.bind(),
        };
        let PanelStorage::Csr(csr) = self.matrix.panels()[0].storage() else {
            return Err(Error::Validation("sptrsv: a panel that is not CSR".into()));
        };
        let (row_offsets, col_indices, perm) = self.walked()?;
        let params = kernel::Params {
            rows: n as u32,
            k: self.options.rhs as u32,
            items: items as u32,
            spin_limit: self.options.spin_limit,
            upper: (self.triangle == Triangle::Upper) as u32,
            unit_diagonal: (self.diagonal == Diagonal::Unit) as u32,
            permuted: self.transpose.is_some() as u32,
            level_order: level_sets.is_some() as u32,
            capture: capture as u32,
            backoff: self.options.backoff.unwrap_or(match level_sets {
                None if self.ctx.subgroups() && n >= ROW_ORDER_ROWS => ROW_ORDER_BACKOFF,
                _ => 0,
            }),
            other_triangle: self.options.ignore_other_triangle as u32,
            persistent: persistent as u32,
            loop_budget: self.loop_budget,
            lone_blocks: self.lone_blocks as u32,
            short_blocks: self.short_blocks as u32,
            walk_batches: self.options.walk_batches,
            block_hint: self.block_hint as u32,
            segments: segments.map_or(0, |s| s.segments as u32),
        };
        let bindings = kernel::Bindings {
            row_offsets: row_offsets.bind(),
            col_indices: col_indices.bind(),
            values: csr.values().bind(),
            perm: perm.bind(),
            order: level_sets.map_or(self.unused.order.bind(), |s| s.order.bind()),
            b,
            x,
            aux: self.aux.bind(),
            status: self.status.bind(),
            team_starts: segments.map_or(self.unused.order.bind(), |s| s.starts.bind()),
        };
        if launch == Launch::First {
            rec.dispatch_items(&self.steps, step(SolveStep::Init), step_bindings, x_words.max(aux_words) as u64)?;
            rec.dispatch(&self.solve, params, bindings, workgroups as u64)?;
        }
        for _ in 0..self.options.relaunch_rounds.max((launch == Launch::Continue) as u32) {
            rec.dispatch_items(&self.steps, step(SolveStep::Relaunch), step_bindings, 1)?;
            rec.dispatch_indirect(&self.solve, params, bindings, &self.args, 0)?;
        }
        if f64_values {
            rec.dispatch_items(&self.steps, step(SolveStep::Finish), step_bindings, items as u64)?;
        }
        if capture {
            rec.dispatch_items(&self.steps, step(SolveStep::MaxLevel), step_bindings, n as u64)?;
        }
        Ok(())
    }
}

/// Whether a recording starts a solve or goes on with one whose rows remain.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Launch {
    First,
    Continue,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::level_sets::FrontierInput;
    use crate::generate::Rng;
    use crate::{generate, ContextOptions, Conversion, CsrMatrix};

    /// The levels of a triangle on the host: 1 + the largest of its predecessors'.
    fn host_levels(l: &CsrMatrix<f32>, upper: bool) -> Vec<usize> {
        let n = l.rows();
        let mut levels = vec![0usize; n];
        let rows: Vec<usize> = if upper { (0..n).rev().collect() } else { (0..n).collect() };
        for r in rows {
            let range = l.row_offsets()[r] as usize..l.row_offsets()[r + 1] as usize;
            let deps =
                l.col_indices()[range].iter().map(|&c| c as usize).filter(|&c| if upper { c > r } else { c < r });
            levels[r] = 1 + deps.map(|c| levels[c]).max().unwrap_or(0);
        }
        levels
    }

    /// The frontier's order holds every row once, by level (the host's levels never
    /// decrease along it), and its level count and widest level are the host's: lower and
    /// upper triangles of stencils, a power-law graph, long rows, empty rows and a chain,
    /// with and without subgroups.
    #[test]
    fn frontier_orders_rows_by_level() {
        let seed = 0xf207;
        let mut offsets = vec![0u32];
        let mut cols = Vec::new();
        for r in 0..3000u32 {
            cols.extend(if r == 0 { vec![0] } else { vec![r - 1, r] });
            offsets.push(cols.len() as u32);
        }
        let values = vec![1.0f32; cols.len()];
        let chain = CsrMatrix::try_from_csr_data(3000, 3000, offsets, cols, values).unwrap();
        let cases = [
            ("lap2d", generate::laplacian_2d(40)),
            ("rmat", generate::rmat(10, 8, 0.57, 0.19, 0.19, seed)),
            ("dense row", generate::dense_row_mix(900, 700, seed)),
            ("empty rows", generate::random(500, 500, 0.002, seed)),
            ("chain", chain),
        ];
        for subgroups in [true, false] {
            let ctx =
                Context::new_blocking(ContextOptions { subgroups, ..ContextOptions::from_env().unwrap() }).unwrap();
            for (name, a) in &cases {
                for upper in [false, true] {
                    let t = generate::solvable_triangle(a, upper);
                    let levels = host_levels(&t, upper);
                    let matrix = GpuSparse::from_csr(&ctx, &t, Conversion::Csr).unwrap();
                    let PanelStorage::Csr(csr) = matrix.panels()[0].storage() else { unreachable!() };
                    let pending = ctx.zeros::<u32>(t.rows()).unwrap();
                    {
                        let input = FrontierInput {
                            row_offsets: csr.row_offsets(),
                            col_indices: csr.col_indices(),
                            rows: t.rows(),
                            upper,
                            pending: &pending,
                        };
                        let what = format!("{name}, upper {upper}, subgroups {subgroups}");
                        let (sets, count) = LevelSets::by_frontier(&ctx, input).unwrap();
                        let order = sets.order.read_blocking().unwrap();
                        let mut seen = vec![false; t.rows()];
                        for &r in &order {
                            assert!(!std::mem::replace(&mut seen[r as usize], true), "{what}: row {r} twice");
                        }
                        assert!(seen.iter().all(|&s| s), "{what}: a row missing");
                        let by_level = order.windows(2).all(|w| levels[w[0] as usize] <= levels[w[1] as usize]);
                        assert!(by_level, "{what}: a row before one of a lower level");
                        assert_eq!(count, levels.iter().copied().max().unwrap(), "{what}: the level count");
                        let mut widths = vec![0usize; count + 1];
                        levels.iter().for_each(|&l| widths[l] += 1);
                        let widest = widths.into_iter().max().unwrap();
                        assert_eq!(sets.widest, 1 << widest.ilog2(), "{what}: widest {widest}");
                    }
                }
            }
        }
    }

    /// The capture measures the widest level (rounded down to a power of two) and the level
    /// order's default launch follows it: twice its items over 64, within 64 to 1,024
    /// workgroups, persistent when fewer than the items need.
    #[test]
    fn widest_level_sizes_the_level_order_launch() {
        let ctx = Context::new_blocking(ContextOptions::from_env().unwrap()).unwrap();
        let seed = 0x1e7e;
        // Widths 1..=70 (the 2-D Laplacian: 64 persistent workgroups where the items need 77),
        // R-MAT's uneven levels, and 9,000 rows with no predecessor at 4 right-hand sides (a
        // cap of 1,024 over 563 workgroups: one ticket each).
        let unconnected =
            CsrMatrix::try_from_csr_data(9000, 9000, (0..=9000).collect(), (0..9000).collect(), vec![1.0f32; 9000])
                .unwrap();
        let cases =
            [(generate::laplacian_2d(70), 1), (generate::rmat(9, 8, 0.57, 0.19, 0.19, seed), 1), (unconnected, 4)];
        // The launch each case must get: (workgroups, persistent).
        let launches = [(64, true), (8, false), (563, false)];
        for ((a, k), launch) in cases.into_iter().zip(launches) {
            let l = generate::solvable_triangle(&a, false);
            let mut widths = vec![0usize; l.rows() + 1];
            host_levels(&l, false).into_iter().for_each(|level| widths[level] += 1);
            let widest = widths.into_iter().max().unwrap();
            check_launch(&ctx, &l, k, widest, launch);
            // f64 reads the levels through its own word layout.
            if ctx.supports::<f64>() {
                let values = l.values().iter().map(|&v| v as f64).collect();
                let (offsets, cols) = (l.row_offsets().to_vec(), l.col_indices().to_vec());
                let l64 = CsrMatrix::try_from_csr_data(l.rows(), l.cols(), offsets, cols, values).unwrap();
                check_launch(&ctx, &l64, k, widest, launch);
            }
        }
    }

    /// Solves `l` once in level order and checks the widest level (captured during the
    /// solve and found by the frontier) and the launch.
    fn check_launch<T: Scalar>(ctx: &Context, l: &CsrMatrix<T>, k: usize, widest: usize, launch: (u32, bool)) {
        for capture in [LevelCapture::DuringSolve, LevelCapture::Frontier] {
            check_launch_by(ctx, l, k, widest, launch, capture);
        }
    }

    fn check_launch_by<T: Scalar>(
        ctx: &Context,
        l: &CsrMatrix<T>,
        k: usize,
        widest: usize,
        launch: (u32, bool),
        capture: LevelCapture,
    ) {
        let matrix = GpuSparse::from_csr(ctx, l, Conversion::Csr).unwrap();
        let options = SptrsvOptions { rhs: k, capture, ..Default::default() };
        let plan = TriangularSolve::with_options(
            ctx,
            &matrix,
            Triangle::Lower,
            Diagonal::NonUnit,
            SptrsvAlgorithm::LevelOrder,
            options,
        )
        .unwrap();
        let zeros = || GpuDense::<T>::zeros(ctx, l.rows(), k, crate::DenseLayout::RowMajor).unwrap();
        plan.solve_dense(&zeros(), &mut zeros()).unwrap();
        let sets = plan.level_sets().expect("levels captured");
        let what = format!("{} rows, {}, {capture:?}", l.rows(), T::KIND.name());
        assert_eq!(sets.widest, 1 << widest.ilog2(), "{what}: widest {widest}");
        assert_eq!(plan.launch_size(l.rows() * k, WORKGROUP as usize, Some(&sets)), launch, "{what}");
    }

    /// Row order's segments as the host cuts them: a segment starts at every width-th item,
    /// at each long row's first item and at the item after its last, then the item count for
    /// every word left; so a long row's items share a segment with no other row's. Lower and
    /// upper (positions from the last row), 1, 3 and 33 right-hand sides (33: a row's items
    /// past the width), a dense row and R-MAT's hubs.
    #[test]
    fn segments_hold_long_rows_alone() {
        let ctx = Context::new_blocking(ContextOptions::from_env().unwrap()).unwrap();
        let Some((width, _)) = ctx.subgroup_size_range() else {
            return;
        };
        let width = (width as usize).min(WORKGROUP as usize);
        let seed = 0x5e9;
        let long_row = 20;
        for a in [generate::dense_row_mix(200, 150, seed), generate::rmat(8, 8, 0.57, 0.19, 0.19, seed)] {
            for (upper, k) in [false, true].into_iter().flat_map(|u| [1, 3, 33].map(|k| (u, k))) {
                let l = generate::solvable_triangle(&a, upper);
                let n = l.rows();
                let matrix = GpuSparse::from_csr(&ctx, &l, Conversion::Csr).unwrap();
                let triangle = if upper { Triangle::Upper } else { Triangle::Lower };
                let options = SptrsvOptions { rhs: k, solo_row_entries: Some(long_row), ..Default::default() };
                let plan = TriangularSolve::with_options(
                    &ctx,
                    &matrix,
                    triangle,
                    Diagonal::NonUnit,
                    SptrsvAlgorithm::RowOrder,
                    options,
                )
                .unwrap();
                let segments = plan.segments.as_ref().expect("rows of 20 entries or more");
                let long = |pos: usize| {
                    let row = if upper { n - 1 - pos } else { pos };
                    l.row_offsets()[row + 1] - l.row_offsets()[row] >= long_row as u32
                };
                let mut want: Vec<u32> = (0..n * k)
                    .filter(|&i| {
                        let (pos, rhs) = (i / k, i % k);
                        i % width == 0 || (rhs == 0 && (long(pos) || (pos > 0 && long(pos - 1))))
                    })
                    .map(|i| i as u32)
                    .collect();
                assert!(want.len() <= segments.segments, "at most the segments counted");
                want.resize(segments.segments + 1, (n * k) as u32);
                let what = format!("{n} rows, upper {upper}, k {k}");
                assert_eq!(segments.starts.read_blocking().unwrap(), want, "{what}");
            }
        }
    }

    /// A long row's block taken by its own lane alone (the path of a team that is not whole
    /// again after a walk, forced here: lavapipe's teams always are) gives the bits of the
    /// team's blocks: the same parts, summed in the same order; so does the team without the
    /// check that keeps it from reading a stalled block again (`block_hint`). Lower and upper,
    /// one and three right-hand sides (three lanes of a team on one long row), f32 and f64;
    /// each against the twin.
    #[test]
    fn lone_blocks_give_the_teams_bits() {
        let ctx = Context::new_blocking(ContextOptions::from_env().unwrap()).unwrap();
        assert!(ctx.subgroup_size_range().is_some(), "the test context has subgroups");
        // Diagonals, the two entries before them and a few random entries, and full rows of
        // 300 to 1,200 entries (up to four blocks of a team of 8): from row 300 on every
        // seventh (blocks of 32 entries a lane), or three (short blocks at their ends). The
        // short rows are a chain that a team resolves over rounds (a lane takes one forwarded
        // value a round), so a long row's last short block, which holds the rows just before
        // it, is read before they are solved and waits (`block_hint`'s check).
        let n = 1200u32;
        let mut rng = Rng::new(0x10e);
        let many = |r: u32| r >= 300 && r % 7 == 3;
        let few = |r: u32| [400, 777, 1150].contains(&r);
        for (long, short_blocks) in [(&many as &dyn Fn(u32) -> bool, false), (&few, true)] {
            lone_blocks_in(&ctx, n, long, short_blocks, &mut rng);
        }
    }

    fn lone_blocks_in(ctx: &Context, n: u32, long: &dyn Fn(u32) -> bool, short_blocks: bool, rng: &mut Rng) {
        let rows: Vec<Vec<u32>> = (0..n)
            .map(|r| {
                let mut row: Vec<u32> = if long(r) {
                    (0..=r).collect()
                } else {
                    let band = [r.saturating_sub(2), r.saturating_sub(1), r];
                    (0..4).map(|_| rng.below(r as u64 + 1) as u32).chain(band).collect()
                };
                row.sort_unstable();
                row.dedup();
                row
            })
            .collect();
        for upper in [false, true] {
            // For U, the rows and columns reversed: the same long rows, above the diagonal.
            let (mut offsets, mut cols) = (vec![0u32], Vec::new());
            for r in 0..n {
                match upper {
                    false => cols.extend(&rows[r as usize]),
                    true => cols.extend(rows[(n - 1 - r) as usize].iter().rev().map(|&c| n - 1 - c)),
                }
                offsets.push(cols.len() as u32);
            }
            let values = (0..cols.len()).map(|_| rng.next_f32() * 2.0 - 1.0).collect();
            let source = CsrMatrix::try_from_csr_data(n as usize, n as usize, offsets, cols, values).unwrap();
            let triangle = generate::solvable_triangle(&source, upper);
            let values64 = triangle.values().iter().map(|&v| v as f64).collect();
            let (offsets, cols) = (triangle.row_offsets().to_vec(), triangle.col_indices().to_vec());
            let triangle64 = CsrMatrix::try_from_csr_data(n as usize, n as usize, offsets, cols, values64).unwrap();
            for k in [1, 3] {
                lone_blocks_match(ctx, &triangle, upper, k, short_blocks);
                lone_blocks_match(ctx, &triangle64, upper, k, short_blocks);
            }
        }
    }

    fn lone_blocks_match<T: Scalar>(ctx: &Context, l: &CsrMatrix<T>, upper: bool, k: usize, short_blocks: bool) {
        let n = l.rows();
        let matrix = GpuSparse::from_csr(ctx, l, Conversion::Csr).unwrap();
        let triangle = if upper { Triangle::Upper } else { Triangle::Lower };
        let options = SptrsvOptions { rhs: k, ..Default::default() };
        let mut plan = TriangularSolve::with_options(
            ctx,
            &matrix,
            triangle,
            Diagonal::NonUnit,
            SptrsvAlgorithm::RowOrder,
            options,
        )
        .unwrap();
        assert!(plan.long_rows());
        assert_eq!(plan.short_blocks, short_blocks);
        let b64: Vec<f64> = (0..n * k).map(|i| ((i * 7919) % 1000) as f64 / 500.0 - 1.0).collect();
        let b = GpuDense::upload(
            ctx,
            &crate::DenseMatrix::try_new(n, k, b64.iter().map(|&v| T::from_f64(v)).collect()).unwrap(),
            crate::DenseLayout::RowMajor,
        )
        .unwrap();
        let mut run = |lone: bool, hint: bool| {
            plan.lone_blocks = lone;
            plan.block_hint = hint;
            let poisoned = vec![T::from_f64(f64::NAN); n * k];
            let mut x = GpuDense::upload(
                ctx,
                &crate::DenseMatrix::try_new(n, k, poisoned).unwrap(),
                crate::DenseLayout::RowMajor,
            )
            .unwrap();
            plan.solve_dense(&b, &mut x).unwrap();
            x.read_blocking().unwrap().data().to_vec()
        };
        let (team, lone, unhinted) = (run(false, true), run(true, true), run(false, false));
        let what = format!("{}, upper {upper}, k = {k}", T::KIND.name());
        let twin = crate::reference::triangular_solve(l, upper, false, &b64, k).unwrap();
        for (path, x) in [("team", &team), ("lone", &lone), ("team without the stalled blocks' check", &unhinted)] {
            let error = crate::reference::relative_error(x, &twin);
            assert!(error < if T::KIND == ElementKind::F64 { 1e-12 } else { 1e-5 }, "{what}, {path}: {error:e}");
            let differ = team.iter().zip(x).filter(|(a, b)| a.to_f64().to_bits() != b.to_f64().to_bits()).count();
            assert_eq!(differ, 0, "{what}: the {path} path changed the bits of {differ} of {} values", n * k);
        }
    }

    /// The team's help for long rows is built in exactly where a row is longer than the
    /// smallest subgroup's block, or, with short blocks, where a few rows are longer than its
    /// short block (and for a transpose, whose rows are not counted); without subgroups never.
    /// Each plan then solves to the twin (the help is used past the bound).
    #[test]
    fn long_rows_only_where_a_row_needs_the_team() {
        for subgroups in [true, false] {
            let ctx =
                Context::new_blocking(ContextOptions { subgroups, ..ContextOptions::from_env().unwrap() }).unwrap();
            let least = ctx.subgroup_size_range().map_or(8, |(least, _)| least as usize);
            let (short, block) = (SHORT_BLOCK_PER_LANE * least, BLOCK_PER_LANE * least);
            let few = SHORT_BLOCK_MOST_ROWS;
            let cases = [(short, 1), (short + 1, 1), (short + 1, few), (short + 1, few + 1), (block, few + 1)];
            for (len, count) in cases.into_iter().chain([(block + 1, few + 1)]) {
                // Rows of their diagonal alone, and `count` last rows `len` long (the diagonal
                // dominant).
                let n = len + count;
                let mut offsets = vec![0u32];
                let (mut cols, mut values) = (Vec::new(), Vec::new());
                for r in 0..n {
                    let first = if r + count >= n { r + 1 - len } else { r };
                    cols.extend(first as u32..=r as u32);
                    values.extend((first..=r).map(|c| if c == r { 1.0 + 0.5 * (r - first) as f32 } else { 0.5 }));
                    offsets.push(cols.len() as u32);
                }
                let l = CsrMatrix::try_from_csr_data(n, n, offsets, cols, values).unwrap();
                let matrix = GpuSparse::from_csr(&ctx, &l, Conversion::Csr).unwrap();
                for transposed in [false, true] {
                    let plan = TriangularSolve::plan(
                        &ctx,
                        &matrix,
                        Triangle::Lower,
                        Diagonal::NonUnit,
                        SptrsvAlgorithm::RowOrder,
                        SptrsvOptions::default(),
                        transposed,
                    )
                    .unwrap();
                    let what = format!("subgroups {subgroups}, {count} rows of {len}, transposed {transposed}");
                    let short_blocks = subgroups && !transposed && len > short && count <= few;
                    assert_eq!(plan.short_blocks, short_blocks, "{what}");
                    assert_eq!(plan.long_rows(), short_blocks || subgroups && (transposed || len > block), "{what}");
                    let b = vec![1.0f32; n];
                    let mut x = ctx.upload(&vec![f32::NAN; n]).unwrap();
                    plan.solve(&ctx.upload(&b).unwrap(), &mut x).unwrap();
                    let got = x.read_blocking().unwrap();
                    let solved = if transposed { l.transpose() } else { l.clone() };
                    let twin =
                        crate::reference::triangular_solve(&solved, transposed, false, &vec![1.0; n], 1).unwrap();
                    let error = crate::reference::relative_error(&got, &twin);
                    assert!(error < 1e-5, "{what}: {error:e}");
                }
            }
        }
    }
}
