// Positions in a bitmap's values through its rank directory: one directory entry (the
// absolute position of its 8-word block's first entry) plus the popcounts of at most 7 words
// before, whatever the row's width. Expects the bindings `flags` and `rank` of one bitmap and
// `params.words`, `params.blocks` (flag words and rank blocks a row).

// The position of the first entry of word `w` of `row` (where the word's entries start).
fn word_position(row: u32, w: u32) -> u32 {
    let base = row * params.words;
    let block = w / 8u;
    var p = rank[row * params.blocks + block];
    for (var k = base + block * 8u; k < base + w; k++) {
        p += countOneBits(flags[k]);
    }
    return p;
}

// The position of entry (row, col), which must be stored.
fn entry_position(row: u32, col: u32) -> u32 {
    let w = col / 32u;
    return word_position(row, w) + countOneBits(flags[row * params.words + w] & ((1u << (col % 32u)) - 1u));
}
