// Row decomposition (RoDe, seed 002), first pass: per row, the number of chunks of
// `chunk_len` entries its block part is cut into (0 for rows of at most `max_len` entries,
// which one invocation takes whole) and whether it is long. Both arrays are then scanned to
// place each long row's chunks and its entry among the long rows (split_fill).
#import invocation

struct Params {
    rows: u32,
    max_len: u32,
    chunk_len: u32,
}

var<immediate> params: Params;
@group(0) @binding(0) var<storage, read> row_offsets: array<u32>;
@group(0) @binding(1) var<storage, read_write> chunk_counts: array<u32>;
@group(0) @binding(2) var<storage, read_write> long_flags: array<u32>;

override WG_SIZE: u32 = 256u;

fn run(row: u32) {
    if row >= params.rows {
        return;
    }
    let len = row_offsets[row + 1u] - row_offsets[row];
    let long = len > params.max_len;
    chunk_counts[row] = select(0u, (len + params.chunk_len - 1u) / params.chunk_len, long);
    long_flags[row] = select(0u, 1u, long);
}
