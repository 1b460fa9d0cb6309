// CSR SpMV by row split (csr-split): RoDe's row decomposition (seed 002) applied to SpMV, in
// one dispatch so that short rows and long rows run side by side:
// - the first params.chunk_workgroups workgroups take the chunks of the long rows (at most
//   chunk_len entries each), one chunk per group of lanes (a subgroup, or the workgroup),
//   striding over it with coalesced loads. They come first so that their longer work starts
//   early instead of trailing behind the short rows. Each chunk's sum is published in
//   `scratch`, then the row's arrival counter is raised; the group that completes a row
//   adds its chunk sums in a fixed order (lane-strided, then the group's reduction tree)
//   and stores y;
// - the workgroups after them take WG_SIZE rows each, one invocation per row, and skip
//   rows longer than params.max_len.
// One dispatch, not a second pass for the long rows: every dispatch costs the host ~1-2 µs
// to encode, which doubled the CPU cost of recording a run on the H100's driver.
//
// Nothing waits on another workgroup (shared/ready_sums.wgsl): the adding group recomputes
// any chunk whose sum it cannot see yet, with the same code and group size (one per
// pipeline), so the result is the same bit for bit wherever the compiler treats both call
// sites alike.
//
// scratch: one counter per long row (top bit: the parity of the set in use; the rest: chunks
// done), then the two sets of VALUE_WORDS words per chunk, all NOT_READY at first.
#import real
#import row_split
#import group
#import spmv_store
#import csr_row_sum
#import ready_sums

struct Params {
    rows: u32,
    max_len: u32,
    chunk_workgroups: u32,
    chunks: u32,
    chunk_len: u32,
    long_rows: u32,
    // 1: the adding group recomputes every chunk (tests the path of a sum not yet visible).
    recompute_chunks: u32,
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
@group(0) @binding(9) var<storage, read_write> scratch: array<atomic<u32>>;

override WG_SIZE: u32 = 256u;


fn run(workgroup: u32, lane: Lane) {
    if workgroup < params.chunk_workgroups {
        long_row_chunks(workgroup, group_of(lane));
    } else {
        short_row((workgroup - params.chunk_workgroups) * WG_SIZE + lane.index);
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

fn chunk_sum(g: Group, c: u32) -> Acc {
    let chunk = chunks[c];
    let end = min(chunk.start + params.chunk_len, row_offsets[chunk.row + 1u]);
    return group_sum(g, csr_strided_sum(chunk.start + g.lane, end, g.size));
}

fn long_row_chunks(workgroup: u32, g: Group) {
    let tasks = group_tasks(workgroup, g, params.chunks);
    for (var c = tasks.first; c < tasks.end; c += tasks.stride) {
        let r = chunks[c].long_row;
        var parity = 0u;
        if g.lane == 0u {
            parity = counter_parity(r);
        }
        let total = chunk_sum(g, c);
        // 1 + the parity of this run when this group completes row r, else 0.
        var completes = 0u;
        if g.lane == 0u {
            let expected = long_rows[r + 1u].first_chunk - long_rows[r].first_chunk;
            completes = publish_and_arrive(r, parity, c, total, expected);
        }
        completes = group_first(g, completes);
        if completes != 0u {
            add_chunk_sums(g, r, completes);
            if g.lane == 0u {
                reset_counter(r, completes);
            }
        }
    }
}

fn add_chunk_sums(g: Group, r: u32, completes: u32) {
    let first = long_rows[r].first_chunk;
    let end = long_rows[r + 1u].first_chunk;
    // Chunks are pieces without heads: chunk c's sum is in slot c.
    let row = RowToComplete(long_rows[r].row, first, end - 1u, completes);
    var sum = Acc(0.0);
    for (var base = first; base < end; base += g.size) {
        var piece = read_piece(g.lane, row, base, 0u, params.recompute_chunks != 0u);
        for (var next = group_min(g, piece.missing); next != NO_PIECE; next = group_min(g, piece.missing)) {
            let recomputed = chunk_sum(g, next);
            if piece.q == next {
                piece.value = recomputed;
                piece.missing = NO_PIECE;
            }
        }
        if piece.q < end {
            sum += piece.value;
        }
    }
    let total = group_sum(g, sum);
    if g.lane == 0u {
        store_y(row.row, total);
    }
}

// The first of chunk c's words in the set of `parity`.
fn sum_word(parity: u32, c: u32) -> u32 {
    return params.long_rows + (parity * params.chunks + c) * VALUE_WORDS;
}
