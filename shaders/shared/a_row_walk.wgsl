// A uniform walk over the stored columns k of row `row` of a bitmap A (the row-wise
// product's kernels): the row's flag words are staged in workgroup memory WG_SIZE at a time
// (one coalesced load, where a walk reading each word from global memory waits on one load
// per word), then every lane takes the same k's from the stage. The includer declares
// `a_flags`, `params.a_words` and WG_SIZE.
#import lowest_bit

const NONE: u32 = 0xffffffffu;

// The segment of A's row being walked: flag words [first, first + WG_SIZE).
var<workgroup> a_segment: array<u32, WG_SIZE>;

// Where the walk over the staged segment is: its word and the bits left in it.
struct Cursor {
    first_word: u32,
    words: u32,
    word: u32,
    bits: u32,
}

// The stored entries of the staged segment, counted by lane 0 for workgroupUniformLoad.
var<workgroup> segment_entries: u32;

// Stages the segment of row `row` that starts at word `first` and points `cursor` at its
// start; returns its number of stored entries, uniform across the workgroup (so that a loop
// taking them may hold barriers). Every lane of the workgroup calls it (barriers).
fn stage_segment(row: u32, first: u32, lane: u32, cursor: ptr<function, Cursor>) -> u32 {
    // Every lane is done with the last segment before it is overwritten.
    workgroupBarrier();
    let aw = first + lane;
    var word = 0u;
    if aw < params.a_words {
        word = a_flags[row * params.a_words + aw];
    }
    a_segment[lane] = word;
    workgroupBarrier();
    let words = min(WG_SIZE, params.a_words - first);
    if lane == 0u {
        var entries = 0u;
        for (var i = 0u; i < words; i++) {
            entries += countOneBits(a_segment[i]);
        }
        segment_entries = entries;
    }
    *cursor = Cursor(first, words, 0u, a_segment[0]);
    return workgroupUniformLoad(&segment_entries);
}

// The next stored column k of the staged segment, or NONE past its end (and on every call
// after that).
fn next_k(cursor: ptr<function, Cursor>) -> u32 {
    while (*cursor).bits == 0u {
        if (*cursor).word + 1u >= (*cursor).words {
            return NONE;
        }
        (*cursor).word += 1u;
        (*cursor).bits = a_segment[(*cursor).word];
    }
    let k = ((*cursor).first_word + (*cursor).word) * 32u + lowest_bit((*cursor).bits);
    (*cursor).bits &= (*cursor).bits - 1u;
    return k;
}

// The next four stored columns (NONE for those past the segment's end): a walk takes its k's
// four at a time so that their loads are issued together.
fn next_four(cursor: ptr<function, Cursor>) -> vec4<u32> {
    let k0 = next_k(cursor);
    let k1 = next_k(cursor);
    let k2 = next_k(cursor);
    return vec4<u32>(k0, k1, k2, next_k(cursor));
}
