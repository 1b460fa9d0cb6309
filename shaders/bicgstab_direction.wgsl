// BiCGSTAB's direction update in one pass: p ← r + β·(p − ω·v), with β = state[beta] and
// ω = state[omega] (two axpys would read p twice and write it twice).
//
// A failed step's zero β leaves p = r without reading p or v, and a zero ω does not read v
// (either may not be finite then).
#import invocation
#import real

struct Params {
    len: u32,
    beta: u32,
    omega: u32,
}

var<immediate> params: Params;
@group(0) @binding(0) var<storage, read> state: array<Real>;
@group(0) @binding(1) var<storage, read> r: array<Real>;
@group(0) @binding(2) var<storage, read> v: array<Real>;
@group(0) @binding(3) var<storage, read_write> p: array<Real>;

override WG_SIZE: u32 = 256u;

fn run(i: u32) {
    if i >= params.len {
        return;
    }
    let beta = state[params.beta];
    let omega = state[params.omega];
    if beta == 0.0 {
        p[i] = r[i];
    } else if omega == 0.0 {
        p[i] = fma(beta, p[i], r[i]);
    } else {
        p[i] = fma(beta, fma(-omega, v[i], p[i]), r[i]);
    }
}
