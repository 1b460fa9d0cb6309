// The row decomposition of csr-split (RoDe, seed 002), built by split_count/split_fill.

// A chunk of a long row: the row, its first entry, and the row's index among the long rows.
struct Chunk {
    row: u32,
    start: u32,
    long_row: u32,
}

// A long row and the index of its first chunk; the next long row's first chunk ends it.
struct LongRow {
    row: u32,
    first_chunk: u32,
}
