// The workgroup's largest key (above -3) and the least slot holding it (`slot` is the lane's
// own, distinct per lane). With subgroups: a subgroup reduction, one barrier, and every
// subgroup reduces the subgroups' partials itself; `parity` alternates between calls so that a
// call's writes never meet a slower lane's reads of the one before. Without subgroups: a
// tree in workgroup memory. Needs WG_SIZE.
struct Best {
    key: f32,
    slot: u32,
}

#ifdef SUBGROUP
// Two sets (by parity) of one partial per subgroup; subgroups have 2 lanes or more. (Sized
// by the override itself: naga 30 panics on an override expression as a size.)
var<workgroup> partial_keys: array<f32, WG_SIZE>;
var<workgroup> partial_slots: array<u32, WG_SIZE>;

// The best of (key, slot) over the subgroup, the least slot on equal keys.
fn subgroup_best(key: f32, slot: u32) -> Best {
    let top = subgroupMax(key);
    return Best(top, subgroupMin(select(0xffffffffu, slot, key == top)));
}

fn group_argmax(key: f32, slot: u32, lane: Lane, parity: u32) -> Best {
    let mine = subgroup_best(key, slot);
    let subgroups = WG_SIZE / lane.sg_size;
    let base = (parity & 1u) * (WG_SIZE / 2u);
    if lane.sg_lane == 0u {
        partial_keys[base + lane.index / lane.sg_size] = mine.key;
        partial_slots[base + lane.index / lane.sg_size] = mine.slot;
    }
    workgroupBarrier();
    // Every subgroup reduces the partials itself, a lane each (no second barrier).
    var best = Best(-3.0, 0xffffffffu);
    for (var g = lane.sg_lane; g < subgroups; g += lane.sg_size) {
        let other = Best(partial_keys[base + g], partial_slots[base + g]);
        if other.key > best.key || (other.key == best.key && other.slot < best.slot) {
            best = other;
        }
    }
    return subgroup_best(best.key, best.slot);
}
#else
var<workgroup> tree_keys: array<f32, WG_SIZE>;
var<workgroup> tree_slots: array<u32, WG_SIZE>;

fn group_argmax(key: f32, slot: u32, lane: Lane, parity: u32) -> Best {
    tree_keys[lane.index] = key;
    tree_slots[lane.index] = slot;
    workgroupBarrier();
    for (var offset = WG_SIZE >> 1u; offset > 0u; offset >>= 1u) {
        if lane.index < offset {
            let other_key = tree_keys[lane.index + offset];
            let other = tree_slots[lane.index + offset];
            if other_key > tree_keys[lane.index] || (other_key == tree_keys[lane.index] && other < tree_slots[lane.index]) {
                tree_keys[lane.index] = other_key;
                tree_slots[lane.index] = other;
            }
        }
        workgroupBarrier();
    }
    let best = Best(tree_keys[0], tree_slots[0]);
    // The next call's first writes must wait for every lane's read here.
    workgroupBarrier();
    return best;
}
#endif
