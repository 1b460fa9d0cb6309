// The scalar steps of the iterative solvers, run by one invocation between the vector passes
// (after its workgroup has added up a row of partials, if asked):
// coefficients from the reductions already in `state` (CG's α = ρ/(p·q), BiCGSTAB's ω,
// GMRES's column of H, Givens rotations and back substitution), the convergence test, and the status
// words the host reads once per batch. A failed step writes zeros where its coefficients go,
// so that the vector passes recorded after it in the same iteration change nothing.
//
// A step may first add up a row of partial sums that the pass before it left (a reduction's
// first pass, or a fused update's), so that a reduction and the coefficient that needs it
// cost one dispatch less: the whole workgroup sums in a fixed order, then lane 0 runs the op.
#import entry
#import finite
#import real
#import workgroup_sum

// status words
const STOP: u32 = 0u;        // why the solve stopped, 0 while it runs
const ITERATIONS: u32 = 1u;  // iterations done
const CYCLE: u32 = 2u;       // GMRES: iterations done in this restart cycle
const SKIP_UPDATE: u32 = 3u; // GMRES: 0 while a cycle has an update to apply
const IDLING: u32 = 4u;      // 1 once an IDLE_AFTER_STOP ratio has found the solve stopped
const SKIP_REPLACE: u32 = 5u; // BiCGSTAB: 0 when the residual is to be recomputed as b − A·x

// why the solve stopped (the host's StopReason)
const CONVERGED: u32 = 1u;
const MAX_ITERATIONS: u32 = 2u;
const BREAKDOWN: u32 = 3u;
const NON_FINITE: u32 = 4u;
const INDEFINITE: u32 = 5u;
const ZERO_RHS: u32 = 6u;   // b = 0: x = 0 solves it

// ops
const RATIO: u32 = 0u;
const CHECK: u32 = 1u;
const GIVENS: u32 = 2u;
const BACK_SOLVE: u32 = 3u;
const CYCLE_START: u32 = 4u;
const CYCLE_END: u32 = 5u;
const COLUMN: u32 = 6u;
const SUM_ONLY: u32 = 7u; // nothing after the sum
const THRESHOLD: u32 = 8u;

// BiCGSTAB recomputes its residual as b − A·x once the recurrence's norm has fallen below
// this fraction of its peak since the last time (Sleijpen and van der Vorst's reliable
// updating): what rounding added to r while its norm was large then no longer stays in the
// recurrence, whose norm would otherwise fall below the true residual's.
const REPLACE_BELOW = 0.01;

const NONE: u32 = 0xffffffffu;

// RATIO flags
const POSITIVE: u32 = 1u;  // the denominator must be > 0 (CG: p·Ap > 0, else A is not SPD)
const NONZERO_NUM: u32 = 2u; // a zero numerator is a breakdown (BiCGSTAB: ρ = r̂·r = 0)
// RATIO and CHECK: once stopped, a ratio is a zero step (and marks IDLING), and a check in
// an idling iteration does nothing.
const IDLE_AFTER_STOP: u32 = 4u;
// COLUMN: project the column's vector a second time (CGS2), else once (classical).
const REORTHOGONALIZE: u32 = 1u;
// CHECK: track the norm's peak in state[c] and open the replacement's gate below it.
const REPLACE_BELOW_PEAK: u32 = 8u;

struct Params {
    op: u32,
    // RATIO: out = a·c / (b·d), neg_out = -out, keep = a·c. CHECK: the norm is a, the
    // threshold b. GIVENS: H at a, cosines at b, sines at b + m, g at c, column `index`,
    // the residual estimate to out. BACK_SOLVE: H at a, g at c, y to out. COLUMN: the
    // unrotated H at a, the rotated one at b, the column's dots at c, g at d, 1/β to out and
    // μ to keep, column `index`.
    a: u32,
    b: u32,
    c: u32,
    d: u32,
    out: u32,
    neg_out: u32,
    keep: u32,
    flags: u32,
    // CHECK: the history entry (NONE: none) and whether the check counts an iteration.
    // GIVENS, COLUMN: the column.
    index: u32,
    counts: u32,
    max_iterations: u32,
    // GMRES: the restart length (H has m + 1 rows).
    m: u32,
    // Before the op (with sum_count > 0): state[sum_into] ← Σ partials[0..sum_count].x (.y
    // with sum_half = 1) and, unless sum_root is NONE, state[sum_root] ← √ of it (a norm from
    // its square).
    sum_count: u32,
    sum_half: u32,
    sum_into: u32,
    sum_root: u32,
}

var<immediate> params: Params;
@group(0) @binding(0) var<storage, read_write> state: array<Real>;
@group(0) @binding(1) var<storage, read_write> status: array<u32>;
@group(0) @binding(2) var<storage, read_write> history: array<Real>;
@group(0) @binding(3) var<storage, read> partials: array<vec2<Acc>>;

override WG_SIZE: u32 = 256u;

// Stopped, the rest of a batch runs nothing: the gated sections go quiet with STOP, and the
// replacement's gate, decided by an op that no longer runs, is closed here.
fn stop(reason: u32) {
    if status[STOP] == 0u {
        status[STOP] = reason;
    }
    status[SKIP_REPLACE] = 1u;
}

// A zero step: a failed ratio's, and with IDLE_AFTER_STOP every ratio's once stopped, so that
// an iteration that runs after the stop (CG's solves gate every few iterations, not every
// one) leaves x and r as they are.
fn zero_step() {
    state[params.out] = Real(0.0);
    if params.neg_out != NONE {
        state[params.neg_out] = Real(0.0);
    }
}

fn ratio() {
    if (params.flags & IDLE_AFTER_STOP) != 0u && status[STOP] != 0u {
        status[IDLING] = 1u;
        zero_step();
        return;
    }
    let num = state[params.a] * state[params.c];
    let den = state[params.b] * state[params.d];
    let q = num / den;
    var failed = 0u;
    if !finite(num) || !finite(den) {
        failed = NON_FINITE;
    } else if (params.flags & POSITIVE) != 0u && den <= 0.0 {
        failed = INDEFINITE;
    } else if den == 0.0 || !finite(q) || ((params.flags & NONZERO_NUM) != 0u && num == 0.0) {
        failed = BREAKDOWN;
    }
    if failed != 0u {
        stop(failed);
        zero_step();
        return;
    }
    state[params.out] = q;
    if params.neg_out != NONE {
        state[params.neg_out] = -q;
    }
    if params.keep != NONE {
        state[params.keep] = num;
    }
}

// The convergence threshold from ‖b‖, computed here so that a solve needs no round trip
// before its first batch; a zero or non-finite b stops it before it starts.
fn threshold() {
    let norm = state[params.a];
    if !finite(norm) {
        stop(NON_FINITE);
    } else if norm == 0.0 {
        stop(ZERO_RHS);
    }
    state[params.out] = max(state[params.b] * norm, state[params.c]);
}

fn check() {
    // With IDLE_AFTER_STOP, an iteration after the stop's is not counted or recorded (its
    // ratio idled). The iteration whose ratio failed is: it ran, and stopped the solve.
    if (params.flags & IDLE_AFTER_STOP) != 0u && status[IDLING] != 0u {
        return;
    }
    let norm = state[params.a];
    var done = status[ITERATIONS];
    if params.counts != 0u {
        done += 1u;
        status[ITERATIONS] = done;
        status[CYCLE] += 1u;
    }
    if params.index != NONE {
        history[params.index] = norm;
    }
    if !finite(norm) {
        stop(NON_FINITE);
    } else if norm <= state[params.b] {
        stop(CONVERGED);
    } else if done >= params.max_iterations {
        stop(MAX_ITERATIONS);
    }
    if (params.flags & REPLACE_BELOW_PEAK) != 0u {
        // Replaced, the peak restarts from the new residual's norm (the replacement writes
        // it to state[c]).
        let peak = state[params.c];
        let replace = status[STOP] == 0u && norm < Real(REPLACE_BELOW) * peak;
        status[SKIP_REPLACE] = select(1u, 0u, replace);
        if !replace {
            state[params.c] = max(peak, norm);
        }
    }
}

// H[i, j] of the (m + 1) × m Hessenberg matrix, column-major.
fn h_at(i: u32, j: u32) -> u32 {
    return params.a + i + j * (params.m + 1u);
}

// Applies the earlier rotations to column j of H, makes the one that zeroes H[j + 1, j], and
// rotates g: |g[j + 1]| is then the residual norm of the least-squares problem.
fn givens() {
    let j = params.index;
    let cs = params.b;
    let sn = params.b + params.m;
    for (var i = 0u; i < j; i += 1u) {
        let hi = state[h_at(i, j)];
        let hn = state[h_at(i + 1u, j)];
        state[h_at(i, j)] = state[cs + i] * hi + state[sn + i] * hn;
        state[h_at(i + 1u, j)] = -state[sn + i] * hi + state[cs + i] * hn;
    }
    let x = state[h_at(j, j)];
    let y = state[h_at(j + 1u, j)];
    // The next basis vector's scale 1/‖w‖, taken before the rotation zeroes ‖w‖; 0 for the
    // lucky breakdown ‖w‖ = 0, whose residual estimate below is 0: the check stops there.
    var inv_norm = Real(0.0);
    if y == 0.0 {
    } else {
        inv_norm = Real(1.0) / y;
    }
    state[params.d] = inv_norm;
    let r = sqrt(x * x + y * y);
    var c = Real(1.0);
    var s = Real(0.0);
    if r == 0.0 {
    } else {
        c = x / r;
        s = y / r;
    }
    state[cs + j] = c;
    state[sn + j] = s;
    state[h_at(j, j)] = r;
    state[h_at(j + 1u, j)] = Real(0.0);
    let g = state[params.c + j];
    state[params.c + j] = c * g;
    state[params.c + j + 1u] = -s * g;
    state[params.out] = abs(-s * g);
}

// y = R⁻¹ g over the k = status[CYCLE] columns done this cycle; y past k is zero, so the
// update skips those columns' vectors (stale ones, maybe not finite, from an earlier solve).
fn back_solve() {
    let k = min(status[CYCLE], params.m);
    for (var i = k; i < params.m; i += 1u) {
        state[params.out + i] = Real(0.0);
    }
    for (var step = 0u; step < k; step += 1u) {
        let i = k - 1u - step;
        var sum = state[params.c + i];
        for (var j = i + 1u; j < k; j += 1u) {
            sum -= state[h_at(i, j)] * state[params.out + j];
        }
        let pivot = state[h_at(i, i)];
        var y = Real(0.0);
        if pivot == 0.0 {
            stop(BREAKDOWN);
        } else {
            y = sum / pivot;
        }
        state[params.out + i] = y;
    }
}

// GMRES's delayed classical Gram–Schmidt (DCGS2; Świrydowicz, Langou, Ananthan, Yang and
// Thomas, 2020), at column j. The column's pass left, with Q = v₀ … v_{j−1} and u the
// vector that is to become v_j (projected once), p = A·u:
//   dots[i] = sᵢ = vᵢ·u (i < j), dots[j] = u·u, dots[j + 1 + i] = tᵢ = vᵢ·p, dots[2j + 1] = u·p.
// 1. u's second projection: v_j = (u − Q·s)/β with β² = u·u − s·s (Pythagoras: Q is
//    orthonormal). That finishes column j − 1 of the Hessenberg matrix H (its first
//    projection was stored by the step before): H[i, j−1] += sᵢ, H[j, j−1] = β; the column is
//    copied to the rotated matrix for the Givens op that follows. At j = 0, g[0] = β = ‖r‖.
// 2. Column j's first projection, from dots alone: A·v_j = (p − A·Q·s)/β, and
//    A·Q·s = V·H·s by the Arnoldi relation, so H[i, j] = (tᵢ − (H·s)ᵢ)/β for i < j and
//    H[j, j] = (μ − β·s_{j−1})/β with μ = v_j·p = (u·p − s·t)/β; the next u is
//    (p − Q·t − μ·v_j)/β, which the column's update pass writes with v_j (1/β to out, μ to keep).
// Classical Gram–Schmidt (no REORTHOGONALIZE flag) takes s = 0: one projection, the same passes.
fn column(workgroup: u32, lane: Lane) {
    let j = params.index;
    let dots = params.c;
    let t = dots + j + 1u;
    let reorthogonalize = (params.flags & REORTHOGONALIZE) != 0u;
    // s·s and s·t, summed by the workgroup (each lane's rows in a fixed order).
    var lane_ss = Acc(0.0);
    var lane_st = Acc(0.0);
    for (var i = lane.index; i < j; i += WG_SIZE) {
        let s = s_at(i, reorthogonalize);
        lane_ss += s * s;
        lane_st += s * state[t + i];
    }
    let ss = Real(workgroup_sum(lane, lane_ss));
    let st = Real(workgroup_sum(lane, lane_st));
    if workgroup != 0u {
        return;
    }
    // Rounding may leave u·u − s·s just below 0 when u lies in Q's span; a NaN stays NaN.
    var beta_squared = state[dots + j] - ss;
    if beta_squared < 0.0 {
        beta_squared = Real(0.0);
    }
    let beta = sqrt(beta_squared);
    // 1/0 for the lucky breakdown β = 0: the residual estimate of column j − 1 is then 0 and
    // the check stops the solve; a NaN β stays NaN.
    var inv = Real(0.0);
    if beta == 0.0 {
    } else {
        inv = Real(1.0) / beta;
    }
    let mu = (state[t + j] - st) * inv;
    // Row i of column j: lane i (every WG_SIZE-th row). Column j − 1 is written by the row's
    // own lane, so H·s reads it from the lane's registers, not from memory another lane writes.
    for (var i = lane.index; i <= j; i += WG_SIZE) {
        var finished = Real(0.0);
        if j > 0u {
            let previous = j - 1u;
            if i < j {
                finished = state[h_at(i, previous)] + s_at(i, reorthogonalize);
            } else {
                finished = beta;
            }
            state[h_at(i, previous)] = finished;
            state[rotated_at(i, previous)] = finished;
        }
        if j == params.m {
            continue;
        }
        if i < j {
            if !reorthogonalize {
                state[params.c + i] = Real(0.0);
            }
            // H is upper Hessenberg: H[i, k] = 0 for k < i − 1.
            var hs = finished * s_at(j - 1u, reorthogonalize);
            for (var k = max(i, 1u) - 1u; k + 1u < j; k += 1u) {
                hs += state[h_at(i, k)] * s_at(k, reorthogonalize);
            }
            state[h_at(i, j)] = (state[t + i] - hs) * inv;
        } else {
            var below = Real(0.0);
            if j > 0u {
                below = beta * s_at(j - 1u, reorthogonalize);
            }
            state[h_at(j, j)] = (mu - below) * inv;
        }
    }
    if lane.index == 0u {
        if j == 0u {
            state[params.d] = beta;
        }
        if j < params.m {
            state[params.out] = inv;
            state[params.keep] = mu;
        }
    }
}

// sᵢ, the dot of vᵢ with the column's u; 0 for classical Gram–Schmidt (whose update pass
// then reads the 0 that `column` writes in its place).
fn s_at(i: u32, reorthogonalize: bool) -> Real {
    if reorthogonalize {
        return state[params.c + i];
    }
    return Real(0.0);
}

// The rotated H (COLUMN's b), laid out as H.
fn rotated_at(i: u32, j: u32) -> u32 {
    return params.b + i + j * (params.m + 1u);
}

// Loads in flight per lane while adding partials: a lane's loads are independent, and a
// single-workgroup step is bound by their latency, not by bandwidth (16384 partials of an
// SpMV's fold are 64 loads a lane).
const SUM_LOADS: u32 = 8u;

// Σ partials[k].x (or .y) over the lane's k (lane, lane + WG_SIZE, ...), SUM_LOADS at a time into
// as many accumulators, added in a fixed order: deterministic for a given count.
fn lane_partial_sum(first: u32) -> Acc {
    var acc: array<Acc, SUM_LOADS>;
    let last = params.sum_count - 1u;
    for (var base = first; base < params.sum_count; base += SUM_LOADS * WG_SIZE) {
        for (var j = 0u; j < SUM_LOADS; j++) {
            let k = base + j * WG_SIZE;
            let pair = partials[min(k, last)];
            acc[j] += select(Acc(0.0), select(pair.x, pair.y, params.sum_half != 0u), k <= last);
        }
    }
    var sum = Acc(0.0);
    for (var j = 0u; j < SUM_LOADS; j++) {
        sum += acc[j];
    }
    return sum;
}

fn run(workgroup: u32, lane: Lane) {
    if params.sum_count > 0u {
        let total = workgroup_sum(lane, lane_partial_sum(lane.index));
        if lane.index == 0u {
            state[params.sum_into] = Real(total);
            if params.sum_root != NONE {
                state[params.sum_root] = Real(sqrt(total));
            }
        }
    }
    if params.op == COLUMN {
        // The whole workgroup: a row of H a lane.
        column(workgroup, lane);
        return;
    }
    if workgroup != 0u || lane.index != 0u {
        return;
    }
    switch params.op {
        case RATIO: {
            ratio();
        }
        case CHECK: {
            check();
        }
        case THRESHOLD: {
            threshold();
        }
        case GIVENS: {
            givens();
        }
        case BACK_SOLVE: {
            back_solve();
        }
        case CYCLE_START: {
            status[CYCLE] = 0u;
            status[SKIP_UPDATE] = 0u;
        }
        case CYCLE_END: {
            status[SKIP_UPDATE] = 1u;
        }
        default: {
        }
    }
}
