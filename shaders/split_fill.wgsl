// Row decomposition, second pass: with chunk_starts and long_index the exclusive scans of
// split_count's arrays, each long row writes its entry (row, first chunk) among the long
// rows and one (row, first entry, index among the long rows) per chunk.
#import invocation
#import row_split

struct Params {
    rows: u32,
    max_len: u32,
    chunk_len: u32,
}

var<immediate> params: Params;
@group(0) @binding(0) var<storage, read> row_offsets: array<u32>;
@group(0) @binding(1) var<storage, read> chunk_starts: array<u32>;
@group(0) @binding(2) var<storage, read> long_index: array<u32>;
@group(0) @binding(3) var<storage, read_write> chunks: array<Chunk>;
@group(0) @binding(4) var<storage, read_write> long_rows: array<LongRow>;

override WG_SIZE: u32 = 256u;

fn run(row: u32) {
    if row >= params.rows {
        return;
    }
    let start = row_offsets[row];
    let end = row_offsets[row + 1u];
    if end - start <= params.max_len {
        return;
    }
    let first = chunk_starts[row];
    let long_row = long_index[row];
    long_rows[long_row] = LongRow(row, first);
    var c = first;
    for (var e = start; e < end; e += params.chunk_len) {
        chunks[c] = Chunk(row, e, long_row);
        c++;
    }
}
