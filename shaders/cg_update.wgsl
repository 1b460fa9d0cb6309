// CG's update in one pass: x += α·p, r += (−α)·q, and the first pass of ‖r‖ (vector_reduce's
// NRM2 chunks, lanes and order, so that vector_reduce_finish completes the same norm, bit for
// bit, as the three unfused passes give). α and −α are read from the solver's scalars.
#import entry
#import real
#import norm_pair

struct Params {
    len: u32,
    chunk: u32,
    alpha_at: u32,
    neg_alpha_at: u32,
}

var<immediate> params: Params;
@group(0) @binding(0) var<storage, read> scalars: array<Real>;
@group(0) @binding(1) var<storage, read> p: array<Real>;
@group(0) @binding(2) var<storage, read> q: array<Real>;
@group(0) @binding(3) var<storage, read_write> x: array<Real>;
@group(0) @binding(4) var<storage, read_write> r: array<Real>;
@group(0) @binding(5) var<storage, read_write> partials: array<vec2<Acc>>;

override WG_SIZE: u32 = 256u;

var<workgroup> pairs: array<vec2<Acc>, WG_SIZE>;

// old + a·v as blas1's axpy computes it (scaling.wgsl's combine with β = 1): v unused when
// a == 0.
fn axpy_one(a: Real, v: Real, old: Real) -> Real {
    var product = a * v;
    if a == 0.0 {
        product = Real(0.0);
    }
    return fma(Real(1.0), old, product);
}

fn run(workgroup: u32, lane: Lane) {
    let alpha = scalars[params.alpha_at];
    let neg_alpha = scalars[params.neg_alpha_at];
    let start = workgroup * params.chunk;
    let end = min(start + params.chunk, params.len);
    var pair = vec2<Acc>(0.0, 0.0);
    for (var i = start + lane.index; i < end; i += WG_SIZE) {
        x[i] = axpy_one(alpha, p[i], x[i]);
        let residual = axpy_one(neg_alpha, q[i], r[i]);
        r[i] = residual;
        pair = norm_add(pair, Acc(residual));
    }
    let total = workgroup_norm(lane.index, pair);
    if lane.index == 0u {
        partials[workgroup] = total;
    }
}
