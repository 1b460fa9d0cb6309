// A dense matrix (row- or column-major) into a bitmap, one invocation per flag word. The
// default variant sets the word's flags: columns whose value is not exactly zero (NaN
// counts as nonzero), within `part` of each block of `n` rows (0: everything; 1: strictly
// below the block's diagonal, the L of an LU; 2: on and above it, the U). VALUES (after the
// structure steps of bitmap_rank) writes those values at their positions.
#import invocation
#import real
#import bitmap_position
#import lowest_bit

struct Params {
    rows: u32,
    cols: u32,
    words: u32,
    blocks: u32,
    col_major: u32,
    part: u32,
    // Rows of each block (the matrices of a stacked batch); `rows` for one matrix.
    n: u32,
}

var<immediate> params: Params;
@group(0) @binding(0) var<storage, read> dense: array<Real>;
@group(0) @binding(1) var<storage, read_write> flags: array<u32>;
@group(0) @binding(2) var<storage, read> rank: array<u32>;
@group(0) @binding(3) var<storage, read_write> out: array<Real>;

override WG_SIZE: u32 = 256u;

fn value_at(row: u32, col: u32) -> Real {
    if params.col_major == 1u {
        return dense[col * params.rows + row];
    }
    return dense[row * params.cols + col];
}

// The columns of word w of `row` that `part` keeps, as a mask.
fn part_mask(row: u32, w: u32) -> u32 {
    let diagonal = row % params.n;
    var below = 0u;
    let first = w * 32u;
    if diagonal >= first + 32u {
        below = 0xffffffffu;
    } else if diagonal > first {
        below = (1u << (diagonal - first)) - 1u;
    }
    switch params.part {
        case 1u: {
            return below;
        }
        case 2u: {
            return ~below;
        }
        default: {
            return 0xffffffffu;
        }
    }
}

fn run(item: u32) {
    if item >= params.rows * params.words {
        return;
    }
    let row = item / params.words;
    let w = item - row * params.words;
    let end = min(32u, params.cols - w * 32u);
#ifdef VALUES
    var p = word_position(row, w);
    var bits = flags[item];
    while bits != 0u {
        let b = lowest_bit(bits);
        bits &= bits - 1u;
        out[p] = value_at(row, w * 32u + b);
        p++;
    }
#else
    var word = 0u;
    for (var b = 0u; b < end; b++) {
        if value_at(row, w * 32u + b) == 0.0 {
        } else {
            word |= 1u << b;
        }
    }
    flags[item] = word & part_mask(row, w);
#endif
}
