//! Batched LU of bitmap matrices (seed 004), L and U returned as bitmaps with their fill.
//!
//! Matrices of up to 32 rows (a flag word a row) are factored by `shaders/bitmap_lu.wgsl`:
//! a team of lanes per matrix reads it from the bitmap (a row a lane), eliminates with the
//! batched LU engine's team elimination (`shaders/shared/lu_team_factor.wgsl`: the seed's,
//! which skips updates where `l_ik` or `u_kj` is zero, or partial pivoting) and writes the
//! factors' bitmaps itself. It runs twice around a scan of the factors' entry counts, which
//! places every row's entries. Without pivoting the factors' pattern follows from A's alone
//! (the fill), so the first run computes it from the flags with each matrix's counts, and
//! the second factors and writes every value at its place; with partial pivoting the first
//! run factors, counts each row and keeps the factored batch in a dense scratch, the second
//! reads it back and writes the factors. Larger matrices (or adapters that bind fewer than
//! 15 storage buffers to a kernel) are densified, factored by [`BatchedLu`] and converted
//! back (without pivoting, into the pattern computed from A's flags by
//! `shaders/bitmap_lu_pattern.wgsl`).

use super::convert::{dense_panel, record_from_dense, DensePart, Part};
use super::StructureSteps;
use crate::analysis::scan::Scan;
use crate::context::Context;
use crate::element::Scalar;
use crate::gpu::GpuVec;
use crate::kernel::shaders::{bitmap_lu, bitmap_lu_pattern};
use crate::kernel::Kernel;
use crate::matrix::{DenseLayout, GpuBitmap, GpuDense};
use crate::ops::common::{check_len, Operands};
use crate::ops::{BatchedLu, Pivoting};
use crate::record::Recorder;
use crate::{Error, Result};

/// A planned batched LU of `batch` bitmap matrices of `n × n`, stacked by rows in one
/// [`GpuBitmap`] of `batch·n` rows and `n` columns: `P·A = L·U` per matrix, with
/// - [`l`](Self::l): unit-lower L, its strictly lower part (the diagonal's ones implied, not
///   stored);
/// - [`u`](Self::u): U, on and above the diagonal;
/// - which entries the factors store: without pivoting, the pattern of seed 004's
///   elimination, which does not depend on the values: A's entries and their fill (`(i, j)`
///   is fill when some `k < min(i, j)` has `l_ik` and `u_kj` in the pattern), an entry that
///   cancels to exactly zero staying stored, as in `A ± B` and `A·B`; with partial pivoting,
///   where the rows that meet depend on the values, the entries that are not exactly zero;
/// - per matrix an `info`: 0, or 1 + the first column whose pivot was exactly zero (never
///   divided by; the factorization goes on, as LAPACK's does).
///
/// The factors are outputs of the plan, with room for every entry of their triangles, so
/// that a factorization records into a batch without waiting ([`record`](Self::record));
/// [`finish`](Self::finish) then reads their entry counts and the infos.
pub struct BitmapLu<T: Scalar> {
    ctx: Context,
    n: usize,
    batch: usize,
    engine: Engine<T>,
    pivots: GpuVec<u32>,
    info: GpuVec<u32>,
    l: GpuBitmap<T>,
    u: GpuBitmap<T>,
}

/// Storage buffers `bitmap_lu.wgsl` binds (A's three arrays, four of each factor, pivots,
/// infos, the scratch, the matrices' starts); adapters allowing fewer a stage take the dense
/// route.
const FUSED_BINDINGS: u32 = 15;

enum Engine<T: Scalar> {
    /// `bitmap_lu.wgsl` (n ≤ 32): counts, their scans, then the factors.
    Fused(Box<Fused<T>>),
    /// Densify, [`BatchedLu`], and the two from-dense conversions.
    Dense(Box<Densified<T>>),
}

struct Fused<T: Scalar> {
    count: Kernel<bitmap_lu::Shader, T>,
    store: Kernel<bitmap_lu::Shader, T>,
    counts: Counts,
    /// With partial pivoting, the factored batch between the two runs, dense (one element
    /// without pivoting, which keeps nothing between them).
    scratch: GpuVec<T>,
    /// Lanes a matrix, and a workgroup.
    team: u32,
    wg_size: u32,
    subgroups: bool,
}

/// Where the fused kernel's first run leaves the factors' entry counts, and their scans.
enum Counts {
    /// Without pivoting: the first run's workgroups' (of `group_matrices` matrices each)
    /// counts of L, then of U, scanned; the totals of L and U, written by the second run; each
    /// matrix's counts of L, then of U, before it in its workgroup (`bitmap_lu.wgsl`'s
    /// `count_pattern`).
    Matrices { starts: GpuVec<u32>, scan: Scan, scan_total: GpuVec<u32>, group_matrices: u32 },
    /// With partial pivoting: each row's, in L's and U's rank directories (scanned there),
    /// with their totals.
    Rows { scans: [Scan; 2], totals: [GpuVec<u32>; 2] },
}

impl Counts {
    /// Without pivoting, the first run's workgroups for a batch of `batch` matrices.
    fn groups(&self, batch: usize) -> usize {
        match self {
            Counts::Matrices { group_matrices, .. } => batch.div_ceil(*group_matrices as usize),
            Counts::Rows { .. } => 0,
        }
    }
}

struct Densified<T: Scalar> {
    lu: BatchedLu<T>,
    /// Without pivoting, the factors' pattern from A's flags (`bitmap_lu_pattern.wgsl`);
    /// with pivoting they keep the entries that are not zero.
    pattern: Option<Kernel<bitmap_lu_pattern::Shader>>,
    dense: GpuDense<T>,
    steps: [StructureSteps; 2],
    /// Bound by the densify in place of the entry arrays it does not write.
    no_entries: [GpuVec<u32>; 2],
}

impl<T: Scalar> Fused<T> {
    /// The fused kernels for n ≤ 32 where the adapter binds enough buffers. A team is the
    /// next power of two ≥ n lanes; with subgroups at least that wide it exchanges by
    /// shuffles, else through workgroup memory. A workgroup holds one team of 32 lanes or
    /// more (the engine's team LU measured fastest so on the H100), or several smaller.
    /// `None` (the dense route) where the adapter binds too few buffers or the workgroup
    /// does not fit its limits.
    fn new(ctx: &Context, n: usize, batch: usize, pivoting: Pivoting) -> Result<Option<Self>> {
        // (The batch is not rows / n: with n = 0 there are matrices but no rows.)
        let rows = n * batch;
        let limits = ctx.limits();
        if n > 32 || limits.max_storage_buffers_per_shader_stage < FUSED_BINDINGS {
            return Ok(None);
        }
        let team = n.max(1).next_power_of_two() as u32;
        let (subgroups, wg_size) = match ctx.subgroup_size_range() {
            Some((min, max)) if ctx.subgroups() && team <= min => (true, max.max(32)),
            _ => (false, team.max(32)),
        };
        // The stage (a slice of rows of 33 a team: shared/lu_team_factor.wgsl), and without
        // subgroups the exchange of a value and an index a lane.
        let size = T::KIND.size();
        let slice = team.min(8);
        let stage_len = wg_size / team * slice * 33;
        let stage = stage_len as u64 * size + if subgroups { 0 } else { wg_size as u64 * (size + 4) };
        if wg_size > limits.max_compute_invocations_per_workgroup
            || stage > limits.max_compute_workgroup_storage_size as u64
        {
            return Ok(None);
        }
        // With partial pivoting the scratch holds the whole batch densely: past one binding,
        // the dense route's batch would not bind either.
        let no_pivot = pivoting == Pivoting::None;
        let scratch_len = if no_pivot { 1 } else { rows * n };
        let scratch = (scratch_len as u64).saturating_mul(size);
        if scratch > limits.max_storage_buffer_binding_size {
            return Err(Error::LimitExceeded {
                what: format!("the dense scratch of a bitmap LU of {batch} matrices of {n} x {n}"),
                limit: "max_storage_buffer_binding_size",
                requested: scratch,
                max: limits.max_storage_buffer_binding_size,
            });
        }
        let overrides = bitmap_lu::Overrides { wg_size, team, stage: stage_len, slice, items: 1 };
        let kernel = |count, overrides| ctx.kernel_in_mode(subgroups, bitmap_lu::Flags { count, no_pivot }, overrides);
        // Without pivoting the first run (the pattern) scans its rows' counts in workgroups
        // of up to 1,024 lanes, so that the host scans few of them (one dispatch; 1,024 lanes
        // measured 131 µs for the whole LU of 10,000 × 32² on the H200, 32 to 256 lanes
        // 136–138); its stage is unused. A workgroup's row counts (at most 32 a row) are
        // summed in 16 bits.
        let exchange = if subgroups { 0 } else { size + 4 };
        let mut count_wg = limits.max_compute_invocations_per_workgroup.min(1024).max(wg_size);
        while count_wg > wg_size
            && count_wg as u64 * (8 + exchange) + size > limits.max_compute_workgroup_storage_size as u64
        {
            count_wg /= 2;
        }
        let count = match no_pivot {
            true => kernel(true, bitmap_lu::Overrides { wg_size: count_wg, stage: 1, ..overrides })?,
            false => kernel(true, overrides)?,
        };
        let group_matrices = count_wg / team;
        let groups = batch.div_ceil(group_matrices as usize);
        Ok(Some(Fused {
            scratch: ctx.zeros(scratch_len)?,
            count,
            store: kernel(false, overrides)?,
            counts: match no_pivot {
                true => Counts::Matrices {
                    starts: ctx.zeros(2 * groups + 2 + 2 * batch)?,
                    scan: Scan::new(ctx, 2 * groups)?,
                    scan_total: ctx.zeros(1)?,
                    group_matrices,
                },
                false => Counts::Rows {
                    scans: [Scan::new(ctx, rows)?, Scan::new(ctx, rows)?],
                    totals: [ctx.zeros(1)?, ctx.zeros(1)?],
                },
            },
            team,
            wg_size,
            subgroups,
        }))
    }
}

/// The most loop iterations a lane of `bitmap_lu_pattern.wgsl` (64 lanes a matrix) runs for
/// order `n`: the copies in and out, and for each step k its rows below k, each a walk of the
/// words from k's on.
fn pattern_iterations(n: u64) -> u64 {
    let (lanes, words) = (64, n.div_ceil(32));
    let copies = 2 * ((n * words).div_ceil(lanes) + 1);
    copies + (0..n).map(|k| 1 + ((n - k - 1).div_ceil(lanes) + 1) * (words - k / 32 + 1)).sum::<u64>()
}

impl<T: Scalar> BitmapLu<T> {
    /// Plans the factorization: `Pivoting::None` is seed 004's elimination (the factors'
    /// pattern is A's with its fill), `Pivoting::Partial` LAPACK's `getrf`,
    /// `Pivoting::Tournament` the blocked LU's tournament for large n.
    pub fn new(ctx: &Context, n: usize, batch: usize, pivoting: Pivoting) -> Result<Self> {
        // Every entry of the batch, dense, is indexed in u32.
        let rows = n
            .checked_mul(batch)
            .filter(|rows| rows.checked_mul(n).is_some_and(|entries| entries <= u32::MAX as usize))
            .ok_or_else(|| {
                Error::InvalidArgument(format!("a batch of {batch} matrices of {n} x {n} passes 2^32 entries"))
            })?;
        let engine = match Fused::new(ctx, n, batch, pivoting)? {
            Some(fused) => Engine::Fused(Box::new(fused)),
            None => {
                let dense = GpuDense::zeros(ctx, rows, n, DenseLayout::RowMajor)?;
                dense_panel(ctx, &dense)?;
                let pattern = match pivoting {
                    Pivoting::None => {
                        let what = || format!("the pattern of a bitmap LU of order {n}");
                        ctx.check_loop_iterations(what, pattern_iterations(n as u64))?;
                        Some(ctx.plain_kernel(Default::default(), Default::default())?)
                    }
                    _ => None,
                };
                Engine::Dense(Box::new(Densified {
                    lu: BatchedLu::new(ctx, n, batch, pivoting)?,
                    pattern,
                    dense,
                    steps: [StructureSteps::new(ctx, rows, n)?, StructureSteps::new(ctx, rows, n)?],
                    no_entries: [ctx.zeros(1)?, ctx.zeros(1)?],
                }))
            }
        };
        Ok(BitmapLu {
            ctx: ctx.clone(),
            n,
            batch,
            engine,
            pivots: ctx.zeros(rows)?,
            info: ctx.zeros(batch)?,
            l: GpuBitmap::allocate(ctx, rows, n, batch * n * n.saturating_sub(1) / 2)?,
            u: GpuBitmap::allocate(ctx, rows, n, batch * n * (n + 1) / 2)?,
        })
    }

    /// Device bytes the plan holds beyond its input and its factors: the pivots, the infos,
    /// on the fused route the dense scratch (partial pivoting) and the counts (not their
    /// scans' block sums, 1/1024 of them), on the dense route the dense batch and the dense engine's own
    /// ([`BatchedLu::extra_bytes`]).
    pub fn extra_bytes(&self) -> u64 {
        let engine = match &self.engine {
            Engine::Fused(f) => {
                let counts = match &f.counts {
                    Counts::Matrices { starts, scan_total, .. } => starts.byte_len() + scan_total.byte_len(),
                    Counts::Rows { totals, .. } => totals.iter().map(|t| t.byte_len()).sum(),
                };
                f.scratch.byte_len() + counts
            }
            Engine::Dense(d) => d.dense.byte_len() + d.lu.extra_bytes(),
        };
        self.pivots.byte_len() + self.info.byte_len() + engine
    }

    /// How it factors: `fused, team of 32 lanes` (`shaders/bitmap_lu.wgsl`; `, no subgroups`
    /// where the team exchanges through workgroup memory), or `dense, ` and the dense
    /// engine's (see [`BatchedLu::describe`]).
    pub fn describe(&self) -> String {
        match &self.engine {
            Engine::Fused(f) if f.subgroups => format!("fused, team of {} lanes", f.team),
            Engine::Fused(f) => format!("fused, team of {} lanes, no subgroups", f.team),
            Engine::Dense(d) => format!("dense, {}", d.lu.describe()),
        }
    }

    /// Records the factorization of `a` into [`l`](Self::l), [`u`](Self::u) and the pivots.
    pub fn record(&mut self, rec: &mut Recorder<'_, '_>, a: &GpuBitmap<T>) -> Result<()> {
        Operands::new(rec.context(), "bitmap lu")?.owned("the plan", self.ctx.id())?.owned("A", a.device_id())?;
        check_len("bitmap lu", "A rows", self.n * self.batch, a.rows())?;
        check_len("bitmap lu", "A columns", self.n, a.cols())?;
        match &mut self.engine {
            Engine::Fused(f) => {
                let group_matrices = match &f.counts {
                    Counts::Matrices { group_matrices, .. } => *group_matrices,
                    Counts::Rows { .. } => 1,
                };
                let params = bitmap_lu::Params { n: self.n as u32, batch: self.batch as u32, group_matrices };
                let workgroups = (self.batch as u64).div_ceil((f.wg_size / f.team) as u64);
                let (l, u) = (&self.l, &self.u);
                let bindings = || bitmap_lu::Bindings {
                    a_offsets: a.row_offsets().bind(),
                    a_flags: a.flags().bind(),
                    a_values: a.values().bind(),
                    l_flags: l.flags().bind(),
                    l_rank: l.rank_directory().bind(),
                    l_offsets: l.row_offsets().bind(),
                    l_values: l.values().bind(),
                    u_flags: u.flags().bind(),
                    u_rank: u.rank_directory().bind(),
                    u_offsets: u.row_offsets().bind(),
                    u_values: u.values().bind(),
                    pivots: self.pivots.bind(),
                    info: self.info.bind(),
                    scratch: f.scratch.bind(),
                    matrix_starts: match &f.counts {
                        Counts::Matrices { starts, .. } => starts.bind(),
                        Counts::Rows { totals, .. } => totals[0].bind(),
                    },
                };
                match &f.counts {
                    Counts::Matrices { starts, scan, scan_total, .. } => {
                        let groups = f.counts.groups(self.batch);
                        rec.dispatch(&f.count, params, bindings(), groups as u64)?;
                        scan.record(rec, starts, 2 * groups, scan_total)?
                    }
                    Counts::Rows { scans, totals } => {
                        rec.dispatch(&f.count, params, bindings(), workgroups)?;
                        let rows = self.n * self.batch;
                        scans[0].record(rec, l.rank_directory(), rows, &totals[0])?;
                        scans[1].record(rec, u.rank_directory(), rows, &totals[1])?;
                    }
                }
                rec.dispatch(&f.store, params, bindings(), workgroups)
            }
            Engine::Dense(d) => {
                a.record_to_dense(rec, &mut d.dense, &d.no_entries)?;
                d.lu.record_factor_in_place(rec, &mut d.dense, &mut self.pivots, &mut self.info)?;
                let panel = dense_panel(&self.ctx, &d.dense)?;
                if let Some(pattern) = &d.pattern {
                    let params = bitmap_lu_pattern::Params {
                        n: self.n as u32,
                        batch: self.batch as u32,
                        words: a.words_per_row() as u32,
                    };
                    let bindings = bitmap_lu_pattern::Bindings {
                        a_flags: a.flags().bind(),
                        l_flags: self.l.flags().bind(),
                        u_flags: self.u.flags().bind(),
                    };
                    rec.dispatch(pattern, params, bindings, self.batch as u64)?;
                }
                let parts = [(&self.l, Part::StrictlyLower, &d.steps[0]), (&self.u, Part::Upper, &d.steps[1])];
                for (out, part, steps) in parts {
                    let source = DensePart { layout: DenseLayout::RowMajor, part, block_rows: self.n };
                    record_from_dense(rec, panel, source, out, steps, d.pattern.is_some())?;
                }
                Ok(())
            }
        }
    }

    /// After a recorded factorization was submitted: waits for it, sets the factors' entry
    /// counts and returns each matrix's info.
    pub fn finish(&mut self) -> Result<Vec<u32>> {
        let mut batch = self.ctx.batch();
        let totals = match &self.engine {
            Engine::Fused(f) => match &f.counts {
                Counts::Matrices { starts, .. } => {
                    let at = 2 * f.counts.groups(self.batch);
                    [batch.read_back_range(starts, at..at + 1)?, batch.read_back_range(starts, at + 1..at + 2)?]
                }
                Counts::Rows { totals, .. } => [batch.read_back(&totals[0])?, batch.read_back(&totals[1])?],
            },
            Engine::Dense(d) => [batch.read_back(d.steps[0].total())?, batch.read_back(d.steps[1].total())?],
        };
        let info = batch.read_back(&self.info)?;
        batch.submit()?;
        let [l_total, u_total] = totals;
        self.l.set_nnz(l_total.wait()?[0] as usize)?;
        self.u.set_nnz(u_total.wait()?[0] as usize)?;
        info.wait()
    }

    /// Factors `a`: records, submits and [`finish`](Self::finish)es.
    pub fn factor(&mut self, a: &GpuBitmap<T>) -> Result<Vec<u32>> {
        let ctx = self.ctx.clone();
        let mut batch = ctx.batch();
        self.record(&mut batch.recorder(), a)?;
        batch.submit()?;
        self.finish()
    }

    /// L of the last factorization.
    pub fn l(&self) -> &GpuBitmap<T> {
        &self.l
    }

    /// U of the last factorization.
    pub fn u(&self) -> &GpuBitmap<T> {
        &self.u
    }

    /// The pivots of the last factorization (`batch·n`, LAPACK's order of swaps per matrix;
    /// the identity without pivoting).
    pub fn pivots(&self) -> &GpuVec<u32> {
        &self.pivots
    }
}
