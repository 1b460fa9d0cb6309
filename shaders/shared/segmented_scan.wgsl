// Inclusive segmented sum across the workgroup in lane order.
//
// Keys must never decrease with the lane index; lanes with equal keys form a segment. Every
// lane must call it (it has barriers). Afterwards scan_keys[l] and scan_vals[l] hold lane
// l's key and its inclusive sum over the lanes up to l that share its key; the return value
// is the calling lane's sum.
#import entry

var<workgroup> scan_keys: array<u32, WG_SIZE>;
var<workgroup> scan_vals: array<f32, WG_SIZE>;

fn segmented_scan(lane: Lane, key: u32, value: f32) -> f32 {
    var v = value;
#ifdef SUBGROUP
    // Within the subgroup: shuffles, no barriers.
    for (var d = 1u; d < lane.sg_size; d <<= 1u) {
        let key_up = subgroupShuffleUp(key, d);
        let v_up = subgroupShuffleUp(v, d);
        if lane.sg_lane >= d && key_up == key {
            v += v_up;
        }
    }
    // Across subgroups: each subgroup's last lane publishes its tail segment, and a lane adds
    // the tails of the earlier subgroups that end in its own segment.
    let sg_id = lane.index / lane.sg_size;
    if lane.sg_lane == lane.sg_size - 1u {
        scan_keys[sg_id] = key;
        scan_vals[sg_id] = v;
    }
    workgroupBarrier();
    for (var s = sg_id; s > 0u; s--) {
        if scan_keys[s - 1u] != key {
            break;
        }
        v += scan_vals[s - 1u];
    }
    workgroupBarrier();
    scan_keys[lane.index] = key;
    scan_vals[lane.index] = v;
    workgroupBarrier();
#else
    // Hillis-Steele over workgroup memory.
    scan_keys[lane.index] = key;
    scan_vals[lane.index] = v;
    workgroupBarrier();
    for (var d = 1u; d < WG_SIZE; d <<= 1u) {
        if lane.index >= d && scan_keys[lane.index - d] == key {
            v += scan_vals[lane.index - d];
        }
        workgroupBarrier();
        scan_vals[lane.index] = v;
        workgroupBarrier();
    }
#endif
    return v;
}
