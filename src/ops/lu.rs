//! Batched LU factorization with partial pivoting, `P·A = L·U` (LAPACK `getrf` semantics),
//! and the solve with its factors (`getrs`), for batches of square matrices of any order.
//!
//! A batch is a [`GpuDense`] of `batch·n` rows and `n` columns, row-major: matrix `b` is rows
//! `b·n .. (b+1)·n`. The factorization overwrites it (or writes another matrix: out of place)
//! with unit-lower L (below the diagonal) and U; `pivots[b·n + k]` is the row (0-based,
//! within the matrix) swapped with row k at step k; `info[b]` is 0, or 1 + the first column
//! whose pivot was exactly zero — that matrix is singular, its factorization went on
//! without dividing by the zero (as LAPACK does), and a solve with it gives non-finite
//! values: check `info` first ([`BatchedLu::factor`] returns it).
//!
//! Three kernels ([`LuAlgorithm`]): a team of lanes per matrix with rows in registers
//! (n ≤ 32), a workgroup per matrix in workgroup memory (seed 004's scheme), and a blocked
//! right-looking factorization in global memory for larger n, whose panels pivot partially
//! (in workgroup memory where a panel fits; else rows in registers, one workgroup where the
//! panel's rows fit one, past that workgroups that exchange each column's candidates within
//! one dispatch, [`TallPanels`]) or by a tournament
//! ([`Pivoting::Tournament`], many workgroups, fewer dispatches). With
//! partial pivoting the pivot is the largest magnitude, the first row on ties, compared in
//! the element's own precision (f64 magnitudes past f32's range keep their order:
//! `tests/lu.rs`, `lu_pivots_past_f32_range`), so the pivots are LAPACK's and the
//! multipliers at most 1; a tournament's pivots are its own and its multipliers may exceed
//! 1. The factors are checked by their backward error.

use super::common::{check_len, Operands};
use crate::context::Context;
use crate::element::Scalar;
use crate::gpu::{Bind, GpuVec};
use crate::kernel::shaders::{
    lu_blocked, lu_gemm_vec4, lu_small, lu_solve, lu_team, lu_tournament, lu_tournament_vec4,
};
use crate::kernel::spec::ShaderSpec;
use crate::kernel::Kernel;
use crate::matrix::{DenseLayout, GpuDense};
use crate::record::Recorder;
use crate::{Error, Result};

/// Whether rows are swapped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Pivoting {
    /// Partial pivoting (the largest magnitude in the column), LAPACK's `getrf`.
    Partial,
    /// Tournament pivoting (CALU: Grigori, Demmel and Xiang, SIAM J. Matrix Anal. Appl.
    /// 32(4), 2011), for the blocked LU of large matrices, whose panels it factors on many
    /// workgroups at once: each takes a block of a panel's rows and pivots partially among
    /// them, the rows it chose meet the other blocks' in rounds of the same, and the last
    /// round's choice is the panel's pivot rows. The output has getrf's form (packed L\U,
    /// interchanges, info); the multipliers may exceed 1 (in practice the factors are as
    /// accurate as partial pivoting's; their backward error is what the tests and the bench
    /// check). Where a panel's rows fit one block, and on the team and workgroup kernels, it
    /// is partial pivoting.
    Tournament,
    /// None: pivots are the identity, and updates whose `l_ik` or `u_kj` is zero are skipped
    /// (seed 004's LU of bitmap matrices, whose fill pattern it keeps). Fails (a zero pivot)
    /// where pivoting would not.
    None,
}

/// Lanes of the blocked LU's workgroups.
const BLOCKED_WG: u32 = 256;
/// Columns of its panels (`NB` in `shaders/lu_blocked.wgsl`).
const PANEL: usize = 32;
/// Side of its GEMM tiles (`TILE` there).
const GEMM_TILE: usize = 64;
/// Columns of L21 (rows of U12) its GEMM stages at a time (`K_CHUNK` there).
const GEMM_CHUNK: usize = 16;
/// The GEMM's lanes (16 × 16 of 4 × 4 outputs).
const GEMM_LANES: usize = 256;
/// The GEMM's stage (`GEMM_STAGE`): 16 columns of L21's tile and 16 rows of U12's, as vec4s.
const GEMM_STAGE: u32 = (2 * GEMM_TILE * GEMM_CHUNK / 4) as u32;
/// Columns a workgroup of its row swaps moves (`SWAP_COLS` there).
const SWAP_COLS: usize = 32;
/// Rows a workgroup of the tournament's multipliers solves, a lane each: the lanes work
/// alone, so small workgroups spread them over more of the GPU (H100, 4096²: 3.9 → 3.4 ms
/// from 256, a smaller gain than predicted: the time is in each lane's own chain).
const LOWER_ROWS: usize = 64;
/// Rows a workgroup of partial pivoting's tall panels takes (a lane each), by columns or
/// cooperatively.
const COLUMN_ROWS: usize = 256;
/// In f64, partial pivoting's one-round panels take at most this many rows (a lane each): an
/// f64 row is 64 registers a lane, which leaves 1,024 lanes no room for the rest (H200, 1024²:
/// 4.05 ms at 1,024 rows a round, 3.08 at 512, 3.29 at 256; benches/NOTES.md session 65).
const F64_ROUND_ROWS: u32 = 512;
/// In f64 with rounds of at most [`F64_ROUND_ROWS`], the rounds' look-ahead is on by default
/// from this order (H200: 100 × 256² 930 → 879 µs, 1024² 3.09 → 2.96 ms with it, 1,000 × 64²
/// 699 → 726; benches/NOTES.md session 65).
const F64_LOOK_AHEAD_FROM: usize = 256;
/// With subgroups, a one-round panel of more than 2 · ROUND_GRAIN rows takes a workgroup of
/// the next multiple of ROUND_GRAIN lanes, not the next power of two: a step's lanes past the
/// rows still take its argmaxes and barrier (H200, 1024²: rounds 2,068 → 2,007 µs; multiples of
/// 64 gained nothing more: benches/NOTES.md, session 59). Without subgroups the argmax is
/// a tree of halves, so powers of two.
const ROUND_GRAIN: usize = 128;
/// Polls a workgroup of the cooperative panel makes for the others' candidates for a column
/// before it leaves its rows to the finishing step: far more than a step needs on a GPU
/// whose workgroups all run (a poll is an L2 round trip; a step ~3 µs on the H200, where 64,
/// 256 and 4,096 polls of the whole workgroup measured alike, and 256 to 16,384 of a
/// subgroup alone, benches/NOTES.md sessions 56 and 62), few enough that a GPU that cannot
/// hold them all loses little before the finishing step takes over.
const PANEL_POLLS: u32 = 256;
/// The same where the adapter caps loop iterations (llvmpipe runs two workgroups at a time,
/// so most waits there run out).
const PANEL_POLLS_CAPPED: u32 = 16;
/// The most workgroups (of up to [`COLUMN_ROWS`] lanes) a cooperative panel's dispatch may
/// have for `Auto` to choose it: a batch's workgroups past what the GPU holds at once would
/// wait for ones not yet started and leave their columns to the finishing step, which plays
/// them one workgroup at a time. Any GPU this library targets holds 64 at once.
const COOPERATIVE_WORKGROUPS: usize = 64;
/// The order from which `Auto` takes the blocked LU with pivoting even where a matrix fits in
/// workgroup memory, by element size: its panels' rows in registers beat the workgroup LU's
/// barrier a column from there on at every batch measured (H200, f32 from 56: 1,000 × 64²
/// 250 against 375 µs, 1,000 × 80² 400 against 1,382; f64 from 64, where batches of 1,000
/// gain 9% and one matrix loses 7%), and lose below (f32 1,000 × 48²: 192 against 144; f64
/// 1,000 × 48²: 558 against 277): benches/NOTES.md, session 61.
fn blocked_from(element_size: u64) -> usize {
    if element_size == 4 {
        56
    } else {
        64
    }
}
/// The blocked LU's steps by number (`params.step` of `shaders/lu_blocked.wgsl`).
const STEP_NAMES: [&str; 4] = ["panel", "swap", "trsm", "gemm"];

/// Where the blocked LU's dispatches go, each with its step's name: a recorder, or a timed
/// pass each.
type StepSink<'s> = dyn FnMut(&'static str, &mut dyn FnMut(&mut Recorder<'_, '_>) -> Result<()>) -> Result<()> + 's;

/// Which kernel factors the matrices.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum LuAlgorithm {
    /// [`LuAlgorithm::Team`] where it applies (subgroups, and n up to the team size),
    /// [`LuAlgorithm::Workgroup`] where the matrix fits in workgroup memory and n is below
    /// 56 in f32 or 64 in f64 (or nothing pivots), [`LuAlgorithm::Blocked`] beyond.
    #[default]
    Auto,
    /// A workgroup per matrix, the matrix in workgroup memory, barriers between phases
    /// (`shaders/lu_small.wgsl`): n² elements must fit in workgroup memory.
    Workgroup,
    /// A team of lanes per matrix (the next power of two ≥ n, at most 32 and, with
    /// subgroups, the smallest subgroup size), a row per lane in registers, exchanges by
    /// shuffles (`shaders/lu_team.wgsl`): n up to the team size.
    Team,
    /// Blocked right-looking factorization in global memory, panels of 32 columns: each
    /// panel's rows in registers, a lane a row (`shaders/lu_tournament.wgsl`: one
    /// workgroup's round, cooperating workgroups past that, or with [`Pivoting::Tournament`]
    /// rounds and a solve for the multipliers; [`LuOptions::staged_panel`] factors it in
    /// workgroup memory instead), then row swaps, triangular solve and GEMM update
    /// (`shaders/lu_blocked.wgsl`), a dispatch each (after a cooperative panel, the swaps and
    /// the solve in one dispatch of strips: `lu_tournament.wgsl`'s SOLVE): any n. Not
    /// without pivoting.
    Blocked,
}

impl LuAlgorithm {
    /// Every concrete algorithm, in the order reports list them.
    pub const ALL: [LuAlgorithm; 3] = [LuAlgorithm::Workgroup, LuAlgorithm::Team, LuAlgorithm::Blocked];

    /// Short name used in reports and on the command line.
    pub fn name(self) -> &'static str {
        match self {
            LuAlgorithm::Auto => "auto",
            LuAlgorithm::Workgroup => "workgroup",
            LuAlgorithm::Team => "team",
            LuAlgorithm::Blocked => "blocked",
        }
    }

    /// Parses [`LuAlgorithm::name`].
    pub fn from_name(name: &str) -> Option<Self> {
        std::iter::once(LuAlgorithm::Auto).chain(Self::ALL).find(|a| a.name() == name)
    }
}

/// Tuning knobs of [`BatchedLu`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LuOptions {
    /// The kernel.
    pub algorithm: LuAlgorithm,
    /// Invocations per workgroup: a power of two from the largest subgroup size (or 32) to
    /// 1024. By default, for [`LuAlgorithm::Workgroup`] about one per eight entries (32 to
    /// 256), for [`LuAlgorithm::Team`] the largest subgroup size (32 or more).
    pub workgroup_size: Option<u32>,
    /// The blocked LU: rows a workgroup of a panel's rows in registers takes (a lane each), a
    /// power of two from 64 (and the largest subgroup size) to the most invocations a
    /// workgroup has (at most 1024). [`Pivoting::Tournament`]: a round's workgroups
    /// (default: 256, or the most below that fit in workgroup memory); partial pivoting:
    /// panels of up to this many rows are factored by one workgroup, taller ones by several
    /// (`tall_panels`) (default: the most that fit, up to 1024, or 512 in f64; set, it also
    /// replaces the panel in workgroup memory of smaller n). Unused where the team or
    /// workgroup kernel factors (small n).
    pub tournament_rows: Option<u32>,
    /// Partial pivoting's panels taller than one workgroup's rows (`tournament_rows`): how
    /// their columns are stepped. `None`: [`TallPanels::Cooperative`] where its dispatch has
    /// at most 64 workgroups (the batch times the tallest panel's workgroups of 256 rows) and
    /// its stage fits in workgroup memory (and, where the adapter caps loop iterations, its
    /// loops fit the cap), else [`TallPanels::ByColumns`].
    pub tall_panels: Option<TallPanels>,
    /// [`TallPanels::Cooperative`]: the polls a workgroup makes for the other workgroups'
    /// candidates for a column before it stores its rows and leaves them to the finishing
    /// step. 0 leaves every column to that step (tests force it). Default 256 (16 where the
    /// adapter caps loop iterations).
    pub panel_polls: Option<u32>,
    /// The blocked LU: columns a workgroup of its triangular solve (U12 ← L11⁻¹·A12) takes:
    /// 32 (the default), 64 or 128.
    pub trsm_columns: Option<u32>,
    /// The blocked LU with partial pivoting: factor each panel in workgroup memory (one
    /// workgroup a matrix walking the panel's rows, swapping them there), which needs the
    /// first panel (n × 32) to fit there, instead of with a row a lane in registers. The
    /// default is rows in registers, faster on the H200 (100 × 256² f32: 752 → 582 µs,
    /// benches/NOTES.md session 57), and workgroup memory where a round of rows does not fit.
    pub staged_panel: bool,
    /// The blocked LU with partial pivoting and rows in registers: factor each panel that
    /// one workgroup's round takes in the same dispatch as the previous panel's trailing
    /// update (look-ahead; the panel's own columns take their part of it first), so that the
    /// panel's workgroup and the update share the GPU instead of taking turns; and where a
    /// panel and the next are both taller than a round (stepped cooperatively in workgroups
    /// of 256), the first one's GEMM runs in the second one's dispatch, beside it, on the
    /// columns right of it (the second's rows take their own columns' part as they load).
    /// `None`: the GEMM beside tall panels in f32 and f64 (H200, 4096²: f32 15.1 → 12.9 ms,
    /// f64 23.8 → 19.5, benches/NOTES.md session 63), the rounds' look-ahead in f32, and in
    /// f64 from n = 256 where its rounds take at most 512 rows (the default; in rounds of
    /// 1,024 an f64 row fills a lane's registers and the strips beside it made it slower);
    /// `Some(true)`: both in both; `Some(false)`: every panel after the update before it.
    /// Tournaments and staged panels (`InvalidArgument` with `Some(true)`) do not look ahead,
    /// nor does the first panel of one round after tall ones (a panel whose update is
    /// deferred stores its rows where its interchanges take them, which only a round does).
    pub look_ahead: Option<bool>,
    /// The solve ([`BatchedLu::record_solve`]) by columns: a workgroup a right-hand side, the
    /// column in workgroup memory, its triangles by blocks of 32 rows (dot products of the
    /// rows with the solved part by slots of 32 lanes, then the block's triangle a row a
    /// step). `Some(false)`: a lane a right-hand side, the whole solve (for many right-hand
    /// sides of small matrices). `None` (the default): by columns where the column fits
    /// workgroup memory, past n = 64 or for one right-hand side.
    /// `Some(true)` where the column does not fit: `LimitExceeded`.
    pub solve_by_columns: Option<bool>,
    /// The solve by columns in panels: rows a band of its triangles takes (a multiple of 32),
    /// after which a dispatch over every workgroup subtracts the band's part of the dot
    /// products from the rows left to solve, so that one workgroup no longer reads the whole
    /// triangle alone. `None`: panels of 256 rows where the right-hand sides of the batch
    /// leave most of a large GPU idle (fewer than 64 columns in all) and n is past 1024;
    /// `Some(0)`: none.
    pub solve_panel: Option<u32>,
}

/// How partial pivoting steps the columns of a blocked LU's panel taller than one
/// workgroup's rows (rows in registers, a lane each, in workgroups of up to 256).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TallPanels {
    /// One dispatch for the panel: each workgroup publishes its best row for a column (the row
    /// and its values, every word carrying its ready state), waits for every workgroup's, and
    /// applies the winner's step. WebGPU promises no forward progress between workgroups, so
    /// each wait is bounded ([`LuOptions::panel_polls`]); a workgroup that runs out stores its
    /// rows and leaves, and a one-workgroup finishing step plays whatever was left until the
    /// panel is done. Two dispatches a panel, and a third for its swaps and U12 (as one
    /// dispatch of strips of 32 columns, not `lu_blocked.wgsl`'s two: H200, 4096² 13.0 →
    /// 12.1 ms, benches/NOTES.md session 64).
    Cooperative,
    /// A dispatch per column (33 a panel): each finds the previous column's pivot among the
    /// workgroups' candidates of the dispatch before, applies its step, and publishes its
    /// own candidates.
    ByColumns,
}

/// The kernel in use and its shape.
enum Factor<T: Scalar> {
    Workgroup {
        in_place: Kernel<lu_small::Shader, T>,
        out_of_place: Kernel<lu_small::Shader, T>,
    },
    Team {
        in_place: Kernel<lu_team::Shader, T>,
        out_of_place: Kernel<lu_team::Shader, T>,
        team: u32,
        wg_size: u32,
    },
    Blocked {
        panel: BlockedPanel<T>,
        steps: Kernel<lu_blocked::Shader, T>,
        gemm: GemmKernel<T>,
        trsm: Kernel<lu_blocked::Shader, T>,
        /// Columns a workgroup of the triangular solve takes.
        trsm_cols: usize,
    },
}

/// The blocked LU's trailing update (`shared/lu_gemm_body.wgsl`): on A's elements
/// (`lu_blocked.wgsl`'s GEMM step), or where n is a multiple of 4 on its vec4s
/// (`lu_gemm_vec4.wgsl`: a lane's rows of C move in 4 accesses where elements take 16).
enum GemmKernel<T: Scalar> {
    Elements(Kernel<lu_blocked::Shader, T>),
    Vec4(Kernel<lu_gemm_vec4::Shader, T>),
}

/// How the blocked LU factors its panels.
enum BlockedPanel<T: Scalar> {
    /// Partial pivoting, the panel (n × 32) in workgroup memory, rows swapped there
    /// (`lu_blocked.wgsl`'s PANEL step).
    Staged(Kernel<lu_blocked::Shader, T>),
    /// The rows stay in place while their pivots are picked (by a tournament, or partial
    /// pivoting with rows in registers), then move with whole rows in the swaps.
    Picked(PickedPanel<T>),
}

/// The panel of a blocked LU whose pivot rows are picked without moving rows
/// (`shaders/lu_tournament.wgsl`), then brought up by the swaps: by a tournament, or by
/// partial pivoting (one workgroup's round where the rows fit it, a dispatch per column
/// where they do not).
struct PickedPanel<T: Scalar> {
    tournament: bool,
    /// Its pipelines, on A's elements or (n a multiple of 4) on A's vec4s.
    kernels: PickedKernels<T>,
    column_rows: usize,
    /// Rows a workgroup of a round takes, a lane each (`WG_SIZE`).
    rows: usize,
    /// The fewest lanes a round's workgroup may have (whole subgroups, 64 at least).
    least: usize,
    /// [`ROUND_GRAIN`] with subgroups, else 0 (powers of two).
    round_grain: usize,
    /// Each round's picks, `stride` words a matrix in two halves that the rounds alternate.
    picks: GpuVec<u32>,
    stride: usize,
    /// Each panel factored beside the previous one's update ([`LuOptions::look_ahead`]).
    look_ahead: bool,
}

/// The lanes of a one-round panel of `rows` rows: the next multiple of `grain` past 2 · `grain`
/// rows (where `grain` is not 0), else the next power of two, `least` at the fewest.
fn round_lanes(rows: usize, least: usize, grain: usize) -> usize {
    if grain > 0 && rows > 2 * grain {
        rows.next_multiple_of(grain)
    } else {
        rows.next_power_of_two().max(least)
    }
}

/// Where a cooperative panel keeps its exchange in a matrix's part of the picks buffer, and
/// how long its waits are.
#[derive(Clone, Copy)]
struct CooperativePanel {
    polls: u32,
    /// Where a panel's dispatch may run the previous panel's GEMM beside it (in workgroups
    /// of 256 lanes): the vec4s of the GEMM's stage its pipeline holds (`GEMM_STAGE`).
    gemm_stage: Option<u32>,
    /// The candidate slots (column-major by workgroup), reset to not-ready after each panel.
    slots: usize,
    /// The words of a candidate slot (a row and its values: 1 + 32 in f32, 1 + 96 in f64).
    slot_words: usize,
    /// The picks (a word a column) and each workgroup's progress.
    record: usize,
}

/// The most loop iterations an invocation of the cooperative panel (either step) runs, for
/// `groups` workgroups of `lanes` and `polls` a wait: a generous count of each loop of
/// `shaders/shared/lu_tournament_body.wgsl` (llvmpipe caps their sum).
fn cooperative_loops(groups: u64, lanes: u64, slot_words: u64, polls: u64, beside: bool) -> u64 {
    let nb = PANEL as u64;
    // A row's eight blocks loaded and stored (four elements each in the element variant),
    // and the picks compared.
    let rows = 2 * 8 * 5 + nb;
    // A step: the workgroup's argmax, the staged candidates' best, a candidate published;
    // a poll reads every slot four words a lane at a time.
    let step = lanes.ilog2() as u64 + 2 + groups + 1 + 8 * 5;
    let poll = (groups * slot_words).div_ceil(4 * lanes) + 1;
    // Beside the previous panel's GEMM: U12 staged, a row's update by it (eight blocks of
    // four rows), and a GEMM tile's chunks (two of 16 steps).
    let previous = if beside { (8 * PANEL as u64).div_ceil(lanes) + 8 * 4 + 2 * (GEMM_CHUNK as u64 + 4) } else { 0 };
    let cooperative = rows + previous + nb * (step + polls.max(1) * poll) + polls * poll;
    // The finishing step: up to nb + 1 rounds of a play of every workgroup (a failed wait
    // each), every column's step once per workgroup, the record and the reset, and the
    // panel's rows moved (each move's source found by undoing the swaps: 3 · nb).
    let finish = (nb + 1) * (groups.div_ceil(lanes) + 2 + groups * (rows + step + poll))
        + groups * nb * (step + poll)
        + (nb * groups * slot_words).div_ceil(lanes)
        + nb
        + 2
        + 3 * nb
        + rows;
    cooperative.max(finish)
}

impl<T: Scalar> PickedPanel<T> {
    fn new(ctx: &Context, n: usize, batch: usize, tournament: bool, options: &LuOptions) -> Result<Self> {
        let rows = options.tournament_rows;
        let budget = ctx.limits().max_compute_workgroup_storage_size as u64;
        let limits = ctx.limits();
        let most = limits.max_compute_invocations_per_workgroup.min(limits.max_compute_workgroup_size_x).min(1024);
        // A workgroup of whole subgroups (the rounds reduce one partial per subgroup).
        let least = ctx.subgroup_size_range().map_or(64, |(_, max)| max.max(64));
        // A lane per row; each step's candidates: a row, key and id per subgroup.
        let slots = |rows: u32| ctx.subgroup_size_range().map_or(1, |(min, _)| rows.div_ceil(min.max(1)));
        // A round's workgroup memory (`rows` lanes; a cooperative panel's workgroup without
        // `strips`).
        let sized = |rows: u32, strips: bool| {
            let size = T::KIND.size();
            let slots = slots(rows) as u64;
            // Rows and keys of the candidates (two sets; or a look-ahead strip's U12 and L11,
            // slot_blocks_for), the lanes' ids, the pivot rows' block, the picks, the
            // argmax's exchange (without subgroups), and what the compiler keeps there.
            slot_blocks_for(slots as u32, strips) as u64 * 4 * size
                + 2 * slots * 8
                + 4 * rows as u64
                + (PANEL * PANEL) as u64 * size
                + 4 * PANEL as u64
                + 8 * rows as u64
                + 64
        };
        let bytes = |rows: u32| sized(rows, true);
        let rows = match rows {
            Some(r) if !r.is_power_of_two() || !(least..=most).contains(&r) => {
                return Err(Error::InvalidArgument(format!(
                    "LuOptions: tournament_rows {r} is not a power of two from {least} to {most}"
                )))
            }
            Some(r) if bytes(r) > budget => {
                return Err(Error::LimitExceeded {
                    what: format!("a tournament of {r} rows a workgroup"),
                    limit: "max_compute_workgroup_storage_size",
                    requested: bytes(r),
                    max: budget,
                })
            }
            Some(r) => r,
            // A tournament: 256 where it fits: a round's steps slow down with a workgroup's
            // subgroups (H100, 4096²: 30.0 ms at 256 rows against 32.2 at 128, 30.7 at 512,
            // 38.2 at 1024; benches/results/h100-2026-11-24-lu-tournament-rows.log). Partial
            // pivoting: the most, so that more panels take one round (in f64 at most
            // F64_ROUND_ROWS).
            None => {
                let widest = match (tournament, T::KIND.size()) {
                    (true, _) => most.min(256),
                    (false, 8) => most.min(F64_ROUND_ROWS),
                    (false, _) => most,
                };
                match (least.ilog2()..=widest.ilog2()).rev().map(|e| 1u32 << e).find(|&r| bytes(r) <= budget) {
                    Some(r) => r,
                    None => {
                        return Err(Error::LimitExceeded {
                            what: format!("a tournament of {least} rows a workgroup (the fewest)"),
                            limit: "max_compute_workgroup_storage_size",
                            requested: bytes(least),
                            max: budget,
                        })
                    }
                }
            }
        };
        // A round's picks (two sets); a dispatch per column's candidates (two sets of a key and
        // a row a workgroup) and picks.
        let column_rows = COLUMN_ROWS.min(rows as usize);
        // A candidate's words: its key (the element's magnitude in f64, its bits in f32) and row.
        let candidate_words = T::KIND.size() as usize / 4 + 1;
        let mut stride =
            (2 * n.div_ceil(rows as usize) * PANEL).max(2 * candidate_words * n.div_ceil(column_rows) + PANEL);
        // The cooperative panel's slots: its row and values (ready words: three an f64), a
        // column's for every workgroup of the tallest panel, then the picks and progress.
        let groups = n.div_ceil(column_rows);
        let slot_words = 1 + PANEL * if T::KIND.size() == 8 { 3 } else { 1 };
        let stage_words = groups * slot_words;
        let polls = options.panel_polls.unwrap_or(match ctx.loop_iteration_limit() {
            Some(_) => PANEL_POLLS_CAPPED,
            None => PANEL_POLLS,
        });
        // The look-ahead (partial pivoting): before panels of one workgroup's round by default
        // in f32, and in f64 from F64_LOOK_AHEAD_FROM where rounds are at most F64_ROUND_ROWS
        // (in rounds of 1,024 lanes an f64 row's 32 values fill the registers, and the
        // update's strips beside the panel made it slower on the H200: 1024² 5.90 → 6.70 ms,
        // benches/NOTES.md session 58); the GEMM beside a cooperative panel in both.
        let look_ahead = match options.look_ahead {
            Some(false) => false,
            Some(true) if tournament => {
                return Err(Error::InvalidArgument("LuOptions: look_ahead is partial pivoting's".into()));
            }
            Some(true) => true,
            None => !tournament && (T::KIND.size() == 4 || (rows <= F64_ROUND_ROWS && n >= F64_LOOK_AHEAD_FROM)),
        };
        let gemm_beside = !tournament && options.look_ahead != Some(false);
        let tall = !tournament && n > rows as usize;
        let cooperative = match options.tall_panels {
            _ if !tall => None,
            Some(TallPanels::ByColumns) => None,
            choice => {
                // The stage and its three flags (and not the rounds' pivot block); with the GEMM
                // beside, its stage (where U12 also waits for the panel's rows), where it fits.
                // The stage is padded past half the adapter's workgroup memory where that fits
                // too: then no two of the pipeline's workgroups share an SM, and a panel's
                // workgroup keeps its SM to itself while the tiles run (H200, 4096²: 13.76 →
                // 12.95 ms; two workgroups an SM 13.53, three 13.76; benches/NOTES.md session 63),
                // with 4 KiB to spare (the H200's driver keeps 10.5 KB there where this counts 7.6).
                let pivot_block = (PANEL * PANEL) as u64 * T::KIND.size();
                let bytes = sized(column_rows as u32, false) - pivot_block + 4 * stage_words as u64 + 12;
                let vec4_bytes = 4 * T::KIND.size();
                let alone = (budget / 2 / vec4_bytes + 1).max(GEMM_STAGE as u64);
                let gemm_stage = [(alone, 4096), (GEMM_STAGE as u64, 0)]
                    .into_iter()
                    .find(|&(stage, spare)| {
                        gemm_beside && column_rows == GEMM_LANES && bytes + stage * vec4_bytes + spare <= budget
                    })
                    .map(|(stage, _)| stage);
                let beside = gemm_stage.is_some();
                let bytes = bytes + gemm_stage.unwrap_or(0) * vec4_bytes;
                let loops =
                    cooperative_loops(groups as u64, column_rows as u64, slot_words as u64, polls as u64, beside);
                let what = || format!("a cooperative panel of {n} rows in workgroups of {column_rows}");
                let refusal = if bytes > budget {
                    Some(Error::LimitExceeded {
                        what: what(),
                        limit: "max_compute_workgroup_storage_size",
                        requested: bytes,
                        max: budget,
                    })
                } else {
                    ctx.check_loop_iterations(what, loops).err()
                };
                let crowded = choice.is_none() && batch * groups > COOPERATIVE_WORKGROUPS;
                match (refusal, choice) {
                    (None, _) if !crowded => {
                        let gemm_stage = gemm_stage.map(|stage| stage as u32);
                        let panel = CooperativePanel {
                            polls,
                            gemm_stage,
                            slots: stride,
                            slot_words,
                            record: stride + PANEL * stage_words,
                        };
                        stride = panel.record + PANEL + groups;
                        Some(panel)
                    }
                    (Some(e), Some(TallPanels::Cooperative)) => return Err(e),
                    _ => None,
                }
            }
        };
        let words = batch.checked_mul(stride).filter(|&w| w <= u32::MAX as usize).ok_or_else(|| {
            Error::InvalidArgument(format!("the tournament's picks for {batch} matrices of {n} rows pass 2^32"))
        })?;
        let round_grain = if ctx.subgroup_size_range().is_some() { ROUND_GRAIN } else { 0 };
        // The rounds this plan takes: each one-round panel's, a tournament's widest.
        let mut rounds: Vec<u32> = (0..n)
            .step_by(PANEL)
            .map(|j0| n - j0)
            .filter(|&r| r <= rows as usize)
            .map(|r| round_lanes(r, least as usize, round_grain) as u32)
            .collect();
        if tournament && n > rows as usize {
            rounds.push(rows);
        }
        rounds.sort_unstable();
        rounds.dedup();
        let lanes = PanelLanes {
            rounds,
            lower: LOWER_ROWS as u32,
            column: column_rows as u32,
            tall: tall.then_some(match cooperative {
                Some(panel) => TallLanes::Cooperative { panel, stage: stage_words as u32 },
                None => TallLanes::ByColumns,
            }),
        };
        let kernels = match n % 4 {
            0 => PickedKernels::Vec4(PanelKernels::new(ctx, &lanes, slots)?),
            _ => PickedKernels::Elements(PanelKernels::new(ctx, &lanes, slots)?),
        };
        // Every word not ready: the cooperative slots start so (the other steps write before
        // they read).
        let picks = ctx.upload(&vec![u32::MAX; words.max(1)])?;
        Ok(PickedPanel {
            tournament,
            kernels,
            column_rows,
            rows: rows as usize,
            least: least as usize,
            round_grain,
            picks,
            stride,
            look_ahead,
        })
    }
}

/// The lanes of a picked panel's pipelines: the rounds' the plan takes, the multipliers',
/// and where partial pivoting has panels taller than a round (`tall`), theirs (`column`
/// lanes).
struct PanelLanes {
    rounds: Vec<u32>,
    lower: u32,
    column: u32,
    tall: Option<TallLanes>,
}

/// How partial pivoting's tall panels are stepped: cooperatively (its exchange, and a stage
/// of `stage` words), or by columns.
#[derive(Clone, Copy)]
enum TallLanes {
    Cooperative { panel: CooperativePanel, stage: u32 },
    ByColumns,
}

/// A picked panel's pipelines of one shader: `lu_tournament.wgsl`, which reads A an element at
/// a time, or `lu_tournament_vec4.wgsl`, a vec4 at a time (n a multiple of 4).
struct PanelKernels<S: PickedShader, T: Scalar> {
    /// A round's pipelines by their lanes, for the lane counts the plan's panels take
    /// ([`PickedPanel::round_lanes`]): a panel of one round takes the narrowest that holds its
    /// rows (a step's cost grows with a workgroup's subgroups: H200 ~3 µs at 1,024 lanes,
    /// H100 ~1.3 at 256), a tournament's rounds the widest.
    rounds: Vec<(u32, Kernel<S, T>)>,
    /// The multipliers' pipeline: workgroups of [`LOWER_ROWS`] lanes, for more of them.
    lower: Kernel<S, T>,
    /// Partial pivoting's panels taller than `rows`, where it has any: workgroups of
    /// `column_rows` lanes ([`COLUMN_ROWS`], or `rows` where fewer).
    /// (Boxed: three pipelines, which would make every `Factor` as large.)
    tall: Option<Box<TallKernel<S, T>>>,
}

/// The pipelines of partial pivoting's tall panels: the cooperative panel and its finishing
/// step (their own variant, with the stage; a pipeline each, so that FINISH's registers do not
/// weigh on the panel's steps) and the strips after them (a round's pipeline of the same
/// lanes), or the dispatch per column.
enum TallKernel<S: PickedShader, T: Scalar> {
    Cooperative { panel: Kernel<S, T>, finish: Kernel<S, T>, strips: Kernel<S, T>, exchange: CooperativePanel },
    ByColumns(Kernel<S, T>),
}

impl<S: PickedShader, T: Scalar> TallKernel<S, T> {
    /// The cooperative panel's exchange (`None`: stepped by columns).
    fn exchange(&self) -> Option<CooperativePanel> {
        match self {
            TallKernel::Cooperative { exchange, .. } => Some(*exchange),
            TallKernel::ByColumns(_) => None,
        }
    }
}

impl<S: PickedShader, T: Scalar> PanelKernels<S, T> {
    /// The round's pipeline of `lanes` (one the plan built).
    fn round(&self, lanes: usize) -> Result<&Kernel<S, T>> {
        self.rounds
            .iter()
            .find(|(l, _)| *l as usize == lanes)
            .map(|(_, kernel)| kernel)
            .ok_or_else(|| Error::Validation(format!("lu: no round of {lanes} lanes was planned")))
    }

    fn new(ctx: &Context, lanes: &PanelLanes, slots: impl Fn(u32) -> u32) -> Result<Self> {
        let round = |wg_size: u32| PickedOverrides {
            wg_size,
            slots: slots(wg_size),
            stage_words: 1,
            strips: true,
            gemm_stage: 1,
            finishing: false,
        };
        let kernel = |rows: u32| ctx.kernel::<S, T>(S::flags(false), S::overrides(round(rows)));
        let tall = match lanes.tall {
            Some(TallLanes::Cooperative { panel: exchange, stage }) => {
                let cooperative = PickedOverrides {
                    stage_words: stage,
                    strips: false,
                    gemm_stage: exchange.gemm_stage.unwrap_or(1),
                    ..round(lanes.column)
                };
                // FINISH runs no GEMM: no stage for one.
                let finish = PickedOverrides { gemm_stage: 1, finishing: true, ..cooperative };
                Some(Box::new(TallKernel::Cooperative {
                    panel: ctx.kernel::<S, T>(S::flags(true), S::overrides(cooperative))?,
                    finish: ctx.kernel::<S, T>(S::flags(true), S::overrides(finish))?,
                    strips: kernel(lanes.column)?,
                    exchange,
                }))
            }
            Some(TallLanes::ByColumns) => Some(Box::new(TallKernel::ByColumns(kernel(lanes.column)?))),
            None => None,
        };
        Ok(PanelKernels {
            rounds: lanes.rounds.iter().map(|&l| Ok((l, kernel(l)?))).collect::<Result<_>>()?,
            lower: kernel(lanes.lower)?,
            tall,
        })
    }
}

enum PickedKernels<T: Scalar> {
    Elements(PanelKernels<lu_tournament::Shader, T>),
    Vec4(PanelKernels<lu_tournament_vec4::Shader, T>),
}

impl<T: Scalar> PickedKernels<T> {
    /// How tall panels are stepped cooperatively (`None`: by columns, or none are tall).
    fn cooperative_panel(&self) -> Option<CooperativePanel> {
        let tall = match self {
            PickedKernels::Elements(kernels) => kernels.tall.as_deref().map(TallKernel::exchange),
            PickedKernels::Vec4(kernels) => kernels.tall.as_deref().map(TallKernel::exchange),
        };
        tall.flatten()
    }
}

/// What the two picked-panel shaders share: the same overrides, params and bindings, A bound
/// as elements or as vec4s.
trait PickedShader: ShaderSpec {
    /// The cooperative panel's variant, or the other steps'.
    fn flags(cooperative: bool) -> Self::Flags;
    fn overrides(o: PickedOverrides) -> Self::Overrides;
    fn params<T: Scalar>(p: PickedParams) -> Self::Params<T>;
    fn bindings<'a, T: Scalar>(a: Bind<'a, T>, rest: [Bind<'a, u32>; 3]) -> Self::Bindings<'a, T>;
}

/// The vec4 blocks of a picked panel's `slot_rows`: two sets of `slots` candidate rows, and
/// with `strips` at least a look-ahead strip's U12 and L11 (as many as 32 candidates).
fn slot_blocks_for(slots: u32, strips: bool) -> u32 {
    2 * if strips { slots.max(PANEL as u32) } else { slots } * 8
}

/// A picked panel's pipeline constants (`slot_blocks` and `slot_keys` follow from them).
#[derive(Clone, Copy)]
struct PickedOverrides {
    wg_size: u32,
    slots: u32,
    /// The cooperative panel's stage (1 for none).
    stage_words: u32,
    /// Room in slot_rows for a look-ahead strip (rounds' pipelines).
    strips: bool,
    /// The GEMM's stage beside a cooperative panel (1 for none).
    gemm_stage: u32,
    /// The cooperative variant's FINISH pipeline.
    finishing: bool,
}

/// `lu_tournament::Params`' fields, for either shader.
#[derive(Clone, Copy)]
struct PickedParams {
    step: u32,
    n: u32,
    batch: u32,
    j0: u32,
    nb: u32,
    tiles: u32,
    src: u32,
    count: u32,
    dst: u32,
    stride: u32,
    strips: u32,
    ahead: u32,
    permute: u32,
}

macro_rules! picked_shader {
    ($shader:ident, $a:ident => $bind:expr) => {
        impl PickedShader for $shader::Shader {
            fn flags(cooperative: bool) -> $shader::Flags {
                $shader::Flags { cooperative }
            }

            fn overrides(o: PickedOverrides) -> $shader::Overrides {
                let PickedOverrides { wg_size, slots, stage_words, strips, gemm_stage, finishing } = o;
                let slot_blocks = slot_blocks_for(slots, strips);
                $shader::Overrides {
                    wg_size,
                    slots,
                    slot_blocks,
                    slot_keys: 2 * slots,
                    stage_words,
                    gemm_stage,
                    finishing,
                }
            }

            fn params<T: Scalar>(p: PickedParams) -> $shader::Params {
                let PickedParams { step, n, batch, j0, nb, tiles, src, count, dst, stride, strips, ahead, permute } = p;
                $shader::Params { step, n, batch, j0, nb, tiles, src, count, dst, stride, strips, ahead, permute }
            }

            fn bindings<'a, T: Scalar>(
                $a: Bind<'a, T>,
                [pivots, info, cand]: [Bind<'a, u32>; 3],
            ) -> $shader::Bindings<'a, T> {
                $shader::Bindings { a: $bind, pivots, info, cand }
            }
        }
    };
}

picked_shader!(lu_tournament, a => a);
// n is a multiple of 4, so the batch's elements are too.
picked_shader!(lu_tournament_vec4, a => a.as_vec4());

/// A planned batched LU for `batch` matrices of `n × n`, recorded many times.
pub struct BatchedLu<T: Scalar> {
    ctx: Context,
    n: usize,
    batch: usize,
    factor: Factor<T>,
    solve: Kernel<lu_solve::Shader, T>,
    /// The solve's workgroup size, and whether it stages the factors in workgroup memory.
    solve_wg_size: u32,
    solve_staged: bool,
    /// The solve by columns where the column fits workgroup memory and the options allow it.
    column_solve: Option<ColumnSolve>,
}

/// The solve by columns (`COLUMN` in `lu_solve.wgsl`, a workgroup a right-hand side).
#[derive(Debug, Clone, Copy)]
struct ColumnSolve {
    wg_size: u32,
    /// The column's length in workgroup memory (`COLUMN_LEN`).
    column_len: u32,
    /// Whether the options ask for it (else the right-hand sides choose).
    asked: bool,
    /// Rows a panel ([`LuOptions::solve_panel`]; `None`: by the right-hand sides).
    panel: Option<u32>,
}

/// Panels of the solve by columns by default, where the batch's right-hand sides are fewer
/// than `SOLVE_PANEL_COLUMNS` and n passes `SOLVE_PANELS_PAST`. H200, one right-hand side
/// (benches/NOTES.md, session 67): 4096² 2.50–2.56 → 1.83–1.86 ms with panels of 256 rows
/// (128: 2.04, 512: 1.78–1.84), f64 2.98–3.08 → 2.15–2.23; 1024² the same either way (0.40
/// ms: four panels gain nothing); with each block's triangle loaded beside its dot products
/// since, 4096² 1.72 ms.
const SOLVE_PANEL_ROWS: u64 = 256;
const SOLVE_PANEL_COLUMNS: u64 = 64;
const SOLVE_PANELS_PAST: u64 = 1024;

/// The solve by columns' triangle blocks and dot-product slots (the shader's `BLOCK`, `SLOT`).
const SOLVE_BLOCK: u64 = 32;
const SOLVE_SLOT: u64 = 32;

/// The solve's kernel for a number of right-hand sides, what bounds its loops, its
/// workgroups, and in panels the update's kernel and the panel's rows.
struct SolveKernels<T: Scalar> {
    kernel: Kernel<lu_solve::Shader, T>,
    cost: SolveCost,
    workgroups: u64,
    update: Option<(Kernel<lu_solve::Shader, T>, u64)>,
}

/// One dispatch of the solve: a band (`kernel`) or a panel's update.
struct SolveStep {
    params: lu_solve::Params,
    workgroups: u64,
    update: bool,
}

/// What bounds a solve dispatch's loop iterations a lane: a part that does not depend on the
/// rows (`fixed`) and one for every `rows` rows of a band (`per_unit`).
struct SolveCost {
    fixed: u64,
    per_unit: u64,
    rows: u64,
}

impl<T: Scalar> std::fmt::Debug for BatchedLu<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BatchedLu").field("n", &self.n).field("batch", &self.batch).finish()
    }
}

impl<T: Scalar> BatchedLu<T> {
    /// Plans the factorization and the solve of `batch` matrices of `n × n`.
    pub fn new(ctx: &Context, n: usize, batch: usize, pivoting: Pivoting) -> Result<Self> {
        Self::with_options(ctx, n, batch, pivoting, &LuOptions::default())
    }

    /// [`BatchedLu::new`] with tuning knobs.
    pub fn with_options(
        ctx: &Context,
        n: usize,
        batch: usize,
        pivoting: Pivoting,
        options: &LuOptions,
    ) -> Result<Self> {
        ctx.check_element::<T>()?;
        let tile = n
            .checked_mul(n)
            .filter(|&t| t <= u32::MAX as usize)
            .ok_or_else(|| Error::InvalidArgument(format!("a matrix of {n} x {n} passes 2^32 entries")))?;
        let budget = ctx.limits().max_compute_workgroup_storage_size as u64;
        // The tile, plus the pivot word and what the compiler keeps there itself.
        let bytes = (tile as u64).saturating_mul(T::KIND.size()).saturating_add(64);
        let fits_workgroup = bytes <= budget;
        batch.checked_mul(tile).filter(|&len| len <= u32::MAX as usize).ok_or_else(|| {
            Error::InvalidArgument(format!("a batch of {batch} matrices of {n} x {n} passes 2^32 entries"))
        })?;
        // Lanes for the update of (n-1)² entries: a few each, a subgroup at least.
        let least = ctx.subgroup_size_range().map_or(32, |(_, max)| max.max(32));
        let most = ctx.limits().max_compute_invocations_per_workgroup.min(1024);
        // The solve by columns: wide workgroups for long columns (their dot products are the
        // bytes), narrow ones for short (their steps are barriers); a column length shared by
        // orders up to a power of two.
        let column_wg = (n.max(1).next_power_of_two() as u32).clamp(64, most.max(64));
        let column_len = n.max(32).next_power_of_two() as u64;
        let column_bytes = (column_len + SOLVE_BLOCK * SOLVE_BLOCK) * T::KIND.size() + 4 * column_wg as u64 + 64;
        let column_fits = column_bytes <= budget && column_wg <= most;
        if options.solve_by_columns == Some(true) && !column_fits {
            return Err(Error::LimitExceeded {
                what: format!("an LU solve by columns of order {n} in workgroup memory"),
                limit: "max_compute_workgroup_storage_size",
                requested: column_bytes,
                max: budget,
            });
        }
        if let Some(panel) = options.solve_panel.filter(|&p| p % SOLVE_BLOCK as u32 != 0) {
            return Err(Error::InvalidArgument(format!(
                "LuOptions: solve_panel {panel} is not a multiple of {SOLVE_BLOCK}"
            )));
        }
        let column_solve = (column_fits && options.solve_by_columns != Some(false)).then_some(ColumnSolve {
            wg_size: column_wg,
            column_len: column_len as u32,
            asked: options.solve_by_columns.is_some(),
            panel: options.solve_panel,
        });
        let team = n.max(1).next_power_of_two() as u32;
        let team_fits = team <= ctx.subgroup_size_range().map_or(32, |(min, _)| min.min(32));
        let algorithm = match options.algorithm {
            LuAlgorithm::Auto if team_fits && ctx.subgroups() => LuAlgorithm::Team,
            LuAlgorithm::Auto if fits_workgroup && (n < blocked_from(T::KIND.size()) || pivoting == Pivoting::None) => {
                LuAlgorithm::Workgroup
            }
            LuAlgorithm::Auto => LuAlgorithm::Blocked,
            LuAlgorithm::Workgroup if !fits_workgroup => {
                return Err(Error::LimitExceeded {
                    what: format!("an LU of a {n} x {n} matrix in workgroup memory (LuAlgorithm::Blocked takes it)"),
                    limit: "max_compute_workgroup_storage_size",
                    requested: bytes,
                    max: budget,
                })
            }
            LuAlgorithm::Blocked if pivoting == Pivoting::None => {
                return Err(Error::InvalidArgument(
                    "LuOptions: the blocked LU pivots (Pivoting::Partial or Tournament)".into(),
                ))
            }
            LuAlgorithm::Team if !team_fits => {
                return Err(Error::InvalidArgument(format!(
                    "LuOptions: a team of lanes takes matrices of up to {} rows, not {n}",
                    ctx.subgroup_size_range().map_or(32, |(min, _)| min.min(32))
                )))
            }
            chosen => chosen,
        };
        let default_wg = match algorithm {
            // One team per workgroup measured fastest on the H100 (208 µs against 232 with two
            // for 10,000 × 32²): more workgroups, no barrier shared between teams.
            LuAlgorithm::Team => least,
            // The GEMM step's 16 × 16 lanes.
            LuAlgorithm::Blocked => BLOCKED_WG,
            _ => ((n * n / 8).next_power_of_two() as u32).clamp(least, 256),
        };
        let wg_size = options.workgroup_size.unwrap_or(default_wg);
        if options.tournament_rows.is_some() && pivoting == Pivoting::None {
            return Err(Error::InvalidArgument(
                "LuOptions: tournament_rows is for the blocked LU, which pivots".into(),
            ));
        }
        if algorithm == LuAlgorithm::Blocked && wg_size != BLOCKED_WG {
            return Err(Error::InvalidArgument(format!("LuOptions: the blocked LU runs {BLOCKED_WG} lanes")));
        }
        if !wg_size.is_power_of_two() || !(least..=most).contains(&wg_size) {
            return Err(Error::InvalidArgument(format!(
                "LuOptions: workgroup_size {wg_size} is not a power of two from {least} to {most}"
            )));
        }
        let no_pivot = pivoting == Pivoting::None;
        // The solve stages the factors where they fit in workgroup memory.
        let staged_tile = if fits_workgroup { tile.max(1) as u32 } else { 1 };
        let tile = tile.max(1).min(u32::MAX as usize) as u32;
        let factor = match algorithm {
            LuAlgorithm::Blocked => {
                // The panel step in workgroup memory (where asked, or where no round of rows
                // fits): the first panel (n × 32) beside the pivot search's keys and rows (and
                // the swaps' moves: under 1 KiB).
                let staged_bytes = (n * PANEL) as u64 * T::KIND.size() + 8 * BLOCKED_WG as u64 + 1024;
                let staged = staged_bytes <= budget;
                // The triangular solve's columns a workgroup, beside L11 (its stage shares
                // `left` with the SWAP step's moved rows).
                let left = |cols: usize| (PANEL * PANEL + PANEL * cols).max(GEMM_TILE * PANEL);
                let stage_bytes = |cols: usize| left(cols) as u64 * T::KIND.size() + 8 * BLOCKED_WG as u64 + 1024;
                let trsm_cols = match options.trsm_columns {
                    Some(c @ (32 | 64 | 128)) => c as usize,
                    Some(c) => {
                        return Err(Error::InvalidArgument(format!("LuOptions: trsm_columns {c} is not 32, 64 or 128")))
                    }
                    // 32: more workgroups, each loading less before its solve (H200, session
                    // 57: 1024² 2,760 → 2,686 µs against 128, 4096² 16,898 → 16,617).
                    None => 32,
                };
                if stage_bytes(trsm_cols) > budget {
                    return Err(Error::LimitExceeded {
                        what: "the blocked LU's stage in workgroup memory".into(),
                        limit: "max_compute_workgroup_storage_size",
                        requested: stage_bytes(trsm_cols),
                        max: budget,
                    });
                }
                // The triangular solve has a pipeline of its own: its stage would cut the
                // GEMM's resident workgroups.
                let steps = lu_blocked::Overrides { panel_tile: 1, left: left(0) as u32, ..Default::default() };
                let gemm_stage = GEMM_STAGE;
                let gemm = match n % 4 {
                    0 => GemmKernel::Vec4(
                        ctx.kernel(Default::default(), lu_gemm_vec4::Overrides { gemm_stage, ..Default::default() })?,
                    ),
                    _ => GemmKernel::Elements(ctx.kernel(
                        Default::default(),
                        lu_blocked::Overrides { panel_tile: 1, left: 1, gemm_stage, ..Default::default() },
                    )?),
                };
                let trsm = lu_blocked::Overrides {
                    panel_tile: 1,
                    left: left(trsm_cols) as u32,
                    trsm_cols: trsm_cols as u32,
                    ..Default::default()
                };
                let tournament = pivoting == Pivoting::Tournament;
                let staged_panel = || {
                    ctx.kernel(
                        Default::default(),
                        lu_blocked::Overrides { panel_tile: (n * PANEL).max(1) as u32, left: 1, ..Default::default() },
                    )
                };
                let panel = if options.staged_panel {
                    if tournament || options.tournament_rows.is_some() || options.look_ahead == Some(true) {
                        return Err(Error::InvalidArgument(
                            "LuOptions: staged_panel is partial pivoting's, without tournament_rows or look_ahead"
                                .into(),
                        ));
                    }
                    if !staged {
                        return Err(Error::LimitExceeded {
                            what: format!("a blocked LU's first panel of {n} × {PANEL} in workgroup memory"),
                            limit: "max_compute_workgroup_storage_size",
                            requested: staged_bytes,
                            max: budget,
                        });
                    }
                    BlockedPanel::Staged(staged_panel()?)
                } else {
                    match PickedPanel::new(ctx, n, batch, tournament, options) {
                        Ok(picked) => BlockedPanel::Picked(picked),
                        // (An adapter whose workgroup memory holds no round of rows.)
                        Err(Error::LimitExceeded { .. })
                            if staged
                                && !tournament
                                && options.tournament_rows.is_none()
                                && options.look_ahead != Some(true) =>
                        {
                            BlockedPanel::Staged(staged_panel()?)
                        }
                        Err(e) => return Err(e),
                    }
                };
                Factor::Blocked {
                    panel,
                    steps: ctx.kernel(Default::default(), steps)?,
                    gemm,
                    trsm: ctx.kernel(Default::default(), trsm)?,
                    trsm_cols,
                }
            }
            LuAlgorithm::Team => {
                // The stage: rows of 33 elements, a slice of up to 8 rows per matrix
                // (lu_team.wgsl).
                let slice = team.min(8);
                let stage = wg_size / team * slice * 33;
                let bytes = stage as u64 * T::KIND.size();
                if bytes > budget {
                    return Err(Error::LimitExceeded {
                        what: format!("the stage of {} slices of {slice} rows of an LU by teams", wg_size / team),
                        limit: "max_compute_workgroup_storage_size",
                        requested: bytes,
                        max: budget,
                    });
                }
                let kernel = |out_of_place| {
                    ctx.kernel(
                        lu_team::Flags { out_of_place, no_pivot },
                        lu_team::Overrides { wg_size, team, stage, slice },
                    )
                };
                Factor::Team { in_place: kernel(false)?, out_of_place: kernel(true)?, team, wg_size }
            }
            _ => {
                let kernel = |out_of_place| {
                    ctx.kernel(lu_small::Flags { no_pivot, out_of_place }, lu_small::Overrides { wg_size, tile })
                };
                Factor::Workgroup { in_place: kernel(false)?, out_of_place: kernel(true)? }
            }
        };
        let solve_wg_size = 64.max(least);
        Ok(BatchedLu {
            factor,
            solve: ctx.kernel(
                lu_solve::Flags { global: !fits_workgroup, column: false, update: false },
                lu_solve::Overrides { wg_size: solve_wg_size, tile: staged_tile, ..Default::default() },
            )?,
            solve_wg_size,
            solve_staged: fits_workgroup,
            column_solve,
            ctx: ctx.clone(),
            n,
            batch,
        })
    }

    /// Matrices per batch.
    pub fn batch(&self) -> usize {
        self.batch
    }

    /// Rows and columns of each matrix.
    pub fn n(&self) -> usize {
        self.n
    }

    fn check_batch(&self, op: &'static str, what: &'static str, m: &GpuDense<T>) -> Result<()> {
        check_len(op, what, self.batch * self.n, m.rows())?;
        if m.layout() != DenseLayout::RowMajor || m.panels().len() != 1 {
            return Err(Error::InvalidArgument(format!("{op}: {what} must be row-major in one panel")));
        }
        Ok(())
    }

    /// Records the factorization of every matrix of `a` in place, with the pivots and info.
    pub fn record_factor_in_place(
        &self,
        rec: &mut Recorder<'_, '_>,
        a: &mut GpuDense<T>,
        pivots: &mut GpuVec<u32>,
        info: &mut GpuVec<u32>,
    ) -> Result<()> {
        Operands::new(rec.context(), "lu")?
            .owned("the plan", self.ctx.id())?
            .dense_output("A", a)?
            .output("pivots", pivots)?
            .output("info", info)?;
        self.check_factor_operands(a, pivots, info)?;
        let ctx = rec.context().clone();
        self.dispatch_factor(rec, false, ctx.unused::<T>()?.bind(), a, pivots, info)
    }

    /// Records the factorization of every matrix of `a` into `lu` (A is not changed), with
    /// the pivots and info: `torch.linalg.lu_factor`'s form.
    pub fn record_factor(
        &self,
        rec: &mut Recorder<'_, '_>,
        a: &GpuDense<T>,
        lu: &mut GpuDense<T>,
        pivots: &mut GpuVec<u32>,
        info: &mut GpuVec<u32>,
    ) -> Result<()> {
        Operands::new(rec.context(), "lu")?
            .owned("the plan", self.ctx.id())?
            .dense_input("A", a)?
            .dense_output("LU", lu)?
            .output("pivots", pivots)?
            .output("info", info)?;
        self.check_batch("lu", "A rows", a)?;
        check_len("lu", "A columns", self.n, a.cols())?;
        self.check_factor_operands(lu, pivots, info)?;
        self.dispatch_factor(rec, true, a.panels()[0].bind(), lu, pivots, info)
    }

    fn check_factor_operands(&self, lu: &GpuDense<T>, pivots: &GpuVec<u32>, info: &GpuVec<u32>) -> Result<()> {
        self.check_batch("lu", "LU rows", lu)?;
        check_len("lu", "LU columns", self.n, lu.cols())?;
        check_len("lu", "pivots", self.batch * self.n, pivots.len())?;
        check_len("lu", "info", self.batch, info.len())
    }

    fn dispatch_factor(
        &self,
        rec: &mut Recorder<'_, '_>,
        out_of_place: bool,
        source: Bind<'_, T>,
        lu: &GpuDense<T>,
        pivots: &GpuVec<u32>,
        info: &GpuVec<u32>,
    ) -> Result<()> {
        if self.batch == 0 || self.n == 0 {
            return Ok(());
        }
        let (n, batch) = (self.n as u32, self.batch as u32);
        let a = lu.panels()[0].bind();
        let (pivots, info) = (pivots.bind(), info.bind());
        match &self.factor {
            Factor::Workgroup { in_place, out_of_place: copying } => rec.dispatch(
                if out_of_place { copying } else { in_place },
                lu_small::Params { n, batch },
                lu_small::Bindings { source, a, pivots, info },
                self.batch as u64,
            ),
            Factor::Team { in_place, out_of_place: copying, team, wg_size } => rec.dispatch(
                if out_of_place { copying } else { in_place },
                lu_team::Params { n, batch },
                lu_team::Bindings { source, a, pivots, info },
                (self.batch as u64).div_ceil((wg_size / team) as u64),
            ),
            Factor::Blocked { .. } => {
                if out_of_place {
                    crate::ops::blas1::copy_range(rec, source, a, lu.panels()[0].byte_len())?;
                }
                let mut sink =
                    |_: &'static str, record: &mut dyn FnMut(&mut Recorder<'_, '_>) -> Result<()>| record(rec);
                self.record_blocked(&mut sink, a, pivots, info)
            }
        }
    }

    /// The blocked factorization's steps, panel by panel: the panel, the swaps, the
    /// triangular solve and the GEMM (and, after a tournament's swaps, the multipliers; after
    /// a cooperative panel, the swaps and the solve in one dispatch of strips). Each
    /// dispatch goes through `sink` with the step's name (one recorder for a run, a timed
    /// pass each for [`BatchedLu::profile_factor`]).
    fn record_blocked(
        &self,
        sink: &mut StepSink<'_>,
        a: Bind<'_, T>,
        pivots: Bind<'_, u32>,
        info: Bind<'_, u32>,
    ) -> Result<()> {
        let Factor::Blocked { panel, steps, trsm, gemm, trsm_cols } = &self.factor else {
            return Err(Error::InvalidArgument("record_blocked: not a blocked plan".into()));
        };
        let (n, batch) = (self.n, self.batch);
        let bindings = lu_blocked::Bindings { a, pivots, info };
        let blocks = n.div_ceil(PANEL);
        // Whether panel k's update is deferred: recorded beside panel k + 1's factorization
        // instead of before it, where panels k and k + 1 are each one workgroup's round (panel
        // k's round then stores its rows where its interchanges take them).
        let deferred = |k: usize| match panel {
            BlockedPanel::Picked(picked) => picked.look_ahead && k + 1 < blocks && n - k * PANEL <= picked.rows,
            BlockedPanel::Staged(_) => false,
        };
        // Whether panel k's GEMM runs beside panel k + 1's cooperative dispatch instead of
        // before it, where both are taller than a round (on the columns right of panel
        // k + 1, whose rows take their own columns' part as they load).
        let beside = |k: usize| match panel {
            BlockedPanel::Picked(picked) => {
                picked.kernels.cooperative_panel().is_some_and(|c| c.gemm_stage.is_some())
                    && n - (k + 1) * PANEL > picked.rows
            }
            BlockedPanel::Staged(_) => false,
        };
        for k in 0..blocks {
            let j0 = k * PANEL;
            let nb = PANEL.min(n - j0);
            let rest = n - j0 - nb;
            let side = rest.div_ceil(GEMM_TILE);
            let step = |step, tiles: usize| lu_blocked::Params {
                step,
                n: n as u32,
                batch: batch as u32,
                j0: j0 as u32,
                nb: nb as u32,
                tiles: tiles as u32,
                whole_rows: matches!(panel, BlockedPanel::Picked(_)) as u32,
            };
            let dispatch = |sink: &mut StepSink<'_>, kernel, number: u32, tiles: usize| match tiles {
                0 => Ok(()),
                _ => sink(STEP_NAMES[number as usize], &mut |rec| {
                    rec.dispatch(kernel, step(number, tiles), bindings, (batch * tiles) as u64)
                }),
            };
            let left = match panel {
                BlockedPanel::Staged(kernel) => {
                    dispatch(sink, kernel, 0, 1)?;
                    None
                }
                BlockedPanel::Picked(picked) => {
                    // After a deferred update: this panel with the previous one's update
                    // strips (every column block but theirs); after a GEMM left to it, with
                    // that GEMM's tiles right of this panel.
                    let (ahead, strips) = if k > 0 && deferred(k - 1) {
                        (true, blocks - 2)
                    } else if k > 0 && beside(k - 1) {
                        (true, (n - j0).div_ceil(GEMM_TILE) * rest.div_ceil(GEMM_TILE))
                    } else {
                        (false, 0)
                    };
                    let permute = deferred(k);
                    let panel = PanelOf { n, batch, j0, nb, a, pivots, info, strips, ahead, permute };
                    Some((picked.record_picks(sink, &panel)?, picked, panel))
                }
            };
            if deferred(k) {
                continue;
            }
            match left {
                Some((PicksLeave::Update, ..)) => {}
                Some((PicksLeave::SwapsAndLower, picked, panel)) => {
                    dispatch(sink, steps, 1, n.div_ceil(SWAP_COLS))?;
                    picked.record_lower(sink, &panel)?;
                    dispatch(sink, trsm, 2, rest.div_ceil(*trsm_cols))?;
                }
                Some((PicksLeave::Swaps, ..)) | None => {
                    dispatch(sink, steps, 1, n.div_ceil(SWAP_COLS))?;
                    dispatch(sink, trsm, 2, rest.div_ceil(*trsm_cols))?;
                }
            }
            let tiles = side * side;
            match gemm {
                _ if tiles == 0 || beside(k) => {}
                GemmKernel::Elements(kernel) => dispatch(sink, kernel, 3, tiles)?,
                GemmKernel::Vec4(kernel) => sink(STEP_NAMES[3], &mut |rec| {
                    let params = lu_gemm_vec4::Params {
                        n: n as u32,
                        batch: batch as u32,
                        j0: j0 as u32,
                        nb: nb as u32,
                        tiles: tiles as u32,
                    };
                    rec.dispatch(kernel, params, lu_gemm_vec4::Bindings { a: a.as_vec4() }, (batch * tiles) as u64)
                })?,
            }
        }
        Ok(())
    }

    /// GPU time of the factorization of `a` in place by step (µs, summed over its
    /// dispatches, each timed in a compute pass of its own and so with a pass's fixed cost
    /// included): for the blocked LU `swap`, `trsm`, `gemm` and its panels' steps —
    /// `rounds` (one workgroup's), `cooperative`, `finish` and `strips` or `columns` (taller
    /// panels), `lower` (a tournament's), `panel` (a panel in workgroup memory) —, `factor`
    /// for the others. Needs timestamps ([`Context::has_timestamps`]); for finding where the
    /// time goes, not for speed.
    pub fn profile_factor(&self, a: &mut GpuDense<T>, pivots: &mut GpuVec<u32>) -> Result<Vec<(String, f64)>> {
        if !self.ctx.has_timestamps() {
            return Err(Error::Unsupported("profile_factor: this adapter takes no timestamps".into()));
        }
        let mut info = self.ctx.zeros::<u32>(self.batch)?;
        Operands::new(&self.ctx, "lu")?.dense_output("A", a)?.output("pivots", pivots)?;
        self.check_factor_operands(a, pivots, &info)?;
        // Sections a batch times (two timestamps each, within a query set's 4,096): a
        // factorization with more dispatches runs in several batches, one after another.
        const SECTIONS: usize = 1024;
        let mut profiler = crate::record::Profiler::new(&self.ctx, SECTIONS)?;
        let mut sums: Vec<(String, f64)> = Vec::new();
        let add = |sums: &mut Vec<(String, f64)>, profiler: &mut crate::record::Profiler| -> Result<()> {
            for (label, micros) in profiler.read(&self.ctx)? {
                match sums.iter_mut().find(|(l, _)| *l == label) {
                    Some((_, sum)) => *sum += micros,
                    None => sums.push((label, micros)),
                }
            }
            profiler.reset();
            Ok(())
        };
        let mut batch = self.ctx.batch();
        match &self.factor {
            Factor::Blocked { .. } if self.n > 0 && self.batch > 0 => {
                let (ab, pb, ib) = (a.panels()[0].bind(), pivots.bind(), info.bind());
                let mut sink = |name: &'static str, record: &mut dyn FnMut(&mut Recorder<'_, '_>) -> Result<()>| {
                    if profiler.len() == profiler.capacity() {
                        std::mem::replace(&mut batch, self.ctx.batch()).submit()?;
                        add(&mut sums, &mut profiler)?;
                    }
                    batch.timed(&mut profiler, name, |rec| record(rec))
                };
                self.record_blocked(&mut sink, ab, pb, ib)?;
            }
            _ => batch.timed(&mut profiler, "factor", |rec| self.record_factor_in_place(rec, a, pivots, &mut info))?,
        }
        batch.submit()?;
        add(&mut sums, &mut profiler)?;
        Ok(sums)
    }

    /// The kernel in use: `team of 32 lanes` or `workgroup of 256`.
    pub fn describe(&self) -> String {
        match &self.factor {
            Factor::Workgroup { in_place, .. } => format!("workgroup of {}", in_place.workgroup_size()),
            Factor::Team { team, .. } => format!("team of {team} lanes"),
            Factor::Blocked { panel: BlockedPanel::Picked(p), .. } if p.tournament => {
                format!("blocked, panels of {PANEL} by tournaments of {} rows", p.rows)
            }
            Factor::Blocked { panel: BlockedPanel::Picked(p), .. } => {
                let tall = match p.kernels.cooperative_panel() {
                    Some(c) if c.gemm_stage.is_some() => "cooperatively beside the GEMM before",
                    Some(_) => "cooperatively",
                    None => "by columns",
                };
                format!("blocked, panels of {PANEL} with rows in registers, {} a workgroup, taller {tall}", p.rows)
            }
            Factor::Blocked { .. } => format!("blocked, panels of {PANEL} in workgroup memory"),
        }
    }

    /// Records `B ← A⁻¹·B` for every matrix with its factors from [`record_factor`](Self::record_factor):
    /// B has `batch·n` rows of `nrhs` columns (matrix b's right-hand sides in rows
    /// `b·n .. (b+1)·n`).
    pub fn record_solve(
        &self,
        rec: &mut Recorder<'_, '_>,
        lu: &GpuDense<T>,
        pivots: &GpuVec<u32>,
        b: &mut GpuDense<T>,
    ) -> Result<()> {
        Operands::new(rec.context(), "lu solve")?
            .owned("the plan", self.ctx.id())?
            .dense_input("the factors", lu)?
            .input("pivots", pivots)?
            .dense_output("B", b)?;
        self.check_batch("lu solve", "factor rows", lu)?;
        check_len("lu solve", "factor columns", self.n, lu.cols())?;
        check_len("lu solve", "pivots", self.batch * self.n, pivots.len())?;
        self.check_batch("lu solve", "B rows", b)?;
        if self.batch == 0 || self.n == 0 || b.cols() == 0 {
            return Ok(());
        }
        let bindings = lu_solve::Bindings { lu: lu.panels()[0].bind(), pivots: pivots.bind(), b: b.panels()[0].bind() };
        let nrhs = b.cols();
        let solve = self.solve_kernel(nrhs)?;
        for step in self.solve_steps(nrhs, &solve)? {
            match (&solve.update, step.update) {
                (Some((update, _)), true) => rec.dispatch(update, step.params, bindings, step.workgroups)?,
                _ => rec.dispatch(&solve.kernel, step.params, bindings, step.workgroups)?,
            }
        }
        Ok(())
    }

    /// The solve's kernels for `nrhs` right-hand sides, what bounds their loops, and the
    /// workgroups: by columns past n = 64 or for one right-hand side, else by lanes (or as
    /// the options choose); by columns in panels where `SOLVE_PANEL_ROWS` says. On the H200
    /// (benches/NOTES.md, session 66), 10,000 matrices of 32² with 8 right-hand sides took
    /// 1,194 µs by columns (a workgroup's steps are barriers) where one took 165 by columns
    /// and 355 by lanes; 4096² took 3.1 ms by columns against 655 ms by lanes.
    fn solve_kernel(&self, nrhs: usize) -> Result<SolveKernels<T>> {
        let by_columns = self.column_solve.filter(|c| c.asked || nrhs == 1 || self.n > 64);
        let Some(ColumnSolve { wg_size, column_len, panel, .. }) = by_columns else {
            return Ok(SolveKernels {
                kernel: self.solve.clone(),
                cost: self.lane_solve_cost(nrhs),
                workgroups: self.batch as u64,
                update: None,
            });
        };
        let overrides = lu_solve::Overrides { wg_size, column_len, ..Default::default() };
        let columns = self.batch as u64 * nrhs as u64;
        let n = self.n as u64;
        let panel = match panel {
            Some(rows) => rows as u64,
            None if columns < SOLVE_PANEL_COLUMNS && n > SOLVE_PANELS_PAST => SOLVE_PANEL_ROWS,
            None => 0,
        };
        let update = match panel {
            0 => None,
            rows => {
                Some((self.ctx.kernel(lu_solve::Flags { global: false, column: true, update: true }, overrides)?, rows))
            }
        };
        Ok(SolveKernels {
            kernel: self.ctx.kernel(lu_solve::Flags { global: false, column: true, update: false }, overrides)?,
            cost: self.column_solve_cost(wg_size, update.as_ref().map_or(n, |u| u.1)),
            workgroups: columns,
            update,
        })
    }

    /// The loop iterations of a lane of the solve by lanes: the staging copy, then for each
    /// of its columns the swaps and a band's rows, each a walk of at most n entries (and
    /// each loop's exit).
    fn lane_solve_cost(&self, nrhs: usize) -> SolveCost {
        let (n, wg) = (self.n as u64, self.solve_wg_size as u64);
        let copy = if self.solve_staged { (n * n).div_ceil(wg) + 1 } else { 0 };
        let columns = (nrhs as u64).div_ceil(wg);
        SolveCost { fixed: copy + columns * (n + 4), per_unit: columns * (n + 1), rows: 1 }
    }

    /// The loop iterations of a lane of the solve by columns: loading and storing the
    /// column, the swaps (one lane walks them all), and for each block of rows its dot
    /// products (eight entries an iteration, then up to seven one at a time, and the loops'
    /// exits), their sums, the staged triangle and its steps.
    /// `dots`: the most columns a dot product takes (n, or in panels a panel's rows).
    fn column_solve_cost(&self, wg: u32, dots: u64) -> SolveCost {
        let (n, wg) = (self.n as u64, wg as u64);
        let fixed = 3 * n.div_ceil(wg) + n + 8;
        let rows_a_lane = SOLVE_BLOCK.div_ceil(wg / SOLVE_SLOT);
        let per_block = rows_a_lane * (dots.div_ceil(8 * SOLVE_SLOT) + 11)
            + SOLVE_SLOT
            + (SOLVE_BLOCK * SOLVE_BLOCK).div_ceil(wg)
            + SOLVE_BLOCK
            + 8;
        SolveCost { fixed, per_unit: per_block, rows: SOLVE_BLOCK }
    }

    /// The solve's dispatches: one, or bands of rows (the swaps with the first forward band,
    /// the forward bands upwards, the backward bands downwards): panels where the plan takes
    /// them, each but the last followed by its update of the rows left, and where the adapter
    /// caps an invocation's loop iterations, bands small enough.
    fn solve_steps(&self, nrhs: usize, solve: &SolveKernels<T>) -> Result<Vec<SolveStep>> {
        let n = self.n as u64;
        let params = |forward: (u64, u64), backward: (u64, u64), panel: (u64, u64)| lu_solve::Params {
            n: n as u32,
            batch: self.batch as u32,
            nrhs: nrhs as u32,
            swaps: (forward.0 == 0 && forward.1 > 0) as u32,
            forward_begin: forward.0 as u32,
            forward_end: forward.1 as u32,
            backward_begin: backward.0 as u32,
            backward_end: backward.1 as u32,
            panel_begin: panel.0 as u32,
            panel_end: panel.1 as u32,
            update_begin: 0,
            update_end: 0,
        };
        let band_step = |forward, backward, panel| SolveStep {
            params: params(forward, backward, panel),
            workgroups: solve.workgroups,
            update: false,
        };
        // Rows [begin, end) less the panel's part.
        let update_step = |(begin, end): (u64, u64), panel| SolveStep {
            params: lu_solve::Params {
                update_begin: begin as u32,
                update_end: end as u32,
                ..params((0, 0), (0, 0), panel)
            },
            workgroups: solve.workgroups * (end - begin).div_ceil(SOLVE_BLOCK),
            update: true,
        };
        let panels = solve.update.as_ref().map(|(_, rows)| *rows);
        let what = || format!("an LU solve of order {n} with {nrhs} right-hand sides");
        let mut band = panels.unwrap_or(n);
        if let Some(limit) = self.ctx.loop_iteration_limit() {
            let SolveCost { fixed, per_unit, rows } = solve.cost;
            self.ctx.check_loop_iterations(what, fixed + per_unit)?;
            band = band.min((limit as u64).saturating_sub(fixed) / per_unit * rows);
        }
        if band >= n {
            return Ok(vec![band_step((0, n), (0, n), (0, n))]);
        }
        if let Some((update, _)) = &solve.update {
            // An update's lane: staging the panel, then its rows' dot products as a block's.
            let wg = update.workgroup_size() as u64;
            let cost = band.div_ceil(wg) + SOLVE_BLOCK.div_ceil(wg / SOLVE_SLOT) * (band.div_ceil(8 * SOLVE_SLOT) + 11);
            self.ctx.check_loop_iterations(
                || format!("an LU solve's update of panels of {band} rows"),
                cost + SOLVE_SLOT + 8,
            )?;
        }
        let mut steps = Vec::new();
        for first in (0..n).step_by(band as usize) {
            let end = (first + band).min(n);
            let panel = (if panels.is_some() { first } else { 0 }, end);
            steps.push(band_step((first, end), (0, 0), (panel.0, n)));
            if panels.is_some() && end < n {
                steps.push(update_step((end, n), panel));
            }
        }
        for last in (1..=n).rev().step_by(band as usize) {
            let first = last.saturating_sub(band);
            steps.push(band_step((0, 0), (first, last), (0, if panels.is_some() { last } else { n })));
            if panels.is_some() && first > 0 {
                steps.push(update_step((0, first), (first, last)));
            }
        }
        Ok(steps)
    }

    /// Extra device bytes the plan holds (the tournament's picks).
    pub fn extra_bytes(&self) -> u64 {
        match &self.factor {
            Factor::Blocked { panel: BlockedPanel::Picked(p), .. } => p.picks.byte_len(),
            _ => 0,
        }
    }

    /// Factors `a` in place, the pivots into `pivots`, and waits: returns every matrix's
    /// info.
    pub fn factor(&self, a: &mut GpuDense<T>, pivots: &mut GpuVec<u32>) -> Result<Vec<u32>> {
        let mut info = self.ctx.zeros::<u32>(self.batch)?;
        let mut batch = self.ctx.batch();
        self.record_factor_in_place(&mut batch.recorder(), a, pivots, &mut info)?;
        batch.submit()?;
        info.read_blocking()
    }

    /// Records and submits the solve; returns without waiting for the GPU.
    pub fn solve(&self, lu: &GpuDense<T>, pivots: &GpuVec<u32>, b: &mut GpuDense<T>) -> Result<()> {
        let mut batch = self.ctx.batch();
        self.record_solve(&mut batch.recorder(), lu, pivots, b)?;
        batch.submit()
    }
}

impl<T: Scalar> PickedPanel<T> {
    /// Records the picking of a panel's pivot rows; returns what is left before the panel's
    /// GEMM. Panels of up to `rows` rows: one workgroup's round, exact partial pivoting, which
    /// writes every row. Taller: a tournament's rounds until one workgroup is left (it
    /// writes the pivot rows' block factored and the interchanges; the rows below still need
    /// their multipliers), partial pivoting's dispatch per column, which writes every row, or
    /// its cooperative panel, after which its strips also swap every row and solve U12.
    fn record_picks(&self, sink: &mut StepSink<'_>, p: &PanelOf<'_, T>) -> Result<PicksLeave> {
        match &self.kernels {
            PickedKernels::Elements(kernels) => self.record_picks_with(kernels, sink, p),
            PickedKernels::Vec4(kernels) => self.record_picks_with(kernels, sink, p),
        }
    }

    fn record_picks_with<S: PickedShader>(
        &self,
        kernels: &PanelKernels<S, T>,
        sink: &mut StepSink<'_>,
        p: &PanelOf<'_, T>,
    ) -> Result<PicksLeave> {
        let rows = p.n - p.j0;
        let bindings = || self.bindings::<S>(p);
        if !self.tournament && rows > self.rows {
            let tiles = rows.div_ceil(self.column_rows);
            let workgroups = (p.batch * tiles) as u64;
            let update = p.strips > 0 || p.ahead;
            match kernels.tall.as_deref() {
                Some(TallKernel::Cooperative { exchange, .. }) if update && exchange.gemm_stage.is_none() => {
                    return Err(Error::Validation("lu: a GEMM beside a panel whose pipeline has no room".into()))
                }
                Some(TallKernel::ByColumns(_)) if update => {
                    return Err(Error::Validation("lu: a look-ahead beside a panel stepped by columns".into()))
                }
                _ if p.permute => {
                    return Err(Error::Validation("lu: a deferred update of a panel taller than a round".into()))
                }
                Some(TallKernel::Cooperative { panel, finish, strips, exchange }) => {
                    let params = |step, polls| {
                        self.params::<S>(p, step, tiles, [exchange.slots as u32, polls, exchange.record as u32])
                    };
                    // The panel's workgroups, then the previous panel's GEMM tiles.
                    let workgroups = (p.batch * (tiles + p.strips)) as u64;
                    sink("cooperative", &mut |rec| {
                        rec.dispatch(panel, params(3, exchange.polls), bindings(), workgroups)
                    })?;
                    sink("finish", &mut |rec| rec.dispatch(finish, params(4, 0), bindings(), p.batch as u64))?;
                    // The interchanges on every column block but the panel's (FINISH moved
                    // its rows), and U12 right of it: SWAP and TRSM in one dispatch, which
                    // also resets the panel's candidate slots.
                    let blocks = p.n.div_ceil(PANEL) - 1;
                    let alone = PanelOf { strips: 0, ahead: false, ..*p };
                    let slot_words = (p.nb * tiles * exchange.slot_words) as u32;
                    let params = || self.params::<S>(&alone, 5, blocks, [exchange.slots as u32, slot_words, 0]);
                    let workgroups = (p.batch * blocks) as u64;
                    sink("strips", &mut |rec| rec.dispatch(strips, params(), bindings(), workgroups))?;
                    return Ok(PicksLeave::Update);
                }
                Some(TallKernel::ByColumns(kernel)) => {
                    for k in 0..=p.nb as u32 {
                        let params = || self.params::<S>(p, 2, tiles, [0, k, 0]);
                        sink("columns", &mut |rec| rec.dispatch(kernel, params(), bindings(), workgroups))?;
                    }
                }
                None => return Err(Error::Validation("lu: a tall panel without its pipeline".into())),
            }
            return Ok(PicksLeave::Swaps);
        }
        let leaves = rows.div_ceil(self.rows);
        if leaves == 1 {
            // One round, by the narrowest pipeline that holds the rows.
            let narrowest = kernels.round(self.round_lanes(rows))?;
            let params = || self.params::<S>(p, 0, 1, [0; 3]);
            let workgroups = (p.batch * (1 + p.strips)) as u64;
            sink("rounds", &mut |rec| rec.dispatch(narrowest, params(), bindings(), workgroups))?;
            return Ok(PicksLeave::Swaps);
        }
        if p.strips > 0 || p.ahead || p.permute {
            return Err(Error::Validation("lu: a look-ahead beside a tournament's rounds".into()));
        }
        let half = (self.stride / 2) as u32;
        // The leaves read rows j0.. (count 0); each round then reads the last one's picks.
        let (mut groups, mut src, mut count, mut dst) = (leaves, 0, 0, 0);
        loop {
            let params = || self.params::<S>(p, 0, groups, [src, count, dst]);
            let workgroups = (p.batch * groups) as u64;
            let widest = kernels.round(self.rows)?;
            sink("rounds", &mut |rec| rec.dispatch(widest, params(), bindings(), workgroups))?;
            if groups == 1 {
                return Ok(PicksLeave::SwapsAndLower);
            }
            count = (groups * p.nb) as u32;
            (src, dst) = (dst, half - dst);
            groups = (count as usize).div_ceil(self.rows);
        }
    }

    fn round_lanes(&self, rows: usize) -> usize {
        round_lanes(rows, self.least, self.round_grain)
    }

    /// Records the multipliers of the rows below a panel's pivot rows (after the swaps).
    fn record_lower(&self, sink: &mut StepSink<'_>, p: &PanelOf<'_, T>) -> Result<()> {
        match &self.kernels {
            PickedKernels::Elements(kernels) => self.record_lower_with(kernels, sink, p),
            PickedKernels::Vec4(kernels) => self.record_lower_with(kernels, sink, p),
        }
    }

    fn record_lower_with<S: PickedShader>(
        &self,
        kernels: &PanelKernels<S, T>,
        sink: &mut StepSink<'_>,
        p: &PanelOf<'_, T>,
    ) -> Result<()> {
        let tiles = (p.n - p.j0 - p.nb).div_ceil(LOWER_ROWS);
        if tiles == 0 {
            return Ok(());
        }
        let params = || self.params::<S>(p, 1, tiles, [0; 3]);
        let workgroups = (p.batch * tiles) as u64;
        sink("lower", &mut |rec| rec.dispatch(&kernels.lower, params(), self.bindings::<S>(p), workgroups))
    }

    fn params<S: PickedShader>(
        &self,
        p: &PanelOf<'_, T>,
        step: u32,
        tiles: usize,
        [src, count, dst]: [u32; 3],
    ) -> S::Params<T> {
        S::params::<T>(PickedParams {
            step,
            n: p.n as u32,
            batch: p.batch as u32,
            j0: p.j0 as u32,
            nb: p.nb as u32,
            tiles: tiles as u32,
            src,
            count,
            dst,
            stride: self.stride as u32,
            strips: p.strips as u32,
            ahead: p.ahead as u32,
            permute: p.permute as u32,
        })
    }

    fn bindings<'a, S: PickedShader>(&'a self, p: &PanelOf<'a, T>) -> S::Bindings<'a, T> {
        S::bindings(p.a, [p.pivots, p.info, self.picks.bind()])
    }
}

/// What a panel's picks leave before its GEMM.
enum PicksLeave {
    /// The swaps and the triangular solve.
    Swaps,
    /// The swaps, the multipliers of the rows below the pivot rows, and the triangular solve.
    SwapsAndLower,
    /// Nothing.
    Update,
}

/// One panel of a blocked LU: the batch's shape, the panel's first column and width, the
/// factorization's buffers, and the look-ahead strips a matrix its factorization's dispatch
/// also runs (the previous panel's update; 0 for none).
#[derive(Clone, Copy)]
struct PanelOf<'a, T: Scalar> {
    n: usize,
    batch: usize,
    j0: usize,
    nb: usize,
    a: Bind<'a, T>,
    pivots: Bind<'a, u32>,
    info: Bind<'a, u32>,
    strips: usize,
    /// Whether the panel's rows take the previous panel's update as they are loaded.
    ahead: bool,
    /// Whether the panel's own update is deferred: its round stores each row where the
    /// panel's interchanges take it.
    permute: bool,
}

/// The solve in bands of rows, as a capped adapter runs it, against the solve in one
/// dispatch: the same bits, by columns and by lanes (`LOOP_LIMIT_FOR_TESTS` cuts it here on
/// any adapter).
#[cfg(test)]
mod tests {
    use super::*;
    use crate::context::LOOP_LIMIT_FOR_TESTS;
    use crate::generate::random_vector;
    use crate::{ContextOptions, DenseMatrix};

    /// `Auto` solves in panels of 256 rows where the batch's right-hand sides leave most of a
    /// large GPU idle and n passes 1024; the options fix them or turn them off.
    #[test]
    fn auto_solves_large_orders_with_few_right_hand_sides_in_panels() {
        let ctx = Context::new_blocking(ContextOptions::from_env().unwrap()).unwrap();
        let panel_rows = |n: usize, batch: usize, nrhs: usize, panel: Option<u32>| {
            let options = LuOptions { solve_panel: panel, ..Default::default() };
            let plan = BatchedLu::<f32>::with_options(&ctx, n, batch, Pivoting::Partial, &options).unwrap();
            plan.solve_kernel(nrhs).unwrap().update.map(|(_, rows)| rows)
        };
        assert_eq!(panel_rows(1100, 1, 1, None), Some(256));
        assert_eq!(panel_rows(1100, 2, 31, None), Some(256));
        assert_eq!(panel_rows(1100, 2, 32, None), None, "64 columns fill the GPU");
        assert_eq!(panel_rows(1024, 1, 1, None), None, "four panels or fewer");
        assert_eq!(panel_rows(512, 1, 1, Some(64)), Some(64));
        assert_eq!(panel_rows(1100, 1, 1, Some(0)), None);
        // Not by columns: no panels.
        let lanes = LuOptions { solve_by_columns: Some(false), ..Default::default() };
        let plan = BatchedLu::<f32>::with_options(&ctx, 1100, 1, Pivoting::Partial, &lanes).unwrap();
        assert!(plan.solve_kernel(1).unwrap().update.is_none());
    }

    #[test]
    fn a_solve_in_bands_gives_the_bits_of_one() {
        let ctx = Context::new_blocking(ContextOptions::from_env().unwrap()).unwrap();
        let (n, nrhs) = (300, 2);
        // Random: partial pivoting swaps rows, which only the first band applies.
        let a = random_vector(n * n, 7);
        let b0 = random_vector(n * nrhs, 8);
        // (by columns, the limit: a few bands each way)
        for (by_columns, limit) in [(true, 600), (false, 2500)] {
            let options = LuOptions { solve_by_columns: Some(by_columns), ..Default::default() };
            let plan = BatchedLu::<f32>::with_options(&ctx, n, 1, Pivoting::Partial, &options).unwrap();
            let mut lu =
                GpuDense::upload(&ctx, &DenseMatrix::try_new(n, n, a.clone()).unwrap(), DenseLayout::RowMajor).unwrap();
            let mut pivots = ctx.zeros::<u32>(n).unwrap();
            assert_eq!(plan.factor(&mut lu, &mut pivots).unwrap(), vec![0]);
            let solve = |limit: Option<u32>| {
                let rhs = DenseMatrix::try_new(n, nrhs, b0.clone()).unwrap();
                let mut b = GpuDense::upload(&ctx, &rhs, DenseLayout::RowMajor).unwrap();
                LOOP_LIMIT_FOR_TESTS.set(limit);
                let steps = plan.solve_kernel(nrhs).and_then(|s| plan.solve_steps(nrhs, &s)).map(|s| s.len());
                let done = plan.solve(&lu, &pivots, &mut b);
                LOOP_LIMIT_FOR_TESTS.set(None);
                done.unwrap();
                (steps.unwrap(), b.read_blocking().unwrap().into_data())
            };
            let (whole_steps, whole) = solve(None);
            let (band_steps, bands) = solve(Some(limit));
            assert!(band_steps >= 8 && band_steps > whole_steps, "by columns {by_columns}: {band_steps} bands");
            let bits = |v: &[f32]| v.iter().map(|e| e.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&whole), bits(&bands), "by columns {by_columns}");
        }
    }
}
