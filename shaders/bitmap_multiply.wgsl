// The values of C = A·B on bitmaps (C's pattern and rank directory built before), row-wise
// (Gustavson's order): a workgroup per (row i of C, chunk of CHUNK columns). For each a_ik
// stored, in k order (a uniform walk of A's row, shared/a_row_walk.wgsl), the lanes take B's
// row k entry by entry (its values in place, their columns from the plan's export of B's
// pattern) and add a_ik·b_kj into a dense accumulator of the chunk's columns in workgroup
// memory. Within one k the columns are distinct, and a barrier after each k keeps every sum
// in k order: no atomics, deterministic. The work follows the products, where a lane per
// flag word of C's row (the earlier scheme) ran every lane through every k whether its word
// of B's row held anything or not. Then a lane per flag word of C's chunk writes its values
// at their positions (C's rank directory, shared/bitmap_position.wgsl).
//
// Each k is a chain of loads (a_ik and B's row extent, then the entries), so k's are taken
// four at a time: their extents, then their first entries, are read together.
#import entry
#import real
#import a_row_walk
#import bitmap_position
#import lowest_bit

struct Params {
    rows: u32,
    a_words: u32,
    a_blocks: u32,
    // Flag words and rank blocks of C's rows (shared/bitmap_position.wgsl's names).
    words: u32,
    blocks: u32,
    // Chunks of CHUNK columns a row of C.
    chunks: u32,
    // Rank blocks of B's rows.
    b_blocks: u32,
}

var<immediate> params: Params;
@group(0) @binding(0) var<storage, read> a_flags: array<u32>;
@group(0) @binding(1) var<storage, read> a_rank: array<u32>;
@group(0) @binding(2) var<storage, read> a_values: array<Real>;
@group(0) @binding(3) var<storage, read> b_offsets: array<u32>;
@group(0) @binding(4) var<storage, read> b_rank: array<u32>;
@group(0) @binding(5) var<storage, read> b_cols: array<u32>;
@group(0) @binding(6) var<storage, read> b_values: array<Real>;
@group(0) @binding(7) var<storage, read> flags: array<u32>;
@group(0) @binding(8) var<storage, read> rank: array<u32>;
@group(0) @binding(9) var<storage, read_write> c_values: array<Real>;

override WG_SIZE: u32 = 32u;
// Columns of C a workgroup accumulates: a multiple of 256 (whole rank blocks of 8 words).
override CHUNK: u32 = 4096u;

var<workgroup> acc: array<Acc, CHUNK>;

// B's row k restricted to the chunk's columns [c0, c0 + CHUNK), and a_ik; an empty extent
// for no k.
struct Extent {
    a: Acc,
    start: u32,
    end: u32,
}

// B's row k restricted to the chunk: the rank directory gives the position of the first
// entry of any block of 256 columns, so a chunk's entries need no search.
fn extent(k: u32, pa: u32, c0: u32) -> Extent {
    if k == NONE {
        return Extent(Acc(0.0), 0u, 0u);
    }
    let blocks = k * params.b_blocks;
    let next = (c0 + CHUNK) / 256u;
    var end = b_offsets[k + 1u];
    if next < params.b_blocks {
        end = b_rank[blocks + next];
    }
    return Extent(Acc(a_values[pa]), b_rank[blocks + c0 / 256u], end);
}

// A lane's first entry of the extent: its column in the chunk and b_kj (NONE past the end).
struct Entry {
    j: u32,
    b: Acc,
}

fn first_entry(e: Extent, lane: u32, c0: u32) -> Entry {
    let at = e.start + lane;
    if at >= e.end {
        return Entry(NONE, Acc(0.0));
    }
    return Entry(b_cols[at] - c0, Acc(b_values[at]));
}

// acc += a_ik · B's row k over the extent (the lane's first entry read already), then a
// barrier: the next k's sums come after this one's in every column.
fn add_row(e: Extent, first: Entry, lane: u32, c0: u32) {
    if first.j != NONE {
        acc[first.j] = fma(e.a, first.b, acc[first.j]);
    }
    for (var at = e.start + lane + WG_SIZE; at < e.end; at += WG_SIZE) {
        let j = b_cols[at] - c0;
        acc[j] = fma(e.a, Acc(b_values[at]), acc[j]);
    }
    workgroupBarrier();
}

fn run(workgroup: u32, lane: Lane) {
    let row = workgroup / params.chunks;
    if row >= params.rows {
        return;
    }
    let chunk = workgroup - row * params.chunks;
    let c0 = chunk * CHUNK;
    for (var j = lane.index; j < CHUNK; j += WG_SIZE) {
        acc[j] = Acc(0.0);
    }
    var pa = 0u;
    if params.a_blocks > 0u {
        pa = a_rank[row * params.a_blocks];
    }
    // stage_segment's first barrier also orders the zeroing before the first sums.
    for (var first = 0u; first < params.a_words; first += WG_SIZE) {
        var cursor: Cursor;
        let entries = stage_segment(row, first, lane.index, &cursor);
        for (var taken = 0u; taken < entries; taken += 4u) {
            let k = next_four(&cursor);
            let e0 = extent(k.x, pa, c0);
            let e1 = extent(k.y, pa + 1u, c0);
            let e2 = extent(k.z, pa + 2u, c0);
            let e3 = extent(k.w, pa + 3u, c0);
            pa += 1u + u32(k.y != NONE) + u32(k.z != NONE) + u32(k.w != NONE);
            let f0 = first_entry(e0, lane.index, c0);
            let f1 = first_entry(e1, lane.index, c0);
            let f2 = first_entry(e2, lane.index, c0);
            let f3 = first_entry(e3, lane.index, c0);
            add_row(e0, f0, lane.index, c0);
            add_row(e1, f1, lane.index, c0);
            add_row(e2, f2, lane.index, c0);
            add_row(e3, f3, lane.index, c0);
        }
    }
    workgroupBarrier();
    let chunk_words = CHUNK / 32u;
    for (var t = lane.index; t < chunk_words; t += WG_SIZE) {
        let cw = chunk * chunk_words + t;
        if cw >= params.words {
            break;
        }
        var bits = flags[row * params.words + cw];
        var pc = word_position(row, cw);
        while bits != 0u {
            let b = lowest_bit(bits);
            bits &= bits - 1u;
            c_values[pc] = Real(acc[t * 32u + b]);
            pc++;
        }
    }
}
