// The values of C = A·B by seed 004's scheme, one invocation per output (C's pattern and
// rank directory built before): C_ij = Σ a_ik·b_kj over the flags row i of A and row j of Bᵀ
// share, walking both rows' words in step with their running positions, so each value is
// found without a search. A workgroup per (row of C, block of 8 words = 256 columns), a lane
// per column; an output's position is C's rank-directory entry plus the stored outputs
// before it in the block (their bits gathered in workgroup memory).
#import entry
#import real

struct Params {
    rows: u32,
    cols: u32,
    a_words: u32,
    a_blocks: u32,
    c_words: u32,
    c_blocks: u32,
}

var<immediate> params: Params;
@group(0) @binding(0) var<storage, read> a_flags: array<u32>;
@group(0) @binding(1) var<storage, read> a_rank: array<u32>;
@group(0) @binding(2) var<storage, read> a_values: array<Real>;
@group(0) @binding(3) var<storage, read> t_flags: array<u32>;
@group(0) @binding(4) var<storage, read> t_rank: array<u32>;
@group(0) @binding(5) var<storage, read> t_values: array<Real>;
@group(0) @binding(6) var<storage, read> c_rank: array<u32>;
@group(0) @binding(7) var<storage, read_write> c_values: array<Real>;

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
    var sum = Acc(0.0);
    var meets = false;
    if col < params.cols && params.a_blocks > 0u {
        var pa = a_rank[row * params.a_blocks];
        var pt = t_rank[col * params.a_blocks];
        for (var u = 0u; u < params.a_words; u++) {
            let a = a_flags[row * params.a_words + u];
            let t = t_flags[col * params.a_words + u];
            var both = a & t;
            meets = meets || both != 0u;
            while both != 0u {
                let below = (both & (~both + 1u)) - 1u;
                both &= both - 1u;
                sum = fma(Acc(a_values[pa + countOneBits(a & below)]), Acc(t_values[pt + countOneBits(t & below)]), sum);
            }
            pa += countOneBits(a);
            pt += countOneBits(t);
        }
        if meets {
            atomicOr(&words[lane.index / 32u], 1u << (lane.index % 32u));
        }
    }
    workgroupBarrier();
    if meets {
        let q = lane.index / 32u;
        var p = c_rank[row * params.c_blocks + block] + countOneBits(atomicLoad(&words[q]) & ((1u << (lane.index % 32u)) - 1u));
        for (var k = 0u; k < q; k++) {
            p += countOneBits(atomicLoad(&words[k]));
        }
        c_values[p] = Real(sum);
    }
}
