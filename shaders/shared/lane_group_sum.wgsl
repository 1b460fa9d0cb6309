// The sum of `value` over GROUP consecutive lanes (GROUP a power of two dividing WG_SIZE; with
// subgroups at most the subgroup size): shuffles, or workgroup memory without subgroups. The
// including shader declares the GROUP override; every lane of the workgroup must call it.
#ifndef SUBGROUP
var<workgroup> group_partials: array<Acc, WG_SIZE>;
#endif

fn lane_group_sum(value: Acc, lane_index: u32) -> Acc {
    var sum = value;
#ifdef SUBGROUP
    for (var offset = GROUP >> 1u; offset > 0u; offset >>= 1u) {
        sum += subgroupShuffleXor(sum, offset);
    }
#else
    let member = lane_index % GROUP;
    group_partials[lane_index] = sum;
    workgroupBarrier();
    for (var offset = GROUP >> 1u; offset > 0u; offset >>= 1u) {
        if member < offset {
            group_partials[lane_index] += group_partials[lane_index + offset];
        }
        workgroupBarrier();
    }
    sum = group_partials[lane_index];
#endif
    return sum;
}
