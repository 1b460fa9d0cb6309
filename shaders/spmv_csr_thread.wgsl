// CSR SpMV, one invocation per row: best for short rows of similar length.
#import dispatch
#import spmv_store

struct Params {
    rows: u32,
    alpha: f32,
    beta: f32,
    _pad: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> row_offsets: array<u32>;
@group(0) @binding(2) var<storage, read> col_indices: array<u32>;
@group(0) @binding(3) var<storage, read> values: array<f32>;
@group(0) @binding(4) var<storage, read> x: array<f32>;
@group(0) @binding(5) var<storage, read_write> y: array<f32>;

override WG_SIZE: u32 = 256u;

@compute @workgroup_size(WG_SIZE)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let row = linear_workgroup(wid, nwg) * WG_SIZE + lid;
    if row >= params.rows {
        return;
    }
    let end = row_offsets[row + 1u];
    var sum = 0.0;
    for (var p = row_offsets[row]; p < end; p++) {
        sum = fma(values[p], x[col_indices[p]], sum);
    }
    store_y(row, sum);
}
