// The workgroup's largest key and the least slot holding it (`slot` is the lane's own,
// distinct per lane). With subgroups: a subgroup reduction, one barrier, and every
// subgroup reduces the subgroups' partials itself; `parity` alternates between calls so that a
// call's writes never meet a slower lane's reads of the one before. Without subgroups: a
// tree in workgroup memory. Needs WG_SIZE.
//
// Keys order pivot candidates: no candidate < a used row (never a pivot) < NaN < every
// number by magnitude (`pivot_key`). In f32 a key is the magnitude's bits, which order like
// the value, above three sentinels: the subgroup reductions are integer ones (a single
// instruction where the hardware reduces integers, as NVIDIA's since Ampere does). In f64 it
// is the magnitude itself, so that entries past f32's range keep their order.
#ifdef F64
alias Key = f64;
const KEY_NONE: Key = -3.0;
const KEY_USED: Key = -2.0;
const KEY_NAN: Key = -1.0;

fn pivot_key(v: Real) -> Key {
    return select(abs(v), KEY_NAN, is_nan(v));
}
#else
alias Key = u32;
const KEY_NONE: Key = 0u;
const KEY_USED: Key = 1u;
const KEY_NAN: Key = 2u;

fn pivot_key(v: Real) -> Key {
    // (is_nan's test on the magnitude's bits, which the key needs anyway.)
    let bits = bitcast<u32>(abs(v));
    return select(bits + 3u, KEY_NAN, bits > 0x7f800000u);
}
#endif

struct Best {
    key: Key,
    slot: u32,
}

// Whether `a` beats `b`: a larger key, or the least slot on equal keys.
fn beats(a: Best, b: Best) -> bool {
    return a.key > b.key || (a.key == b.key && a.slot < b.slot);
}

#ifdef SUBGROUP
// Two sets (by parity) of one partial per subgroup; subgroups have 2 lanes or more. (Sized
// by the override itself: naga 30 panics on an override expression as a size.)
var<workgroup> partial_keys: array<Key, WG_SIZE>;
var<workgroup> partial_slots: array<u32, WG_SIZE>;

// The best of (key, slot) over the subgroup, the least slot on equal keys.
fn subgroup_best(key: Key, slot: u32) -> Best {
    let top = subgroupMax(key);
    return Best(top, subgroupMin(select(0xffffffffu, slot, key == top)));
}

// subgroup_best where slots ascend with the subgroup's lanes: the first lane holding the
// largest key holds the least slot among them, found by a ballot (a reduction fewer: 2,096 →
// 2,029 µs of the 1024² LU's rounds on the H200, benches/NOTES.md, session 57).
fn ordered_subgroup_best(key: Key, slot: u32) -> Best {
    let top = subgroupMax(key);
    return Best(top, subgroupShuffle(slot, first_lane(subgroupBallot(key == top))));
}

// The first lane of a ballot's set (subgroups have at most 128 lanes); one is set.
fn first_lane(ballot: vec4<u32>) -> u32 {
    return select(select(select(96u + firstTrailingBit(ballot.w), 64u + firstTrailingBit(ballot.z), ballot.z != 0u),
                         32u + firstTrailingBit(ballot.y), ballot.y != 0u),
                  firstTrailingBit(ballot.x), ballot.x != 0u);
}

fn group_argmax(key: Key, slot: u32, lane: Lane, parity: u32) -> Best {
    let mine = subgroup_best(key, slot);
    let subgroups = WG_SIZE / lane.sg_size;
    let base = (parity & 1u) * (WG_SIZE / 2u);
    if lane.sg_lane == 0u {
        partial_keys[base + lane.index / lane.sg_size] = mine.key;
        partial_slots[base + lane.index / lane.sg_size] = mine.slot;
    }
    workgroupBarrier();
    // Every subgroup reduces the partials itself, a lane each (no second barrier).
    var best = Best(KEY_NONE, 0xffffffffu);
    for (var g = lane.sg_lane; g < subgroups; g += lane.sg_size) {
        let other = Best(partial_keys[base + g], partial_slots[base + g]);
        if beats(other, best) {
            best = other;
        }
    }
    return subgroup_best(best.key, best.slot);
}
#else
var<workgroup> tree_keys: array<Key, WG_SIZE>;
var<workgroup> tree_slots: array<u32, WG_SIZE>;

fn group_argmax(key: Key, slot: u32, lane: Lane, parity: u32) -> Best {
    tree_keys[lane.index] = key;
    tree_slots[lane.index] = slot;
    workgroupBarrier();
    for (var offset = WG_SIZE >> 1u; offset > 0u; offset >>= 1u) {
        if lane.index < offset {
            let other = Best(tree_keys[lane.index + offset], tree_slots[lane.index + offset]);
            if beats(other, Best(tree_keys[lane.index], tree_slots[lane.index])) {
                tree_keys[lane.index] = other.key;
                tree_slots[lane.index] = other.slot;
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
