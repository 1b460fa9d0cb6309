// CSR SpMV, long rows (the csr-split algorithm): each long row is cut into chunks of at
// most `chunk_len` entries, one chunk per group of lanes (a subgroup, or the workgroup
// without subgroups). The lanes stride over the chunk (coalesced) and the group's sum goes
// to `partials`; spmv_csr_split_rows adds a row's chunks in order.
#import group

struct Params {
    chunks: u32,
    chunk_len: u32,
    _pad0: u32,
    _pad1: u32,
}

// A chunk: the row it belongs to and its first entry.
struct Chunk {
    row: u32,
    start: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> row_offsets: array<u32>;
@group(0) @binding(2) var<storage, read> col_indices: array<u32>;
@group(0) @binding(3) var<storage, read> values: array<f32>;
@group(0) @binding(4) var<storage, read> x: array<f32>;
@group(0) @binding(5) var<storage, read> chunks: array<Chunk>;
@group(0) @binding(6) var<storage, read_write> partials: array<f32>;

override WG_SIZE: u32 = 256u;
override TASKS_PER_WORKGROUP: u32 = 8u;

fn run(workgroup: u32, lane: Lane) {
    let g = group_of(lane);
    let first = workgroup * TASKS_PER_WORKGROUP;
    let last = min(first + TASKS_PER_WORKGROUP, params.chunks);
    for (var c = first + g.index; c < last; c += g.count) {
        let chunk = chunks[c];
        let end = min(chunk.start + params.chunk_len, row_offsets[chunk.row + 1u]);
        var sum = 0.0;
        for (var p = chunk.start + g.lane; p < end; p += g.size) {
            sum = fma(values[p], x[col_indices[p]], sum);
        }
        let total = group_sum(g, sum);
        if g.lane == 0u {
            partials[c] = total;
        }
    }
}
