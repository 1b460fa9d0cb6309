// The sums of gram_schmidt's partials, one workgroup per row, each in a fixed order:
// workgroups 0..dots add up dot rows 0..dots into state[out + row] (and, unless add_to is
// NONE, also add them to state[add_to + row]); unless norm_row is NONE, workgroup `dots`
// combines that row's norm pairs into state[norm_out].
#import entry
#import real
#import workgroup_sum
#import norm_pair

const NONE: u32 = 0xffffffffu;

struct Params {
    // Partials a row.
    workgroups: u32,
    dots: u32,
    out: u32,
    add_to: u32,
    norm_row: u32,
    norm_out: u32,
}

var<immediate> params: Params;
@group(0) @binding(0) var<storage, read> partials: array<vec2<Acc>>;
@group(0) @binding(1) var<storage, read_write> state: array<Real>;

override WG_SIZE: u32 = 256u;

var<workgroup> pairs: array<vec2<Acc>, WG_SIZE>;

fn run(workgroup: u32, lane: Lane) {
    let first = workgroup * params.workgroups;
    if workgroup < params.dots {
        var sum = Acc(0.0);
        for (var k = lane.index; k < params.workgroups; k += WG_SIZE) {
            sum += partials[first + k].x;
        }
        let total = workgroup_sum(lane, sum);
        if lane.index == 0u {
            state[params.out + workgroup] = Real(total);
            if params.add_to != NONE {
                state[params.add_to + workgroup] += Real(total);
            }
        }
    } else if workgroup == params.dots && params.norm_row != NONE {
        let row = params.norm_row * params.workgroups;
        var pair = vec2<Acc>(0.0, 0.0);
        for (var k = lane.index; k < params.workgroups; k += WG_SIZE) {
            pair = norm_combine(pair, partials[row + k]);
        }
        let total = workgroup_norm(lane.index, pair);
        if lane.index == 0u {
            state[params.norm_out] = Real(total.x * sqrt(total.y));
        }
    }
}
