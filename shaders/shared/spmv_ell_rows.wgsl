// The ELL kernels' interface (spmv_ell, spmv_ell_dot).
#import spmv_store
#import ell_row_sum

struct Params {
    rows: u32,
    width: u32,
    // DIAGONAL_OFFSETS: the global row of row 0 (panels), and halfwords per slot column.
    first_row: u32,
    index_stride: u32,
    scaling: Scaling,
}

var<immediate> params: Params;
@group(0) @binding(0) var<storage, read> col_indices: array<u32>;
@group(0) @binding(1) var<storage, read> values: array<Real>;
@group(0) @binding(2) var<storage, read> x: array<Real>;
@group(0) @binding(3) var<storage, read> alpha_dev: array<Real>;
@group(0) @binding(4) var<storage, read> beta_dev: array<Real>;
@group(0) @binding(5) var<storage, read_write> y: array<Real>;
