// Inclusive segmented sum across the whole workgroup in lane order, built on group_scan:
// with subgroups, each subgroup scans itself and then adds the tails of the earlier
// subgroups that end in its segment; without, the group already is the workgroup.
//
// Keys must never decrease with the lane index; lanes with equal keys form a segment. Every
// lane must call it (it has barriers). Afterwards scan_keys[l] and scan_vals[l] hold lane
// l's key and its inclusive sum over the lanes up to l that share its key; the return value
// is the calling lane's sum.
#import group

var<workgroup> scan_keys: array<u32, WG_SIZE>;
var<workgroup> scan_vals: array<Acc, WG_SIZE>;

fn segmented_scan(lane: Lane, key: u32, value: Acc) -> Acc {
    let g = group_of(lane);
    var v = group_scan(g, key, value).sum;
#ifdef SUBGROUP
    if g.lane + 1u == g.size {
        scan_keys[g.index] = key;
        scan_vals[g.index] = v;
    }
    workgroupBarrier();
    for (var s = g.index; s > 0u; s--) {
        if scan_keys[s - 1u] != key {
            break;
        }
        v += scan_vals[s - 1u];
    }
    workgroupBarrier();
#endif
    scan_keys[lane.index] = key;
    scan_vals[lane.index] = v;
    workgroupBarrier();
    return v;
}
