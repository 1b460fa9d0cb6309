// Sync-free sparse triangular solve (seed 003): `L·x = b` or `U·x = b` with the triangle in
// CSR, one item (row, right-hand side) per lane, no analysis phase.
//
// Teams (a subgroup each with SUBGROUP, else the workgroup) take consecutive positions from
// a ticket counter, so a team only ever waits on positions whose team has already started:
// in row order (reversed for U), or in level order once the levels are known
// (`params.level_order`, `order` from the level sets). Each lane walks its row's entries
// towards the diagonal, reading each predecessor's published value; it never blocks on one:
// a lane whose predecessor is not published yet returns, and the team goes round again. So
// no lane spins on another lane of its own subgroup (the whole team runs every round, and a
// value published in one round is read in a later one), and the spin is bounded: after
// `spin_limit` rounds in which no lane of the team got further, the team leaves its
// unsolved items, notes the lowest position, and exits. The steps shader then sizes a
// relaunch from that position (an indirect dispatch) until none remain; each launch solves
// at least the lowest unsolved item, whose predecessors are all published.
//
// Values and their ready state travel in the same atomic words (shared/sptrsv_words.wgsl).
// With `params.capture`, each item also publishes its level, 1 + the largest level of its
// predecessors: the level sets later solves run in.
//
// An adapter may cap the loop iterations of an invocation (llvmpipe ends every loop of an
// invocation after 65,535 iterations in all, silently). There the host builds LOOP_BUDGET in:
// a team counts its iterations and leaves like a team that ran out of spins before it gets
// to the cap (`params.loop_budget`), so that no loop of the solve is ever cut short (a
// lavapipe workgroup team whose 8-lane chunks ran out at different rounds fell out of step
// at its barriers and took tickets it never solved).
//
// Bad input never hangs: an entry on the wrong side of the diagonal is skipped (and reported
// unless `other_triangle` says the matrix holds one on purpose), a missing diagonal divides
// by zero, and the first offending row is noted in the status for the host to report.
#import real
#import sptrsv_words

struct Params {
    rows: u32,
    // Right-hand sides: item (row, c) is element row·k + c of b and x.
    k: u32,
    items: u32,
    spin_limit: u32,
    upper: u32,
    unit_diagonal: u32,
    // Values read through `perm` (the transpose of a stored matrix).
    permuted: u32,
    level_order: u32,
    capture: u32,
    // Delay after a round in which no lane of the team got further: `backoff` × 2^stalls
    // (at most 32×) steps of back_off, so that waiting teams take fewer of the issue slots
    // and memory requests of the teams they wait on. 0: poll back to back.
    backoff: u32,
    // Entries on the other side of the diagonal belong to another factor (an incomplete LU
    // kept in one matrix): skipped without a problem.
    other_triangle: u32,
    // A team takes tickets until none are left (a launch with fewer workgroups than
    // tickets), rather than one.
    persistent: u32,
    // LOOP_BUDGET: the most loop iterations a team runs in a launch before it leaves (the
    // adapter's cap less what two rounds may add).
    loop_budget: u32,
    // LONG_ROWS: every long row's block is taken by its own lane alone, as where the team is
    // not whole (tests force it: the same bits as the team's).
    lone_blocks: u32,
    // LONG_ROWS: a row is long past SHORT_BLOCK_PER_LANE entries a lane (its last blocks
    // short), not past BLOCK_PER_LANE.
    short_blocks: u32,
    // The most batches of entries a lane's walk takes in a round (NONE: no limit): a lane
    // that walks on holds up its whole team (a subgroup runs its lanes' walks together), so
    // that a teammate that waits on a predecessor polls only after it.
    walk_batches: u32,
    // LONG_ROWS: a stalled block's last entry is checked before the block is read again.
    block_hint: u32,
    // SUBGROUP, row order: tickets are segments of items (`team_starts`, from
    // sptrsv_segments.wgsl), this many; long rows' items have segments of their own. 0:
    // tickets are items, `lanes` of them each.
    segments: u32,
}

var<immediate> params: Params;
@group(0) @binding(0) var<storage, read> row_offsets: array<u32>;
@group(0) @binding(1) var<storage, read> col_indices: array<u32>;
@group(0) @binding(2) var<storage, read> values: array<Real>;
@group(0) @binding(3) var<storage, read> perm: array<u32>;
@group(0) @binding(4) var<storage, read> order: array<u32>;
@group(0) @binding(5) var<storage, read> b: array<Real>;
@group(0) @binding(6) var<storage, read_write> x: array<atomic<u32>>;
@group(0) @binding(7) var<storage, read_write> aux: array<atomic<u32>>;
@group(0) @binding(8) var<storage, read_write> status: array<atomic<u32>>;
// With `params.segments`: each segment's first item, then `items` (one past the last).
@group(0) @binding(9) var<storage, read> team_starts: array<u32>;

override WG_SIZE: u32 = 64u;

// Entries each lane takes of a long row's block (SUBGROUP with LONG_ROWS): the team walks
// rows longer than one block together, a block of BLOCK_PER_LANE · subgroup size entries at a
// time. 32 rather than 8: R-MAT's repeated solve 18.3 → 14.9 ms on the H100, the row-order
// one 52.9 → 39.9 (fewer rounds for its hub rows), nothing else slower (benches/NOTES.md,
// session 41). The host leaves LONG_ROWS out where no row is that long (with short blocks,
// below: longer than a short block), the same sums, the team never helping: its eight
// entries in flight cost registers, and registers bound the resident teams, the window a
// row-order solve advances by (72 → 56 a lane: lap3d's row-order solve 7.9 → 6.9 ms on the
// H200, benches/NOTES.md session 48). Mirrored by the host's `BLOCK_PER_LANE`
// (src/ops/sptrsv.rs).
const BLOCK_PER_LANE: u32 = 32u;
// With `params.short_blocks`, the last blocks of a long row, once no more than one block of
// BLOCK_PER_LANE is left, and the length past which a row is long: SHORT_BLOCK_PER_LANE ·
// subgroup size (256 entries on NVIDIA). What is left a lane walks alone, four entries a step
// (two waits for memory each): the quick suite's dense row of 512 entries took 171 µs
// against cuSPARSE's 29, and 37 with short blocks. The host sets it only where a few rows
// are that long: R-MAT's many were slower (benches/NOTES.md session 70). Mirrored by the
// host's `SHORT_BLOCK_PER_LANE`. With short blocks a long row is marked in `left`
// (LONG_ITEM): its lane never walks it, and its last block is cut at the row's end (lanes past
// it take nothing), so no tail is left for one lane (the quick suite's upper dense row left
// 236 entries, 59 steps).
const SHORT_BLOCK_PER_LANE: u32 = 8u;
const LONG_ITEM: u32 = 0x80000000u;

const KIND_DEPENDENCY: u32 = 0u;
const KIND_DIAGONAL: u32 = 1u;
const KIND_OUTSIDE: u32 = 2u;

// An entry of an item's row, read: a dependency (with its predecessor's published value),
// the pivot, or an entry outside the triangle.
struct Entry {
    kind: u32,
    col: u32,
    value: Acc,
    predecessor: Published,
}

// Kept from dead-code elimination: the back-off loop's result.
var<private> back_off_sink: u32;

#ifdef LOOP_BUDGET
// Loop iterations: this lane's in the current round (lanes differ by their walks), and the
// team's in the launch (each round adds the team's most, and ROUND_LOOPS for the round's
// loops that ran with no lane in them: llvmpipe counts those too).
var<private> round_steps: u32;
var<private> loop_steps: u32;
const ROUND_LOOPS: u32 = 10u;
#endif

// Counts `n` loop iterations of this lane's round (LOOP_BUDGET).
fn count_steps(n: u32) {
#ifdef LOOP_BUDGET
    round_steps += n;
#endif
}

// One lane's item: its entries are walked from `next` towards the diagonal (up for L, down
// for U), `left` of them to go.
struct Item {
    row: u32,
    rhs: u32,
    next: u32,
    left: u32,
    sum: Acc,
    diagonal: Acc,
    has_diagonal: bool,
    // The largest level among the predecessors read so far (the item's own is one more).
    level: u32,
    problem: u32,
    done: bool,
    // Solved by this launch (not found solved by an earlier one): then `x` and `level` + 1
    // are what it published.
    solved_here: bool,
    x: Acc,
    // b's element, read when the item starts.
    b_value: Acc,
    // The entry at `next` when the walk stopped at it: a dependency whose predecessor was
    // not published, kept so that `forward` can take it without reading memory.
    pending: bool,
    pending_col: u32,
    pending_value: Acc,
    // The columns of the entries from `cached_from` on (`cached_count` of them, at most 4)
    // where the walk last stopped: a walk that resumes there waits on one load an entry
    // (its predecessor's word), not on its column first and then that word (H200: lap2d's
    // level-order solve 6.8 → 5.7 ms, lap3d's 1.10 → 1.00; benches/NOTES.md session 48).
    cached: vec4<u32>,
    cached_from: u32,
    cached_count: u32,
    // LONG_ROWS: the team read this row's next block and found a predecessor in it not
    // published; until the block is taken, its last entry is checked before it is read again.
    block_stalled: bool,
}

struct Published {
    ready: bool,
    value: Acc,
    level: u32,
}

#ifdef F64
// The three words loaded before any is tested (a branch on the first would hold the other
// two back). Within a launch a word never turns DECODED (FINISH runs between launches), so
// the order of the loads does not matter. Not ready: value and level are meaningless.
fn published(j: u32) -> Published {
    let w2 = atomicLoad(&aux[j]);
    let w0 = atomicLoad(&x[2u * j]);
    let w1 = atomicLoad(&x[2u * j + 1u]);
    let decoded = (w2 & DECODED) != 0u;
    let ready = ((w2 & TOP_BIT) == 0u) & (decoded | (((w0 | w1) & TOP_BIT) == 0u));
    let bits = select(decode_f64_bits(w0, w1, w2), vec2<u32>(w0, w1), decoded);
    return Published(ready, bitcast<f64>((u64(bits.y) << 32u) | u64(bits.x)), f64_level(w2));
}

fn publish(j: u32, value: Acc, level: u32) {
    let bits = bitcast<u64>(value);
    let words = encode_f64_bits(vec2<u32>(u32(bits & 0xfffffffflu), u32(bits >> 32u)));
    atomicStore(&x[2u * j], words.x);
    atomicStore(&x[2u * j + 1u], words.y);
    atomicStore(&aux[j], words.z | (min(level, LEVEL_MASK) << 2u));
}
#else
fn published(j: u32) -> Published {
    let w = atomicLoad(&x[j]);
    var level = 0u;
    if params.capture != 0u {
        level = atomicLoad(&aux[j]);
    }
    return Published(w != NOT_READY && level != NOT_READY, bitcast<f32>(w), level);
}

fn publish(j: u32, value: Acc, level: u32) {
    if params.capture != 0u {
        atomicStore(&aux[j], level);
    }
    atomicStore(&x[j], f32_word(bitcast<u32>(value)));
}
#endif

fn entry_value(e: u32) -> Acc {
    if params.permuted != 0u {
        return Acc(values[perm[e]]);
    }
    return Acc(values[e]);
}

// The entry `offset` places after `e` in walking order (towards the diagonal).
fn walk(e: u32, offset: u32) -> u32 {
    return select(e + offset, e - offset, params.upper != 0u);
}

// Entry `e` of the item's row, its column `col` loaded already (a batch's columns are loaded
// before any is used). No branch on what was loaded: a lane's loads are issued back to back,
// and a branch on a loaded word would wait for it first. So every entry reads the x slot of
// its column, the pivot's and an outside entry's too (a slot that exists, and unused).
fn read_entry(item: ptr<function, Item>, e: u32, col: u32) -> Entry {
    var entry: Entry;
    let row = (*item).row;
    entry.col = col;
    entry.value = entry_value(e);
    let dependency = col != row && (col < row) == (params.upper == 0u);
    entry.kind = select(select(KIND_OUTSIDE, KIND_DIAGONAL, col == row), KIND_DEPENDENCY, dependency);
    entry.predecessor = published(col * params.k + (*item).rhs);
    return entry;
}

// Uses entry `e` (read as `entry`) and steps past it; false when its predecessor is not
// published yet.
fn take(item: ptr<function, Item>, e: u32, entry: Entry) -> bool {
    switch entry.kind {
        case KIND_DEPENDENCY: {
            if !entry.predecessor.ready {
                (*item).pending = true;
                (*item).pending_col = entry.col;
                (*item).pending_value = entry.value;
                return false;
            }
            (*item).sum += entry.value * entry.predecessor.value;
            (*item).level = max((*item).level, entry.predecessor.level);
        }
        case KIND_DIAGONAL: {
            (*item).diagonal = entry.value;
            (*item).has_diagonal = true;
        }
        default: {
            if params.other_triangle == 0u {
                (*item).problem = PROBLEM_OUTSIDE_TRIANGLE;
            }
        }
    }
    (*item).next = walk(e, 1u);
    (*item).left -= 1u;
    return true;
}

// The item at position `pos`; done already when past the team's end (`team_end`) or solved by
// an earlier launch.
fn start(pos: u32, team_end: u32, long_row: u32) -> Item {
    var item: Item;
    item.done = true;
    if pos >= team_end {
        return item;
    }
    let row_pos = pos / params.k;
    item.rhs = pos - row_pos * params.k;
    item.row = row_pos;
    if params.level_order != 0u {
        item.row = order[row_pos];
    } else if params.upper != 0u {
        item.row = params.rows - 1u - row_pos;
    }
    let index = item.row * params.k + item.rhs;
    if published(index).ready {
        return item;
    }
    let first = row_offsets[item.row];
    let end = row_offsets[item.row + 1u];
    item.left = end - first;
    item.next = select(first, end - 1u, params.upper != 0u);
    item.done = false;
    item.b_value = Acc(b[index]);
    // The diagonal, where it ends the walk (sorted columns), is taken now: a row whose last
    // dependency then arrives by `forward` finishes without reading memory.
    let last = select(end - 1u, first, params.upper != 0u);
    if end > first && col_indices[last] == item.row {
        item.diagonal = entry_value(last);
        item.has_diagonal = true;
        item.left -= 1u;
    }
    if params.short_blocks != 0u && item.left > long_row {
        item.left |= LONG_ITEM;
    }
    return item;
}

// x = (b - sum) / diagonal: the same expression wherever an item is solved (walked or
// forwarded), so the bits never depend on the path.
fn solved_value(item: ptr<function, Item>) -> Acc {
    let value = (*item).b_value - (*item).sum;
    if params.unit_diagonal == 0u {
        // A missing diagonal is 0 here: the result is ±Inf or NaN, and `report` notes it.
        return value / (*item).diagonal;
    }
    return value;
}

// Marks the item solved with `value` and publishes it with its level (`report` notes its
// problem, off the chain that `forward` runs).
fn settle(item: ptr<function, Item>, value: Acc) {
    (*item).x = value;
    (*item).done = true;
    (*item).solved_here = true;
    publish((*item).row * params.k + (*item).rhs, value, (*item).level + 1u);
}

// Notes a settled item's problem, if any (the first offending row is kept).
fn report(item: ptr<function, Item>) {
    if params.unit_diagonal == 0u {
        if !(*item).has_diagonal {
            (*item).problem = select((*item).problem, PROBLEM_MISSING_DIAGONAL, (*item).problem == 0u);
        } else if (*item).diagonal == 0.0 {
            (*item).problem = select((*item).problem, PROBLEM_ZERO_PIVOT, (*item).problem == 0u);
        }
    }
    if (*item).problem != 0u {
        atomicMin(&status[STATUS_PROBLEM], 4u * (*item).row + (*item).problem);
    }
}

// Solves a walked item: x published with its level, its problem noted.
fn finish(item: ptr<function, Item>) {
    settle(item, solved_value(item));
    report(item);
}

// The column of entry `e`, `offset` places into a batch that starts at `first`: from the
// item's cache where the walk stopped there before, else loaded.
fn column(item: ptr<function, Item>, first: u32, offset: u32, e: u32) -> u32 {
    if (*item).cached_from == first && offset < (*item).cached_count {
        return (*item).cached[offset];
    }
    return col_indices[e];
}

// Notes the columns from the entry the walk stopped at (`e`) to the batch's end.
fn stash(item: ptr<function, Item>, e: u32, columns: vec4<u32>, count: u32) {
    (*item).cached_from = e;
    (*item).cached = columns;
    (*item).cached_count = count;
}

// Walks the item's entries as far as published predecessors allow, four at a time and at
// most `params.walk_batches` batches a round; whether it got further. Rows longer than a block
// are left to the team (long_row_block) until one block or less remains, so that how a row's
// sum is grouped never depends on timing. The cap keeps rounds short for the teammates: the
// team's round lasts as long as its longest walk, and a lane whose predecessor was published
// meanwhile sees it only in the next round (H200: R-MAT s21's repeated solves 12.3 → 8.0 ms
// and 24.7 → 14.6 with 4 batches; benches/NOTES.md, session 72).
fn advance(item: ptr<function, Item>, long_row: u32) -> bool {
    var progressed = false;
    (*item).pending = false;
    var batches = 0u;
    loop {
        count_steps(1u);
        let left = (*item).left;
        if left == 0u {
            finish(item);
            return true;
        }
        if left > long_row || batches >= params.walk_batches {
            return progressed;
        }
        batches += 1u;
        let e0 = (*item).next;
        let e1 = walk(e0, 1u);
        let e2 = walk(e0, 2u);
        let e3 = walk(e0, 3u);
        // All reads first, then use: the columns, then their predecessors, then the takes,
        // so that each kind of load is in flight together.
        let c0 = column(item, e0, 0u, e0);
        var c1 = 0u;
        var c2 = 0u;
        var c3 = 0u;
        if left > 1u {
            c1 = column(item, e0, 1u, e1);
        }
        if left > 2u {
            c2 = column(item, e0, 2u, e2);
        }
        if left > 3u {
            c3 = column(item, e0, 3u, e3);
        }
        let a = read_entry(item, e0, c0);
        var b: Entry;
        var c: Entry;
        var d: Entry;
        if left > 1u {
            b = read_entry(item, e1, c1);
        }
        if left > 2u {
            c = read_entry(item, e2, c2);
        }
        if left > 3u {
            d = read_entry(item, e3, c3);
        }
        let batch = min(left, 4u);
        if !take(item, e0, a) {
            stash(item, e0, vec4<u32>(c0, c1, c2, c3), batch);
            return progressed;
        }
        progressed = true;
        if left > 1u && !take(item, e1, b) {
            stash(item, e1, vec4<u32>(c1, c2, c3, 0u), batch - 1u);
            return true;
        }
        if left > 2u && !take(item, e2, c) {
            stash(item, e2, vec4<u32>(c2, c3, 0u, 0u), batch - 2u);
            return true;
        }
        if left > 3u && !take(item, e3, d) {
            stash(item, e3, vec4<u32>(c3, 0u, 0u, 0u), 1u);
            return true;
        }
    }
    return progressed;
}

// Spins for `backoff` × 2^stalls (at most 32×) steps: with subgroups, dependent shuffles
// across the team (a step waits tens of clocks and takes one issue slot, where a multiply-add
// step took about as many slots as the polls it replaced: NOTES, session 48), else
// multiply-adds. Called by the whole team (stalls are the team's).
fn back_off(stalls: u32) {
    var v = stalls;
    let rounds = params.backoff << min(stalls, 5u);
    count_steps(rounds);
    for (var i = 0u; i < rounds; i++) {
#ifdef SUBGROUP
        v = subgroupShuffleXor(v, 1u) + 1u;
#else
        v = v * 1664525u + 1013904223u;
#endif
    }
    back_off_sink ^= v;
}

// A round's outcome, the same for every lane of the team.
struct Team {
    // Every lane's item is solved.
    done: bool,
    // Some lane got further.
    progressed: bool,
    // The team's loop iterations passed the budget (LOOP_BUDGET).
    out_of_loops: bool,
}

#ifdef LOOP_BUDGET
// Ends the round's count: adds the round's (`most`, a lane's most, team-uniform) to the
// team's; whether they passed the budget.
fn team_steps(most: u32) -> bool {
    round_steps = 0u;
    loop_steps += ROUND_LOOPS + most;
    return loop_steps > params.loop_budget;
}
#endif

#ifdef SUBGROUP
// The team as it started the launch (every lane of the subgroup that runs the kernel): its
// lanes, and whether lane = rank for every one.
var<private> team_lanes: u32;
var<private> team_full: bool;

// Whether `here` (a ballot of the lanes that run it, `subgroupBallot(true)`) is the whole
// team. After `advance` (a loop with early exits, run by the lanes whose items are not done)
// a team may not be whole again where it next meets: NVIDIA's driver did not always bring it
// together there (benches/NOTES.md, session 69), and WGSL promises nothing. A shuffle from a
// lane that is elsewhere reads whatever that lane's register holds there, and a subgroup sum
// leaves its part out. So the team's work after the walk (forward, long_row_block) and a
// persistent team's next ticket first check that the team is whole, and a team that is not
// leaves that work or does it lane by lane. (Within that work only short branches lie
// between subgroup operations, as in every other kernel here.) Each ballot is voted beside
// the vote that follows it, so that the two are waited for together.
fn whole(here: vec4<u32>) -> bool {
    return dot(countOneBits(here), vec4<u32>(1u)) == team_lanes;
}

// One link of `forward`: takes the value of the lane this one waits on (`source`) if that
// lane has solved it, and settles the item if that was its last entry. Whether it took one.
fn forward_step(item: ptr<function, Item>, lane: u32, source: ptr<function, u32>, settled: ptr<function, bool>) -> bool {
    let source_lane = select(lane, *source, *source != NONE);
    let solved = subgroupShuffle(u32((*item).solved_here), source_lane) != 0u;
    let value = subgroupShuffle((*item).x, source_lane);
    var level = 0u;
    if params.capture != 0u {
        level = subgroupShuffle((*item).level + 1u, source_lane);
    }
    let got = *source != NONE && solved;
    if got {
        (*item).sum += (*item).pending_value * value;
        (*item).level = max((*item).level, level);
        *source = NONE;
        if (*item).left == 1u {
            settle(item, solved_value(item));
            *settled = true;
        }
    }
    return got;
}

// In row order a team's items are consecutive positions, and a chain (a row needing the one
// before, the 2-D Laplacian's grid lines) runs through the team: a lane whose walk stopped
// at a predecessor in its own team takes the value from that lane by a shuffle as soon as it
// is solved, in the same round, instead of from memory a round later. The entry is the one
// the walk stopped at, so sums keep their order (bits do not depend on forwarding). Only
// with the whole subgroup in the team (lane = rank), and the whole team here (whole);
// every lane here calls it. The team's items are `count` from `team_first`. Whether some
// lane got further.
//
// A step is one link of the chain, and the team's chain is its steps one after another
// (a 2-D Laplacian's team is 31 links): so a step holds only what the next link, or another
// team, waits on: the sum, the division and the store of x. The walk's bookkeeping and the
// problem checks wait until after the last step.
fn forward(item: ptr<function, Item>, lane: u32, team_first: u32, count: u32) -> bool {
    if params.level_order != 0u || !team_full {
        return false;
    }
    // The lane this one waits on, found once: it changes only when this lane takes it.
    var source = NONE;
    if !(*item).done && (*item).pending {
        let row_pos = select((*item).pending_col, params.rows - 1u - (*item).pending_col, params.upper != 0u);
        let pos = row_pos * params.k + (*item).rhs;
        if pos >= team_first && pos - team_first < count {
            source = pos - team_first;
        }
    }
    // Who is here, voted beside the first vote (a vote of its own before it cost the 2-D
    // Laplacian's row-order solve 1.5% on the H200, benches/NOTES.md session 70).
    let here = subgroupBallot(true);
    if !subgroupAny(source != NONE) || !whole(here) {
        return false;
    }
    var forwarded = false;
    var settled = false;
    // Two steps a vote: the vote and its branch are a good part of a step (H200: the chain
    // probe 11.4 -> 10.4 ms, NOTES session 50).
    for (var step = 0u; step < count; step += 2u) {
        count_steps(1u);
        let got_first = forward_step(item, lane, &source, &settled);
        let got_second = forward_step(item, lane, &source, &settled);
        forwarded = forwarded || got_first || got_second;
        if !subgroupAny(got_first || got_second) {
            break;
        }
    }
    if forwarded {
        (*item).pending = false;
        (*item).next = walk((*item).next, 1u);
        (*item).left -= 1u;
    }
    if settled {
        report(item);
    }
    return forwarded;
}

fn team_state(done: bool, progressed: bool, lid: u32) -> Team {
    var team = Team(subgroupAll(done), subgroupAny(progressed), false);
#ifdef LOOP_BUDGET
    team.out_of_loops = team_steps(subgroupMax(round_steps));
#endif
    return team;
}

#ifdef LONG_ROWS
// Takes `count` entries of `part`'s row from entry `first` on into `part` (its sum, level,
// problem and pivot); whether every predecessor among them was published. Eight a step: the
// ones past `count` read entry `first` again and are not taken.
fn block_part(part: ptr<function, Item>, first: u32, count: u32) -> bool {
    var ready = true;
    count_steps((count + 7u) / 8u);
    // Eight entries at a time: their columns, then their predecessors, then the takes (a
    // lane keeps walking after a miss so that its loads stay in flight together): two waits
    // for memory per eight entries.
    for (var j = 0u; j < count; j += 8u) {
        let e0 = walk(first, j);
        let e1 = walk(first, select(0u, j + 1u, j + 1u < count));
        let e2 = walk(first, select(0u, j + 2u, j + 2u < count));
        let e3 = walk(first, select(0u, j + 3u, j + 3u < count));
        let e4 = walk(first, select(0u, j + 4u, j + 4u < count));
        let e5 = walk(first, select(0u, j + 5u, j + 5u < count));
        let e6 = walk(first, select(0u, j + 6u, j + 6u < count));
        let e7 = walk(first, select(0u, j + 7u, j + 7u < count));
        let c0 = col_indices[e0];
        let c1 = col_indices[e1];
        let c2 = col_indices[e2];
        let c3 = col_indices[e3];
        let c4 = col_indices[e4];
        let c5 = col_indices[e5];
        let c6 = col_indices[e6];
        let c7 = col_indices[e7];
        let r0 = read_entry(part, e0, c0);
        let r1 = read_entry(part, e1, c1);
        let r2 = read_entry(part, e2, c2);
        let r3 = read_entry(part, e3, c3);
        let r4 = read_entry(part, e4, c4);
        let r5 = read_entry(part, e5, c5);
        let r6 = read_entry(part, e6, c6);
        let r7 = read_entry(part, e7, c7);
        ready = take(part, e0, r0) && ready;
        ready = (j + 1u >= count || take(part, e1, r1)) && ready;
        ready = (j + 2u >= count || take(part, e2, r2)) && ready;
        ready = (j + 3u >= count || take(part, e3, r3)) && ready;
        ready = (j + 4u >= count || take(part, e4, r4)) && ready;
        ready = (j + 5u >= count || take(part, e5, r5)) && ready;
        ready = (j + 6u >= count || take(part, e6, r6)) && ready;
        ready = (j + 7u >= count || take(part, e7, r7)) && ready;
    }
    return ready;
}

// The entries a lane takes of a long row's next block, from what is left of the row (`left`,
// LONG_ITEM included): the same for the team and for a lane alone.
fn block_per_lane(left: u32) -> u32 {
    return select(SHORT_BLOCK_PER_LANE, BLOCK_PER_LANE, (left & ~LONG_ITEM) > BLOCK_PER_LANE * team_lanes);
}

// The entries of the block's part `p` (of `per_lane` entries from p · per_lane on, cut at the
// end of what is left of a LONG_ITEM row).
fn part_len(left: u32, p: u32, per_lane: u32) -> u32 {
    let rest = select(per_lane * team_lanes, left & ~LONG_ITEM, (left & LONG_ITEM) != 0u);
    return min(per_lane, rest - min(rest, p * per_lane));
}

// The entries of a long row's next block, from what is left of the row (`left`, LONG_ITEM
// included): `per_lane` a lane, cut at the row's end.
fn block_len(left: u32, per_lane: u32) -> u32 {
    return min(per_lane * team_lanes, left & ~LONG_ITEM);
}

// Adds a block of the item's long row (its sum, level, problem and pivot) and steps past it:
// `per_lane` entries a lane, cut at the row's end for a LONG_ITEM row, which is then solved.
fn take_block(item: ptr<function, Item>, block: Item, per_lane: u32) {
    let len = block_len((*item).left, per_lane);
    (*item).sum += block.sum;
    (*item).level = max((*item).level, block.level);
    (*item).problem = max((*item).problem, block.problem);
    if block.has_diagonal {
        (*item).diagonal = block.diagonal;
        (*item).has_diagonal = true;
    }
    (*item).next = walk((*item).next, len);
    (*item).left -= len;
    (*item).block_stalled = false;
    if (*item).left == LONG_ITEM {
        (*item).left = 0u;
        finish(item);
    }
}

// The sum of the team's parts of a block (lane l holds part l) in a fixed order: pairs of
// neighbouring parts, then pairs of pairs, and so on. Every lane ends with the same bits
// (a + b = b + a), and lone_block repeats the order. The whole team calls it, its lanes in
// their places and a power of two of them.
fn team_sum(part: Acc) -> Acc {
    var sum = part;
    for (var mask = 1u; mask < team_lanes; mask <<= 1u) {
        count_steps(1u);
        sum += subgroupShuffleXor(sum, mask);
    }
    return sum;
}

// A lane takes the next block of its own long row alone: the team's parts, summed in
// team_sum's order (a binary counter of partial sums: `sums[h]` holds 2^h parts), so the bits
// are the team's. Whether it was taken (every predecessor in the block published).
fn lone_block(item: ptr<function, Item>) -> bool {
    let per_lane = block_per_lane((*item).left);
    var part: Item;
    part.row = (*item).row;
    part.rhs = (*item).rhs;
    var sums: array<Acc, 8>;
    for (var p = 0u; p < team_lanes; p++) {
        count_steps(1u);
        part.sum = Acc();
        if !block_part(&part, walk((*item).next, p * per_lane), part_len((*item).left, p, per_lane)) {
            return false;
        }
        var sum = part.sum;
        var height = 0u;
        for (var carry = p; (carry & 1u) != 0u; carry >>= 1u) {
            count_steps(1u);
            sum = sums[height] + sum;
            height += 1u;
        }
        sums[height] = sum;
    }
    // A power of two of lanes leaves one sum; any other count, its partial sums from the
    // fewest parts up (no team sums those).
    var height = countTrailingZeros(team_lanes);
    part.sum = sums[height];
    for (height += 1u; height < 8u; height++) {
        count_steps(1u);
        if ((team_lanes >> height) & 1u) != 0u {
            part.sum = sums[height] + part.sum;
        }
    }
    take_block(item, part, per_lane);
    return true;
}

// The next block of a long row (block_per_lane · lanes entries): the team takes the lowest
// such lane's, once every predecessor in the block is published, each lane summing its
// block_per_lane consecutive entries, the parts summed by team_sum. Where the team is not
// whole (before the parts, or after them: take's branches lie between), each lane with a
// long row takes its own block alone, in the same parts and order: the bits never depend on
// which. Whether a block was taken. `lane` is the subgroup invocation id, `rank` the lane's
// place in the team.
fn long_row_block(item: ptr<function, Item>, lane: u32, rank: u32, long_row: u32) -> bool {
    let long = !(*item).done && (*item).left > long_row;
    // team_sum needs lane = rank and a power of two of lanes.
    let tree = team_full && (team_lanes & (team_lanes - 1u)) == 0u;
    let here = subgroupBallot(true);
    let owner = subgroupMin(select(NONE, lane, long));
    if params.lone_blocks == 0u && tree && whole(here) {
        if owner == NONE {
            return false;
        }
        var part: Item;
        part.row = subgroupShuffle((*item).row, owner);
        part.rhs = subgroupShuffle((*item).rhs, owner);
        let owner_left = subgroupShuffle((*item).left, owner);
        let owner_next = subgroupShuffle((*item).next, owner);
        let per_lane = block_per_lane(owner_left);
        // A block that waited before is read again (a wait for memory a lane, twice, for each
        // 8 entries) only once its last entry, nearest the diagonal and so the likeliest to
        // wait, is published: every round a hub's block was not ready, its team read it all.
        if params.block_hint != 0u && subgroupShuffle(u32((*item).block_stalled), owner) != 0u {
            let last = walk(owner_next, block_len(owner_left, per_lane) - 1u);
            let entry = read_entry(&part, last, col_indices[last]);
            if entry.kind == KIND_DEPENDENCY && !entry.predecessor.ready {
                return false;
            }
        }
        let first = walk(owner_next, rank * per_lane);
        let ready = block_part(&part, first, part_len(owner_left, rank, per_lane));
        let here_after = subgroupBallot(true);
        let all_ready = subgroupAll(ready);
        if whole(here_after) {
            if !all_ready {
                if lane == owner {
                    (*item).block_stalled = true;
                }
                return false;
            }
            var block: Item;
            block.sum = team_sum(part.sum);
            block.level = subgroupMax(part.level);
            block.problem = subgroupMax(part.problem);
            let pivot_lane = subgroupMin(select(NONE, lane, part.has_diagonal));
            block.has_diagonal = pivot_lane != NONE;
            block.diagonal = subgroupShuffle(part.diagonal, min(pivot_lane, team_lanes - 1u));
            if lane == owner {
                take_block(item, block, per_lane);
            }
            return true;
        }
    }
    return long && lone_block(item);
}
#endif
#else
var<workgroup> team_flags: atomic<u32>;
#ifdef LOOP_BUDGET
var<workgroup> team_round_steps: atomic<u32>;
#endif
// The team's ticket, then each round's flags (and with LOOP_BUDGET, from bit 2, the most loop
// iterations a lane ran), read uniformly.
var<workgroup> team_value: u32;

fn team_state(done: bool, progressed: bool, lid: u32) -> Team {
    if !done {
        atomicOr(&team_flags, 1u);
    }
    if progressed {
        atomicOr(&team_flags, 2u);
    }
#ifdef LOOP_BUDGET
    atomicMax(&team_round_steps, round_steps);
#endif
    workgroupBarrier();
    if lid == 0u {
        var value = atomicExchange(&team_flags, 0u);
#ifdef LOOP_BUDGET
        value |= atomicExchange(&team_round_steps, 0u) << 2u;
#endif
        team_value = value;
    }
    let flags = workgroupUniformLoad(&team_value);
    var team = Team((flags & 1u) == 0u, (flags & 2u) != 0u, false);
#ifdef LOOP_BUDGET
    team.out_of_loops = team_steps(flags >> 2u);
#endif
    return team;
}
#endif

// Solves the items from `team_first` to `team_end` (at most the team's lanes) of ticket
// `ticket` (team-uniform: every lane of the team calls it); false when the team ran out of
// spins (or loop iterations) and left items unsolved. An unsolved item notes its ticket
// where tickets are segments, else its position: where a relaunch starts taking tickets.
fn solve_ticket(ticket: u32, team_first: u32, team_end: u32, lid: u32, lane: u32, rank: u32, long_row: u32) -> bool {
    let pos = team_first + rank;
    var item = start(pos, team_end, long_row);
    var stalls = 0u;
    var finished = true;
    loop {
        var progressed = false;
        if !item.done {
            progressed = advance(&item, long_row);
        }
#ifdef SUBGROUP
        progressed = forward(&item, lane, team_first, team_end - team_first) || progressed;
#ifdef LONG_ROWS
        progressed = long_row_block(&item, lane, rank, long_row) || progressed;
#endif
#endif
        let team = team_state(item.done, progressed, lid);
        if team.done {
            break;
        }
        stalls = select(stalls + 1u, 0u, team.progressed);
        if stalls > params.spin_limit || team.out_of_loops {
            finished = false;
            break;
        }
        if !team.progressed {
            back_off(stalls);
        }
    }
    if back_off_sink == 0x9e3779b9u && !item.done {
        // Never in practice; makes the back-off's result observable.
        atomicOr(&status[STATUS_PROBLEM], 0u);
    }
    if !item.done {
        atomicMin(&status[STATUS_LOWEST_UNSOLVED], select(pos, ticket, params.segments != 0u));
    }
    return finished;
}

// A launch may have fewer workgroups than tickets (`SptrsvOptions::max_workgroups`, with
// `params.persistent`): a team then takes tickets until none are left, so that no more teams
// poll than the launch allows, and leaves at its first ticket that ran out of spins (a
// relaunch goes on from the lowest unsolved position). Otherwise a team takes one ticket and
// leaves: a team that stayed would poll its later tickets as the oldest warp of its SM, which
// a GPU's scheduler may favour over the younger teams it waits on (on the H100 an uncapped
// persistent launch took 50 s on the 2-D Laplacian in level order, against 23 ms).
@compute @workgroup_size(WG_SIZE)
fn main(@builtin(local_invocation_index) lid: u32
#ifdef SUBGROUP
        , @builtin(subgroup_invocation_id) lane: u32
#endif
) {
#ifdef SUBGROUP
    // Lanes counted, not assumed: any subgroup size and layout takes its own positions.
    let lanes = subgroupAdd(1u);
    let rank = subgroupExclusiveAdd(1u);
    team_lanes = lanes;
    team_full = subgroupAll(lane == rank);
#ifdef LONG_ROWS
    let long_row = select(BLOCK_PER_LANE, SHORT_BLOCK_PER_LANE, params.short_blocks != 0u) * subgroupMax(rank + 1u);
#else
    let long_row = NONE;
#endif
#else
    let lane = 0u;
    let rank = lid;
    let lanes = WG_SIZE;
    let long_row = NONE;
    // Workgroup memory starts undefined (pipelines are built without its zero fill): team_state's
    // flags start clear (the loop's first barrier orders this before any lane's first flag).
    if lid == 0u {
        atomicStore(&team_flags, 0u);
#ifdef LOOP_BUDGET
        atomicStore(&team_round_steps, 0u);
#endif
    }
#endif
    loop {
#ifdef LOOP_BUDGET
        loop_steps += 1u;
#endif
#ifdef SUBGROUP
        // A ticket is a segment (`params.segments`) or `lanes` items from the ticket on.
        let segmented = params.segments != 0u;
        var claimed = 0u;
        if rank == 0u {
            claimed = atomicAdd(&status[STATUS_TICKET], select(lanes, 1u, segmented));
        }
        // A ticket is solved by the whole team (its lanes take its positions by rank). A
        // persistent team that is not whole again after a ticket leaves: the lanes without
        // rank 0 take nothing, and rank 0 leaves its new ticket to a relaunch.
        let here = subgroupBallot(true);
        let ticket = subgroupBroadcastFirst(claimed);
        if !whole(here) {
            if rank == 0u && claimed < select(params.items, params.segments, segmented) {
                atomicMin(&status[STATUS_LOWEST_UNSOLVED], claimed);
            }
            break;
        }
        if segmented && ticket >= params.segments {
            break;
        }
        let team_first = select(ticket, team_starts[min(ticket, params.segments - 1u)], segmented);
        let team_last = select(ticket + lanes, team_starts[min(ticket + 1u, params.segments)], segmented);
#else
        // Every lane has read the last round's flags before team_value is written again.
        workgroupBarrier();
        if lid == 0u {
            team_value = atomicAdd(&status[STATUS_TICKET], WG_SIZE);
        }
        let ticket = workgroupUniformLoad(&team_value);
        let team_first = ticket;
        let team_last = ticket + WG_SIZE;
#endif
        if team_first >= params.items {
            break;
        }
#ifdef LOOP_BUDGET
        // Out of loop iterations (after tickets each done in a round): this one is left to a
        // relaunch, which starts at the lowest ticket left.
        if loop_steps > params.loop_budget {
            if rank == 0u {
                atomicMin(&status[STATUS_LOWEST_UNSOLVED], ticket);
            }
            break;
        }
#endif
        // A segment is at most the least subgroup size; a narrower team would take it in parts.
        let team_end = min(team_last, params.items);
        var finished = true;
        for (var part = team_first; part < team_end && finished; part += lanes) {
            count_steps(1u);
            finished = solve_ticket(ticket, part, min(part + lanes, team_end), lid, lane, rank, long_row);
        }
        if !finished || params.persistent == 0u {
            break;
        }
    }
}
