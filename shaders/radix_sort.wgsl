// One pass of a stable LSD radix sort of (key, value) pairs by the 4-bit digit of the key at
// params.shift: blocks of WG_SIZE consecutive pairs; the default variant writes each block's
// count of every digit to `block_offsets[digit · blocks + block]` (digit-major, so that the
// exclusive scan the host runs next gives each (digit, block) its first output slot, in
// order); SCATTER moves each pair to its slot plus its rank among the block's pairs of the
// same digit. Ranks come from one lane per digit walking the block in order: the pass is
// stable and deterministic, needs no subgroups and no atomics, and costs WG_SIZE steps per
// lane (a structure analysis, built once).
#import entry

struct Params {
    len: u32,
    shift: u32,
    blocks: u32,
}

var<immediate> params: Params;
@group(0) @binding(0) var<storage, read> keys_in: array<u32>;
@group(0) @binding(1) var<storage, read> values_in: array<u32>;
@group(0) @binding(2) var<storage, read_write> block_offsets: array<u32>;
@group(0) @binding(3) var<storage, read_write> keys_out: array<u32>;
@group(0) @binding(4) var<storage, read_write> values_out: array<u32>;

override WG_SIZE: u32 = 256u;

const DIGITS: u32 = 16u;

var<workgroup> digits: array<u32, WG_SIZE>;
var<workgroup> ranks: array<u32, WG_SIZE>;

fn run(workgroup: u32, lane: Lane) {
    // A grid folded into two dimensions may hold a workgroup more than there are blocks; it
    // would write the next digit's count of block 0.
    if workgroup >= params.blocks {
        return;
    }
    let i = workgroup * WG_SIZE + lane.index;
    // Past the end: a digit no lane counts.
    var digit = DIGITS;
    if i < params.len {
        digit = (keys_in[i] >> params.shift) & (DIGITS - 1u);
    }
    digits[lane.index] = digit;
    workgroupBarrier();
    if lane.index < DIGITS {
        var count = 0u;
        for (var j = 0u; j < WG_SIZE; j++) {
            if digits[j] == lane.index {
                ranks[j] = count;
                count++;
            }
        }
#ifndef SCATTER
        block_offsets[lane.index * params.blocks + workgroup] = count;
#endif
    }
#ifdef SCATTER
    workgroupBarrier();
    if i < params.len {
        let at = block_offsets[digit * params.blocks + workgroup] + ranks[lane.index];
        keys_out[at] = keys_in[i];
        values_out[at] = values_in[i];
    }
#endif
}
