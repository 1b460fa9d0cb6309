// The values of C = A ± B, one invocation per flag word of C (whose flags are A's | B's,
// formed by bitmap_rank's OR step): seed 004's rules per position: both stored, a ± b; only
// A, a; only B, ±b. `subtract` is 0 or 1.
#import invocation
#import real

struct Params {
    rows: u32,
    words: u32,
    blocks: u32,
    subtract: u32,
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

override WG_SIZE: u32 = 256u;

fn run(item: u32) {
    if item >= params.rows * params.words {
        return;
    }
    let row = item / params.words;
    let w = item - row * params.words;
    let block = w / 8u;
    let r = row * params.blocks + block;
    var pa = a_rank[r];
    var pb = b_rank[r];
    var pc = c_rank[r];
    for (var k = item - (w - block * 8u); k < item; k++) {
        let a = a_flags[k];
        let b = b_flags[k];
        pa += countOneBits(a);
        pb += countOneBits(b);
        pc += countOneBits(a | b);
    }
    let a = a_flags[item];
    let b = b_flags[item];
    var bits = a | b;
    var sign = Real(1.0);
    if params.subtract == 1u {
        sign = Real(-1.0);
    }
    while bits != 0u {
        let bit = bits & (~bits + 1u);
        bits &= bits - 1u;
        var v: Real;
        if (a & bit) != 0u && (b & bit) != 0u {
            v = a_values[pa] + sign * b_values[pb];
            pa++;
            pb++;
        } else if (a & bit) != 0u {
            v = a_values[pa];
            pa++;
        } else {
            v = sign * b_values[pb];
            pb++;
        }
        c_values[pc] = v;
        pc++;
    }
}
