// Work split among groups of lanes: a subgroup each when SUBGROUP is defined (no barriers,
// no workgroup memory), the whole workgroup otherwise (workgroup memory and barriers).
//
// Kernels hand out tasks (intervals, chunks, rows) to groups: a workgroup owns
// TASKS_PER_WORKGROUP consecutive tasks and its groups take them in turn (group_tasks), so
// any subgroup size works. Every lane of a group must call the group functions together (they shuffle
// or synchronise); without subgroups the whole workgroup must.
#import entry

const NO_KEY: u32 = 0xffffffffu;

struct Group {
    // This group's index in the workgroup, and how many groups the workgroup has.
    index: u32,
    count: u32,
    // The lane's position in the group, and the group's size.
    lane: u32,
    size: u32,
}

fn group_of(lane: Lane) -> Group {
#ifdef SUBGROUP
    return Group(lane.index / lane.sg_size, WG_SIZE / lane.sg_size, lane.sg_lane, lane.sg_size);
#else
    return Group(0u, 1u, lane.index, WG_SIZE);
#endif
}

// Set by the host to WG_SIZE / (smallest subgroup size), or 1 without subgroups, so that
// every group has a task whatever size the subgroups turn out to be.
override TASKS_PER_WORKGROUP: u32 = 1u;

// The tasks of `workgroup` that group `g` takes: first, first + stride, … below end.
struct Tasks {
    first: u32,
    end: u32,
    stride: u32,
}

fn group_tasks(workgroup: u32, g: Group, total: u32) -> Tasks {
    let first = workgroup * TASKS_PER_WORKGROUP;
    return Tasks(first + g.index, min(first + TASKS_PER_WORKGROUP, total), g.count);
}

#ifndef SUBGROUP
var<workgroup> group_keys: array<u32, WG_SIZE>;
var<workgroup> group_vals: array<Acc, WG_SIZE>;
#endif

// The sum of `value` over the group, in every lane. The order of additions is fixed by
// the group size (a reduction tree), not by scheduling.
fn group_sum(g: Group, value: Acc) -> Acc {
#ifdef SUBGROUP
    return subgroupAdd(value);
#else
    group_vals[g.lane] = value;
    workgroupBarrier();
    for (var offset = WG_SIZE >> 1u; offset > 0u; offset >>= 1u) {
        if g.lane < offset {
            group_vals[g.lane] += group_vals[g.lane + offset];
        }
        workgroupBarrier();
    }
    let total = group_vals[0];
    workgroupBarrier();
    return total;
#endif
}

// The smallest `value` over the group, in every lane (uniform over the group).
fn group_min(g: Group, value: u32) -> u32 {
#ifdef SUBGROUP
    return subgroupMin(value);
#else
    group_keys[g.lane] = value;
    workgroupBarrier();
    for (var offset = WG_SIZE >> 1u; offset > 0u; offset >>= 1u) {
        if g.lane < offset {
            group_keys[g.lane] = min(group_keys[g.lane], group_keys[g.lane + offset]);
        }
        workgroupBarrier();
    }
    return workgroupUniformLoad(&group_keys[0]);
#endif
}

// Lane 0's `value`, in every lane (uniform over the group).
fn group_first(g: Group, value: u32) -> u32 {
#ifdef SUBGROUP
    return subgroupShuffle(value, 0u);
#else
    if g.lane == 0u {
        group_keys[0] = value;
    }
    return workgroupUniformLoad(&group_keys[0]);
#endif
}

// Lane `source`'s `value`, in every lane (`source` uniform over the group).
fn group_broadcast(g: Group, value: Acc, source: u32) -> Acc {
#ifdef SUBGROUP
    return subgroupShuffle(value, source);
#else
    if g.lane == source {
        group_vals[0] = value;
    }
    workgroupBarrier();
    let result = group_vals[0];
    workgroupBarrier();
    return result;
#endif
}

struct GroupScan {
    // Inclusive sum over the lanes up to this one that share its key.
    sum: Acc,
    // The key of the next lane (NO_KEY for the last lane).
    next_key: u32,
    // The last lane's key and inclusive sum: what the group carries on.
    last_key: u32,
    last_sum: Acc,
}

// Segmented inclusive sum by key over the group, in lane order. Keys must never decrease
// with the lane.
fn group_scan(g: Group, key: u32, value: Acc) -> GroupScan {
    var sum = value;
#ifdef SUBGROUP
    for (var d = 1u; d < g.size; d <<= 1u) {
        let key_up = subgroupShuffleUp(key, d);
        let sum_up = subgroupShuffleUp(sum, d);
        if g.lane >= d && key_up == key {
            sum += sum_up;
        }
    }
    var next_key = subgroupShuffleDown(key, 1u);
    if g.lane + 1u == g.size {
        next_key = NO_KEY;
    }
    let last = g.size - 1u;
    return GroupScan(sum, next_key, subgroupShuffle(key, last), subgroupShuffle(sum, last));
#else
    group_keys[g.lane] = key;
    group_vals[g.lane] = sum;
    workgroupBarrier();
    for (var d = 1u; d < WG_SIZE; d <<= 1u) {
        if g.lane >= d && group_keys[g.lane - d] == key {
            sum += group_vals[g.lane - d];
        }
        workgroupBarrier();
        group_vals[g.lane] = sum;
        workgroupBarrier();
    }
    var next_key = NO_KEY;
    if g.lane + 1u < WG_SIZE {
        next_key = group_keys[g.lane + 1u];
    }
    let result = GroupScan(sum, next_key, group_keys[WG_SIZE - 1u], group_vals[WG_SIZE - 1u]);
    workgroupBarrier();
    return result;
#endif
}
