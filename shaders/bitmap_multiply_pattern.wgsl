// The pattern of C = A·B on bitmaps, row-wise: row i of C is the OR of the rows k of B where
// A's row i has a flag. A workgroup per (row of C, chunk of WG_SIZE·4 words): each lane owns
// four words of the chunk (lane, lane + WG_SIZE, …: loads coalesced across lanes) and ORs B's
// words into registers; the walk over A's row is uniform across the workgroup.
#import entry

struct Params {
    rows: u32,
    // Flag words of A's rows and of B's (and C's) rows.
    a_words: u32,
    b_words: u32,
    // Chunks of a row of C.
    chunks: u32,
}

var<immediate> params: Params;
@group(0) @binding(0) var<storage, read> a_flags: array<u32>;
@group(0) @binding(1) var<storage, read> b_flags: array<u32>;
@group(0) @binding(2) var<storage, read_write> c_flags: array<u32>;

override WG_SIZE: u32 = 128u;
const WORDS_PER_LANE: u32 = 4u;

fn run(workgroup: u32, lane: Lane) {
    let row = workgroup / params.chunks;
    if row >= params.rows {
        return;
    }
    let first = (workgroup - row * params.chunks) * WG_SIZE * WORDS_PER_LANE + lane.index;
    var acc = array<u32, WORDS_PER_LANE>(0u, 0u, 0u, 0u);
    for (var aw = 0u; aw < params.a_words; aw++) {
        var bits = a_flags[row * params.a_words + aw];
        while bits != 0u {
            let k = aw * 32u + firstTrailingBit(bits);
            bits &= bits - 1u;
            for (var q = 0u; q < WORDS_PER_LANE; q++) {
                let w = first + q * WG_SIZE;
                if w < params.b_words {
                    acc[q] |= b_flags[k * params.b_words + w];
                }
            }
        }
    }
    for (var q = 0u; q < WORDS_PER_LANE; q++) {
        let w = first + q * WG_SIZE;
        if w < params.b_words {
            c_flags[row * params.b_words + w] = acc[q];
        }
    }
}
