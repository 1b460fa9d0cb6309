// The buffers of the blocked LU's steps (lu_blocked, lu_tournament): a batch of n × n
// matrices stacked by rows in `a`, factored in place; getrf's pivots (0-based rows) and info
// per matrix. Needs `params.n`.
@group(0) @binding(0) var<storage, read_write> a: array<Real>;
@group(0) @binding(1) var<storage, read_write> pivots: array<u32>;
@group(0) @binding(2) var<storage, read_write> info: array<u32>;

// Entry (i, j) of matrix m.
fn at(m: u32, i: u32, j: u32) -> u32 {
    return (m * params.n + i) * params.n + j;
}
