// The interval bounds of a COO matrix's segmented reduction (shared/coo_walk.wgsl), one
// invocation per entry: for each interval of interval_len entries, the first interval of the
// row its first entry belongs to and the last interval of the row its last entry belongs to
// (binary searches over the row-sorted entries); and a bit per row that has an entry (set
// where a row's first entry is). An analysis, made once per pattern and interval length.
#import invocation

struct Params {
    nnz: u32,
    intervals: u32,
    interval_len: u32,
}

var<immediate> params: Params;
@group(0) @binding(0) var<storage, read> row_indices: array<u32>;
@group(0) @binding(1) var<storage, read_write> bounds: array<vec2<u32>>;
@group(0) @binding(2) var<storage, read_write> occupied: array<atomic<u32>>;

override WG_SIZE: u32 = 256u;

fn run(e: u32) {
    if e >= params.nnz {
        return;
    }
    let row = row_indices[e];
    if e == 0u || row_indices[e - 1u] != row {
        atomicOr(&occupied[row >> 5u], 1u << (row & 31u));
    }
    if e < params.intervals {
        let start = e * params.interval_len;
        let last = min(start + params.interval_len, params.nnz) - 1u;
        bounds[e] = vec2<u32>(first_entry(row_indices[start], start) / params.interval_len,
                              (last_entry(row_indices[last], last)) / params.interval_len);
    }
}

// The first entry of `row`, which has entry `at`.
fn first_entry(row: u32, at: u32) -> u32 {
    var lo = 0u;
    var hi = at;
    while lo < hi {
        let mid = (lo + hi) >> 1u;
        if row_indices[mid] < row {
            lo = mid + 1u;
        } else {
            hi = mid;
        }
    }
    return lo;
}

// The last entry of `row`, which has entry `at`.
fn last_entry(row: u32, at: u32) -> u32 {
    var lo = at;
    var hi = params.nnz - 1u;
    while lo < hi {
        let mid = (lo + hi + 1u) >> 1u;
        if row_indices[mid] > row {
            hi = mid - 1u;
        } else {
            lo = mid;
        }
    }
    return lo;
}
