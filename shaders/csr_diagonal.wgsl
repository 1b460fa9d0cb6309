// Jacobi's inverse diagonal of one CSR row panel: inverse[row] = 1 / A[row, row] (repeated
// diagonal entries add up). A row without a diagonal entry, or with a zero one, gets 0 and is
// reported: problems[0] is the first row missing its diagonal entry, problems[1] the first
// with a zero one (0xffffffff: none), so the host refuses the matrix with the row named.
#import invocation
#import real

struct Params {
    rows: u32,
    row_start: u32,
}

var<immediate> params: Params;
@group(0) @binding(0) var<storage, read> row_offsets: array<u32>;
@group(0) @binding(1) var<storage, read> col_indices: array<u32>;
@group(0) @binding(2) var<storage, read> values: array<Real>;
@group(0) @binding(3) var<storage, read_write> inverse: array<Real>;
@group(0) @binding(4) var<storage, read_write> problems: array<atomic<u32>>;

override WG_SIZE: u32 = 256u;

fn run(r: u32) {
    if r >= params.rows {
        return;
    }
    let row = params.row_start + r;
    var diagonal = Real(0.0);
    var found = false;
    for (var p = row_offsets[r]; p < row_offsets[r + 1u]; p += 1u) {
        if col_indices[p] == row {
            diagonal += values[p];
            found = true;
        }
    }
    var inv = Real(0.0);
    if !found {
        atomicMin(&problems[0], row);
    } else if diagonal == 0.0 {
        atomicMin(&problems[1], row);
    } else {
        inv = Real(1.0) / diagonal;
    }
    inverse[row] = inv;
}
