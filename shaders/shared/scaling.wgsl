// α and β of an op: host values captured in params.scaling when the op was recorded, or
// device scalars read when it runs (alpha_dev[alpha_at], beta_dev[beta_at]), by the bits of
// `source`. The including shader declares `params.scaling: Scaling` and the bindings
// `alpha_dev` and `beta_dev` (arrays of Real); the host binds an unused vector where a
// scalar comes from the host.
struct Scaling {
    alpha: Real,
    beta: Real,
    alpha_at: u32,
    beta_at: u32,
    // Bit 0: alpha from alpha_dev. Bit 1: beta from beta_dev.
    source: u32,
}

fn alpha() -> Real {
    if (params.scaling.source & 1u) != 0u {
        return alpha_dev[params.scaling.alpha_at];
    }
    return params.scaling.alpha;
}

fn beta() -> Real {
    if (params.scaling.source & 2u) != 0u {
        return beta_dev[params.scaling.beta_at];
    }
    return params.scaling.beta;
}

// alpha * sum + beta * old, by BLAS rules that hold for NaN and infinities too: with
// alpha == 0, sum is not used (a NaN in it does not leak); with beta == 0, old is not used
// (the caller may pass anything, and need not read it).
//
// Zero tests on floats are written `x == 0.0`, never `x != 0.0`: SPIR-V's ordered `!=` is
// false for NaN, and a NaN scalar must count as nonzero.
fn combine(a: Real, sum: Acc, b: Real, old: Real) -> Real {
    var r = a * Real(sum);
    if a == 0.0 {
        r = Real(0.0);
    }
    if b == 0.0 {
        return r;
    }
    return fma(b, old, r);
}
