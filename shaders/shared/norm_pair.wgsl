// A Euclidean norm kept as (scale, sum of squares) with norm = scale * sqrt(ssq), so that
// squares neither overflow nor underflow (LAPACK's dnrm2 scheme). Infinities give an infinite
// norm, NaN a NaN one: the scale never becomes NaN, and an equal scale adds exactly 1.
fn norm_add(p: vec2<Acc>, v: Acc) -> vec2<Acc> {
    let a = abs(v);
    if a == Acc(0.0) {
        return p;
    }
    if p.x < a {
        let r = p.x / a;
        return vec2<Acc>(a, Acc(1.0) + p.y * r * r);
    }
    if a == p.x {
        return vec2<Acc>(p.x, p.y + Acc(1.0));
    }
    let r = a / p.x;
    return vec2<Acc>(p.x, p.y + r * r);
}

fn norm_combine(p: vec2<Acc>, q: vec2<Acc>) -> vec2<Acc> {
    var big = p;
    var small = q;
    if p.x < q.x {
        big = q;
        small = p;
    }
    if small.x == Acc(0.0) {
        return vec2<Acc>(big.x, big.y + small.y);
    }
    if small.x == big.x {
        return vec2<Acc>(big.x, big.y + small.y);
    }
    let r = small.x / big.x;
    return vec2<Acc>(big.x, big.y + small.y * r * r);
}

// The norm pair of the whole workgroup, combined in a fixed tree order (deterministic).
// Expects `var<workgroup> pairs: array<vec2<Acc>, WG_SIZE>` in the including shader; every
// lane must call it; lane 0 gets the result.
fn workgroup_norm(lane: u32, pair: vec2<Acc>) -> vec2<Acc> {
    pairs[lane] = pair;
    workgroupBarrier();
    for (var half = WG_SIZE >> 1u; half > 0u; half >>= 1u) {
        if lane < half {
            pairs[lane] = norm_combine(pairs[lane], pairs[lane + half]);
        }
        workgroupBarrier();
    }
    return pairs[0];
}
