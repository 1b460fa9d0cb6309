// CSR SpMV by row split (csr-split): RoDe's row decomposition (seed 002) applied to SpMV.
//
// First step, in one dispatch so that short rows and long rows run side by side:
// - the first params.chunk_workgroups workgroups take the chunks of the long rows (at most
//   chunk_len entries each), one chunk per group of lanes (a subgroup, or the workgroup),
//   striding over it with coalesced loads; each chunk's sum goes to `partials`. They come
//   first so that their longer work starts early instead of trailing behind the short rows;
// - the workgroups after them take WG_SIZE rows each, one invocation per row, and skip
//   rows longer than params.max_len.
// Second step (params.finish = 1): one group of lanes per long row adds the partial sums of
// the row's chunks (consecutive in `partials`) and stores y, in a fixed order (lane-strided,
// then the group's reduction tree). Both steps are one pipeline with one bind group, the
// step chosen by immediate data: between them the pass changes nothing but the immediates
// (a pipeline switch per step doubled the CPU cost of recording a run on the H100's driver).
#import real
#import row_split
#import group
#import spmv_store
#import csr_row_sum

struct Params {
    rows: u32,
    max_len: u32,
    chunk_workgroups: u32,
    chunks: u32,
    chunk_len: u32,
    long_rows: u32,
    // 1: the second step.
    finish: u32,
    scaling: Scaling,
}

var<immediate> params: Params;
@group(0) @binding(0) var<storage, read> row_offsets: array<u32>;
@group(0) @binding(1) var<storage, read> col_indices: array<u32>;
@group(0) @binding(2) var<storage, read> values: array<Real>;
@group(0) @binding(3) var<storage, read> x: array<Real>;
@group(0) @binding(4) var<storage, read> chunks: array<Chunk>;
@group(0) @binding(5) var<storage, read> long_rows: array<LongRow>;
@group(0) @binding(6) var<storage, read> alpha_dev: array<Real>;
@group(0) @binding(7) var<storage, read> beta_dev: array<Real>;
@group(0) @binding(8) var<storage, read_write> y: array<Real>;
@group(0) @binding(9) var<storage, read_write> partials: array<Acc>;

override WG_SIZE: u32 = 256u;

fn run(workgroup: u32, lane: Lane) {
    if params.finish != 0u {
        add_chunk_sums(workgroup, group_of(lane));
    } else if workgroup < params.chunk_workgroups {
        long_row_chunks(workgroup, group_of(lane));
    } else {
        short_row((workgroup - params.chunk_workgroups) * WG_SIZE + lane.index);
    }
}

fn add_chunk_sums(workgroup: u32, g: Group) {
    let tasks = group_tasks(workgroup, g, params.long_rows);
    for (var r = tasks.first; r < tasks.end; r += tasks.stride) {
        let end = long_rows[r + 1u].first_chunk;
        var sum = Acc(0.0);
        for (var c = long_rows[r].first_chunk + g.lane; c < end; c += g.size) {
            sum += partials[c];
        }
        let total = group_sum(g, sum);
        if g.lane == 0u {
            store_y(long_rows[r].row, total);
        }
    }
}

fn short_row(row: u32) {
    if row >= params.rows {
        return;
    }
    let start = row_offsets[row];
    let end = row_offsets[row + 1u];
    if end - start > params.max_len {
        return;
    }
    store_y(row, csr_row_sum(start, end));
}

fn long_row_chunks(workgroup: u32, g: Group) {
    let tasks = group_tasks(workgroup, g, params.chunks);
    for (var c = tasks.first; c < tasks.end; c += tasks.stride) {
        let chunk = chunks[c];
        let end = min(chunk.start + params.chunk_len, row_offsets[chunk.row + 1u]);
        let total = group_sum(g, csr_strided_sum(chunk.start + g.lane, end, g.size));
        if g.lane == 0u {
            partials[c] = total;
        }
    }
}
