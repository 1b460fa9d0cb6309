// The tickets of a row-order triangular solve in which some rows are long (sptrsv.wgsl with
// `params.segments`): the solve's items (positions × right-hand sides) cut into segments, a
// team's ticket each, of at most `params.width` items (the least subgroup size), with the
// items of every row of `params.long_row` entries or more in segments of their own. A
// subgroup runs its lanes' walks together, so a hub's long walk held up the short rows of its
// team, and its team's blocks queued behind the other hubs' (H200, R-MAT s14's upper
// triangle with its rows of 512 entries or more alone in their teams: 534 → 381 µs;
// benches/NOTES.md, session 73). Two steps, the step a parameter:
// - MARKS (an invocation per item, and per `team_starts` word): marks[i] = 1 where a segment
//   starts at item i (every `width`-th item, a long row's first item, and the first item
//   after a long row), else 0; every word of `team_starts` set to `items` (segments past
//   the last are empty).
// - (the host scans `marks` in place: a segment's index at its first item)
// - STARTS (an invocation per item): the first item of each segment into `team_starts`.
// Segments stay in position order, so a team still only waits on items of teams that took
// their tickets before it.
#import invocation

const STEP_MARKS: u32 = 0u;
const STEP_STARTS: u32 = 1u;

struct Params {
    step: u32,
    items: u32,
    rows: u32,
    k: u32,
    upper: u32,
    width: u32,
    // Rows of this many entries or more get segments of their own.
    long_row: u32,
    // Words of `team_starts`: the most segments, and one after them.
    starts_len: u32,
}

var<immediate> params: Params;
@group(0) @binding(0) var<storage, read> row_offsets: array<u32>;
@group(0) @binding(1) var<storage, read_write> marks: array<u32>;
// The scan's total: the number of segments.
@group(0) @binding(2) var<storage, read> total: array<u32>;
@group(0) @binding(3) var<storage, read_write> team_starts: array<u32>;

override WG_SIZE: u32 = 256u;

// Whether the row at solve position `pos` (rows reversed for U) is long.
fn long_at(pos: u32) -> bool {
    let row = select(pos, params.rows - 1u - pos, params.upper != 0u);
    return row_offsets[row + 1u] - row_offsets[row] >= params.long_row;
}

fn mark(i: u32) {
    if i < params.starts_len {
        team_starts[i] = params.items;
    }
    if i >= params.items {
        return;
    }
    let pos = i / params.k;
    let first_of_row = i == pos * params.k;
    let after_long = pos > 0u && long_at(pos - 1u);
    marks[i] = u32(i % params.width == 0u || (first_of_row && (long_at(pos) || after_long)));
}

fn start(i: u32) {
    if i >= params.items {
        return;
    }
    // marks holds the exclusive scan now: item i starts a segment where the next item's
    // count is one more.
    let next = select(total[0], marks[i + 1u], i + 1u < params.items);
    if next != marks[i] {
        team_starts[marks[i]] = i;
    }
}

fn run(i: u32) {
    if params.step == STEP_MARKS {
        mark(i);
    } else {
        start(i);
    }
}
