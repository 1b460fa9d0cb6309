// Element access on CSR with sorted columns, one invocation per query (i, j): a binary
// search of row i's columns. The same contract as bitmap_access (the baseline it is
// measured against): the default variant reads data[q] and present[q]; SET writes stored
// entries and counts absent ones (status[0]); queries outside the matrix are counted
// (status[1]); status[2] keeps the first offending query.
#import csr_find
#import invocation
#import real
#import element_query

struct Params {
    rows: u32,
    cols: u32,
    count: u32,
}

var<immediate> params: Params;
@group(0) @binding(0) var<storage, read> row_offsets: array<u32>;
@group(0) @binding(1) var<storage, read> col_indices: array<u32>;
@group(0) @binding(2) var<storage, read_write> values: array<Real>;
@group(0) @binding(3) var<storage, read> query_rows: array<u32>;
@group(0) @binding(4) var<storage, read> query_cols: array<u32>;
@group(0) @binding(5) var<storage, read_write> data: array<Real>;
@group(0) @binding(6) var<storage, read_write> present: array<u32>;
@group(0) @binding(7) var<storage, read_write> status: array<atomic<u32>>;

override WG_SIZE: u32 = 256u;

fn run(q: u32) {
    if q >= params.count {
        return;
    }
    let row = query_rows[q];
    let col = query_cols[q];
    var found = false;
    var p = 0u;
    if row < params.rows && col < params.cols {
        let position = csr_find(row, col);
        found = position != CSR_NONE;
        p = select(0u, position, found);
    } else {
        refuse(q, 1u);
    }
    finish_query(q, row < params.rows && col < params.cols, found, p);
}
