// The steps around a sync-free triangular solve (sptrsv.wgsl), one shader with the step as a
// parameter (each a pass over a few words):
// - INIT: every x and aux word NOT_READY, the status reset (one per word);
// - RELAUNCH: one invocation; sizes the next launch of the solve (the indirect arguments in
//   `args`) from the lowest unsolved ticket (a position, or a segment of positions),
//   restarting the tickets there, or zero workgroups when every item is solved;
// - FINISH: f64 only; rewrites each solved item's encoded words as the plain f64 and marks
//   its aux word DECODED (the level kept); unsolved items stay NaN;
// - LEVELS: the keys and values of the level sort, keys[r] = level of row r − 1 (read from
//   its first item), rows_out[r] = r;
// - WIDEST: after the sort, over the sorted `keys`: the widest level's row count, rounded
//   down to a power of two, in status[WIDEST_WORD]. The last position of each level finds
//   the level's first by a binary search and raises the maximum: one read-modify-write per
//   level at most, where counting rows by atomicAdd made every row queue on a few words
//   (4 M rows on 12 counters serialise in the L2);
// - MAX_LEVEL: after a capturing solve's launches, the largest level of the solved rows into
//   status[STATUS_MAX_LEVEL]: a workgroup's maximum, then one read (and a write only where it
//   is larger) of the status word a workgroup. The solve's teams raised it themselves before,
//   an atomicMax each on the one word, with instructions in every team (H200: the solve's
//   GPU time 1–2% longer, benches/NOTES.md session 50).
#import invocation
#import sptrsv_words

const STEP_INIT: u32 = 0u;
const STEP_RELAUNCH: u32 = 1u;
const STEP_FINISH: u32 = 2u;
const STEP_LEVELS: u32 = 3u;
const STEP_WIDEST: u32 = 4u;
const STEP_MAX_LEVEL: u32 = 5u;
// WIDEST binds a one-word buffer of its own as `status`: the widest level's count.
const WIDEST_WORD: u32 = 0u;

struct Params {
    step: u32,
    items: u32,
    x_words: u32,
    aux_words: u32,
    rows: u32,
    k: u32,
    f64_values: u32,
    // The solve's tickets (its items, or its segments of items), the tickets one workgroup of
    // it takes, and the most workgroups a launch has (its teams then take several tickets
    // each).
    tickets: u32,
    solve_workgroup: u32,
    max_solve_workgroups: u32,
    max_workgroups_per_dimension: u32,
}

var<immediate> params: Params;
@group(0) @binding(0) var<storage, read_write> x: array<atomic<u32>>;
@group(0) @binding(1) var<storage, read_write> aux: array<atomic<u32>>;
@group(0) @binding(2) var<storage, read_write> status: array<atomic<u32>>;
@group(0) @binding(3) var<storage, read_write> args: array<u32>;
@group(0) @binding(4) var<storage, read_write> keys: array<u32>;
@group(0) @binding(5) var<storage, read_write> rows_out: array<u32>;

override WG_SIZE: u32 = 256u;

fn init(i: u32) {
    if i < params.x_words {
        atomicStore(&x[i], NOT_READY);
    }
    if i < params.aux_words {
        atomicStore(&aux[i], NOT_READY);
    }
    if i == 0u {
        atomicStore(&status[STATUS_TICKET], 0u);
        atomicStore(&status[STATUS_LOWEST_UNSOLVED], NONE);
        atomicStore(&status[STATUS_RELAUNCHES], 0u);
        atomicStore(&status[STATUS_MAX_LEVEL], 0u);
        atomicStore(&status[STATUS_PROBLEM], NONE);
    }
}

fn relaunch(i: u32) {
    if i != 0u {
        return;
    }
    let lowest = atomicLoad(&status[STATUS_LOWEST_UNSOLVED]);
    if lowest == NONE {
        args[0] = 0u;
        args[1] = 1u;
        args[2] = 1u;
        return;
    }
    atomicStore(&status[STATUS_TICKET], lowest);
    atomicStore(&status[STATUS_LOWEST_UNSOLVED], NONE);
    atomicAdd(&status[STATUS_RELAUNCHES], 1u);
    let workgroups = min((params.tickets - lowest + params.solve_workgroup - 1u) / params.solve_workgroup,
                         params.max_solve_workgroups);
    let width = min(workgroups, params.max_workgroups_per_dimension);
    args[0] = width;
    args[1] = (workgroups + width - 1u) / width;
    args[2] = 1u;
}

fn finish(i: u32) {
    if i >= params.items {
        return;
    }
    let w2 = atomicLoad(&aux[i]);
    if (w2 & (TOP_BIT | DECODED)) != 0u {
        return;
    }
    let bits = decode_f64_bits(atomicLoad(&x[2u * i]), atomicLoad(&x[2u * i + 1u]), w2);
    atomicStore(&x[2u * i], bits.x);
    atomicStore(&x[2u * i + 1u], bits.y);
    atomicStore(&aux[i], DECODED | (f64_level(w2) << 2u));
}

fn levels(i: u32) {
    if i >= params.rows {
        return;
    }
    let w = atomicLoad(&aux[i * params.k]);
    let level = select(w, f64_level(w), params.f64_values != 0u);
    keys[i] = level - 1u;
    rows_out[i] = i;
}

fn widest(i: u32) {
    if i >= params.rows {
        return;
    }
    let key = keys[i];
    if i + 1u < params.rows && keys[i + 1u] == key {
        return;
    }
    // The first position holding `key` (keys are sorted): a lower bound in [0, i].
    var lo = 0u;
    var hi = i;
    while lo < hi {
        let mid = (lo + hi) / 2u;
        if keys[mid] < key {
            lo = mid + 1u;
        } else {
            hi = mid;
        }
    }
    let width = 1u << (31u - countLeadingZeros(i + 1u - lo));
    // The word only grows: most levels find it already as large and write nothing.
    if atomicLoad(&status[WIDEST_WORD]) < width {
        atomicMax(&status[WIDEST_WORD], width);
    }
}

var<workgroup> group_max_level: atomic<u32>;

// Every invocation of the workgroup calls it (barriers).
fn max_level(i: u32) {
    let lid = i % WG_SIZE;
    if lid == 0u {
        atomicStore(&group_max_level, 0u);
    }
    workgroupBarrier();
    if i < params.rows {
        // Unsolved: NOT_READY (top bit set). Solved: the level (f32), or the encoded or
        // DECODED third word with the level in bits 2.. (f64).
        let w = atomicLoad(&aux[i * params.k]);
        if (w & TOP_BIT) == 0u {
            atomicMax(&group_max_level, select(w, f64_level(w), params.f64_values != 0u));
        }
    }
    workgroupBarrier();
    if lid == 0u {
        let top = atomicLoad(&group_max_level);
        if atomicLoad(&status[STATUS_MAX_LEVEL]) < top {
            atomicMax(&status[STATUS_MAX_LEVEL], top);
        }
    }
}

fn run(i: u32) {
    switch params.step {
        case STEP_INIT: {
            init(i);
        }
        case STEP_RELAUNCH: {
            relaunch(i);
        }
        case STEP_FINISH: {
            finish(i);
        }
        case STEP_LEVELS: {
            levels(i);
        }
        case STEP_MAX_LEVEL: {
            max_level(i);
        }
        default: {
            widest(i);
        }
    }
}
