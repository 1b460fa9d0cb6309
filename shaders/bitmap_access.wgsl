// Element access on a bitmap, one invocation per query (i, j): the flag bit says whether the
// entry is stored, the rank directory where (O(1): one directory word and at most 7 word
// popcounts). The default variant reads: data[q] = the value (0 when absent), present[q] =
// 1 or 0. SET writes data[q] to a stored entry; a write to an absent position changes
// nothing and is counted (status[0]). Queries outside the matrix are counted (status[1]) and
// read as absent; status[2] keeps the first offending query (atomicMin; reset to
// 0xffffffff by the host).
#import invocation
#import real
#import bitmap_position
#import element_query

struct Params {
    rows: u32,
    cols: u32,
    words: u32,
    blocks: u32,
    count: u32,
}

var<immediate> params: Params;
@group(0) @binding(0) var<storage, read> flags: array<u32>;
@group(0) @binding(1) var<storage, read> rank: array<u32>;
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
        if (flags[row * params.words + col / 32u] >> (col % 32u) & 1u) == 1u {
            found = true;
            p = entry_position(row, col);
        }
    } else {
        refuse(q, 1u);
    }
    finish_query(q, row < params.rows && col < params.cols, found, p);
}
