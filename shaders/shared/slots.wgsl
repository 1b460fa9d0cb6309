// Work split among slots of LANES lanes (a power of two up to the smallest subgroup, set by
// the host), each slot with a task of its own: RoDe's mapping (seed 002), in which the
// lanes of a slot split the dense columns of one row. A workgroup has slot_count() =
// WG_SIZE / LANES slots; slot k of workgroup w takes task w·slot_count() + k.
//
// The entries of a slot's segment are staged in tiles of LANES entries, one per lane
// (coalesced loads), then every lane reads each entry of the tile; the next tile is loaded
// before the current one is used (double buffering). With subgroups the tile lives in
// registers and is read by shuffles: WGSL has no barrier that orders workgroup memory within
// one subgroup (naga's subgroupBarrier orders subgroup memory only, and is a no-op on DX12).
// Without subgroups the tiles live in two workgroup-memory buffers, one barrier per tile.
//
// Shuffles need the whole subgroup and barriers the whole workgroup, so loops whose trip
// count differs between slots run to the maximum over the subgroup (`slots_max`), or over
// the workgroup without subgroups; slots past their end are masked. Expects `col_indices`
// and `entry_value(at)` (the value of entry `at`) in the including shader.
#import entry

// Slots per workgroup.
fn slot_count() -> u32 {
    return WG_SIZE / LANES;
}
// Entries whose gathers are issued together, before any is used.
const BATCH: u32 = 4u;

struct Slot {
    // The slot's index in the workgroup, and the lane's in the slot.
    index: u32,
    lane: u32,
    // The slot's first lane: in the subgroup (shuffles) or the workgroup (memory).
    base: u32,
}

fn slot_of(lane: Lane) -> Slot {
    let l = lane.index % LANES;
#ifdef SUBGROUP
    return Slot(lane.index / LANES, l, lane.sg_lane - l);
#else
    return Slot(lane.index / LANES, l, lane.index - l);
#endif
}

#ifndef SUBGROUP
var<workgroup> max_atomic: atomic<u32>;
var<workgroup> max_value: u32;
#endif

// The maximum of `v` over the subgroup (the workgroup without subgroups), in every lane.
fn slots_max(v: u32) -> u32 {
#ifdef SUBGROUP
    return subgroupMax(v);
#else
    atomicStore(&max_atomic, 0u);
    workgroupBarrier();
    atomicMax(&max_atomic, v);
    workgroupBarrier();
    max_value = atomicLoad(&max_atomic);
    return workgroupUniformLoad(&max_value);
#endif
}

struct Tiles {
    // First entry of the current tile, and the segment's end.
    first: u32,
    end: u32,
    // This lane's entry of the current and of the next tile (subgroups).
    col: u32,
    value: Real,
    next_col: u32,
    next_value: Real,
    // The workgroup buffer holding the current tile (no subgroups).
    buffer: u32,
}

#ifndef SUBGROUP
var<workgroup> tile_cols: array<u32, 2u * WG_SIZE>;
var<workgroup> tile_values: array<Real, 2u * WG_SIZE>;
#endif

// Entry `at`, or (0, 0) at or past `end`.
fn load_entry(at: u32, end: u32) -> Tiles {
    var t: Tiles;
    if at < end {
        t.col = col_indices[at];
        t.value = entry_value(at);
    }
    return t;
}

// Tiles of entries start..end for slot `s`; how many the slots run is `tile_rounds`.
fn tiles_begin(s: Slot, start: u32, end: u32) -> Tiles {
    var t = load_entry(start + s.lane, end);
    t.first = start;
    t.end = end;
#ifndef SUBGROUP
    tile_cols[s.base + s.lane] = t.col;
    tile_values[s.base + s.lane] = t.value;
    t.buffer = 0u;
    workgroupBarrier();
#endif
    return t;
}

// Tiles every slot runs: the most any slot of the subgroup (workgroup) needs.
fn tile_rounds(start: u32, end: u32) -> u32 {
    return slots_max((end - start + LANES - 1u) / LANES);
}

// Starts loading the tile after the current one.
fn tiles_prefetch(t: ptr<function, Tiles>, s: Slot) {
    let next = load_entry((*t).first + LANES + s.lane, (*t).end);
#ifdef SUBGROUP
    (*t).next_col = next.col;
    (*t).next_value = next.value;
#else
    let at = (1u - (*t).buffer) * WG_SIZE + s.base + s.lane;
    tile_cols[at] = next.col;
    tile_values[at] = next.value;
#endif
}

// Entries of the current tile this slot has (0 past its segment's end).
fn tile_count(t: Tiles) -> u32 {
    if t.first >= t.end {
        return 0u;
    }
    return min(t.end - t.first, LANES);
}

// Entries every slot steps through in the current tile: the most any slot has (all of
// the tile without subgroups, where a maximum costs two barriers).
fn tile_steps(count: u32) -> u32 {
#ifdef SUBGROUP
    return subgroupMax(count);
#else
    return LANES;
#endif
}

// Entry `e` of the slot's current tile (e clamped into the tile; the caller masks).
fn tile_col(t: ptr<function, Tiles>, s: Slot, e: u32) -> u32 {
#ifdef SUBGROUP
    return subgroupShuffle((*t).col, s.base + min(e, LANES - 1u));
#else
    return tile_cols[(*t).buffer * WG_SIZE + s.base + min(e, LANES - 1u)];
#endif
}

fn tile_value(t: ptr<function, Tiles>, s: Slot, e: u32) -> Real {
#ifdef SUBGROUP
    return subgroupShuffle((*t).value, s.base + min(e, LANES - 1u));
#else
    return tile_values[(*t).buffer * WG_SIZE + s.base + min(e, LANES - 1u)];
#endif
}

fn tiles_advance(t: ptr<function, Tiles>) {
    (*t).first += LANES;
#ifdef SUBGROUP
    (*t).col = (*t).next_col;
    (*t).value = (*t).next_value;
#else
    // The prefetched tile is visible, and every lane is done with the current buffer before
    // the next prefetch overwrites it.
    workgroupBarrier();
    (*t).buffer = 1u - (*t).buffer;
#endif
}
