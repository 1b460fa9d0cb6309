// The pattern of C = A·B by seed 004's scheme, one invocation per output: C_ij is stored when
// row i of A and row j of Bᵀ (column j of B) have a flag in common. A workgroup per (row of
// C, block of 8 words = 256 columns), a lane per column; the lanes' bits are gathered in
// workgroup memory and written a word at a time.
#import entry

struct Params {
    rows: u32,
    cols: u32,
    // Flag words of A's rows (= of Bᵀ's rows).
    a_words: u32,
    // Flag words and blocks of C's rows.
    c_words: u32,
    c_blocks: u32,
}

var<immediate> params: Params;
@group(0) @binding(0) var<storage, read> a_flags: array<u32>;
@group(0) @binding(1) var<storage, read> t_flags: array<u32>;
@group(0) @binding(2) var<storage, read_write> c_flags: array<u32>;

override WG_SIZE: u32 = 256u;

var<workgroup> words: array<atomic<u32>, 8>;

fn run(workgroup: u32, lane: Lane) {
    let row = workgroup / params.c_blocks;
    if row >= params.rows {
        return;
    }
    let block = workgroup - row * params.c_blocks;
    if lane.index < 8u {
        atomicStore(&words[lane.index], 0u);
    }
    workgroupBarrier();
    let col = block * 256u + lane.index;
    if col < params.cols {
        var meets = false;
        for (var u = 0u; u < params.a_words && !meets; u++) {
            meets = (a_flags[row * params.a_words + u] & t_flags[col * params.a_words + u]) != 0u;
        }
        if meets {
            atomicOr(&words[lane.index / 32u], 1u << (lane.index % 32u));
        }
    }
    workgroupBarrier();
    let w = block * 8u + lane.index;
    if lane.index < 8u && w < params.c_words {
        c_flags[row * params.c_words + w] = atomicLoad(&words[lane.index]);
    }
}
