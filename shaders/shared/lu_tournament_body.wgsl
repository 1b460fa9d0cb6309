// The body of the blocked LU's picked panel (lu_tournament.wgsl says what each step does),
// shared by its two front files, which bind A and read and write its rows: an element at a
// time (lu_tournament.wgsl, any n) or a vec4 at a time (lu_tournament_vec4.wgsl, n a
// multiple of 4). Each defines `load_block_at(m, i, c0, b)`, `store_block_at(m, i, c0, b, v)`
// (block b: columns c0 + 4b … c0 + 4b + 3 of row i, zeros past n, stores only within it) and
// `entry_of(m, i, j)`.
#import entry
#import real
#import group_argmax
#import row_blocks
#import ready_words
#import lu_moves
#import lu_gemm_vec4_front

const TOURNAMENT: u32 = 0u;
const LOWER: u32 = 1u;
const COLUMN: u32 = 2u;
const COOPERATIVE: u32 = 3u;
const FINISH: u32 = 4u;
const SOLVE: u32 = 5u;

const NB: u32 = 32u;
// An empty candidate slot.
const NONE: u32 = 0xffffffffu;

struct Params {
    step: u32,
    n: u32,
    batch: u32,
    j0: u32,
    nb: u32,
    // Workgroups per matrix.
    tiles: u32,
    // TOURNAMENT: the picks this round reads (an offset into a matrix's part of `cand`, and
    // their count; count 0 at the leaves, which read rows j0.. of A), and where it writes.
    // COLUMN: count is the dispatch's column k; a matrix's part of `cand` holds two sets
    // (by k's parity) of a candidate (key, row: CANDIDATE_WORDS) per workgroup, then the
    // picks.
    // COOPERATIVE and FINISH: src is where the candidate slots start in a matrix's part of
    // `cand`, dst where the picks and the workgroups' progress do; count is the polls a wait
    // may take (COOPERATIVE). SOLVE: src is where the slots start, count their words (its
    // strips reset them).
    src: u32,
    count: u32,
    dst: u32,
    // Words of `cand` per matrix.
    stride: u32,
    // TOURNAMENT (one round): the look-ahead strips a matrix, whose workgroups follow the
    // panel's (0: the panel alone), and 1 where the panel first takes the previous panel's
    // update (both where that update was deferred); `permute` 1 where this panel's own
    // update is deferred: its rows are stored where its interchanges take them.
    // COOPERATIVE: `strips` is the previous panel's GEMM tiles a matrix beside the panel (on
    // the columns right of it), `ahead` 1 where the panel's rows first take that update's
    // part in its own columns (both where the previous panel's GEMM was left to this
    // dispatch).
    strips: u32,
    ahead: u32,
    permute: u32,
}

var<immediate> params: Params;
// Atomic: the cooperative panel's workgroups exchange candidates through it within a dispatch.
@group(0) @binding(3) var<storage, read_write> cand: array<atomic<u32>>;

// Rows a workgroup takes, a lane each (64 to 1024, set by the host: a power of two, or with
// subgroups a multiple of 128).
override WG_SIZE: u32 = 1024u;
// Candidates a step publishes: one per subgroup (WG_SIZE / the smallest subgroup size), or 1
// without subgroups (set by the host).
override SLOTS: u32 = 32u;
// 2 · SLOTS · NB / 4 and 2 · SLOTS (set by the host: naga 30 panics on an override
// expression as a size).
override SLOT_BLOCKS: u32 = 512u;
override SLOT_KEYS: u32 = 64u;
// Each step's candidates' rows (two sets, by the step's parity, so that a step's writes never
// meet a slower lane's reads of the step before), as vec4 blocks.
var<workgroup> slot_rows: array<vec4<Real>, SLOT_BLOCKS>;
var<workgroup> slot_keys: array<Key, SLOT_KEYS>;
var<workgroup> slot_ids: array<u32, SLOT_KEYS>;
var<workgroup> ids: array<u32, WG_SIZE>;
var<workgroup> top: array<vec4<Real>, 256>;
var<workgroup> picks: array<u32, NB>;
// interchanges_by_lanes: the steps whose picks moved before them, a bit each.
var<workgroup> moved_picks: atomic<u32>;
// The cooperative panel's stage of every workgroup's candidate for a column (tiles ·
// SLOT_WORDS words, set by the host; 1 in the other pipelines), and its wait's flags.
override STAGE_WORDS: u32 = 1u;
// The cooperative variant's FINISH pipeline (set by the host): each of the variant's two steps
// is a pipeline of its own, so that FINISH's registers never weigh on the cooperative step's
// (benches/NOTES.md, sessions 64–65).
override FINISHING: bool = false;
var<workgroup> stage: array<u32, STAGE_WORDS>;
var<workgroup> stage_missing: atomic<u32>;
var<workgroup> stage_flag: u32;
// The cooperative panel's gather with subgroups: set by a subgroup whose polls ran out.
var<workgroup> gather_late: atomic<u32>;

// A candidate in `cand`: its key's words, then its row.
#ifdef F64
const CANDIDATE_WORDS: u32 = 3u;

fn store_candidate(w: u32, best: Best) {
    let bits = bitcast<u64>(best.key);
    atomicStore(&cand[w], u32(bits & 0xfffffffflu));
    atomicStore(&cand[w + 1u], u32(bits >> 32u));
    atomicStore(&cand[w + 2u], best.slot);
}

fn load_candidate(w: u32) -> Best {
    let bits = (u64(atomicLoad(&cand[w + 1u])) << 32u) | u64(atomicLoad(&cand[w]));
    return Best(bitcast<f64>(bits), atomicLoad(&cand[w + 2u]));
}
#else
const CANDIDATE_WORDS: u32 = 2u;

fn store_candidate(w: u32, best: Best) {
    atomicStore(&cand[w], best.key);
    atomicStore(&cand[w + 1u], best.slot);
}

fn load_candidate(w: u32) -> Best {
    return Best(atomicLoad(&cand[w]), atomicLoad(&cand[w + 1u]));
}
#endif

// The GEMM's front (lu_gemm_vec4_front.wgsl) on this file's blocks of A.
fn gemm_block(m: u32, i: u32, j: u32) -> vec4<Real> {
    if i < params.n {
        return load_block_at(m, i, j, 0u);
    }
    return vec4<Real>(0.0);
}

fn put_gemm_block(m: u32, i: u32, j: u32, v: vec4<Real>) {
    if i < params.n {
        store_block_at(m, i, j, 0u, v);
    }
}

// Block b of row i's panel columns (params.j0 …).
fn load_block(m: u32, i: u32, b: u32) -> vec4<Real> {
    return load_block_at(m, i, params.j0, b);
}

fn store_block(m: u32, i: u32, b: u32, v: vec4<Real>) {
    store_block_at(m, i, params.j0, b, v);
}

// The eight blocks of row i's NB columns from c0 into r0 … r7.
fn load_row(m: u32, i: u32, c0: u32, r0: ptr<function, vec4<Real>>, r1: ptr<function, vec4<Real>>,
            r2: ptr<function, vec4<Real>>, r3: ptr<function, vec4<Real>>, r4: ptr<function, vec4<Real>>,
            r5: ptr<function, vec4<Real>>, r6: ptr<function, vec4<Real>>, r7: ptr<function, vec4<Real>>) {
    *r0 = load_block_at(m, i, c0, 0u);
    *r1 = load_block_at(m, i, c0, 1u);
    *r2 = load_block_at(m, i, c0, 2u);
    *r3 = load_block_at(m, i, c0, 3u);
    *r4 = load_block_at(m, i, c0, 4u);
    *r5 = load_block_at(m, i, c0, 5u);
    *r6 = load_block_at(m, i, c0, 6u);
    *r7 = load_block_at(m, i, c0, 7u);
}

fn store_row(m: u32, i: u32, c0: u32, r0: vec4<Real>, r1: vec4<Real>, r2: vec4<Real>, r3: vec4<Real>,
             r4: vec4<Real>, r5: vec4<Real>, r6: vec4<Real>, r7: vec4<Real>) {
    store_block_at(m, i, c0, 0u, r0);
    store_block_at(m, i, c0, 1u, r1);
    store_block_at(m, i, c0, 2u, r2);
    store_block_at(m, i, c0, 3u, r3);
    store_block_at(m, i, c0, 4u, r4);
    store_block_at(m, i, c0, 5u, r5);
    store_block_at(m, i, c0, 6u, r6);
    store_block_at(m, i, c0, 7u, r7);
}

// Step k on block b of a row: the columns after k lose l times the pivot row's block u; with
// `keep_l`, column k becomes l.
fn step_block(r: vec4<Real>, b: u32, k: u32, l: Real, u: vec4<Real>, keep_l: bool) -> vec4<Real> {
    // A block wholly after column k (k is uniform: a branch, not a select a column).
    if 4u * b > k {
        return full_block(r, l, u);
    }
    return partial_block(r, b, k, l, u, keep_l);
}

// step_block on the block holding column k.
fn partial_block(r: vec4<Real>, b: u32, k: u32, l: Real, u: vec4<Real>, keep_l: bool) -> vec4<Real> {
    let columns = block_columns(b);
    let updated = select(r, fma(vec4<Real>(-l), u, r), columns > vec4<u32>(k));
    return select(updated, vec4<Real>(l), columns == vec4<u32>(k) & vec4<bool>(keep_l));
}

// step_block on a block wholly after column k.
fn full_block(r: vec4<Real>, l: Real, u: vec4<Real>) -> vec4<Real> {
    return fma(vec4<Real>(-l), u, r);
}

// Where a step's pivot row is read: `slot_rows` or `top` (its vec4 blocks from `base`), or
// the cooperative panel's stage (the candidate slot at stage word `base`).
const FROM_SLOTS: u32 = 0u;
const FROM_STAGE: u32 = 1u;
const FROM_TOP: u32 = 2u;

fn pivot_block(source: u32, base: u32, b: u32) -> vec4<Real> {
#ifdef COOPERATIVE
    if source == FROM_STAGE {
        return staged_block(base, b);
    }
#else
    // (Kept out of the cooperative variant, whose workgroup memory would then hold `top`.)
    if source == FROM_TOP {
        return top[base + b];
    }
#endif
    return slot_rows[base + b];
}

// Step k on the row held in r0 … r7 (column k becomes l, the columns after it lose l times
// the pivot row's): one branch on k's block, whose case runs that block and every later one
// straight. A branch a block (as `step_block` takes) cost the 1024² LU's one-round panels
// 12% (benches/NOTES.md, session 57). Returns the row's column k + 1 as the step leaves it
// (the next step's key), picked where its block is known: picking it by k's block at the
// next step's top cost 1024²'s rounds 4% (session 60).
fn step_row(r0: ptr<function, vec4<Real>>, r1: ptr<function, vec4<Real>>, r2: ptr<function, vec4<Real>>,
            r3: ptr<function, vec4<Real>>, r4: ptr<function, vec4<Real>>, r5: ptr<function, vec4<Real>>,
            r6: ptr<function, vec4<Real>>, r7: ptr<function, vec4<Real>>, k: u32, l: Real, source: u32,
            base: u32) -> Real {
    let b = k / 4u;
    // Column k + 1: component c of block b, or block b + 1's first.
    let c = (k + 1u) % 4u;
    switch b {
        case 0u: {
            *r0 = partial_block(*r0, b, k, l, pivot_block(source, base, b), true);
            *r1 = full_block(*r1, l, pivot_block(source, base, 1u));
            *r2 = full_block(*r2, l, pivot_block(source, base, 2u));
            *r3 = full_block(*r3, l, pivot_block(source, base, 3u));
            *r4 = full_block(*r4, l, pivot_block(source, base, 4u));
            *r5 = full_block(*r5, l, pivot_block(source, base, 5u));
            *r6 = full_block(*r6, l, pivot_block(source, base, 6u));
            *r7 = full_block(*r7, l, pivot_block(source, base, 7u));
            return select((*r1).x, component(*r0, c), c != 0u);
        }
        case 1u: {
            *r1 = partial_block(*r1, b, k, l, pivot_block(source, base, b), true);
            *r2 = full_block(*r2, l, pivot_block(source, base, 2u));
            *r3 = full_block(*r3, l, pivot_block(source, base, 3u));
            *r4 = full_block(*r4, l, pivot_block(source, base, 4u));
            *r5 = full_block(*r5, l, pivot_block(source, base, 5u));
            *r6 = full_block(*r6, l, pivot_block(source, base, 6u));
            *r7 = full_block(*r7, l, pivot_block(source, base, 7u));
            return select((*r2).x, component(*r1, c), c != 0u);
        }
        case 2u: {
            *r2 = partial_block(*r2, b, k, l, pivot_block(source, base, b), true);
            *r3 = full_block(*r3, l, pivot_block(source, base, 3u));
            *r4 = full_block(*r4, l, pivot_block(source, base, 4u));
            *r5 = full_block(*r5, l, pivot_block(source, base, 5u));
            *r6 = full_block(*r6, l, pivot_block(source, base, 6u));
            *r7 = full_block(*r7, l, pivot_block(source, base, 7u));
            return select((*r3).x, component(*r2, c), c != 0u);
        }
        case 3u: {
            *r3 = partial_block(*r3, b, k, l, pivot_block(source, base, b), true);
            *r4 = full_block(*r4, l, pivot_block(source, base, 4u));
            *r5 = full_block(*r5, l, pivot_block(source, base, 5u));
            *r6 = full_block(*r6, l, pivot_block(source, base, 6u));
            *r7 = full_block(*r7, l, pivot_block(source, base, 7u));
            return select((*r4).x, component(*r3, c), c != 0u);
        }
        case 4u: {
            *r4 = partial_block(*r4, b, k, l, pivot_block(source, base, b), true);
            *r5 = full_block(*r5, l, pivot_block(source, base, 5u));
            *r6 = full_block(*r6, l, pivot_block(source, base, 6u));
            *r7 = full_block(*r7, l, pivot_block(source, base, 7u));
            return select((*r5).x, component(*r4, c), c != 0u);
        }
        case 5u: {
            *r5 = partial_block(*r5, b, k, l, pivot_block(source, base, b), true);
            *r6 = full_block(*r6, l, pivot_block(source, base, 6u));
            *r7 = full_block(*r7, l, pivot_block(source, base, 7u));
            return select((*r6).x, component(*r5, c), c != 0u);
        }
        case 6u: {
            *r6 = partial_block(*r6, b, k, l, pivot_block(source, base, b), true);
            *r7 = full_block(*r7, l, pivot_block(source, base, 7u));
            return select((*r7).x, component(*r6, c), c != 0u);
        }
        default: {
            *r7 = partial_block(*r7, b, k, l, pivot_block(source, base, b), true);
            // (k = 31: no column after the panel's last.)
            return component(*r7, c);
        }
    }
}

fn publish(base: u32, r0: vec4<Real>, r1: vec4<Real>, r2: vec4<Real>, r3: vec4<Real>, r4: vec4<Real>,
           r5: vec4<Real>, r6: vec4<Real>, r7: vec4<Real>) {
    slot_rows[base] = r0;
    slot_rows[base + 1u] = r1;
    slot_rows[base + 2u] = r2;
    slot_rows[base + 3u] = r3;
    slot_rows[base + 4u] = r4;
    slot_rows[base + 5u] = r5;
    slot_rows[base + 6u] = r6;
    slot_rows[base + 7u] = r7;
}

fn tournament(m: u32, group: u32, lane: Lane) {
    let nb = params.nb;
    let slot = lane.index;
    var id = NONE;
    let e = group * WG_SIZE + slot;
    if params.count == 0u {
        if params.j0 + e < params.n {
            id = params.j0 + e;
        }
    } else if e < params.count {
        id = atomicLoad(&cand[m * params.stride + params.src + e]);
    }
    ids[slot] = id;
    // (Before the rows are read: the previous panel's interchanges move some of them.)
    if params.ahead != 0u {
        top_ahead(m, lane);
    }
    var r0 = vec4<Real>(0.0);
    var r1 = r0;
    var r2 = r0;
    var r3 = r0;
    var r4 = r0;
    var r5 = r0;
    var r6 = r0;
    var r7 = r0;
    if id != NONE {
        load_row(m, id, params.j0, &r0, &r1, &r2, &r3, &r4, &r5, &r6, &r7);
    }
    take_ahead(m, id, id != NONE, &r0, &r1, &r2, &r3, &r4, &r5, &r6, &r7);
    var used = id == NONE;
    // The step that picked this lane's row (NONE: not picked).
    var picked_at = NONE;
    // 1 + the panel column of the first zero pivot (every lane's, alike).
    var zero = 0u;
    // The row's column k: its key now, its multiplier once the pivot is known (each step
    // returns the next; a used row's is never read).
    var x = block_column(r0, r1, r2, r3, r4, r5, r6, r7, 0u);
    for (var k = 0u; k < nb; k++) {
        let key = select(pivot_key(x), KEY_USED, used);
        let parity = k & 1u;
#ifdef SUBGROUP
        // Each subgroup's best row publishes itself, then every lane picks among them: one
        // barrier a step (which also orders every lane's update of the step before).
        // (Slots are lanes, so ascend with them.)
        let mine = ordered_subgroup_best(key, slot);
        let index = parity * SLOTS + lane.index / lane.sg_size;
        if slot == mine.slot {
            publish(index * 8u, r0, r1, r2, r3, r4, r5, r6, r7);
            slot_keys[index] = mine.key;
            slot_ids[index] = mine.slot;
        }
        workgroupBarrier();
        var best = Best(KEY_NONE, NONE);
        for (var g = lane.sg_lane; g < WG_SIZE / lane.sg_size; g += lane.sg_size) {
            let other = Best(slot_keys[parity * SLOTS + g], slot_ids[parity * SLOTS + g]);
            if beats(other, best) {
                best = other;
            }
        }
        // Subgroup g's candidate holds its least slots: with a candidate a lane, slots ascend
        // with the lanes.
        if WG_SIZE / lane.sg_size <= lane.sg_size {
            best = ordered_subgroup_best(best.key, best.slot);
        } else {
            best = subgroup_best(best.key, best.slot);
        }
        // The winner's row was published by its subgroup.
        let winner = parity * SLOTS + best.slot / lane.sg_size;
#else
        let best = group_argmax(key, slot, lane, k);
        // One candidate: the winner (SLOTS is 1).
        let winner = parity * SLOTS;
        if slot == best.slot {
            publish(winner * 8u, r0, r1, r2, r3, r4, r5, r6, r7);
        }
        workgroupBarrier();
#endif
        // Fewer rows than columns here: the slot stays empty. (No early exits from the loop:
        // its barriers stay in uniform control flow.)
        let found = best.key != KEY_USED;
        if lane.index == 0u {
            picks[k] = select(NONE, ids[best.slot], found);
        }
        let u = winner * 8u;
        let pivot = slot_rows[u + k / 4u][k % 4u];
        if found && pivot == 0.0 && zero == 0u {
            zero = k + 1u;
        }
        let picked = found && slot == best.slot;
        if picked {
            picked_at = k;
        }
        used = used || picked;
        // A zero pivot (the column is zero on every row left): nothing to eliminate.
        if found && !(pivot == 0.0) {
            if !used {
                x = step_row(&r0, &r1, &r2, &r3, &r4, &r5, &r6, &r7, k, x / pivot, FROM_SLOTS, u);
            }
        } else {
            x = block_column(r0, r1, r2, r3, r4, r5, r6, r7, k + 1u);
        }
    }
    workgroupBarrier();
    if lane.index < nb {
        atomicStore(&cand[m * params.stride + params.dst + group * nb + lane.index], picks[lane.index]);
    }
    if params.tiles > 1u {
        return;
    }
    // The last round: its picks, eliminated in the order chosen, hold the pivot rows' block
    // factored (L11 left of each row's step, U11 from it on). They go back to the picks' rows,
    // which the interchanges then bring to rows j0.. (the other rows keep A's values, for
    // LOWER) — or, where this round was the only leaf, every row goes back: each was
    // eliminated by every pivot row and holds its multipliers.
    // With `permute` (an only leaf), every row goes where the interchanges take it: the
    // next panel's dispatch reads these columns as final.
    let only_leaf = params.count == 0u;
    if (used || only_leaf) && id != NONE && params.permute == 0u {
        store_row(m, id, params.j0, r0, r1, r2, r3, r4, r5, r6, r7);
    }
    interchanges_by_lanes(m, lane);
    if lane.index == 0u {
        // The first panel starts the matrix's info; later panels keep the first zero.
        if params.j0 == 0u {
            info[m] = 0u;
        }
        if zero != 0u && info[m] == 0u {
            info[m] = params.j0 + zero;
        }
    }
    // (interchanges_by_lanes' last barrier showed `ids`.)
    if params.permute != 0u {
        if id != NONE {
            store_row(m, destination(id, picked_at), params.j0, r0, r1, r2, r3, r4, r5, r6, r7);
        }
    }
}

// Where the interchanges (`ids`, as `interchanges` leaves them) take row `id`, picked at step
// `picked_at` (NONE: not picked). Pick s goes to row j0 + s; the other rows of the pivot
// rows' block are moved by the swaps in turn; every other row stays.
fn destination(id: u32, picked_at: u32) -> u32 {
    let j0 = params.j0;
    if picked_at != NONE {
        return j0 + picked_at;
    }
    if id < j0 || id >= j0 + params.nb {
        return id;
    }
    var at_row = id;
    for (var step = 0u; step < params.nb; step++) {
        at_row = swapped(at_row, j0 + step, ids[step]);
    }
    return at_row;
}

fn column(m: u32, group: u32, lane: Lane) {
    let j0 = params.j0;
    let nb = params.nb;
    let k = params.count;
    let groups = params.tiles;
    let base = m * params.stride;
    let picked = base + 2u * CANDIDATE_WORDS * groups;
    // Column k − 1's pivot row: the best of the workgroups' candidates of the dispatch
    // before, the least row on equal keys, and the earlier columns' picks: loaded a lane
    // each (one load's latency, not one a candidate), the picks into workgroup memory, which
    // the argmax's barrier publishes.
    var mine = Best(KEY_NONE, NONE);
    if k > 0u {
        let before = base + ((k - 1u) & 1u) * CANDIDATE_WORDS * groups;
        for (var g = lane.index; g < groups; g += WG_SIZE) {
            let other = load_candidate(before + CANDIDATE_WORDS * g);
            if beats(other, mine) {
                mine = other;
            }
        }
    }
    if lane.index + 1u < k {
        picks[lane.index] = atomicLoad(&cand[picked + lane.index]);
    }
    let winner = group_argmax(mine.key, mine.slot, lane, 0u);
    let p = select(NONE, winner.slot, k > 0u && winner.key != KEY_USED);
    let i = j0 + group * WG_SIZE + lane.index;
    var used = i >= params.n || (p != NONE && i == p);
    for (var s = 0u; s + 1u < k; s++) {
        used = used || picks[s] == i;
    }
    var key = KEY_USED;
    if !used {
        // Only the blocks from column k − 1's on change or are read.
        let first = select(0u, (k - 1u) / 4u, k > 0u);
        var r0 = vec4<Real>(0.0);
        var r1 = r0;
        var r2 = r0;
        var r3 = r0;
        var r4 = r0;
        var r5 = r0;
        var r6 = r0;
        var r7 = r0;
        if first <= 0u { r0 = load_block(m, i, 0u); }
        if first <= 1u { r1 = load_block(m, i, 1u); }
        if first <= 2u { r2 = load_block(m, i, 2u); }
        if first <= 3u { r3 = load_block(m, i, 3u); }
        if first <= 4u { r4 = load_block(m, i, 4u); }
        if first <= 5u { r5 = load_block(m, i, 5u); }
        if first <= 6u { r6 = load_block(m, i, 6u); }
        r7 = load_block(m, i, 7u);
        if p != NONE {
            let s = k - 1u;
            let pivot = entry_of(m, p, j0 + s);
            // A zero pivot (the column is zero on every row left): nothing to eliminate.
            if !(pivot == 0.0) {
                let l = block_column(r0, r1, r2, r3, r4, r5, r6, r7, s) / pivot;
                if first <= 0u { r0 = step_block(r0, 0u, s, l, load_block(m, p, 0u), true); store_block(m, i, 0u, r0); }
                if first <= 1u { r1 = step_block(r1, 1u, s, l, load_block(m, p, 1u), true); store_block(m, i, 1u, r1); }
                if first <= 2u { r2 = step_block(r2, 2u, s, l, load_block(m, p, 2u), true); store_block(m, i, 2u, r2); }
                if first <= 3u { r3 = step_block(r3, 3u, s, l, load_block(m, p, 3u), true); store_block(m, i, 3u, r3); }
                if first <= 4u { r4 = step_block(r4, 4u, s, l, load_block(m, p, 4u), true); store_block(m, i, 4u, r4); }
                if first <= 5u { r5 = step_block(r5, 5u, s, l, load_block(m, p, 5u), true); store_block(m, i, 5u, r5); }
                if first <= 6u { r6 = step_block(r6, 6u, s, l, load_block(m, p, 6u), true); store_block(m, i, 6u, r6); }
                r7 = step_block(r7, 7u, s, l, load_block(m, p, 7u), true);
                store_block(m, i, 7u, r7);
            }
        }
        if k < nb {
            key = pivot_key(block_column(r0, r1, r2, r3, r4, r5, r6, r7, k));
        }
    }
    let best = group_argmax(key, i, lane, 1u);
    if lane.index == 0u && k < nb {
        store_candidate(base + ((k & 1u) * groups + group) * CANDIDATE_WORDS, best);
    }
    // One lane of the matrix keeps the record: column k − 1's pick, info, the interchanges.
    if group != 0u || lane.index != 0u {
        return;
    }
    if k == 0u {
        // The first panel starts the matrix's info; later panels keep the first zero.
        if j0 == 0u {
            info[m] = 0u;
        }
        return;
    }
    atomicStore(&cand[picked + k - 1u], p);
    if p != NONE && entry_of(m, p, j0 + k - 1u) == 0.0 && info[m] == 0u {
        info[m] = j0 + k;
    }
    if k == nb {
        // picks[0 .. nb − 1] were loaded above.
        picks[k - 1u] = p;
        interchanges(m);
    }
}

// The final picks as getrf's interchanges: step k swaps row j0 + k with wherever the pick
// is by then. A pick moves only when it sits in row j0 + s of an earlier step s (it is then
// swapped to that step's pivot row, which lies further down), so its place is found by
// following those moves (`place_of_pick`, once the places of the steps before are known). The
// places are kept in `ids` (free after the tournament).
fn interchanges(m: u32) {
    for (var k = 0u; k < params.nb; k++) {
        record_interchange(m, k, place_of_pick(k));
    }
}

// interchanges by every lane (after a barrier that shows `picks`; the last of its three
// barriers shows `ids`): lane k records step k where its pick never moved, and lane 0 follows
// the moves of the others in order, usually none. Lane 0 walking every step took ~1 µs of a
// panel's critical path (benches/NOTES.md, session 65).
fn interchanges_by_lanes(m: u32, lane: Lane) {
    let j0 = params.j0;
    let k = lane.index;
    if k == 0u {
        atomicStore(&moved_picks, 0u);
    }
    workgroupBarrier();
    if k < params.nb {
        let x = picks[k];
        if x >= j0 && x < j0 + k {
            atomicOr(&moved_picks, 1u << k);
        } else {
            record_interchange(m, k, x);
        }
    }
    workgroupBarrier();
    if k == 0u {
        var moved = atomicLoad(&moved_picks);
        while moved != 0u {
            let s = countTrailingZeros(moved);
            moved &= moved - 1u;
            record_interchange(m, s, place_of_pick(s));
        }
    }
    workgroupBarrier();
}

// Where pick k is when step k takes it (the places of the steps before it in `ids`). Each move
// takes the pick to a later step's row, so at most k moves (bounded all the same: picks that
// were not distinct would have made the walk cycle and hung the GPU, as a probe's did,
// benches/NOTES.md session 65).
fn place_of_pick(k: u32) -> u32 {
    let j0 = params.j0;
    var x = picks[k];
    for (var moves = 0u; moves < k && x >= j0 && x < j0 + k; moves++) {
        x = ids[x - j0];
    }
    return x;
}

fn record_interchange(m: u32, k: u32, place: u32) {
    ids[k] = place;
    pivots[m * params.n + params.j0 + k] = place;
}

// The multipliers of WG_SIZE rows below the pivot rows' block: l·U11 = a, solved by the
// lane of each row as the elimination of the block's rows would (column k: divided by
// U11's pivot, then taken times U11's row k from the later columns; a zero pivot leaves its
// column unscaled, as getrf does).
fn lower(m: u32, tile: u32, lane: Lane) {
    let j0 = params.j0;
    let nb = params.nb;
    for (var e = lane.index; e < 8u * nb; e += WG_SIZE) {
        top[e] = load_block(m, j0 + e / 8u, e % 8u);
    }
    workgroupBarrier();
    let i = j0 + nb + tile * WG_SIZE + lane.index;
    if i >= params.n {
        return;
    }
    var r0: vec4<Real>;
    var r1: vec4<Real>;
    var r2: vec4<Real>;
    var r3: vec4<Real>;
    var r4: vec4<Real>;
    var r5: vec4<Real>;
    var r6: vec4<Real>;
    var r7: vec4<Real>;
    load_row(m, i, j0, &r0, &r1, &r2, &r3, &r4, &r5, &r6, &r7);
    for (var k = 0u; k < nb; k++) {
        let u = 8u * k;
        let pivot = top[u + k / 4u][k % 4u];
        var l = block_column(r0, r1, r2, r3, r4, r5, r6, r7, k);
        if !(pivot == 0.0) {
            l /= pivot;
        }
        step_row(&r0, &r1, &r2, &r3, &r4, &r5, &r6, &r7, k, l, FROM_TOP, u);
    }
    store_row(m, i, params.j0, r0, r1, r2, r3, r4, r5, r6, r7);
}

#ifdef COOPERATIVE
// ---- The cooperative panel (COOPERATIVE, then FINISH) ----
// Exact partial pivoting for a panel taller than a workgroup in one dispatch: workgroup g
// holds rows j0 + g·WG_SIZE… (a lane each, in registers) and, for each column k, publishes
// its best row not yet picked (the row and its values: a candidate slot, every word carrying
// its ready state, shared/ready_words.wgsl), waits for every workgroup's candidate for k,
// takes the best (the least row on equal keys) as column k's pivot and applies its step.
// WebGPU promises no forward progress between workgroups, so a wait is bounded (`count`
// polls): a workgroup that runs out stores its rows and progress and leaves. FINISH (one
// workgroup a matrix, next, in a pipeline of its own) plays the workgroups left behind in
// turn until every one is done, then writes the interchanges and info and moves the pivot
// rows' block (SOLVE's strips reset the slots for the next panel).
// Workgroups are never more than one column apart (a column's step needs every
// workgroup's candidate for it), and a candidate is never withdrawn within a panel, so
// each of FINISH's rounds moves the least progress on: nb rounds at most.

#ifdef F64
const VALUE_WORDS: u32 = 3u;

fn is_ready(word: u32) -> bool {
    return (word & TOP_BIT) == 0u;
}

fn publish_value(w: u32, v: Real) {
    let bits = bitcast<u64>(v);
    let words = encode_f64_bits(vec2<u32>(u32(bits & 0xfffffffflu), u32(bits >> 32u)));
    atomicStore(&cand[w], words.x);
    atomicStore(&cand[w + 1u], words.y);
    atomicStore(&cand[w + 2u], words.z);
}

fn staged_value(s: u32) -> Real {
    let bits = decode_f64_bits(stage[s], stage[s + 1u], stage[s + 2u]);
    return bitcast<f64>((u64(bits.y) << 32u) | u64(bits.x));
}
#else
const VALUE_WORDS: u32 = 1u;

fn is_ready(word: u32) -> bool {
    return word != NOT_READY;
}

fn publish_value(w: u32, v: Real) {
    atomicStore(&cand[w], f32_word(bitcast<u32>(v)));
}

fn staged_value(s: u32) -> Real {
    return bitcast<f32>(stage[s]);
}
#endif

// A candidate slot: its row, then the row's NB values.
const SLOT_WORDS: u32 = 1u + NB * VALUE_WORDS;
// The row of a workgroup with none left to offer (all picked, or past n): ready in both
// encodings.
const NO_ROW: u32 = 0x7ffffffeu;

fn slot_word(m: u32, k: u32, g: u32) -> u32 {
    return m * params.stride + params.src + (k * params.tiles + g) * SLOT_WORDS;
}

fn pick_word(m: u32, k: u32) -> u32 {
    return m * params.stride + params.dst + k;
}

fn progress_word(m: u32, g: u32) -> u32 {
    return m * params.stride + params.dst + NB + g;
}

fn publish_block(w: u32, b: u32, v: vec4<Real>) {
    for (var c = 0u; c < 4u; c++) {
        publish_value(w + 1u + (4u * b + c) * VALUE_WORDS, v[c]);
    }
}

fn publish_candidate(w: u32, row: u32, r0: vec4<Real>, r1: vec4<Real>, r2: vec4<Real>, r3: vec4<Real>,
                     r4: vec4<Real>, r5: vec4<Real>, r6: vec4<Real>, r7: vec4<Real>) {
    publish_block(w, 0u, r0);
    publish_block(w, 1u, r1);
    publish_block(w, 2u, r2);
    publish_block(w, 3u, r3);
    publish_block(w, 4u, r4);
    publish_block(w, 5u, r5);
    publish_block(w, 6u, r6);
    publish_block(w, 7u, r7);
    atomicStore(&cand[w], row);
}

// A workgroup's candidate published by the lanes of the subgroup that holds it (the lane
// where `holds`), a value each, with the row: one lane's 33 stores (97 in f64), one after
// another, were on every step's path (H200, 4096²: 11.86 → 11.24 ms, benches/NOTES.md
// session 65). Called by every lane.
fn publish_spread(w: u32, holds: bool, row: u32, lane: Lane, r0: vec4<Real>, r1: vec4<Real>, r2: vec4<Real>,
                  r3: vec4<Real>, r4: vec4<Real>, r5: vec4<Real>, r6: vec4<Real>, r7: vec4<Real>) {
#ifdef SUBGROUP
    let holders = subgroupBallot(holds);
    if all(holders == vec4<u32>(0u)) {
        return;
    }
    let holder = first_lane(holders);
    let v0 = subgroupShuffle(r0, holder);
    let v1 = subgroupShuffle(r1, holder);
    let v2 = subgroupShuffle(r2, holder);
    let v3 = subgroupShuffle(r3, holder);
    let v4 = subgroupShuffle(r4, holder);
    let v5 = subgroupShuffle(r5, holder);
    let v6 = subgroupShuffle(r6, holder);
    let v7 = subgroupShuffle(r7, holder);
    for (var c = lane.sg_lane; c < NB; c += lane.sg_size) {
        publish_value(w + 1u + c * VALUE_WORDS, block_column(v0, v1, v2, v3, v4, v5, v6, v7, c));
    }
    if lane.sg_lane == 0u {
        atomicStore(&cand[w], row);
    }
#else
    if holds {
        publish_candidate(w, row, r0, r1, r2, r3, r4, r5, r6, r7);
    }
#endif
}

// Block b of the staged candidate whose slot starts at stage word s.
fn staged_block(s: u32, b: u32) -> vec4<Real> {
    let v = s + 1u + 4u * b * VALUE_WORDS;
    return vec4<Real>(staged_value(v), staged_value(v + VALUE_WORDS), staged_value(v + 2u * VALUE_WORDS),
                      staged_value(v + 3u * VALUE_WORDS));
}

// Whether any lane saw `missing` (uniform; one barrier).
fn any_lane(missing: bool, lane: Lane) -> bool {
    if missing {
        atomicOr(&stage_missing, 1u);
    }
    workgroupBarrier();
    if lane.index == 0u {
        stage_flag = atomicExchange(&stage_missing, 0u);
    }
    return workgroupUniformLoad(&stage_flag) != 0u;
}

// Waits for every workgroup's candidate for column k, at most `polls` polls, each reading
// every word into `stage` (four loads issued before any is looked at: a branch on a loaded
// word would wait for it); whether all arrived (uniform). With subgroups each subgroup polls
// its own words (its lanes', WG_SIZE apart) until they are all ready, with no barrier between
// its polls, and the workgroup meets once after: a poll by the whole workgroup took three
// barriers.
fn gather(m: u32, k: u32, lane: Lane, polls: u32) -> bool {
#ifdef SUBGROUP
    var ready = false;
    for (var poll = 0u; poll < polls && !ready; poll++) {
        ready = subgroupAll(!poll_words(m, k, lane));
    }
    if !ready && lane.sg_lane == 0u {
        atomicOr(&gather_late, 1u);
    }
    // (Its barriers also show every subgroup's stage words to every lane.)
    let late = workgroupUniformLoad(&gather_late) != 0u;
    // Every lane has read the flag; the next gather's first write follows a barrier.
    if lane.index == 0u {
        atomicStore(&gather_late, 0u);
    }
    return !late;
#else
    for (var poll = 0u; poll < polls; poll++) {
        if !any_lane(poll_words(m, k, lane), lane) {
            return true;
        }
    }
    return false;
#endif
}

// One poll of the lane's words of the candidate slots for column k into `stage`: whether any
// is not ready yet.
fn poll_words(m: u32, k: u32, lane: Lane) -> bool {
    let base = slot_word(m, k, 0u);
    let words = params.tiles * SLOT_WORDS;
    var missing = false;
    for (var w0 = lane.index; w0 < words; w0 += 4u * WG_SIZE) {
        let w1 = w0 + WG_SIZE;
        let w2 = w1 + WG_SIZE;
        let w3 = w2 + WG_SIZE;
        // Past the words: a ready stand-in, loaded from the last word.
        let v0 = atomicLoad(&cand[base + w0]);
        let v1 = select(0u, atomicLoad(&cand[base + min(w1, words - 1u)]), w1 < words);
        let v2 = select(0u, atomicLoad(&cand[base + min(w2, words - 1u)]), w2 < words);
        let v3 = select(0u, atomicLoad(&cand[base + min(w3, words - 1u)]), w3 < words);
        stage[w0] = v0;
        if w1 < words { stage[w1] = v1; }
        if w2 < words { stage[w2] = v2; }
        if w3 < words { stage[w3] = v3; }
        missing = missing | !is_ready(v0) | !is_ready(v1) | !is_ready(v2) | !is_ready(v3);
    }
    return missing;
}

// The best of the staged candidates for column k, as (key, workgroup): the least workgroup on
// equal keys, which holds the least row (workgroups hold ascending rows).
fn staged_best(k: u32, lane: Lane) -> Best {
    var best = Best(KEY_NONE, NONE);
#ifdef SUBGROUP
    let first = lane.sg_lane;
    let step = lane.sg_size;
#else
    let first = 0u;
    let step = 1u;
#endif
    for (var g = first; g < params.tiles; g += step) {
        let s = g * SLOT_WORDS;
        let key = select(pivot_key(staged_value(s + 1u + k * VALUE_WORDS)), KEY_USED, stage[s] == NO_ROW);
        let other = Best(key, g);
        if beats(other, best) {
            best = other;
        }
    }
#ifdef SUBGROUP
    return subgroup_best(best.key, best.slot);
#else
    return best;
#endif
}

// Plays workgroup g's part of the panel: its rows from A (a lane each; where `resume`, with
// the steps before its stored progress applied, else from column 0), then each column's step
// while every workgroup's candidate for it arrives within `polls` polls; stores its rows and
// progress and returns the progress (uniform).
fn advance(m: u32, g: u32, lane: Lane, polls: u32, resume: bool) -> u32 {
    let nb = params.nb;
    var k = 0u;
    // Workgroup memory starts undefined (pipelines are built without its zero fill); the
    // first gather's flags are cleared before group_argmax's barrier.
    if lane.index == 0u {
        atomicStore(&gather_late, 0u);
        atomicStore(&stage_missing, 0u);
    }
    if resume {
        // (Earlier plays by this workgroup's other lanes wrote the words read here.)
        storageBarrier();
        if lane.index == 0u {
            stage_flag = atomicLoad(&cand[progress_word(m, g)]);
        }
        k = workgroupUniformLoad(&stage_flag);
        if k >= nb {
            return k;
        }
        if lane.index < k {
            picks[lane.index] = atomicLoad(&cand[pick_word(m, lane.index)]);
        }
        workgroupBarrier();
    }
    let i = params.j0 + g * WG_SIZE + lane.index;
    let exists = i < params.n;
    var r0 = vec4<Real>(0.0);
    var r1 = r0;
    var r2 = r0;
    var r3 = r0;
    var r4 = r0;
    var r5 = r0;
    var r6 = r0;
    var r7 = r0;
    if exists {
        load_row(m, i, params.j0, &r0, &r1, &r2, &r3, &r4, &r5, &r6, &r7);
    }
    // (A resumed workgroup's rows were stored with it.)
    if params.ahead != 0u && !resume {
        take_previous(m, i, exists, lane, &r0, &r1, &r2, &r3, &r4, &r5, &r6, &r7);
    }
    var used = !exists;
    for (var s = 0u; s < k; s++) {
        used = used || picks[s] == i;
    }
    // Column k of the row (each step returns the next; a used row's is never read).
    var x = block_column(r0, r1, r2, r3, r4, r5, r6, r7, k);
    loop {
        // This workgroup's candidate for column k (published again on a resume: the same
        // words).
        let mine = group_argmax(select(pivot_key(x), KEY_USED, used), i, lane, k);
        let w = slot_word(m, k, g);
        if mine.key == KEY_USED {
            if lane.index == 0u {
                let zero = vec4<Real>(0.0);
                publish_candidate(w, NO_ROW, zero, zero, zero, zero, zero, zero, zero, zero);
            }
        } else {
            publish_spread(w, i == mine.slot, mine.slot, lane, r0, r1, r2, r3, r4, r5, r6, r7);
        }
        if !gather(m, k, lane, polls) {
            break;
        }
        let best = staged_best(k, lane);
        let found = best.key != KEY_USED;
        let s = select(0u, best.slot * SLOT_WORDS, found);
        let row = stage[s];
        if lane.index == 0u {
            atomicStore(&cand[pick_word(m, k)], select(NONE, row, found));
        }
        let pivot = staged_value(s + 1u + k * VALUE_WORDS);
        used = used || (found && i == row);
        // A zero pivot (the column is zero on every row left): nothing to eliminate.
        if found && !(pivot == 0.0) {
            if !used {
                x = step_row(&r0, &r1, &r2, &r3, &r4, &r5, &r6, &r7, k, x / pivot, FROM_STAGE, s);
            }
        } else {
            x = block_column(r0, r1, r2, r3, r4, r5, r6, r7, k + 1u);
        }
        k += 1u;
        if k == nb {
            break;
        }
    }
    if exists {
        store_row(m, i, params.j0, r0, r1, r2, r3, r4, r5, r6, r7);
    }
    if lane.index == 0u {
        atomicStore(&cand[progress_word(m, g)], k);
    }
    return k;
}

// The previous panel's update of a cooperative panel's columns where that panel's GEMM runs
// beside this one (`params.ahead`; every lane calls it, after loading its row): its TRSM
// has left U12 in A (rows jk …, this panel's columns), which goes to the GEMM's stage, and
// each row takes its part as a look-ahead round's rows do (take_update). The GEMM's tiles
// after the panel's workgroups update the columns right of the panel.
fn take_previous(m: u32, i: u32, exists: bool, lane: Lane, r0: ptr<function, vec4<Real>>,
                 r1: ptr<function, vec4<Real>>, r2: ptr<function, vec4<Real>>, r3: ptr<function, vec4<Real>>,
                 r4: ptr<function, vec4<Real>>, r5: ptr<function, vec4<Real>>, r6: ptr<function, vec4<Real>>,
                 r7: ptr<function, vec4<Real>>) {
    let jk = params.j0 - NB;
    for (var e = lane.index; e < TOP_BLOCKS; e += WG_SIZE) {
        gemm_stage[U_AT + e] = load_block_at(m, jk + e / 8u, params.j0, e % 8u);
    }
    workgroupBarrier();
    if exists {
        take_update(m, i, jk, r0, r1, r2, r3, r4, r5, r6, r7);
    }
}

// The previous panel's update beside a cooperative panel (`params.strips` tiles a matrix):
// its GEMM on the columns right of this panel, whose own columns its rows take
// (take_previous).
fn previous_update() -> TrailingUpdate {
    return TrailingUpdate(params.j0 - NB, NB, params.j0 + params.nb);
}

// FINISH for matrix m: the workgroups the cooperative dispatch left behind, played in turn
// (a single poll a wait: every other is stopped) until all are done; then the record (info,
// the interchanges) and the panel's own columns' moves. (SOLVE's strips reset the slots.)
fn finish(m: u32, lane: Lane) {
    let nb = params.nb;
    let groups = params.tiles;
    // Workgroup memory starts undefined: a stale flag made every FINISH replay its
    // workgroups once for nothing (+0.55 ms of 4096², benches/NOTES.md session 62).
    if lane.index == 0u {
        atomicStore(&stage_missing, 0u);
    }
    workgroupBarrier();
    for (var round = 0u; round <= nb; round++) {
        var behind = false;
        for (var g = lane.index; g < groups; g += WG_SIZE) {
            behind = behind || atomicLoad(&cand[progress_word(m, g)]) < nb;
        }
        if !any_lane(behind, lane) {
            break;
        }
        for (var g = 0u; g < groups; g++) {
            advance(m, g, lane, 1u, true);
        }
    }
    storageBarrier();
    // The panel's own columns' rows where its interchanges take them (its workgroups stored
    // them where they were), so that SOLVE's strips read L11 in place. Every row that moves is
    // loaded before the record and stored after it: lane k < nb the pick of column k (to row
    // j0 + k), whose column k is the zero pivots' test; lane NB + s row j0 + s unless a pick
    // (where the interchanges take it).
    let j0 = params.j0;
    let k = lane.index;
    var row = NONE;
    if k < nb {
        row = atomicLoad(&cand[pick_word(m, k)]);
        picks[k] = row;
    }
    workgroupBarrier();
    if k >= NB && k < NB + nb {
        row = j0 + k - NB;
        for (var t = 0u; t < nb; t++) {
            if picks[t] == row {
                row = NONE;
            }
        }
    }
    var r0 = vec4<Real>(0.0);
    var r1 = r0;
    var r2 = r0;
    var r3 = r0;
    var r4 = r0;
    var r5 = r0;
    var r6 = r0;
    var r7 = r0;
    if row != NONE {
        load_row(m, row, j0, &r0, &r1, &r2, &r3, &r4, &r5, &r6, &r7);
    }
    // The first zero pivot, kept as nb − its column by atomicMax (the flag rests at 0).
    if k < nb && row != NONE && block_column(r0, r1, r2, r3, r4, r5, r6, r7, k) == 0.0 {
        atomicMax(&stage_missing, nb - k);
    }
    workgroupBarrier();
    if lane.index == 0u {
        let first_zero = atomicExchange(&stage_missing, 0u);
        // The first panel starts the matrix's info; later panels keep the first zero.
        if j0 == 0u {
            info[m] = 0u;
        }
        if first_zero != 0u && info[m] == 0u {
            info[m] = j0 + nb - first_zero + 1u;
        }
    }
    interchanges_by_lanes(m, lane);
    // (Every load of A above before any store below.)
    storageBarrier();
    if row != NONE {
        let to = select(destination(row, NONE), j0 + k, k < nb);
        if to != row {
            store_row(m, to, j0, r0, r1, r2, r3, r4, r5, r6, r7);
        }
    }
}
#endif

// ---- Look-ahead: panel k's update beside panel k + 1's factorization ----
// Where panel k + 1 is one workgroup's round, panel k's update (panel k at column jk =
// params.j0 − NB; params.j0 is panel k + 1's) runs in strips of NB columns in the same
// dispatch as panel k + 1's factorization, its workgroups after the panel's: the panel's one
// workgroup no longer leaves the rest of the GPU idle, nor the update the panel's. Panel k's
// round stored its rows where its interchanges take them (`params.permute`), so its columns
// are final before that dispatch and only read in it. Panel k + 1's workgroup first applies
// panel k's interchanges to its own columns and solves their U12 (`top_ahead`), then its rows
// take the rest of their update as it loads them (`params.ahead`). A strip of the columns
// from c0:
//   moves  panel k's interchanges (the rows were left in place in these columns);
//   solve  U12 ← L11⁻¹·A12 on its rows jk … jk + NB − 1 (L11 from panel k's columns);
//   below  A22 ← A22 − L21·U12 on its rows from params.j0 on, a row a lane.
// Strips left of panel k only move rows. A strip keeps U12 in slot_rows[U_AT ..] and L11 in
// slot_rows[L_AT ..], a row's eight blocks after another's (the host sizes slot_rows for
// them).
const U_AT: u32 = 0u;
const L_AT: u32 = 8u * NB;

// Panel k's interchanges (swap_moves' tables) on `count` strips of NB columns from c0, a move
// of a strip a lane (WG_SIZE ≥ 2·NB·count): every moved row read, then written (a row may be
// both).
fn move_rows(m: u32, c0: u32, count: u32, lane: Lane) {
    let e = lane.index;
    let moving = e < 2u * NB * count && dst_row[e % (2u * NB)] != NONE;
    let c = c0 + (e / (2u * NB)) * NB;
    var r0 = vec4<Real>(0.0);
    var r1 = r0;
    var r2 = r0;
    var r3 = r0;
    var r4 = r0;
    var r5 = r0;
    var r6 = r0;
    var r7 = r0;
    if moving {
        load_row(m, src_row[e % (2u * NB)], c, &r0, &r1, &r2, &r3, &r4, &r5, &r6, &r7);
    }
    storageBarrier();
    if moving {
        store_row(m, dst_row[e % (2u * NB)], c, r0, r1, r2, r3, r4, r5, r6, r7);
    }
}

// Panel k's (at jk) interchanges on the strip at c0 (swap_moves' tables), then U12 ← L11⁻¹·A12
// there (solve_top). U12's rows are loaded from where the interchanges take them from, with L11
// and the moved rows, before any move is stored: one round trip to A fewer than loading them
// once the moves are done.
fn move_and_solve(m: u32, jk: u32, c0: u32, lane: Lane) {
    let e = lane.index;
    let moving = e < 2u * NB && dst_row[e] != NONE;
    var r0 = vec4<Real>(0.0);
    var r1 = r0;
    var r2 = r0;
    var r3 = r0;
    var r4 = r0;
    var r5 = r0;
    var r6 = r0;
    var r7 = r0;
    if moving {
        load_row(m, src_row[e], c0, &r0, &r1, &r2, &r3, &r4, &r5, &r6, &r7);
    }
    // slot_rows' blocks (U12's rows, then L11's) a lane holds: 2·TOP_BLOCKS / WG_SIZE ≤ 8. The
    // loop's bound is a constant of the pipeline, so `staged` can stay in registers. (The same
    // loads folded into move_rows, whose other callers took a bound of 0 chosen at run time,
    // measured +0.9% on the H200's 1024²: likely `staged` in local memory; benches/NOTES.md,
    // session 64.)
    var staged: array<vec4<Real>, 8>;
    let share = (2u * TOP_BLOCKS + WG_SIZE - 1u) / WG_SIZE;
    for (var q = 0u; q < share; q++) {
        let b = e + q * WG_SIZE;
        let t = (b / 8u) % NB;
        let row = select(jk + t, src_row[t], b < L_AT && src_row[t] != NONE);
        if b < 2u * TOP_BLOCKS {
            staged[q] = load_block_at(m, row, select(c0, jk, b >= L_AT), b % 8u);
        }
    }
    storageBarrier();
    if moving {
        store_row(m, dst_row[e], c0, r0, r1, r2, r3, r4, r5, r6, r7);
    }
    for (var q = 0u; q < share; q++) {
        let b = e + q * WG_SIZE;
        if b < 2u * TOP_BLOCKS {
            slot_rows[b] = staged[q];
        }
    }
    workgroupBarrier();
    solve_top(m, jk, c0, lane);
}

// U12 ← L11⁻¹·A12 on the strip at c0 from slot_rows (move_and_solve stages it): back to A, and
// into slot_rows[U_AT ..]. Row i loses L11[i][j] times row j for j = 0, 1, … in turn; a lane
// holds blocks of U12's rows in registers (one where WG_SIZE ≥ 8·NB), and a row's lanes
// publish it to workgroup memory once it is final. (Every block read, updated and written
// back in workgroup memory each step took 2–3% longer on the H200; a lane a column solving
// down its rows a third longer: benches/NOTES.md, sessions 58–59.)
const TOP_BLOCKS: u32 = 8u * NB;
// The most blocks a lane holds: WG_SIZE ≥ 64.
const TOP_SHARE: u32 = 4u;

fn solve_top(m: u32, jk: u32, c0: u32, lane: Lane) {
    let share = (TOP_BLOCKS + WG_SIZE - 1u) / WG_SIZE;
    // Block q of the lane is U12's block top_block(lane.index + q·WG_SIZE).
    var acc: array<vec4<Real>, TOP_SHARE>;
    for (var q = 0u; q < share; q++) {
        let e = lane.index + q * WG_SIZE;
        if e < TOP_BLOCKS {
            acc[q] = slot_rows[U_AT + top_block(e)];
        }
    }
#ifdef SUBGROUP
    // Rows in groups of four: e = lane.index + q·WG_SIZE = 32g + 4cb + r holds row 4g + r,
    // column block cb, so that a group's four rows of a column block lie in four neighbouring
    // lanes (one subgroup: WGSL's have 4 lanes or more). A group's rows are finished among
    // their lanes by shuffles, then published, and the later groups take the four at once:
    // NB / 4 barriers instead of NB − 1 (H200, 1024²: −1.6%, 100 × 256²: −3%;
    // benches/NOTES.md, session 61).
    let quad = lane.sg_lane & ~3u;
    for (var g = 0u; g < NB / 4u; g++) {
        for (var q = 0u; q < share; q++) {
            let e = lane.index + q * WG_SIZE;
            let mine = e < TOP_BLOCKS && e / 32u == g;
            let r = e % 4u;
            // Row 4g + r's L11 entries in the group's four columns.
            let l = slot_rows[L_AT + select(0u, (4u * g + r) * 8u + g, mine)];
            // Every lane shuffles (uniform control flow); the group's rows take what they need.
            let u0 = subgroupShuffle(acc[q], quad);
            if mine && r > 0u { acc[q] = fma(vec4<Real>(-l.x), u0, acc[q]); }
            let u1 = subgroupShuffle(acc[q], quad + 1u);
            if mine && r > 1u { acc[q] = fma(vec4<Real>(-l.y), u1, acc[q]); }
            let u2 = subgroupShuffle(acc[q], quad + 2u);
            if mine && r > 2u { acc[q] = fma(vec4<Real>(-l.z), u2, acc[q]); }
            if mine {
                slot_rows[U_AT + top_block(e)] = acc[q];
            }
        }
        workgroupBarrier();
        for (var q = 0u; q < share; q++) {
            let e = lane.index + q * WG_SIZE;
            if e < TOP_BLOCKS && e / 32u > g {
                let b = top_block(e);
                let l = slot_rows[L_AT + (b / 8u) * 8u + g];
                let u = U_AT + 4u * g * 8u + b % 8u;
                acc[q] = fma(vec4<Real>(-l.x), slot_rows[u], acc[q]);
                acc[q] = fma(vec4<Real>(-l.y), slot_rows[u + 8u], acc[q]);
                acc[q] = fma(vec4<Real>(-l.z), slot_rows[u + 16u], acc[q]);
                acc[q] = fma(vec4<Real>(-l.w), slot_rows[u + 24u], acc[q]);
            }
        }
    }
#else
    // A row of U12 final a step (row e / 8, column block e % 8).
    for (var j = 1u; j < NB; j++) {
        for (var q = 0u; q < share; q++) {
            let e = lane.index + q * WG_SIZE;
            // Row j − 1 is final.
            if e < TOP_BLOCKS && e / 8u == j - 1u {
                slot_rows[U_AT + e] = acc[q];
            }
        }
        workgroupBarrier();
        for (var q = 0u; q < share; q++) {
            let e = lane.index + q * WG_SIZE;
            let i = e / 8u;
            if e < TOP_BLOCKS && i >= j {
                let l = slot_rows[L_AT + i * 8u + (j - 1u) / 4u][(j - 1u) % 4u];
                acc[q] = fma(vec4<Real>(-l), slot_rows[U_AT + (j - 1u) * 8u + e % 8u], acc[q]);
            }
        }
    }
#endif
    for (var q = 0u; q < share; q++) {
        let e = lane.index + q * WG_SIZE;
        if e < TOP_BLOCKS {
            let b = top_block(e);
            slot_rows[U_AT + b] = acc[q];
            store_block_at(m, jk + b / 8u, c0, b % 8u, acc[q]);
        }
    }
    // (A strip's update reads U12 from slot_rows next.)
    workgroupBarrier();
}

// The U12 block (row · 8 + column block) that solve_top's block e is: with subgroups a
// group's four rows of a column block in neighbouring e, else row by row.
fn top_block(e: u32) -> u32 {
#ifdef SUBGROUP
    return (4u * (e / 32u) + e % 4u) * 8u + (e / 4u) % 8u;
#else
    return e;
#endif
}

// Row i's update by L21's block b (its row's columns jk + 4b …, in l): four rows of U12.
fn take_block(r0: ptr<function, vec4<Real>>, r1: ptr<function, vec4<Real>>, r2: ptr<function, vec4<Real>>,
              r3: ptr<function, vec4<Real>>, r4: ptr<function, vec4<Real>>, r5: ptr<function, vec4<Real>>,
              r6: ptr<function, vec4<Real>>, r7: ptr<function, vec4<Real>>, l: vec4<Real>, b: u32) {
    for (var q = 0u; q < 4u; q++) {
        let u = U_AT + (4u * b + q) * 8u;
        let x = vec4<Real>(-l[q]);
        *r0 = fma(x, u12_block(u), *r0);
        *r1 = fma(x, u12_block(u + 1u), *r1);
        *r2 = fma(x, u12_block(u + 2u), *r2);
        *r3 = fma(x, u12_block(u + 3u), *r3);
        *r4 = fma(x, u12_block(u + 4u), *r4);
        *r5 = fma(x, u12_block(u + 5u), *r5);
        *r6 = fma(x, u12_block(u + 6u), *r6);
        *r7 = fma(x, u12_block(u + 7u), *r7);
    }
}

// Block e of U12 (row · 8 + column block) where take_update reads it: slot_rows (rounds and
// strips, after solve_top), or in the cooperative variant the GEMM's stage, which the panel's
// own workgroups do not otherwise use (`take_previous`).
fn u12_block(e: u32) -> vec4<Real> {
#ifdef COOPERATIVE
    return gemm_stage[e];
#else
    return slot_rows[e];
#endif
}

// Row i (in r0 … r7) takes panel k's update: A22 ← A22 − L21·U12 (U12 by u12_block). L21's
// blocks are loaded four at a time, all four before any is used (a load a block waited out
// eight latencies a row; all eight at once would not fit 1,024 lanes' registers).
fn take_update(m: u32, i: u32, jk: u32, r0: ptr<function, vec4<Real>>, r1: ptr<function, vec4<Real>>,
               r2: ptr<function, vec4<Real>>, r3: ptr<function, vec4<Real>>, r4: ptr<function, vec4<Real>>,
               r5: ptr<function, vec4<Real>>, r6: ptr<function, vec4<Real>>, r7: ptr<function, vec4<Real>>) {
    for (var half = 0u; half < 8u; half += 4u) {
        let l0 = load_block_at(m, i, jk, half);
        let l1 = load_block_at(m, i, jk, half + 1u);
        let l2 = load_block_at(m, i, jk, half + 2u);
        let l3 = load_block_at(m, i, jk, half + 3u);
        take_block(r0, r1, r2, r3, r4, r5, r6, r7, l0, half);
        take_block(r0, r1, r2, r3, r4, r5, r6, r7, l1, half + 1u);
        take_block(r0, r1, r2, r3, r4, r5, r6, r7, l2, half + 2u);
        take_block(r0, r1, r2, r3, r4, r5, r6, r7, l3, half + 3u);
    }
}

// A22 ← A22 − L21·U12 on rows first … end − 1 of the strip at c0, a row a lane.
fn update_below(m: u32, jk: u32, c0: u32, first: u32, end: u32) {
    for (var i = first; i < end; i += WG_SIZE) {
        var r0: vec4<Real>;
        var r1: vec4<Real>;
        var r2: vec4<Real>;
        var r3: vec4<Real>;
        var r4: vec4<Real>;
        var r5: vec4<Real>;
        var r6: vec4<Real>;
        var r7: vec4<Real>;
        load_row(m, i, c0, &r0, &r1, &r2, &r3, &r4, &r5, &r6, &r7);
        take_update(m, i, jk, &r0, &r1, &r2, &r3, &r4, &r5, &r6, &r7);
        store_row(m, i, c0, r0, r1, r2, r3, r4, r5, r6, r7);
    }
}

// Panel k + 1's first step where panel k's update was deferred (`params.ahead`; every lane
// calls it, before the panel's rows are loaded): panel k's interchanges on the panel's
// columns, then their U12, left in slot_rows for `take_ahead`. In the panel's own workgroup,
// not a dispatch before it: one dispatch boundary and one reload of U12 fewer a panel
// (benches/NOTES.md, session 61).
fn top_ahead(m: u32, lane: Lane) {
    let jk = params.j0 - NB;
    swap_moves(m, jk, NB, lane);
    move_and_solve(m, jk, params.j0, lane);
}

// A look-ahead panel's row i (in r0 … r7, its panel columns) takes panel k's update
// (`params.ahead`; every lane calls it, after `top_ahead`): on the H200 as fast as a dispatch
// of its own for 1024² and 5% faster for 100 × 256² (benches/NOTES.md, session 58).
fn take_ahead(m: u32, i: u32, exists: bool, r0: ptr<function, vec4<Real>>, r1: ptr<function, vec4<Real>>,
              r2: ptr<function, vec4<Real>>, r3: ptr<function, vec4<Real>>, r4: ptr<function, vec4<Real>>,
              r5: ptr<function, vec4<Real>>, r6: ptr<function, vec4<Real>>, r7: ptr<function, vec4<Real>>) {
    if params.ahead == 0u {
        return;
    }
    if exists {
        take_update(m, i, params.j0 - NB, r0, r1, r2, r3, r4, r5, r6, r7);
    }
    // (The panel's steps reuse slot_rows.)
    workgroupBarrier();
}

// Strip s of matrix m in a look-ahead dispatch: the column blocks but panel k's and k + 1's.
fn strip(m: u32, s: u32, lane: Lane) {
    let jk = params.j0 - NB;
    let panel_k = jk / NB;
    let block = select(s + 2u, s, s < panel_k);
    let c0 = block * NB;
    swap_moves(m, jk, NB, lane);
    if block < panel_k {
        move_rows(m, c0, 1u, lane);
        return;
    }
    move_and_solve(m, jk, c0, lane);
    update_below(m, jk, c0, params.j0 + lane.index, params.n);
}

// SOLVE after a cooperative panel (at params.j0; FINISH moved its own columns' rows): strip s
// of the column blocks but the panel's takes the panel's interchanges, and right of the panel
// its U12 ← L11⁻¹·A12, as a look-ahead strip does (lu_blocked's SWAP and TRSM in one
// dispatch, U12 solved by groups of four rows instead of a lane a column down its 32 rows).
// Its strips also reset the cooperative exchange's slots to not ready for the next panel, a
// share each (`params.src`: where they start, `params.count`: their words), which FINISH's one
// workgroup did alone (4096²'s first panel: 66 stores a lane).
fn tall_strip(m: u32, s: u32, lane: Lane) {
    let share = (params.count + params.tiles - 1u) / params.tiles;
    let slots = m * params.stride + params.src;
    for (var w = s * share + lane.index; w < min((s + 1u) * share, params.count); w += WG_SIZE) {
        atomicStore(&cand[slots + w], NOT_READY);
    }
    let j0 = params.j0;
    let panel = j0 / NB;
    let block = select(s + 1u, s, s < panel);
    let c0 = block * NB;
    swap_moves(m, j0, params.nb, lane);
    if block < panel {
        move_rows(m, c0, 1u, lane);
        return;
    }
    move_and_solve(m, j0, c0, lane);
}

// The cooperative panel's variant holds its two steps only, the other the rest (each
// pipeline compiles only what it runs).
fn run(workgroup: u32, lane: Lane) {
#ifndef COOPERATIVE
    // A look-ahead dispatch: the workgroups after the panel's update strips.
    let panel_groups = params.batch * params.tiles;
    if params.strips > 0u && workgroup >= panel_groups {
        let s = workgroup - panel_groups;
        if s < params.batch * params.strips {
            strip(s / params.strips, s % params.strips, lane);
        }
        return;
    }
#endif
#ifdef COOPERATIVE
    if FINISHING {
        if workgroup < params.batch {
            finish(workgroup, lane);
        }
        return;
    }
    // The previous panel's GEMM beside the panel: the workgroups after the panel's.
    let panel_groups = params.batch * params.tiles;
    if workgroup >= panel_groups {
        let t = workgroup - panel_groups;
        if t < params.batch * params.strips {
            gemm(t / params.strips, t % params.strips, lane, previous_update());
        }
        return;
    }
#endif
    let m = workgroup / params.tiles;
    if m >= params.batch {
        return;
    }
    let tile = workgroup % params.tiles;
#ifdef COOPERATIVE
    advance(m, tile, lane, params.count, false);
#else
    switch params.step {
        case TOURNAMENT: { tournament(m, tile, lane); }
        case LOWER: { lower(m, tile, lane); }
        case SOLVE: { tall_strip(m, tile, lane); }
        default: { column(m, tile, lane); }
    }
#endif
}
