// The team LU's elimination (lu_team.wgsl, bitmap_lu.wgsl): one team of TEAM lanes per
// matrix of at most TEAM rows (TEAM ≤ 32), lane i holding row i in registers (eight named
// vec4 blocks: an indexed array would spill to memory; the includer reads the matrix in
// through a stage of SLICE rows, `take_slice`), so that a step needs no barrier (with
// subgroups): the pivot is a max over the team (ties to the row at the lowest position), the
// pivot row is broadcast by shuffles, and every lane below updates its own row. Rows are not
// moved while factoring: each lane tracks the position its row has after LAPACK's swaps so
// far (`pos`), and the includer writes it there, which is getrf's output (the multipliers
// travel with their rows, as dlaswp moves them). Without subgroups the team's exchanges go through
// workgroup memory (two barriers each): correct, slower. With NO_PIVOT row k is step k's
// pivot and updates whose l_ik or u_kj is zero are skipped (seed 004's elimination,
// lu_small's NO_PIVOT). The includer declares `params.n`.
#import row_blocks

override WG_SIZE: u32 = 32u;
// Lanes per matrix: a power of two up to the smallest subgroup size (with subgroups) and 32.
override TEAM: u32 = 32u;

// Row stride of the stage: 33, so that a lane reading its own row there hits its own bank.
const STRIDE: u32 = 33u;
// Rows a lane loads before it stores any into the stage.
const STAGE_LOADS: u32 = 8u;
// Kernels that hold a team's rows in registers stage only a slice of the matrix at a time:
// on the H100 the driver gives an SM 48 KiB of workgroup memory in all, so a whole f32
// matrix of 32² (4.2 KB) a team held resident teams to 11 an SM where registers allow 28
// (benches/NOTES.md, session 42). SLICE rows a slice: the host's min(STAGE_LOADS, TEAM).
override SLICE: u32 = 8u;
// (WG_SIZE / TEAM) · SLICE · STRIDE, set by the host: a slice of rows per team.
override STAGE: u32 = 264u;
var<workgroup> stage: array<Real, STAGE>;

#ifndef SUBGROUP
var<workgroup> exchange_real: array<Real, WG_SIZE>;
var<workgroup> exchange_u32: array<u32, WG_SIZE>;
#endif

// Lane `source_lane` of the team's value of v (`source_lane` counted in the subgroup, or the
// workgroup).
fn shuffle_real(v: Real, source_lane: u32, me: u32) -> Real {
#ifdef SUBGROUP
    return subgroupShuffle(v, source_lane);
#else
    exchange_real[me] = v;
    workgroupBarrier();
    let r = exchange_real[source_lane];
    workgroupBarrier();
    return r;
#endif
}

fn shuffle_u32(v: u32, source_lane: u32, me: u32) -> u32 {
#ifdef SUBGROUP
    return subgroupShuffle(v, source_lane);
#else
    exchange_u32[me] = v;
    workgroupBarrier();
    let r = exchange_u32[source_lane];
    workgroupBarrier();
    return r;
#endif
}

// The least `order` among the team's lanes whose key is the team's largest. A team that is
// the whole subgroup uses subgroup reductions; smaller ones (or no subgroups) a butterfly
// over the team.
fn team_argmax(key: Real, order: u32, me: u32, sg_size: u32) -> u32 {
#ifdef SUBGROUP
    if TEAM == sg_size {
        let top = subgroupMax(key);
        return subgroupMin(select(0xffffffffu, order, key == top));
    }
#endif
    var k = key;
    var best = order;
    for (var offset = TEAM >> 1u; offset > 0u; offset >>= 1u) {
        let other_key = shuffle_real(k, me ^ offset, me);
        let other = shuffle_u32(best, me ^ offset, me);
        if other_key > k || (other_key == k && other < best) {
            k = other_key;
            best = other;
        }
    }
    return best;
}

// Element j of the team's staged row i.
fn stage_get(stage_base: u32, i: u32, j: u32) -> Real {
    return stage[stage_base + i * STRIDE + j];
}

fn stage_set(stage_base: u32, i: u32, j: u32, v: Real) {
    stage[stage_base + i * STRIDE + j] = v;
}

// Row `t`'s block `b` from the staged matrix at `stage_base` (zeros past n).
fn load_block(stage_base: u32, t: u32, b: u32) -> vec4<Real> {
    let n = params.n;
    var v = vec4<Real>(0.0);
    if t < n {
        for (var c = 0u; c < 4u; c++) {
            let j = 4u * b + c;
            if j < n {
                v[c] = stage[stage_base + t * STRIDE + j];
            }
        }
    }
    return v;
}

fn store_block(stage_base: u32, pos: u32, b: u32, v: vec4<Real>) {
    let n = params.n;
    for (var c = 0u; c < 4u; c++) {
        let j = 4u * b + c;
        if j < n {
            stage[stage_base + pos * STRIDE + j] = v[c];
        }
    }
}

// Step k on block `b` of this lane's row, given the pivot lane and the multiplier l (0 for
// rows that do not change): columns after k lose l times the pivot row's; column k becomes
// l where `eliminate`. Every lane of the team calls it (a shuffle).
fn step_block(r: vec4<Real>, b: u32, k: u32, pivot_lane: u32, me: u32, l: Real, eliminate: bool) -> vec4<Real> {
    let columns = block_columns(b);
    let u = vec4<Real>(
        shuffle_real(r.x, pivot_lane, me),
        shuffle_real(r.y, pivot_lane, me),
        shuffle_real(r.z, pivot_lane, me),
        shuffle_real(r.w, pivot_lane, me),
    );
#ifdef NO_PIVOT
    let zero = vec4<Real>(0.0);
    let skip = (vec4<Real>(l) == zero) | (u == zero);
    let updated = select(r, fma(vec4<Real>(-l), u, r), (columns > vec4<u32>(k)) & !skip);
#else
    // Rows that do not eliminate (done, or a zero pivot) keep their values even where the
    // pivot row holds an infinity (0·∞ would be NaN).
    let updated = select(r, fma(vec4<Real>(-l), u, r), (columns > vec4<u32>(k)) & vec4<bool>(eliminate));
#endif
    return select(updated, vec4<Real>(l), columns == vec4<u32>(k) & vec4<bool>(eliminate));
}

// A lane's place in its team: its row t, its lane for shuffles (`me`), the team's first
// lane, and where the team's matrix is staged.
struct TeamLane {
    t: u32,
    me: u32,
    base: u32,
    stage_base: u32,
    sg_size: u32,
}

// `stage_rows`: rows of a team's stage (TEAM for a whole matrix, fewer for a slice of one).
fn team_lane(lane: Lane, stage_rows: u32) -> TeamLane {
    let t = lane.index % TEAM;
#ifdef SUBGROUP
    let me = lane.sg_lane;
#else
    let me = lane.index;
#endif
    return TeamLane(t, me, me - t, (lane.index / TEAM) * stage_rows * STRIDE, lane.sg_size);
}

// What a lane keeps of the factorization: the pivot of step t (LAPACK's row swapped with
// row t), and 1 + the first column whose pivot was exactly zero (0 when none; every lane
// has it).
struct TeamFactor {
    pivot: u32,
    first_zero: u32,
}

// A lane's row in eight named blocks of four (registers, not an indexed array).
struct RowBlocks {
    r0: vec4<Real>,
    r1: vec4<Real>,
    r2: vec4<Real>,
    r3: vec4<Real>,
    r4: vec4<Real>,
    r5: vec4<Real>,
    r6: vec4<Real>,
    r7: vec4<Real>,
}

// Row `i` of the stage at `stage_base` (zeros past n).
fn load_row(stage_base: u32, i: u32) -> RowBlocks {
    return RowBlocks(
        load_block(stage_base, i, 0u),
        load_block(stage_base, i, 1u),
        load_block(stage_base, i, 2u),
        load_block(stage_base, i, 3u),
        load_block(stage_base, i, 4u),
        load_block(stage_base, i, 5u),
        load_block(stage_base, i, 6u),
        load_block(stage_base, i, 7u),
    );
}

fn store_row(stage_base: u32, i: u32, row: RowBlocks) {
    store_block(stage_base, i, 0u, row.r0);
    store_block(stage_base, i, 1u, row.r1);
    store_block(stage_base, i, 2u, row.r2);
    store_block(stage_base, i, 3u, row.r3);
    store_block(stage_base, i, 4u, row.r4);
    store_block(stage_base, i, 5u, row.r5);
    store_block(stage_base, i, 6u, row.r6);
    store_block(stage_base, i, 7u, row.r7);
}

// One step of reading a team's matrix through the stage a slice at a time: `rows[j]`, element
// (s + j, t) loaded by lane t (where `loaded`), goes into the stage; after a barrier lane t
// takes its own row if the slice holds it (else keeps `row`). The caller puts a barrier
// before each slice's loads. Every lane of the workgroup calls it.
fn take_slice(lane: TeamLane, s: u32, rows: array<Real, STAGE_LOADS>, loaded: bool, row: RowBlocks) -> RowBlocks {
    let n = params.n;
    let t = lane.t;
    if loaded {
        for (var j = 0u; j < SLICE && s + j < n; j++) {
            stage_set(lane.stage_base, j, t, rows[j]);
        }
    }
    workgroupBarrier();
    if t >= s && t < s + SLICE && t < n {
        return load_row(lane.stage_base, t - s);
    }
    return row;
}

// One step of writing a team's rows out through the stage a slice at a time: the lane whose
// row sits at position `pos` puts it in the stage if slice s holds that position; after the
// barrier the caller writes element (s + j, t) out (`stage_get`). The barrier before covers
// the last slice's readers. Every lane of the workgroup calls it.
fn put_slice(lane: TeamLane, s: u32, row: RowBlocks, pos: u32) {
    workgroupBarrier();
    if lane.t < params.n && pos >= s && pos < s + SLICE {
        store_row(lane.stage_base, pos - s, row);
    }
    workgroupBarrier();
}

// A lane's factored row, the position getrf's swaps give it, and its part of the pivots.
struct Factored {
    row: RowBlocks,
    pos: u32,
    factor: TeamFactor,
}

// Factors the team's matrix held a row a lane (lane t: row t, zeros for t ≥ n): L's
// multipliers below the diagonal and U on and above it, each row at the position it has
// after LAPACK's swaps (`pos`). No barrier; every lane of the team calls it (shuffles).
fn factor_rows(lane: TeamLane, row: RowBlocks) -> Factored {
    let n = params.n;
    let t = lane.t;
    let me = lane.me;
    let base = lane.base;
    var r0 = row.r0;
    var r1 = row.r1;
    var r2 = row.r2;
    var r3 = row.r3;
    var r4 = row.r4;
    var r5 = row.r5;
    var r6 = row.r6;
    var r7 = row.r7;
    let blocks = (n + 3u) / 4u;
    // Lanes past n never take part; a pivoted row is done.
    var done = t >= n;
    var pos = t;
    var first_zero = 0u;
    var my_pivot = 0u;
    for (var k = 0u; k < n; k++) {
        let v = block_column(r0, r1, r2, r3, r4, r5, r6, r7, k);
#ifdef NO_PIVOT
        let best = k;
#else
        // Candidates by |v| (NaN below every number, done rows below NaN), ties to the row
        // at the lowest position, as LAPACK's i?amax (so an all-zero column keeps row k).
        var key = Real(-2.0);
        if !done {
            key = select(abs(v), Real(-1.0), is_nan(v));
        }
        let best = team_argmax(key, pos * 32u + t, me, lane.sg_size) % 32u;
#endif
        // The row at position k and the pivot row trade places (LAPACK's swap of step k);
        // without pivoting row k is at position k.
        let pivot_lane = base + best;
#ifdef NO_PIVOT
        let p = k;
#else
        let p = shuffle_u32(pos, pivot_lane, me);
#endif
        if pos == k {
            pos = p;
        }
        if t == best {
            pos = k;
            done = true;
        }
        // Lane k keeps step k's pivot; the team stores them together at the end.
        if t == k {
            my_pivot = p;
        }
        let pivot = shuffle_real(v, pivot_lane, me);
        if pivot == 0.0 && first_zero == 0u {
            first_zero = k + 1u;
        }
        let eliminate = !done && !(pivot == 0.0);
        var l = Real(0.0);
        if eliminate {
            l = v / pivot;
        }
        // Blocks wholly before column k are L's or U's finished parts: skipped.
        let first_block = k / 4u;
        if first_block <= 0u && blocks > 0u { r0 = step_block(r0, 0u, k, pivot_lane, me, l, eliminate); }
        if first_block <= 1u && blocks > 1u { r1 = step_block(r1, 1u, k, pivot_lane, me, l, eliminate); }
        if first_block <= 2u && blocks > 2u { r2 = step_block(r2, 2u, k, pivot_lane, me, l, eliminate); }
        if first_block <= 3u && blocks > 3u { r3 = step_block(r3, 3u, k, pivot_lane, me, l, eliminate); }
        if first_block <= 4u && blocks > 4u { r4 = step_block(r4, 4u, k, pivot_lane, me, l, eliminate); }
        if first_block <= 5u && blocks > 5u { r5 = step_block(r5, 5u, k, pivot_lane, me, l, eliminate); }
        if first_block <= 6u && blocks > 6u { r6 = step_block(r6, 6u, k, pivot_lane, me, l, eliminate); }
        if first_block <= 7u && blocks > 7u { r7 = step_block(r7, 7u, k, pivot_lane, me, l, eliminate); }
    }
    return Factored(RowBlocks(r0, r1, r2, r3, r4, r5, r6, r7), pos, TeamFactor(my_pivot, first_zero));
}
