// The pattern of the LU without pivoting (seed 004's elimination) of each n × n matrix of a
// stacked batch of bitmaps, from A's flags alone, for any n (the bitmap LU's dense route;
// n ≤ 32 has it in bitmap_lu.wgsl's COUNT run): a workgroup per matrix works on its rows'
// flag words in U's flags, and at step k every row below k whose pattern holds column k
// gains row k's columns after k. Then each row's words are split at the diagonal into L's
// (strictly lower) and U's (on and above). The structure steps of bitmap_rank follow.
#import entry

struct Params {
    n: u32,
    batch: u32,
    words: u32,
}

var<immediate> params: Params;
@group(0) @binding(0) var<storage, read> a_flags: array<u32>;
@group(0) @binding(1) var<storage, read_write> l_flags: array<u32>;
@group(0) @binding(2) var<storage, read_write> u_flags: array<u32>;

override WG_SIZE: u32 = 64u;

// The columns of word w before column c, as a mask.
fn before(c: u32, w: u32) -> u32 {
    let first = w * 32u;
    if c >= first + 32u {
        return 0xffffffffu;
    }
    if c > first {
        return (1u << (c - first)) - 1u;
    }
    return 0u;
}

fn run(workgroup: u32, lane: Lane) {
    let n = params.n;
    let words = params.words;
    if workgroup >= params.batch {
        return;
    }
    let first = workgroup * n * words;
    let size = n * words;
    for (var e = lane.index; e < size; e += WG_SIZE) {
        u_flags[first + e] = a_flags[first + e];
    }
    storageBarrier();
    for (var k = 0u; k < n; k++) {
        let w_k = k / 32u;
        let bit = 1u << (k % 32u);
        let pivot = first + k * words;
        for (var i = k + 1u + lane.index; i < n; i += WG_SIZE) {
            let row = first + i * words;
            if (u_flags[row + w_k] & bit) != 0u {
                u_flags[row + w_k] |= u_flags[pivot + w_k] & ~before(k + 1u, w_k);
                for (var w = w_k + 1u; w < words; w++) {
                    u_flags[row + w] |= u_flags[pivot + w];
                }
            }
        }
        // Row k + 1 is final for the next step.
        storageBarrier();
    }
    for (var e = lane.index; e < size; e += WG_SIZE) {
        let lower = before(e / words, e % words);
        let word = u_flags[first + e];
        l_flags[first + e] = word & lower;
        u_flags[first + e] = word & ~lower;
    }
}
