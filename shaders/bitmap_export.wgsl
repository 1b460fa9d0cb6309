// A bitmap's entries written out, one invocation per flag word: ENTRIES writes each entry's
// column (and with `with_rows`, its row) at its position, for CSR and COO; DENSE writes the
// word's 32 columns of a dense matrix (zeros where no flag is set), row- or column-major.
#import invocation
#import real
#import bitmap_position
#import lowest_bit

struct Params {
    rows: u32,
    cols: u32,
    words: u32,
    blocks: u32,
    with_rows: u32,
    col_major: u32,
}

var<immediate> params: Params;
@group(0) @binding(0) var<storage, read> flags: array<u32>;
@group(0) @binding(1) var<storage, read> rank: array<u32>;
@group(0) @binding(2) var<storage, read> values: array<Real>;
@group(0) @binding(3) var<storage, read_write> row_indices: array<u32>;
@group(0) @binding(4) var<storage, read_write> col_indices: array<u32>;
@group(0) @binding(5) var<storage, read_write> dense: array<Real>;

override WG_SIZE: u32 = 256u;

fn run(item: u32) {
    if item >= params.rows * params.words {
        return;
    }
    let row = item / params.words;
    let w = item - row * params.words;
    var p = word_position(row, w);
    let word = flags[item];
#ifdef DENSE
    let end = min(32u, params.cols - w * 32u);
    for (var b = 0u; b < end; b++) {
        let col = w * 32u + b;
        var v = Real(0.0);
        if (word >> b & 1u) == 1u {
            v = values[p];
            p++;
        }
        if params.col_major == 1u {
            dense[col * params.rows + row] = v;
        } else {
            dense[row * params.cols + col] = v;
        }
    }
#else
    var bits = word;
    while bits != 0u {
        let b = lowest_bit(bits);
        bits &= bits - 1u;
        col_indices[p] = w * 32u + b;
        if params.with_rows == 1u {
            row_indices[p] = row;
        }
        p++;
    }
#endif
}
