// The sum of `value` over each slot of LANES consecutive lanes (LANES a power of two), in
// every lane of the slot, in an order fixed by LANES (deterministic: an xor butterfly gives
// every lane the same bits, since a + b == b + a). With subgroups LANES is at most the
// smallest subgroup size (shuffles) or WG_SIZE (subgroup sums, then workgroup memory);
// without subgroups a tree in workgroup memory. Every lane of the workgroup must call it.
#import workgroup_sum

#ifndef SUBGROUP
var<workgroup> slot_partials: array<Acc, WG_SIZE>;
#endif

fn slot_sum(lane: Lane, value: Acc) -> Acc {
#ifdef SUBGROUP
    if LANES == WG_SIZE {
        return workgroup_sum(lane, value);
    }
    var sum = value;
    for (var offset = LANES >> 1u; offset > 0u; offset >>= 1u) {
        sum += subgroupShuffleXor(sum, offset);
    }
    return sum;
#else
    let member = lane.index % LANES;
    slot_partials[lane.index] = value;
    workgroupBarrier();
    for (var offset = LANES >> 1u; offset > 0u; offset >>= 1u) {
        if member < offset {
            slot_partials[lane.index] += slot_partials[lane.index + offset];
        }
        workgroupBarrier();
    }
    let sum = slot_partials[lane.index - member];
    workgroupBarrier();
    return sum;
#endif
}
