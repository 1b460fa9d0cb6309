// The values of C = A·B on bitmaps (C's pattern and rank directory built before), row-wise
// (Gustavson's order): a workgroup per (row i of C, chunk of 32·WG_SIZE columns), a lane
// per flag word of the chunk. For each k with a_ik stored (a uniform walk of A's row), every
// lane adds a_ik·b_kj for the stored b_kj of its word into its 32 accumulators (workgroup
// memory, laid out accumulator-major so that lanes hit distinct banks). A lane owns its
// columns: no atomics and no barrier in the loop, and every sum runs in k order
// (deterministic). The lane's word of C is the OR of the B words it met; its position comes
// from C's rank directory and the words before it in the block (shared in workgroup memory).
#import entry
#import real

struct Params {
    rows: u32,
    a_words: u32,
    a_blocks: u32,
    b_words: u32,
    b_blocks: u32,
    chunks: u32,
}

var<immediate> params: Params;
@group(0) @binding(0) var<storage, read> a_flags: array<u32>;
@group(0) @binding(1) var<storage, read> a_rank: array<u32>;
@group(0) @binding(2) var<storage, read> a_values: array<Real>;
@group(0) @binding(3) var<storage, read> b_flags: array<u32>;
@group(0) @binding(4) var<storage, read> b_rank: array<u32>;
@group(0) @binding(5) var<storage, read> b_values: array<Real>;
@group(0) @binding(6) var<storage, read> c_rank: array<u32>;
@group(0) @binding(7) var<storage, read_write> c_values: array<Real>;

override WG_SIZE: u32 = 128u;

var<workgroup> acc: array<Acc, 32u * WG_SIZE>;
var<workgroup> c_words: array<u32, WG_SIZE>;

fn run(workgroup: u32, lane: Lane) {
    let row = workgroup / params.chunks;
    if row >= params.rows {
        return;
    }
    let w = (workgroup - row * params.chunks) * WG_SIZE + lane.index;
    let mine = w < params.b_words;
    for (var b = 0u; b < 32u; b++) {
        acc[b * WG_SIZE + lane.index] = Acc(0.0);
    }
    var c_word = 0u;
    var pa = 0u;
    if params.a_blocks > 0u {
        pa = a_rank[row * params.a_blocks];
    }
    for (var aw = 0u; aw < params.a_words; aw++) {
        var a_bits = a_flags[row * params.a_words + aw];
        while a_bits != 0u {
            let k = aw * 32u + firstTrailingBit(a_bits);
            a_bits &= a_bits - 1u;
            let a = Acc(a_values[pa]);
            pa++;
            if mine {
                let b_word = b_flags[k * params.b_words + w];
                if b_word != 0u {
                    c_word |= b_word;
                    let block = w / 8u;
                    var pb = b_rank[k * params.b_blocks + block];
                    for (var v = k * params.b_words + block * 8u; v < k * params.b_words + w; v++) {
                        pb += countOneBits(b_flags[v]);
                    }
                    var bits = b_word;
                    while bits != 0u {
                        let b = firstTrailingBit(bits);
                        bits &= bits - 1u;
                        let slot = b * WG_SIZE + lane.index;
                        acc[slot] = fma(a, Acc(b_values[pb]), acc[slot]);
                        pb++;
                    }
                }
            }
        }
    }
    c_words[lane.index] = c_word;
    workgroupBarrier();
    if mine {
        let block = w / 8u;
        var pc = c_rank[row * params.b_blocks + block];
        // The words of the block before w: in this workgroup from the chunk's first word on
        // (chunks hold a multiple of 8 words, so a block never straddles two).
        for (var v = lane.index - (w - block * 8u); v < lane.index; v++) {
            pc += countOneBits(c_words[v]);
        }
        var bits = c_word;
        while bits != 0u {
            let b = firstTrailingBit(bits);
            bits &= bits - 1u;
            c_values[pc] = Real(acc[b * WG_SIZE + lane.index]);
            pc++;
        }
    }
}
