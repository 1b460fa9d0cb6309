// The levels of a triangular matrix found before any solve, by Kahn's frontier: the other
// way to learn them than capturing them during the first sync-free solve (sptrsv.wgsl with
// `capture`). Nothing waits on another workgroup: each level is a dispatch of its own. One
// shader, the step a parameter:
// - COUNT (a lane a row): each dependency (an entry on the triangle's side of the diagonal)
//   counted at its row in `pending` and at its column in `successor_ends`; a row of more
//   than LANE_ITEMS entries is cut into chunks of CHUNK, listed in `chunks`.
// - COUNT_CHUNKS: the same for those chunks, the launch's lanes dealt over their items.
// - ROOTS (a lane a row): rows with no dependency are level 0, appended to `order`; a row
//   with more than LANE_ITEMS successors is marked (LONG_BIT of its pending count), and its
//   successors are listed as chunks when it is released.
// - (the host scans `successor_ends` into the first position of each column's list)
// - FILL, FILL_CHUNKS (as COUNT): each dependency (row, col) writes row into col's list at
//   successor_ends[col]++, so that afterwards successor_ends[col] is the list's end and
//   successor_ends[col − 1] its start.
// - EXPAND (`params.level`, a fixed grid striding over the level's rows): each row releases
//   its successors (atomicSub of their pending counts); the lane whose release was the last
//   appends the successor to the next level. The level's first position and size are final
//   when the dispatch starts (the dispatch before wrote them); three levels' sizes rotate in
//   `state`, and the count of levels, the widest and the rows placed are kept there for the
//   host.
// A lane walks at most LANE_ITEMS items of its own, BATCH a round; longer rows and successor
// lists are dealt to the whole launch by chunks, so that a dense row, a hub column or a level
// of long lists costs its items over the launch's width, not one lane's (or subgroup's) walk.
// Within a level rows come out in no fixed order: a solve's results do not depend on it.
#import dispatch

const STEP_COUNT: u32 = 0u;
const STEP_COUNT_CHUNKS: u32 = 1u;
const STEP_ROOTS: u32 = 2u;
const STEP_FILL: u32 = 3u;
const STEP_FILL_CHUNKS: u32 = 4u;
const STEP_EXPAND: u32 = 5u;
// The most items a lane walks itself; longer ranges go by chunks of CHUNK (a multiple of BATCH).
const LANE_ITEMS: u32 = 16u;
const CHUNK: u32 = 128u;
// state: level L's size at SIZE + L % 3, its first position at START + L % 3.
const STATE_SIZE: u32 = 0u;
const STATE_START: u32 = 3u;
const STATE_LEVELS: u32 = 6u;
const STATE_WIDEST: u32 = 7u;
const STATE_PLACED: u32 = 8u;
// chunks: the count of COUNT's chunks (rows' entries), then the counts of three levels'
// chunks (successors, by L % 3), then the four lists, `params.chunk_cap` chunks of two words
// (row, chunk index) each.
const CHUNKS_OF_ROWS: u32 = 0u;
const CHUNKS_OF_LEVEL: u32 = 1u;
const CHUNK_LISTS: u32 = 4u;
// A pending count's mark: the row has more than LANE_ITEMS successors.
const LONG_BIT: u32 = 0x80000000u;
const NONE: u32 = 0xffffffffu;

struct Params {
    step: u32,
    rows: u32,
    upper: u32,
    // EXPAND: the level whose rows release their successors.
    level: u32,
    // The lanes of the launch (each takes every lanes-th row).
    lanes: u32,
    // The most chunks a list holds (as many as there can be).
    chunk_cap: u32,
}

var<immediate> params: Params;
@group(0) @binding(0) var<storage, read> row_offsets: array<u32>;
@group(0) @binding(1) var<storage, read> col_indices: array<u32>;
@group(0) @binding(2) var<storage, read_write> pending: array<atomic<u32>>;
@group(0) @binding(3) var<storage, read_write> successor_ends: array<atomic<u32>>;
@group(0) @binding(4) var<storage, read_write> successors: array<u32>;
@group(0) @binding(5) var<storage, read_write> order: array<u32>;
@group(0) @binding(6) var<storage, read_write> state: array<atomic<u32>>;
@group(0) @binding(7) var<storage, read_write> chunks: array<atomic<u32>>;

override WG_SIZE: u32 = 64u;

fn depends(row: u32, col: u32) -> bool {
    let below = col < row;
    let above = row < col;
    return col < params.rows && select(below, above, params.upper != 0u);
}

// Appends `row` (NONE: nothing) to the level whose size is state[size_word], whose first
// position is `begin`. Uniform: with subgroups one atomic a subgroup, not one a row (a
// level's rows would otherwise queue on one word in the L2).
fn append(row: u32, begin: u32, size_word: u32) {
    let wanted = row != NONE;
#ifdef SUBGROUP
    let count = subgroupAdd(u32(wanted));
    if count == 0u {
        return;
    }
    let rank = subgroupExclusiveAdd(u32(wanted));
    var base = 0u;
    if wanted && rank == 0u {
        base = atomicAdd(&state[size_word], count);
    }
    base = subgroupMax(base);
    if wanted {
        order[begin + base + rank] = row;
    }
#else
    if wanted {
        order[begin + atomicAdd(&state[size_word], 1u)] = row;
    }
#endif
}

// Lists the chunks of `row`'s range of `len` items on list `list` (0: COUNT's, 1 + s:
// level s's), counted at word `count_word`.
fn keep_chunks(row: u32, len: u32, list: u32, count_word: u32) {
    let count = (len + CHUNK - 1u) / CHUNK;
    let slot = atomicAdd(&chunks[count_word], count);
    for (var c = 0u; c < count; c++) {
        let w = CHUNK_LISTS + (list * params.chunk_cap + slot + c) * 2u;
        atomicStore(&chunks[w], row);
        atomicStore(&chunks[w + 1u], c);
    }
}

// The first position of column `col`'s successor list (after FILL).
fn successors_start(col: u32) -> u32 {
    if col == 0u {
        return 0u;
    }
    return atomicLoad(&successor_ends[col - 1u]);
}

// A lane's range: entries (COUNT, FILL) or successor positions (EXPAND) of `row`.
struct Range {
    row: u32,
    next: u32,
    end: u32,
}

// The range of `row`'s items: its entries, or with EXPAND its successors' positions.
fn items_of(row: u32) -> vec2<u32> {
    if params.step == STEP_EXPAND {
        return vec2<u32>(successors_start(row), atomicLoad(&successor_ends[row]));
    }
    return vec2<u32>(row_offsets[row], row_offsets[row + 1u]);
}

// The range of the lane's `t`-th row (`begin`: EXPAND's level start in `order`); empty for a
// row of more than LANE_ITEMS items, which goes by chunks (COUNT lists them; a level's
// chunks were listed as its rows were released).
fn range_of(t: u32, begin: u32) -> Range {
    var row = t;
    if params.step == STEP_EXPAND {
        row = order[begin + t];
    }
    let items = items_of(row);
    var r = Range(row, items.x, items.y);
    if r.end - r.next > LANE_ITEMS {
        if params.step == STEP_COUNT {
            keep_chunks(row, r.end - r.next, 0u, CHUNKS_OF_ROWS);
        }
        r.next = r.end;
    }
    return r;
}

// Items a lane visits a round, their loads and atomics all issued before any result is
// tested (a branch on a loaded word waits for it: benches/NOTES.md, session 45).
const BATCH: u32 = 4u;

// What visiting a batch did: dependencies counted (COUNT), rows released (EXPAND; NONE where
// none).
struct Visit {
    dependencies: u32,
    released: vec4<u32>,
}

// Items e … e + BATCH − 1 of `row`'s range, those below `end`.
fn visit(row: u32, e: u32, end: u32) -> Visit {
    var out = Visit(0u, vec4<u32>(NONE));
    let valid = vec4<u32>(e, e + 1u, e + 2u, e + 3u) < vec4<u32>(end);
    // In bounds whatever `e` (loads past `end` are not used).
    let last = max(end, 1u) - 1u;
    var item = vec4<u32>(0u);
    if params.step == STEP_EXPAND {
        for (var k = 0u; k < BATCH; k++) {
            item[k] = successors[min(e + k, last)];
        }
        var before = vec4<u32>(0u);
        for (var k = 0u; k < BATCH; k++) {
            if valid[k] {
                before[k] = atomicSub(&pending[item[k]], 1u);
            }
        }
        for (var k = 0u; k < BATCH; k++) {
            if valid[k] && (before[k] & ~LONG_BIT) == 1u {
                out.released[k] = item[k];
                if (before[k] & LONG_BIT) != 0u {
                    let next = (params.level + 1u) % 3u;
                    let items = items_of(item[k]);
                    keep_chunks(item[k], items.y - items.x, 1u + next, CHUNKS_OF_LEVEL + next);
                }
            }
        }
        return out;
    }
    for (var k = 0u; k < BATCH; k++) {
        item[k] = col_indices[min(e + k, last)];
    }
    var position = vec4<u32>(0u);
    for (var k = 0u; k < BATCH; k++) {
        if valid[k] && depends(row, item[k]) {
            out.dependencies += 1u;
            position[k] = atomicAdd(&successor_ends[item[k]], 1u);
        }
    }
    if params.step == STEP_FILL || params.step == STEP_FILL_CHUNKS {
        for (var k = 0u; k < BATCH; k++) {
            if valid[k] && depends(row, item[k]) {
                successors[position[k]] = row;
            }
        }
    }
    return out;
}

// EXPAND: appends a batch's released rows (uniform).
fn append_batch(released: vec4<u32>, begin: u32, size_word: u32) {
    if params.step == STEP_EXPAND {
        for (var k = 0u; k < BATCH; k++) {
            append(released[k], begin, size_word);
        }
    }
}

// A range done: COUNT keeps the row's dependency count (0 for a row by chunks:
// COUNT_CHUNKS adds).
fn finish(r: Range, dependencies: u32) {
    if params.step == STEP_COUNT {
        atomicStore(&pending[r.row], dependencies);
    }
}

// The rows `first`, `first` + lanes, … below `total`, each range walked to its end; EXPAND
// appends the rows it releases at `next_begin` (size word `size_word`). Uniform (the step is
// the same for every lane).
fn walk(first: u32, total: u32, begin: u32, next_begin: u32, size_word: u32) {
    var t = first;
    var r = Range(NONE, 0u, 0u);
    var dependencies = 0u;
    loop {
        while r.next == r.end {
            if r.row != NONE {
                finish(r, dependencies);
                r.row = NONE;
            }
            if t >= total {
                break;
            }
            r = range_of(t, begin);
            dependencies = 0u;
            t += params.lanes;
        }
        let walking = r.next < r.end;
#ifdef SUBGROUP
        if !subgroupAny(walking) {
            break;
        }
#else
        if !walking {
            break;
        }
#endif
        var released = vec4<u32>(NONE);
        if walking {
            let v = visit(r.row, r.next, r.end);
            r.next = min(r.next + BATCH, r.end);
            dependencies += v.dependencies;
            released = v.released;
        }
        append_batch(released, next_begin, size_word);
    }
}

// The `count` chunks of list `list`, their items dealt BATCH to a lane (`i` of
// `params.lanes`) a round: COUNT_CHUNKS adds their dependencies to their rows' pending
// counts, EXPAND appends what they release. Uniform.
fn walk_chunks(list: u32, count: u32, i: u32, next_begin: u32, size_word: u32) {
    let items = count * CHUNK;
    for (var base = 0u; base < items; base += BATCH * params.lanes) {
        let q = base + BATCH * i;
        var v = Visit(0u, vec4<u32>(NONE));
        if q < items {
            let w = CHUNK_LISTS + (list * params.chunk_cap + q / CHUNK) * 2u;
            let row = atomicLoad(&chunks[w]);
            let range = items_of(row);
            let first = range.x + atomicLoad(&chunks[w + 1u]) * CHUNK;
            v = visit(row, first + q % CHUNK, min(first + CHUNK, range.y));
            if params.step == STEP_COUNT_CHUNKS && v.dependencies > 0u {
                atomicAdd(&pending[row], v.dependencies);
            }
        }
        append_batch(v.released, next_begin, size_word);
    }
}

fn roots(row: u32) {
    var root = false;
    if row < params.rows {
        let dependencies = atomicLoad(&pending[row]);
        // Counts, not yet list ends: the scan follows.
        let successors = atomicLoad(&successor_ends[row]);
        if successors > LANE_ITEMS {
            atomicOr(&pending[row], LONG_BIT);
            if dependencies == 0u {
                keep_chunks(row, successors, 1u, CHUNKS_OF_LEVEL);
            }
        }
        root = dependencies == 0u;
    }
    append(select(NONE, row, root), 0u, STATE_SIZE);
}

// EXPAND's bookkeeping: the next level's start, the size and chunk-count words after it cleared,
// the counts. Returns the level's first position and size.
fn start_level(lane: u32) -> vec2<u32> {
    let level = params.level;
    let begin = atomicLoad(&state[STATE_START + level % 3u]);
    let size = atomicLoad(&state[STATE_SIZE + level % 3u]);
    if lane == 0u {
        atomicStore(&state[STATE_START + (level + 1u) % 3u], begin + size);
        // The level after next appends there: the level before this one's.
        atomicStore(&state[STATE_SIZE + (level + 2u) % 3u], 0u);
        atomicStore(&chunks[CHUNKS_OF_LEVEL + (level + 2u) % 3u], 0u);
        if size > 0u {
            atomicMax(&state[STATE_LEVELS], level + 1u);
            atomicMax(&state[STATE_WIDEST], size);
            atomicMax(&state[STATE_PLACED], begin + size);
        }
    }
    return vec2<u32>(begin, size);
}

@compute @workgroup_size(WG_SIZE)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let i = linear_workgroup(wid, nwg) * WG_SIZE + lid;
    switch params.step {
        case STEP_ROOTS: {
            roots(i);
        }
        case STEP_COUNT_CHUNKS, STEP_FILL_CHUNKS: {
            walk_chunks(0u, atomicLoad(&chunks[CHUNKS_OF_ROWS]), i, 0u, STATE_SIZE);
        }
        case STEP_EXPAND: {
            let level = start_level(i);
            let s = params.level % 3u;
            let next_size_word = STATE_SIZE + (params.level + 1u) % 3u;
            let next_begin = level.x + level.y;
            walk_chunks(1u + s, atomicLoad(&chunks[CHUNKS_OF_LEVEL + s]), i, next_begin, next_size_word);
            walk(i, level.y, level.x, next_begin, next_size_word);
        }
        default: {
            walk(i, params.rows, 0u, 0u, STATE_SIZE);
        }
    }
}
