// CG's two updates that read p, for row i: x ← x + α·p, then p ← z + β·p, with
// α = state[params.alpha] and β = state[params.rho_new] / state[params.rho] (cg_direction,
// cg_ic0_upper). The includer binds `state`, `x` and `p`.
fn direction_row(i: u32, z: Real) {
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
    p[i] = fma(beta, old, z);
}
