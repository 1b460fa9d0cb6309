// y = alpha * y (BLAS scal; alpha == 0 writes zeros whatever y held, NaN included), with
// FILL y = alpha in every element, or with HASHED y[i] = alpha * h(i, seed): h a value in
// [-1/2, 1/2) hashed from the index (24 bits, exact in f32 and f64; the host's twin is
// `generate::hashed_value`), a reproducible pseudo-random vector made where it is used.
#import invocation
#import real
#import scaling

struct Params {
    len: u32,
    // HASHED: the stream.
    seed: u32,
    scaling: Scaling,
}

var<immediate> params: Params;
@group(0) @binding(0) var<storage, read> alpha_dev: array<Real>;
@group(0) @binding(1) var<storage, read> beta_dev: array<Real>;
@group(0) @binding(2) var<storage, read_write> y: array<Real>;

override WG_SIZE: u32 = 256u;

// Wellons' lowbias32: a bijection of u32 whose output bits each flip with about half of
// the input bits.
fn mix32(v: u32) -> u32 {
    var x = v;
    x ^= x >> 16u;
    x *= 0x7feb352du;
    x ^= x >> 15u;
    x *= 0x846ca68bu;
    x ^= x >> 16u;
    return x;
}

fn run(i: u32) {
    if i >= params.len {
        return;
    }
    let a = alpha();
#ifdef FILL
    y[i] = a;
#else
#ifdef HASHED
    let h = mix32(i + mix32(params.seed)) >> 8u;
    y[i] = a * (Real(h) * Real(1.0 / 16777216.0) - Real(0.5));
#else
    y[i] = select(a * y[i], Real(0.0), a == 0.0);
#endif
#endif
}
