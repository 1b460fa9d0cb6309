// CG's two updates that read p, in one pass: x ← x + α·p, then p ← z + β·p, with
// α = state[alpha] and β = state[rho_new] / state[rho] (z is r without a preconditioner).
#import invocation
#import real

struct Params {
    len: u32,
    alpha: u32,
    rho_new: u32,
    rho: u32,
}

var<immediate> params: Params;
@group(0) @binding(0) var<storage, read> state: array<Real>;
@group(0) @binding(1) var<storage, read> z: array<Real>;
@group(0) @binding(2) var<storage, read_write> x: array<Real>;
@group(0) @binding(3) var<storage, read_write> p: array<Real>;

override WG_SIZE: u32 = 256u;

fn run(i: u32) {
    if i >= params.len {
        return;
    }
    let alpha = state[params.alpha];
    // ρ = 0 only after a failed first step (its ρ is not kept): p then stays z-like, finite.
    let rho = state[params.rho];
    var beta = Real(0.0);
    if rho == 0.0 {
    } else {
        beta = state[params.rho_new] / rho;
    }
    let old = p[i];
    // A failed step's α = 0 leaves x as it was (p may not be finite then).
    if alpha == 0.0 {
    } else {
        x[i] = fma(alpha, old, x[i]);
    }
    p[i] = fma(beta, old, z[i]);
}
