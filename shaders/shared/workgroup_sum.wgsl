// The sum of `value` over the whole workgroup, in every lane, in an order fixed by the
// workgroup and subgroup sizes (deterministic): subgroup sums (group_sum), then those added in
// subgroup order; without subgroups group_sum already spans the workgroup. Every lane must
// call it.
#import group

#ifdef SUBGROUP
var<workgroup> subgroup_totals: array<Acc, WG_SIZE>;
#endif

fn workgroup_sum(lane: Lane, value: Acc) -> Acc {
    let g = group_of(lane);
    let sum = group_sum(g, value);
#ifdef SUBGROUP
    if g.lane == 0u {
        subgroup_totals[g.index] = sum;
    }
    workgroupBarrier();
    var total = Acc(0.0);
    for (var k = 0u; k < g.count; k++) {
        total += subgroup_totals[k];
    }
    workgroupBarrier();
    return total;
#else
    return sum;
#endif
}
