// SpMV on a bitmap, y = alpha * A * x + beta * y: GROUP lanes per row, a flag word a lane, the
// row's words GROUP at a time: the group's loads of flags are side by side, each lane's first
// value is placed by the rank directory (the position of every 8th word's first value) and the
// popcounts of the words before it in its 8-word block, and the values a lane then walks lie
// next to its neighbours'. Lane sums are reduced by shuffles, or through workgroup memory
// without subgroups. Reads 4 bytes per 32 columns of flags (and a directory entry per 8
// words) instead of CSR's 4-byte column index per entry: fewer bytes once density passes 1/32.
//
// A chunk of GROUP words must hold whole rank blocks (GROUP a multiple of 8) unless a row (or
// segment) is one chunk: the host picks GROUP, and runs without subgroups where the smallest
// subgroup is narrower than 8 lanes and rows are wider than it.
//
// Few wide rows would leave most of the GPU idle, so a row may be cut into `segments` of
// `segment_words` words (a multiple of 32, so each starts at a rank block): with SPLIT each
// group sums a segment into `partials`, and FINISH, a group per row, adds a row's partials
// (each lane every GROUP-th, then the lanes' sums in a fixed tree: deterministic) and
// stores y.
//
// The kernel is bound by its instructions, not by its bytes (NOTES, session 49): a group's
// loop runs as many entry steps as the fullest word of its chunk, each a few integer
// instructions, and the quarter-rate ones (popcounts, bit scans) are worth counting.
#import entry
#import real
#import lane_group_sum
#import spmv_store
#import lowest_bit

struct Params {
    rows: u32,
    words: u32,
    blocks: u32,
    // Segments a row, and words a segment (the row's words rounded up to GROUP, unsplit).
    segments: u32,
    segment_words: u32,
    scaling: Scaling,
}

var<immediate> params: Params;
@group(0) @binding(0) var<storage, read> flags: array<u32>;
@group(0) @binding(1) var<storage, read> rank: array<u32>;
@group(0) @binding(2) var<storage, read> values: array<Real>;
@group(0) @binding(3) var<storage, read> x: array<Real>;
@group(0) @binding(4) var<storage, read> alpha_dev: array<Real>;
@group(0) @binding(5) var<storage, read> beta_dev: array<Real>;
@group(0) @binding(6) var<storage, read_write> y: array<Real>;
@group(0) @binding(7) var<storage, read_write> partials: array<Real>;

override WG_SIZE: u32 = 256u;
// Lanes per row (or segment): a power of two dividing WG_SIZE; with subgroups, at most the
// subgroup size.
override GROUP: u32 = 32u;

#ifndef SUBGROUP
var<workgroup> block_counts: array<u32, WG_SIZE>;
#endif

// The sum of `count` over the lanes before this one in its 8-word rank block (the lanes of
// a group's chunk form whole blocks from its first lane; a group narrower than 8 lanes is a
// whole row): three steps of shuffles, or through workgroup memory. Every lane of the
// workgroup calls it.
fn block_exclusive_sum(count: u32, lane: Lane, member: u32) -> u32 {
    let in_block = member & 7u;
    var sum = count;
#ifdef SUBGROUP
    for (var offset = 1u; offset < 8u; offset <<= 1u) {
        let other = subgroupShuffleUp(sum, offset);
        if in_block >= offset {
            sum += other;
        }
    }
#else
    // The previous call's sums have been read before they are overwritten.
    workgroupBarrier();
    block_counts[lane.index] = sum;
    workgroupBarrier();
    for (var offset = 1u; offset < 8u; offset <<= 1u) {
        var other = 0u;
        if in_block >= offset {
            other = block_counts[lane.index - offset];
        }
        workgroupBarrier();
        sum += other;
        block_counts[lane.index] = sum;
        workgroupBarrier();
    }
#endif
    return sum - count;
}

// `sum` plus the products of the word's entries (values from q, columns from `col0`), in
// column order. The first four are loaded together, with no load waiting on another, and only
// those the word has: a gather's cost is the cache lines its active lanes touch, so a lane
// past its word's count stays out of it (a clamped index loaded anyway was half the gathers
// at a density of 1/16). The rest, rare below a density of 1/8, one at a time.
fn word_sum(word: u32, col0: u32, q: u32, start: Acc) -> Acc {
    let count = countOneBits(word);
    if count == 0u {
        return start;
    }
    var bits = word;
    let c0 = col0 + lowest_bit(bits);
    bits &= bits - 1u;
    let c1 = col0 + lowest_bit(bits);
    bits &= bits - 1u;
    let c2 = col0 + lowest_bit(bits);
    bits &= bits - 1u;
    let c3 = col0 + lowest_bit(bits);
    bits &= bits - 1u;
    let v0 = values[q];
    let x0 = x[c0];
    var v1 = Real(0.0);
    var x1 = Real(0.0);
    var v2 = Real(0.0);
    var x2 = Real(0.0);
    var v3 = Real(0.0);
    var x3 = Real(0.0);
    if count > 1u {
        v1 = values[q + 1u];
        x1 = x[c1];
    }
    if count > 2u {
        v2 = values[q + 2u];
        x2 = x[c2];
    }
    if count > 3u {
        v3 = values[q + 3u];
        x3 = x[c3];
    }
    var sum = fma(Acc(v0), Acc(x0), start);
    if count > 1u {
        sum = fma(Acc(v1), Acc(x1), sum);
    }
    if count > 2u {
        sum = fma(Acc(v2), Acc(x2), sum);
    }
    if count > 3u {
        sum = fma(Acc(v3), Acc(x3), sum);
    }
    var p = q + 4u;
    while bits != 0u {
        sum = fma(Acc(values[p]), Acc(x[col0 + lowest_bit(bits)]), sum);
        bits &= bits - 1u;
        p++;
    }
    return sum;
}

// Flag word w of the row at `base`, 0 past the segment's `end` or the matrix.
fn flag_word(in_rows: bool, base: u32, w: u32, end: u32) -> u32 {
    if in_rows && w < end {
        return flags[base + w];
    }
    return 0u;
}

// The position of the first value of word w's rank block in the row whose directory starts at
// `blocks_base` (0 past the segment's `end` or the matrix, where the word reads as 0).
fn block_start(in_rows: bool, blocks_base: u32, w: u32, end: u32) -> u32 {
    if in_rows && w < end {
        return rank[blocks_base + w / 8u];
    }
    return 0u;
}

// FINISH: y[row] from the row's partial sums, added in segment order within each lane.
fn finish(workgroup: u32, lane: Lane) {
    let row = workgroup * (WG_SIZE / GROUP) + lane.index / GROUP;
    let member = lane.index % GROUP;
    var sum = Acc(0.0);
    if row < params.rows {
        for (var s = member; s < params.segments; s += GROUP) {
            sum += Acc(partials[row * params.segments + s]);
        }
    }
    sum = lane_group_sum(sum, lane.index);
    if member == 0u && row < params.rows {
        store_y(row, sum);
    }
}

fn run(workgroup: u32, lane: Lane) {
#ifdef FINISH
    finish(workgroup, lane);
#else
    // The group's segment of a row.
    let item = workgroup * (WG_SIZE / GROUP) + lane.index / GROUP;
    let row = item / params.segments;
    let start = (item - row * params.segments) * params.segment_words;
    let end = min(start + params.segment_words, params.words);
    let member = lane.index % GROUP;
    let in_rows = row < params.rows;
    var sum = Acc(0.0);
    let base = row * params.words;
    let blocks_base = row * params.blocks;
    // Each chunk's flag words and block starts are loaded while the chunk before is summed.
    // The trip count is the same for every group (barriers and shuffles inside); words past
    // `end` read as 0.
    var next = flag_word(in_rows, base, start + member, end);
    var next_start = block_start(in_rows, blocks_base, start + member, end);
    for (var walked = 0u; walked < params.segment_words; walked += GROUP) {
        let w = start + walked + member;
        let bits = next;
        let first = next_start;
        next = flag_word(in_rows, base, w + GROUP, end);
        next_start = block_start(in_rows, blocks_base, w + GROUP, end);
        let q = first + block_exclusive_sum(countOneBits(bits), lane, member);
        sum = word_sum(bits, w * 32u, q, sum);
    }
    sum = lane_group_sum(sum, lane.index);
    if member == 0u && in_rows {
#ifdef SPLIT
        partials[item] = Real(sum);
#else
        store_y(row, sum);
#endif
    }
#endif
}
