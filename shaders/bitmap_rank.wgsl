// The structure steps of a bitmap built on the GPU (flags already set). COUNT, one
// invocation per rank block: rank[i·blocks + b] = the popcount of the block's words; with OR
// the words are first formed as a_flags | b_flags and stored to `flags` (the pattern of
// A ± B). An exclusive scan of `rank` (every row's blocks in turn) then gives each block its
// absolute position in the values, and the default variant (one invocation per row, and one
// more) writes the row starts: row_offsets[i] = rank[i·blocks], row_offsets[rows] = total.
#import invocation

struct Params {
    rows: u32,
    // Flag words a row.
    words: u32,
    // Rank blocks a row (8 words each).
    blocks: u32,
}

var<immediate> params: Params;
@group(0) @binding(0) var<storage, read> a_flags: array<u32>;
@group(0) @binding(1) var<storage, read> b_flags: array<u32>;
@group(0) @binding(2) var<storage, read_write> flags: array<u32>;
@group(0) @binding(3) var<storage, read_write> rank: array<u32>;
@group(0) @binding(4) var<storage, read_write> row_offsets: array<u32>;
@group(0) @binding(5) var<storage, read> total: array<u32>;

override WG_SIZE: u32 = 256u;

fn run(item: u32) {
#ifdef COUNT
    if item >= params.rows * params.blocks {
        return;
    }
    let row = item / params.blocks;
    let block = item - row * params.blocks;
    let first = row * params.words + block * 8u;
    let end = row * params.words + min(block * 8u + 8u, params.words);
    var count = 0u;
    for (var k = first; k < end; k++) {
#ifdef OR
        let word = a_flags[k] | b_flags[k];
        flags[k] = word;
#else
        let word = flags[k];
#endif
        count += countOneBits(word);
    }
    rank[item] = count;
#else
    if item > params.rows {
        return;
    }
    if item == params.rows {
        row_offsets[item] = total[0];
    } else if params.blocks == 0u {
        row_offsets[item] = 0u;
    } else {
        row_offsets[item] = rank[item * params.blocks];
    }
#endif
}
