// Positions in a bitmap's values through its rank directory: one directory entry (the
// absolute position of its 8-word block's first entry) plus the popcounts of at most 7 words
// before, whatever the row's width. Expects the bindings `flags` and `rank` of one bitmap and
// `params.words`, `params.blocks` (flag words and rank blocks a row).

// The position of the first entry of word `w` of `row` (where the word's entries start).
// Straight-line code: the block's words before w are loaded together (indices clamped into
// them, sums masked), where a loop over them waits out one load a word.
fn word_position(row: u32, w: u32) -> u32 {
    let before = w % 8u;
    let base = row * params.words + w - before;
    let last = max(before, 1u) - 1u;
    var p = rank[row * params.blocks + w / 8u];
    p += select(0u, countOneBits(flags[base]), before > 0u);
    p += select(0u, countOneBits(flags[base + min(1u, last)]), before > 1u);
    p += select(0u, countOneBits(flags[base + min(2u, last)]), before > 2u);
    p += select(0u, countOneBits(flags[base + min(3u, last)]), before > 3u);
    p += select(0u, countOneBits(flags[base + min(4u, last)]), before > 4u);
    p += select(0u, countOneBits(flags[base + min(5u, last)]), before > 5u);
    p += select(0u, countOneBits(flags[base + min(6u, last)]), before > 6u);
    return p;
}

// The position of entry (row, col), which must be stored.
fn entry_position(row: u32, col: u32) -> u32 {
    let w = col / 32u;
    return word_position(row, w) + countOneBits(flags[row * params.words + w] & ((1u << (col % 32u)) - 1u));
}
