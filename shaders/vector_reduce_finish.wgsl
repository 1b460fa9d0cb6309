// Second pass of a deterministic reduction: one workgroup combines the partials of
// vector_reduce in a fixed order and writes result[at]: the sum, or with NRM2 the norm.
#import entry
#import real
#import workgroup_sum
#import norm_pair

struct Params {
    count: u32,
    at: u32,
}

var<immediate> params: Params;
@group(0) @binding(0) var<storage, read> partials: array<vec2<Acc>>;
@group(0) @binding(1) var<storage, read_write> result: array<Real>;

override WG_SIZE: u32 = 256u;

var<workgroup> pairs: array<vec2<Acc>, WG_SIZE>;

fn run(workgroup: u32, lane: Lane) {
#ifdef NRM2
    var pair = vec2<Acc>(0.0, 0.0);
    for (var k = lane.index; k < params.count; k += WG_SIZE) {
        pair = norm_combine(pair, partials[k]);
    }
    let total = workgroup_norm(lane.index, pair);
    if lane.index == 0u {
        result[params.at] = Real(total.x * sqrt(total.y));
    }
#else
    var sum = Acc(0.0);
    for (var k = lane.index; k < params.count; k += WG_SIZE) {
        sum += partials[k].x;
    }
    let total = workgroup_sum(lane, sum);
    if lane.index == 0u {
        result[params.at] = Real(total);
    }
#endif
}
