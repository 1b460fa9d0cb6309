// The transpose of a bitmap B (rows × cols) into T (cols × rows), one invocation per flag
// word of B. The default variant sets T's flags (an atomic OR per stored entry: entries of
// several words of B land in one word of T); VALUES (after T's structure steps) writes each
// value at its position in T, found through T's rank directory.
#import invocation
#import real
#import lowest_bit

struct Params {
    rows: u32,
    // Flag words and rank blocks of B's rows, and of T's.
    words: u32,
    blocks: u32,
    t_words: u32,
    t_blocks: u32,
}

var<immediate> params: Params;
@group(0) @binding(0) var<storage, read> b_flags: array<u32>;
@group(0) @binding(1) var<storage, read> b_rank: array<u32>;
@group(0) @binding(2) var<storage, read> b_values: array<Real>;
@group(0) @binding(3) var<storage, read_write> t_flags: array<atomic<u32>>;
@group(0) @binding(4) var<storage, read> t_rank: array<u32>;
@group(0) @binding(5) var<storage, read_write> t_values: array<Real>;

override WG_SIZE: u32 = 256u;

fn run(item: u32) {
    if item >= params.rows * params.words {
        return;
    }
    let row = item / params.words;
    let w = item - row * params.words;
    // Row `row` of B is column `row` of T: word tw, bit tb of T's rows.
    let tw = row / 32u;
    let tb = row % 32u;
    var bits = b_flags[item];
#ifdef VALUES
    let block = w / 8u;
    var p = b_rank[row * params.blocks + block];
    for (var k = item - (w - block * 8u); k < item; k++) {
        p += countOneBits(b_flags[k]);
    }
#endif
    while bits != 0u {
        let col = w * 32u + lowest_bit(bits);
        bits &= bits - 1u;
        let base = col * params.t_words;
#ifdef VALUES
        let t_block = tw / 8u;
        var q = t_rank[col * params.t_blocks + t_block];
        for (var k = base + t_block * 8u; k < base + tw; k++) {
            q += countOneBits(atomicLoad(&t_flags[k]));
        }
        q += countOneBits(atomicLoad(&t_flags[base + tw]) & ((1u << tb) - 1u));
        t_values[q] = b_values[p];
        p++;
#else
        atomicOr(&t_flags[base + tw], 1u << tb);
#endif
    }
}
