// The sums of gram_schmidt's partials, one workgroup per row, each in a fixed order:
// workgroup k adds up partial row k into state[out + k].
#import entry
#import real
#import workgroup_sum

struct Params {
    // Partials a row.
    workgroups: u32,
    rows: u32,
    out: u32,
}

var<immediate> params: Params;
@group(0) @binding(0) var<storage, read> partials: array<vec2<Acc>>;
@group(0) @binding(1) var<storage, read_write> state: array<Real>;

override WG_SIZE: u32 = 256u;

fn run(workgroup: u32, lane: Lane) {
    if workgroup >= params.rows {
        return;
    }
    let first = workgroup * params.workgroups;
    var sum = Acc(0.0);
    for (var k = lane.index; k < params.workgroups; k += WG_SIZE) {
        sum += partials[first + k].x;
    }
    let total = workgroup_sum(lane, sum);
    if lane.index == 0u {
        state[params.out + workgroup] = Real(total);
    }
}
