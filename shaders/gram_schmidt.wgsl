// Gram–Schmidt passes for GMRES over a block of basis vectors stored `stride` elements apart
// in one buffer (`count` of them from the block's start).
//   default: w ← w + Σ cᵢ·vᵢ with cᵢ = state[coef + i], a vector whose cᵢ is zero not read
//            (GMRES's cycle update: y is zero past the cycle's columns, whose vectors may be
//            stale, even not finite, from an earlier solve).
//   PAIR:    delayed classical Gram–Schmidt (DCGS2), the dots of one column: the partials of
//            vᵢ·u (row first + i) and vᵢ·w (row second + first + i), and unless `extra` is
//            NONE, of u·u (row extra) and u·w (row second + extra). u is the column's vector
//            before its second projection, w = A·u.
//   PAIR + UPDATE: the same column's vectors: u ← u − Σ sᵢ·vᵢ and w ← w − Σ tᵢ·vᵢ with
//            sᵢ = state[coef + i], tᵢ = state[coef + second + i]; in the last block's pass
//            (`extra` not NONE) then u ← v = u·state[scale], the new basis vector (the host
//            copies it into the basis), and w ← (w − state[mu]·v)·state[scale], the next
//            column's u. Between blocks u and w keep the partial sums.
// The basis is only read: read-write, it ran these passes at half the bandwidth on the H100.
// Each workgroup owns ROWS·WG_SIZE consecutive rows, ROWS a lane kept in registers, so u and
// w are read (and written) once whatever the number of vectors; gram_schmidt_finish adds the
// partials of each row up in a fixed order.
#import entry
#import real
#import workgroup_sum

// Rows a lane keeps of each of u and w: 32 bytes' worth (the host's `rows_per_lane`), so
// that the pair passes hold the registers of a single 8-row f32 vector's pass. (8 f64 rows
// ran at half the bandwidth on the H100, but with the basis bound read-write as well; the
// two were not measured apart: NOTES, session 37.)
#ifdef F64
const ROWS: u32 = 4u;
#else
const ROWS: u32 = 8u;
#endif
const NONE: u32 = 0xffffffffu;

struct Params {
    len: u32,
    // Workgroups covering len: the length of a row of partials.
    workgroups: u32,
    // Vectors in the block, and the elements from one to the next.
    count: u32,
    stride: u32,
    // PAIR: the partial row of the block's first vector's dot with u.
    first: u32,
    // PAIR: rows (or coefficient slots) from u's dots to w's.
    second: u32,
    extra: u32,
    // The slot of the first vector's coefficient.
    coef: u32,
    // PAIR + UPDATE: the slots of 1/β and μ.
    scale: u32,
    mu: u32,
}

var<immediate> params: Params;
@group(0) @binding(0) var<storage, read> basis: array<Real>;
@group(0) @binding(1) var<storage, read> state: array<Real>;
@group(0) @binding(2) var<storage, read_write> w: array<Real>;
@group(0) @binding(3) var<storage, read_write> u: array<Real>;
@group(0) @binding(4) var<storage, read_write> partials: array<vec2<Acc>>;

override WG_SIZE: u32 = 256u;

// The lane's rows of w, or with `of_u` of u (zero past the end).
fn load_rows(start: u32, of_u: bool) -> array<Acc, ROWS> {
    var rows: array<Acc, ROWS>;
    for (var k = 0u; k < ROWS; k++) {
        let row = start + k * WG_SIZE;
        rows[k] = Acc(0.0);
        if row < params.len {
            if of_u {
                rows[k] = Acc(u[row]);
            } else {
                rows[k] = Acc(w[row]);
            }
        }
    }
    return rows;
}

#ifdef SUBGROUP
var<workgroup> second_totals: array<Acc, WG_SIZE>;

// The PAIR pass's subgroup sums of a chunk of vectors, [vector in the chunk][subgroup]: the
// workgroup adds them up once a chunk (one pair of barriers for up to 64 vectors with
// 32-lane subgroups), not once a vector.
const CHUNK_ENTRIES: u32 = 512u;
var<workgroup> chunk_totals: array<vec2<Acc>, CHUNK_ENTRIES>;
#endif

// workgroup_sum of two values at the cost of one: the same order, one pair of barriers.
fn workgroup_sum_pair(lane: Lane, a: Acc, b: Acc) -> vec2<Acc> {
#ifdef SUBGROUP
    let g = group_of(lane);
    let sum_a = subgroupAdd(a);
    let sum_b = subgroupAdd(b);
    if g.lane == 0u {
        subgroup_totals[g.index] = sum_a;
        second_totals[g.index] = sum_b;
    }
    workgroupBarrier();
    var total = vec2<Acc>(0.0, 0.0);
    for (var k = 0u; k < g.count; k++) {
        total += vec2<Acc>(subgroup_totals[k], second_totals[k]);
    }
    workgroupBarrier();
    return total;
#else
    return vec2<Acc>(workgroup_sum(lane, a), workgroup_sum(lane, b));
#endif
}

// The lane's share of v·u and v·w, v the basis vector at `base`.
fn pair_dots(start: u32, base: u32, mine_u: array<Acc, ROWS>, mine: array<Acc, ROWS>) -> vec2<Acc> {
    var dots = vec2<Acc>(0.0, 0.0);
    for (var k = 0u; k < ROWS; k++) {
        let row = start + k * WG_SIZE;
        if row < params.len {
            let v = Acc(basis[base + row]);
            dots += vec2<Acc>(mine_u[k] * v, mine[k] * v);
        }
    }
    return dots;
}

// Adds this workgroup's share of the dots with u and with w to partial rows `row` and
// `second + row`.
fn keep_partials(lane: Lane, workgroup: u32, row: u32, with_u: Acc, with_w: Acc) {
    let total = workgroup_sum_pair(lane, with_u, with_w);
    if lane.index == 0u {
        partials[row * params.workgroups + workgroup] = vec2<Acc>(total.x, 0.0);
        partials[(params.second + row) * params.workgroups + workgroup] = vec2<Acc>(total.y, 0.0);
    }
}

fn run(workgroup: u32, lane: Lane) {
    if workgroup >= params.workgroups {
        return;
    }
    let start = workgroup * ROWS * WG_SIZE + lane.index;
    var mine = load_rows(start, false);
#ifdef PAIR
    var mine_u = load_rows(start, true);
#ifdef UPDATE
    for (var i = 0u; i < params.count; i++) {
        let s = Acc(state[params.coef + i]);
        let t = Acc(state[params.coef + params.second + i]);
        let base = i * params.stride;
        for (var k = 0u; k < ROWS; k++) {
            let row = start + k * WG_SIZE;
            if row < params.len {
                let v = Acc(basis[base + row]);
                mine_u[k] -= s * v;
                mine[k] -= t * v;
            }
        }
    }
    let scale = Acc(state[params.scale]);
    let mu = Acc(state[params.mu]);
    for (var k = 0u; k < ROWS; k++) {
        let row = start + k * WG_SIZE;
        if row < params.len {
            if params.extra != NONE {
                let v = mine_u[k] * scale;
                u[row] = Real(v);
                w[row] = Real((mine[k] - mu * v) * scale);
            } else {
                u[row] = Real(mine_u[k]);
                w[row] = Real(mine[k]);
            }
        }
    }
#else
#ifdef SUBGROUP
    let g = group_of(lane);
    let chunk = clamp(CHUNK_ENTRIES / g.count, 1u, WG_SIZE);
    for (var first = 0u; first < params.count; first += chunk) {
        let end = min(first + chunk, params.count);
        for (var i = first; i < end; i++) {
            let dots = pair_dots(start, i * params.stride, mine_u, mine);
            let sums = vec2<Acc>(subgroupAdd(dots.x), subgroupAdd(dots.y));
            if g.lane == 0u {
                chunk_totals[(i - first) * g.count + g.index] = sums;
            }
        }
        workgroupBarrier();
        let i = first + lane.index;
        if i < end {
            var total = vec2<Acc>(0.0, 0.0);
            for (var k = 0u; k < g.count; k++) {
                total += chunk_totals[(i - first) * g.count + k];
            }
            partials[(params.first + i) * params.workgroups + workgroup] = vec2<Acc>(total.x, 0.0);
            partials[(params.second + params.first + i) * params.workgroups + workgroup] = vec2<Acc>(total.y, 0.0);
        }
        workgroupBarrier();
    }
#else
    for (var i = 0u; i < params.count; i++) {
        let dots = pair_dots(start, i * params.stride, mine_u, mine);
        keep_partials(lane, workgroup, params.first + i, dots.x, dots.y);
    }
#endif
    if params.extra != NONE {
        var uu = Acc(0.0);
        var uw = Acc(0.0);
        for (var k = 0u; k < ROWS; k++) {
            uu += mine_u[k] * mine_u[k];
            uw += mine_u[k] * mine[k];
        }
        keep_partials(lane, workgroup, params.extra, uu, uw);
    }
#endif
#else
    for (var i = 0u; i < params.count; i++) {
        let c = Acc(state[params.coef + i]);
        // `== 0.0`: a NaN coefficient is used, and poisons w as it should.
        if c == 0.0 {
            continue;
        }
        let base = i * params.stride;
        for (var k = 0u; k < ROWS; k++) {
            let row = start + k * WG_SIZE;
            if row < params.len {
                mine[k] += c * Acc(basis[base + row]);
            }
        }
    }
    for (var k = 0u; k < ROWS; k++) {
        let row = start + k * WG_SIZE;
        if row < params.len {
            w[row] = Real(mine[k]);
        }
    }
#endif
}
