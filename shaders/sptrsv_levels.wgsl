// The levels of a triangular matrix found before any solve, by Kahn's frontier: the other
// way to learn them than capturing them during the first sync-free solve (sptrsv.wgsl with
// `capture`), for matrices whose row-order solve is slow (long chains of near rows). Nothing
// waits on another workgroup: each level is a dispatch of its own. One shader, the step a
// parameter:
// - COUNT (a lane per row): the row's dependencies (entries on the triangle's side of the
//   diagonal) into `pending[row]`, each one counted at its column in `successor_ends`; rows
//   with none are level 0, appended to `order`.
// - (the host scans `successor_ends` into the first position of each column's list)
// - FILL (a lane per row): each dependency (row, col) writes row into col's list at
//   successor_ends[col]++, so that afterwards successor_ends[col] is the list's end and
//   successor_ends[col − 1] its start.
// - EXPAND (`params.level`, a fixed grid striding over the level's rows): each row releases
//   its successors (atomicSub of their pending counts); the lane whose release was the last
//   appends the successor to the next level. The level's first position and size are final
//   when the dispatch starts (the dispatch before wrote them); three levels' sizes rotate in
//   `state`, and the count of levels, the widest and the rows placed are kept there for the
//   host.
// Within a level rows come out in no fixed order: a solve's results do not depend on it.
#import invocation

const STEP_COUNT: u32 = 0u;
const STEP_FILL: u32 = 1u;
const STEP_EXPAND: u32 = 2u;
// state: level L's size at SIZE + L % 3, its first position at START + L % 3.
const STATE_SIZE: u32 = 0u;
const STATE_START: u32 = 3u;
const STATE_LEVELS: u32 = 6u;
const STATE_WIDEST: u32 = 7u;
const STATE_PLACED: u32 = 8u;
const NONE: u32 = 0xffffffffu;

struct Params {
    step: u32,
    rows: u32,
    upper: u32,
    // EXPAND: the level whose rows release their successors, and the lanes of the launch.
    level: u32,
    lanes: u32,
}

var<immediate> params: Params;
@group(0) @binding(0) var<storage, read> row_offsets: array<u32>;
@group(0) @binding(1) var<storage, read> col_indices: array<u32>;
@group(0) @binding(2) var<storage, read_write> pending: array<atomic<u32>>;
@group(0) @binding(3) var<storage, read_write> successor_ends: array<atomic<u32>>;
@group(0) @binding(4) var<storage, read_write> successors: array<u32>;
@group(0) @binding(5) var<storage, read_write> order: array<u32>;
@group(0) @binding(6) var<storage, read_write> state: array<atomic<u32>>;

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

// The first position of column `col`'s successor list (after FILL).
fn successors_start(col: u32) -> u32 {
    if col == 0u {
        return 0u;
    }
    return atomicLoad(&successor_ends[col - 1u]);
}

fn count(row: u32) {
    var deps = 0u;
    if row < params.rows {
        for (var e = row_offsets[row]; e < row_offsets[row + 1u]; e++) {
            let col = col_indices[e];
            if depends(row, col) {
                deps += 1u;
                atomicAdd(&successor_ends[col], 1u);
            }
        }
        atomicStore(&pending[row], deps);
    }
    append(select(NONE, row, row < params.rows && deps == 0u), 0u, STATE_SIZE);
}

fn fill(row: u32) {
    if row >= params.rows {
        return;
    }
    for (var e = row_offsets[row]; e < row_offsets[row + 1u]; e++) {
        let col = col_indices[e];
        if depends(row, col) {
            successors[atomicAdd(&successor_ends[col], 1u)] = row;
        }
    }
}

fn expand(lane: u32) {
    let level = params.level;
    let begin = atomicLoad(&state[STATE_START + level % 3u]);
    let size = atomicLoad(&state[STATE_SIZE + level % 3u]);
    let next_begin = begin + size;
    let next_size_word = STATE_SIZE + (level + 1u) % 3u;
    if lane == 0u {
        atomicStore(&state[STATE_START + (level + 1u) % 3u], next_begin);
        // The level after next appends there: the size of the level before this one.
        atomicStore(&state[STATE_SIZE + (level + 2u) % 3u], 0u);
        if size > 0u {
            atomicMax(&state[STATE_LEVELS], level + 1u);
            atomicMax(&state[STATE_WIDEST], size);
            atomicMax(&state[STATE_PLACED], next_begin);
        }
    }
    // The lane's place in the level (striding by the launch) and its row's successors left.
    var t = lane;
    var next = 0u;
    var end = 0u;
    loop {
        while next == end && t < size {
            let row = order[begin + t];
            next = successors_start(row);
            end = atomicLoad(&successor_ends[row]);
            t += params.lanes;
        }
        let walking = next < end;
#ifdef SUBGROUP
        if !subgroupAny(walking) {
            break;
        }
#else
        if !walking {
            break;
        }
#endif
        var released = NONE;
        if walking {
            let successor = successors[next];
            next += 1u;
            if atomicSub(&pending[successor], 1u) == 1u {
                released = successor;
            }
        }
        append(released, next_begin, next_size_word);
    }
}

fn run(i: u32) {
    switch params.step {
        case STEP_COUNT: {
            count(i);
        }
        case STEP_FILL: {
            fill(i);
        }
        default: {
            expand(i);
        }
    }
}
