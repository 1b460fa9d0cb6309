// The row decomposition of csr-split (RoDe, seed 002), built by split_count/split_fill.

// A chunk of a long row: the row and its first entry.
struct Chunk {
    row: u32,
    start: u32,
}

// A long row and the index of its first chunk; the next long row's first chunk ends it.
struct LongRow {
    row: u32,
    first_chunk: u32,
}
