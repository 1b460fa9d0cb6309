// The interface of the CSR kernels that assign rows to invocations or lane groups
// (spmv_csr_thread, spmv_csr_vector): y = alpha * A * x + beta * y over `rows` rows.
#import spmv_store

struct Params {
    rows: u32,
    scaling: Scaling,
}

var<immediate> params: Params;
@group(0) @binding(0) var<storage, read> row_offsets: array<u32>;
@group(0) @binding(1) var<storage, read> col_indices: array<u32>;
@group(0) @binding(2) var<storage, read> values: array<Real>;
@group(0) @binding(3) var<storage, read> x: array<Real>;
@group(0) @binding(4) var<storage, read> alpha_dev: array<Real>;
@group(0) @binding(5) var<storage, read> beta_dev: array<Real>;
@group(0) @binding(6) var<storage, read_write> y: array<Real>;
