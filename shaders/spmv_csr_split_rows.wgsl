// CSR SpMV, long rows (the csr-split algorithm), second step: one group of lanes per long
// row adds the partial sums of the row's chunks (consecutive in `partials`) and stores y.
// The order of additions is fixed: lane-strided, then the group's reduction tree.
#import real
#import row_split
#import group
#import spmv_store

struct Params {
    long_rows: u32,
    scaling: Scaling,
}

var<immediate> params: Params;
@group(0) @binding(0) var<storage, read> long_rows: array<LongRow>;
@group(0) @binding(1) var<storage, read> partials: array<Acc>;
@group(0) @binding(2) var<storage, read> alpha_dev: array<Real>;
@group(0) @binding(3) var<storage, read> beta_dev: array<Real>;
@group(0) @binding(4) var<storage, read_write> y: array<Real>;

override WG_SIZE: u32 = 256u;

fn run(workgroup: u32, lane: Lane) {
    let g = group_of(lane);
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
