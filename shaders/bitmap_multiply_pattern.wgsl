// The pattern of C = A·B on bitmaps, row-wise: row i of C is the OR of the rows k of B where
// A's row i has a flag. A workgroup per (row of C, chunk of WG_SIZE·4 words): each lane owns
// four words of the chunk (lane, lane + WG_SIZE, …: loads coalesced across lanes) and ORs B's
// words into registers. The walk over A's row is uniform across the workgroup, from
// workgroup memory (shared/a_row_walk.wgsl), four k's at a time so that their loads are in
// flight together (an OR needs no order).
#import entry
#import a_row_walk

struct Params {
    rows: u32,
    // Flag words of A's rows and of B's (and C's) rows.
    a_words: u32,
    b_words: u32,
    // Chunks of a row of C.
    chunks: u32,
}

var<immediate> params: Params;
@group(0) @binding(0) var<storage, read> a_flags: array<u32>;
@group(0) @binding(1) var<storage, read> b_flags: array<u32>;
@group(0) @binding(2) var<storage, read_write> c_flags: array<u32>;

override WG_SIZE: u32 = 128u;
const WORDS_PER_LANE: u32 = 4u;

// Word w of B's row k (0 for no k or past the row).
fn b_word(k: u32, w: u32) -> u32 {
    if k == NONE || w >= params.b_words {
        return 0u;
    }
    return b_flags[k * params.b_words + w];
}

fn run(workgroup: u32, lane: Lane) {
    let row = workgroup / params.chunks;
    if row >= params.rows {
        return;
    }
    let first_word = (workgroup - row * params.chunks) * WG_SIZE * WORDS_PER_LANE + lane.index;
    var acc = array<u32, WORDS_PER_LANE>(0u, 0u, 0u, 0u);
    for (var first = 0u; first < params.a_words; first += WG_SIZE) {
        var cursor: Cursor;
        let entries = stage_segment(row, first, lane.index, &cursor);
        for (var taken = 0u; taken < entries; taken += 4u) {
            let k = next_four(&cursor);
            for (var q = 0u; q < WORDS_PER_LANE; q++) {
                let w = first_word + q * WG_SIZE;
                acc[q] |= (b_word(k.x, w) | b_word(k.y, w)) | (b_word(k.z, w) | b_word(k.w, w));
            }
        }
    }
    for (var q = 0u; q < WORDS_PER_LANE; q++) {
        let w = first_word + q * WG_SIZE;
        if w < params.b_words {
            c_flags[row * params.b_words + w] = acc[q];
        }
    }
}
