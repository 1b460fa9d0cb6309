// CSR SpMV y = A·x fused with the dot product x·y of its result (CG's A·p with p·A·p): one
// invocation per row as in spmv_csr_thread, each workgroup taking the `chunk` rows a
// vector_reduce of the same length would take, lanes striding them in the same order, so that
// partials[workgroup] is bit for bit what vector_reduce would write for x·y;
// vector_reduce_finish completes it. A square, one panel.
#import entry
#import real
#import csr_row_sum
#import workgroup_sum

struct Params {
    rows: u32,
    chunk: u32,
}

var<immediate> params: Params;
@group(0) @binding(0) var<storage, read> row_offsets: array<u32>;
@group(0) @binding(1) var<storage, read> col_indices: array<u32>;
@group(0) @binding(2) var<storage, read> values: array<Real>;
@group(0) @binding(3) var<storage, read> x: array<Real>;
@group(0) @binding(4) var<storage, read_write> y: array<Real>;
@group(0) @binding(5) var<storage, read_write> partials: array<vec2<Acc>>;

override WG_SIZE: u32 = 256u;

fn run(workgroup: u32, lane: Lane) {
    let start = workgroup * params.chunk;
    let end = min(start + params.chunk, params.rows);
    var dot = Acc(0.0);
    for (var row = start + lane.index; row < end; row += WG_SIZE) {
        let value = Real(csr_row_sum(row_offsets[row], row_offsets[row + 1u]));
        y[row] = value;
        dot += Acc(x[row]) * Acc(value);
    }
    let total = workgroup_sum(lane, dot);
    if lane.index == 0u {
        partials[workgroup] = vec2<Acc>(total, 0.0);
    }
}
