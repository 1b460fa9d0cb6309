// Classical Gram–Schmidt for GMRES: one pass over w against a block of basis vectors stored
// `stride` elements apart in one buffer.
//   default: the partials of vᵢ·w for the block's vectors (partial row first + i) and, unless
//            norm_row is NONE, the norm pair of w (partial row norm_row);
//   UPDATE:  w ← w ± Σ cᵢ·vᵢ with cᵢ = state[coef + i] (with skip_zero, a vector whose cᵢ
//            is zero is not read) and, unless norm_row is NONE, the norm pair of the new w.
// Each workgroup owns ROWS·WG_SIZE consecutive rows, ROWS a lane kept in registers, so w is
// read (and written) once whatever the number of vectors; gram_schmidt_finish adds the
// partials of each row up in a fixed order.
#import entry
#import real
#import workgroup_sum
#import norm_pair

const ROWS: u32 = 8u;
const NONE: u32 = 0xffffffffu;

struct Params {
    len: u32,
    // Workgroups covering len: the length of a row of partials.
    workgroups: u32,
    // Vectors in the block, and the elements from one to the next.
    count: u32,
    stride: u32,
    // The partial row of the block's first vector (default variant).
    first: u32,
    norm_row: u32,
    // UPDATE: the slot of the first vector's coefficient, 1 to subtract, and 1 to skip the
    // vectors whose coefficient is zero (GMRES's cycle update: y is zero past the cycle's
    // columns, whose vectors may be stale, even not finite, from an earlier solve).
    coef: u32,
    subtract: u32,
    skip_zero: u32,
}

var<immediate> params: Params;
@group(0) @binding(0) var<storage, read> basis: array<Real>;
@group(0) @binding(1) var<storage, read> state: array<Real>;
@group(0) @binding(2) var<storage, read_write> w: array<Real>;
@group(0) @binding(3) var<storage, read_write> partials: array<vec2<Acc>>;

override WG_SIZE: u32 = 256u;

var<workgroup> pairs: array<vec2<Acc>, WG_SIZE>;

fn run(workgroup: u32, lane: Lane) {
    if workgroup >= params.workgroups {
        return;
    }
    let start = workgroup * ROWS * WG_SIZE + lane.index;
    // This lane's rows of w (zero past the end).
    var mine: array<Acc, ROWS>;
    for (var k = 0u; k < ROWS; k++) {
        let row = start + k * WG_SIZE;
        if row < params.len {
            mine[k] = Acc(w[row]);
        } else {
            mine[k] = Acc(0.0);
        }
    }
#ifdef UPDATE
    for (var i = 0u; i < params.count; i++) {
        var c = Acc(state[params.coef + i]);
        // `== 0.0`: a NaN coefficient is used, and poisons w as it should.
        if params.skip_zero != 0u && c == 0.0 {
            continue;
        }
        if params.subtract != 0u {
            c = -c;
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
#else
    for (var i = 0u; i < params.count; i++) {
        let base = i * params.stride;
        var sum = Acc(0.0);
        for (var k = 0u; k < ROWS; k++) {
            let row = start + k * WG_SIZE;
            if row < params.len {
                sum += mine[k] * Acc(basis[base + row]);
            }
        }
        let total = workgroup_sum(lane, sum);
        if lane.index == 0u {
            partials[(params.first + i) * params.workgroups + workgroup] = vec2<Acc>(total, 0.0);
        }
    }
#endif
    if params.norm_row != NONE {
        var pair = vec2<Acc>(0.0, 0.0);
        for (var k = 0u; k < ROWS; k++) {
            pair = norm_add(pair, mine[k]);
        }
        let total = workgroup_norm(lane.index, pair);
        if lane.index == 0u {
            partials[params.norm_row * params.workgroups + workgroup] = total;
        }
    }
}
