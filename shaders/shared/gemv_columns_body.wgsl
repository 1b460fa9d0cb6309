// y = α·Sᵀ·x + β·y for a row-major block S of `rows` rows of `units` units (a unit is a
// vec4 or one element: the including file aliases `Unit` and `Units`, the accumulator, and
// defines `unit_get` and `unit_set`). Seed 001's mapping turned to row-major data: a lane owns a unit of
// columns and walks down them, so the lanes of a row read it coalesced and x[i] is one value
// for all of them (a broadcast from cache). A workgroup holds COLS columns × (WG_SIZE / COLS)
// row lanes and takes one strip of `strip` rows; its row lanes' sums meet in workgroup
// memory, added in row-lane order. With no rows, strip 0 still writes β·y.
// With STRIPS (more than one strip) the pass is still one dispatch: each strip publishes its
// column sums with their ready state and counts its arrival at its block of columns; the strip
// that arrives last adds every strip's sums in strip order (shared/ready_sums.wgsl: a sum
// it cannot see yet it recomputes, as that strip did), so y is the same whoever arrives last.
// With SUM x is all ones, which turns this kernel into the fixed-order adder of the rows
// kernel's partial sums.
#import entry
#import real
#import spmv_store

struct Params {
    rows: u32,
    units: u32,
    col_blocks: u32,
    strip: u32,
    strips: u32,
    // STRIPS, tests: m > 0 withholds the sums of strips s with s % m = m − 1 (never
    // published, as if not visible yet), which the completing group must recompute.
    withhold: u32,
    scaling: Scaling,
}

var<immediate> params: Params;
@group(0) @binding(0) var<storage, read> a: array<Unit>;
@group(0) @binding(1) var<storage, read> x: array<Real>;
@group(0) @binding(2) var<storage, read> alpha_dev: array<Real>;
@group(0) @binding(3) var<storage, read> beta_dev: array<Real>;
@group(0) @binding(4) var<storage, read_write> y: array<Real>;
// STRIPS: a counter per block of columns, then two sets of strips × columns sums.
@group(0) @binding(5) var<storage, read_write> scratch: array<atomic<u32>>;

override WG_SIZE: u32 = 256u;
// Unit columns per workgroup: a power of two dividing WG_SIZE.
override COLS: u32 = 256u;
// With subgroups, the smallest subgroup size (at most WG_SIZE): lanes closer than this are
// in one subgroup. 1 without.
override SHUFFLE_SPAN: u32 = 1u;
// The most strips (the host's MAX_SPLITS).
const MAX_STRIPS: u32 = 1024u;
const MISSING_WORDS: u32 = MAX_STRIPS / 32u;

var<workgroup> column_sums: array<Units, WG_SIZE>;
// STRIPS: the parity, then the completing group's view of the arrival, and the strips whose
// sums it could not see (a bit each; the lanes set them and `missing_seen`, and only when it
// is set are the bits copied, by the lanes, to be read uniformly). Little workgroup memory:
// it bounds the workgroups an SM holds.
var<workgroup> arrival: u32;
var<workgroup> missing: array<atomic<u32>, MISSING_WORDS>;
var<workgroup> missing_seen: atomic<u32>;
var<workgroup> missing_copy: array<u32, MISSING_WORDS>;
var<workgroup> missing_any: u32;

#import ready_sums

fn sum_word(parity: u32, slot: u32) -> u32 {
    return params.col_blocks + (parity * params.strips * params.units * UNIT_LEN + slot) * VALUE_WORDS;
}

fn x_at(i: u32) -> Acc {
#ifdef SUM
    return Acc(1.0);
#else
    return Acc(x[i]);
#endif
}

// The row lanes' `sums` added in a fixed order, in the lanes of row lane 0 (zero in the
// others): with subgroups, the row lanes of a subgroup first, by shuffles (lane.index is
// subgroup-major, so lanes up to SHUFFLE_SPAN apart share one); then a pairwise tree in
// workgroup memory, a barrier a level. Uniform (barriers; a call after another finds every
// read of the one before done).
fn add_row_lanes(sums: Units, lane: Lane) -> Units {
    var total = sums;
#ifdef SUBGROUP
    for (var apart = COLS; apart < SHUFFLE_SPAN; apart *= 2u) {
        total += subgroupShuffleXor(total, apart);
    }
#endif
    workgroupBarrier();
    column_sums[lane.index] = total;
    for (var half = WG_SIZE / 2u; half >= max(COLS, SHUFFLE_SPAN); half /= 2u) {
        workgroupBarrier();
        if lane.index < half {
            column_sums[lane.index] += column_sums[lane.index + half];
        }
    }
    workgroupBarrier();
    return select(Units(0.0), column_sums[lane.index], lane.index < COLS);
}

// Rows a row lane loads before it adds any (the host's choice by how full the GPU is). With
// more than 2, their loads may be in flight together: nothing between them branches (a row
// past the strip loads the lane's first row, and its product is dropped), as a branch would
// wait for the loads before it. With 2, two sums alternate: fewer registers, which a grid
// that fills the GPU needs more than loads in flight (8192² ran 69.8 µs this way, 77.7 in
// batches of 2 with the reloads; H200, benches/NOTES.md, session 66).
override ROW_BATCH: u32 = 2u;

// The column sums of strip `strip` (rows strip·strip …), in the lanes of row lane 0: each
// row lane walks every row_lanes-th row. Uniform.
fn strip_sums(strip: u32, col: u32, lane: Lane) -> Units {
    let row_lanes = WG_SIZE / COLS;
    let start = min(strip * params.strip, params.rows);
    let end = min(start + params.strip, params.rows);
    let first = start + lane.index / COLS;
    var sums = Units(0.0);
    if col < params.units && first < end {
        if ROW_BATCH <= 2u {
            var odd = Units(0.0);
            var i = first;
            for (; i + row_lanes < end; i += 2u * row_lanes) {
                sums += Units(a[i * params.units + col]) * x_at(i);
                odd += Units(a[(i + row_lanes) * params.units + col]) * x_at(i + row_lanes);
            }
            if i < end {
                sums += Units(a[i * params.units + col]) * x_at(i);
            }
            sums += odd;
        } else {
            for (var i = first; i < end; i += ROW_BATCH * row_lanes) {
                for (var r = 0u; r < ROW_BATCH; r++) {
                    let row = i + r * row_lanes;
                    let at = select(first, row, row < end);
                    sums += select(Units(0.0), Units(a[at * params.units + col]) * x_at(at), row < end);
                }
            }
        }
    }
    return add_row_lanes(sums, lane);
}

fn store_block(col: u32, total: Units, mine: bool) {
    if mine {
        for (var k = 0u; k < UNIT_LEN; k++) {
            store_y(col * UNIT_LEN + k, unit_get(total, k));
        }
    }
}

fn run(workgroup: u32, lane: Lane) {
    let block = workgroup % params.col_blocks;
    let col = block * COLS + lane.index % COLS;
    let strip = workgroup / params.col_blocks;
    // Past the strips: workgroups a folded grid adds (the whole workgroup alike).
    if strip >= params.strips {
        return;
    }
#ifdef STRIPS
    // The set this run publishes in, loaded while the strip is summed (its barriers publish it).
    if lane.index == 0u {
        arrival = counter_parity(block);
        atomicStore(&missing_seen, 0u);
    }
    for (var w = lane.index; w < MISSING_WORDS; w += WG_SIZE) {
        atomicStore(&missing[w], 0u);
    }
#endif
    let total = strip_sums(strip, col, lane);
    // The lanes that hold a column's sums.
    let mine = lane.index < COLS && col < params.units;
#ifdef STRIPS
    let outputs = params.units * UNIT_LEN;
    let parity = arrival;
    let withheld = params.withhold != 0u && strip % params.withhold == params.withhold - 1u;
    if mine {
        for (var k = 0u; k < UNIT_LEN; k++) {
            let slot = strip * outputs + col * UNIT_LEN + k;
            if !withheld {
                publish_sum(parity, slot, unit_get(total, k));
            }
            clear_sum(1u - parity, slot);
        }
    }
    workgroupBarrier();
    if lane.index == 0u {
        let done = (atomicAdd(&scratch[block], 1u) & ~SET_BIT) + 1u;
        arrival = select(0u, 1u + parity, done == params.strips);
    }
    let completes = workgroupUniformLoad(&arrival);
    if completes == 0u {
        return;
    }
    // The last to arrive adds the block's sums over the strips: strip s by row lane
    // s mod row_lanes, in strip order, then the row lanes in order. Strips whose sums it
    // cannot see yet are recomputed (by strip_sums, as they were), published in this group's
    // view, and everything is read again.
    let row_lanes = WG_SIZE / COLS;
    for (var reading = 0u; reading < 2u; reading++) {
        let check = reading == 0u;
        var sums = Units(0.0);
        if col < params.units {
            // No branch on a loaded word until 32 strips are read (a branch would wait for
            // each load before issuing the next): the strips not visible are bits of
            // `pending` (bit j: the lane's j-th strip of the run), listed every 32.
            let first = lane.index / COLS;
            var pending = 0u;
            var j = 0u;
            for (var s = first; s < params.strips; s += row_lanes) {
                var unit = Units(0.0);
                var ready = true;
                for (var k = 0u; k < UNIT_LEN; k++) {
                    let published = published_sum(completes - 1u, s * outputs + col * UNIT_LEN + k);
                    ready = ready & published.ready;
                    unit = unit_set(unit, k, published.value);
                }
                pending |= select(0u, 1u << (j % 32u), check & !ready);
                sums += unit;
                j++;
                if j % 32u == 0u || s + row_lanes >= params.strips {
                    let run_start = first + (j - 1u) / 32u * 32u * row_lanes;
                    while pending != 0u {
                        let strip_missing = run_start + countTrailingZeros(pending) * row_lanes;
                        pending &= pending - 1u;
                        atomicOr(&missing[strip_missing / 32u], 1u << (strip_missing % 32u));
                        atomicStore(&missing_seen, 1u);
                    }
                }
            }
        }
        workgroupBarrier();
        if lane.index == 0u {
            missing_any = atomicLoad(&missing_seen);
        }
        if !check || workgroupUniformLoad(&missing_any) == 0u {
            store_block(col, add_row_lanes(sums, lane), mine);
            break;
        }
        for (var w = lane.index; w < MISSING_WORDS; w += WG_SIZE) {
            missing_copy[w] = atomicLoad(&missing[w]);
        }
        for (var w = 0u; w < MISSING_WORDS; w++) {
            var bits = workgroupUniformLoad(&missing_copy[w]);
            while bits != 0u {
                let s = 32u * w + countTrailingZeros(bits);
                bits &= bits - 1u;
                let again = strip_sums(s, col, lane);
                if mine {
                    for (var k = 0u; k < UNIT_LEN; k++) {
                        publish_sum(completes - 1u, s * outputs + col * UNIT_LEN + k, unit_get(again, k));
                    }
                }
            }
        }
        storageBarrier();
    }
    if lane.index == 0u {
        reset_counter(block, completes);
    }
#else
    store_block(col, total, mine);
#endif
}
