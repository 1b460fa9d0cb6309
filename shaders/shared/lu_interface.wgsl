// The interface of the batched LU kernels (lu_small, lu_team): the batch stacked by rows in
// `a` (factored in place, or written from `source` with OUT_OF_PLACE), getrf's pivots
// (0-based) and info per matrix.
struct Params {
    n: u32,
    batch: u32,
}

var<immediate> params: Params;
@group(0) @binding(0) var<storage, read> source: array<Real>;
@group(0) @binding(1) var<storage, read_write> a: array<Real>;
@group(0) @binding(2) var<storage, read_write> pivots: array<u32>;
@group(0) @binding(3) var<storage, read_write> info: array<u32>;
