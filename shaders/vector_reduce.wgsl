// First pass of a deterministic reduction: each workgroup reduces a fixed chunk of
// `chunk` elements into partials[workgroup]: x·y as (sum, 0), or with NRM2 x's norm as a
// (scale, ssq) pair (y is then x, bound twice). vector_reduce_finish combines the partials in
// a fixed order.
#import entry
#import real
#import workgroup_sum
#import norm_pair

struct Params {
    len: u32,
    chunk: u32,
}

var<immediate> params: Params;
@group(0) @binding(0) var<storage, read> x: array<Real>;
@group(0) @binding(1) var<storage, read> y: array<Real>;
@group(0) @binding(2) var<storage, read_write> partials: array<vec2<Acc>>;

override WG_SIZE: u32 = 256u;

var<workgroup> pairs: array<vec2<Acc>, WG_SIZE>;

fn run(workgroup: u32, lane: Lane) {
    let start = workgroup * params.chunk;
    let end = min(start + params.chunk, params.len);
#ifdef NRM2
    var pair = vec2<Acc>(0.0, 0.0);
    for (var i = start + lane.index; i < end; i += WG_SIZE) {
        pair = norm_add(pair, Acc(x[i]));
    }
    let total = workgroup_norm(lane.index, pair);
    if lane.index == 0u {
        partials[workgroup] = total;
    }
#else
    var sum = Acc(0.0);
    for (var i = start + lane.index; i < end; i += WG_SIZE) {
        sum += Acc(x[i]) * Acc(y[i]);
    }
    let total = workgroup_sum(lane, sum);
    if lane.index == 0u {
        partials[workgroup] = vec2<Acc>(total, 0.0);
    }
#endif
}
