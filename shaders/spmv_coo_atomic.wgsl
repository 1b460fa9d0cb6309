// COO SpMV with float atomics: adds A * x into `sums` (f32 bits, zeroed first); an axpby
// pass applies alpha and beta. One invocation per nonzero; the entries of a group of lanes
// (a subgroup, or the workgroup) are first summed by row with a segmented scan, so one atomic
// add goes out per row segment rather than per entry (a hot row would otherwise serialise on
// one address). The order in which segments reach `sums` depends on scheduling: NOT
// deterministic. spmv_coo_segmented is the deterministic alternative. Rows must be sorted.
// f32 only: WGSL atomics are 32-bit.
#import real_f32
#import group
#import atomic_f32

struct Params {
    nnz: u32,
}

var<immediate> params: Params;
@group(0) @binding(0) var<storage, read> row_indices: array<u32>;
@group(0) @binding(1) var<storage, read> col_indices: array<u32>;
@group(0) @binding(2) var<storage, read> values: array<Real>;
@group(0) @binding(3) var<storage, read> x: array<Real>;
@group(0) @binding(4) var<storage, read_write> sums: array<atomic<u32>>;

override WG_SIZE: u32 = 256u;

fn run(workgroup: u32, lane: Lane) {
    let g = group_of(lane);
    let e = workgroup * WG_SIZE + g.index * g.size + g.lane;
    var row = NO_KEY;
    var product = Acc(0.0);
    if e < params.nnz {
        row = row_indices[e];
        product = values[e] * x[col_indices[e]];
    }
    let scan = group_scan(g, row, product);
    if row != NO_KEY && scan.next_key != row {
        atomic_add_f32(row, scan.sum);
    }
}
