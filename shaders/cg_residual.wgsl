// CG's residual update with the reduction the next step needs, in one pass over r and q:
// r ← r − α·q with α = state[alpha], and per workgroup the partial sum of the new r·r (the
// step kernel adds the partials up: ρ for β, and ‖r‖ for the convergence test). Each
// workgroup owns ROWS·WG_SIZE consecutive rows, ROWS a lane, all loaded before any is
// stored, so that a lane keeps 2·ROWS loads in flight.
//
// A failed step's α = 0 leaves r as it was without reading q (which may not be finite).
#import entry
#import real
#import workgroup_sum

const ROWS: u32 = 8u;

struct Params {
    len: u32,
    // Workgroups covering len: the number of partials.
    workgroups: u32,
    alpha: u32,
}

var<immediate> params: Params;
@group(0) @binding(0) var<storage, read> state: array<Real>;
@group(0) @binding(1) var<storage, read> q: array<Real>;
@group(0) @binding(2) var<storage, read_write> r: array<Real>;
@group(0) @binding(3) var<storage, read_write> partials: array<vec2<Acc>>;

override WG_SIZE: u32 = 256u;

fn run(workgroup: u32, lane: Lane) {
    if workgroup >= params.workgroups {
        return;
    }
    let alpha = state[params.alpha];
    let start = workgroup * ROWS * WG_SIZE + lane.index;
    var mine: array<Real, ROWS>;
    for (var k = 0u; k < ROWS; k++) {
        let row = start + k * WG_SIZE;
        if row >= params.len {
        } else if alpha == 0.0 {
            mine[k] = r[row];
        } else {
            mine[k] = fma(-alpha, q[row], r[row]);
        }
    }
    var sum = Acc(0.0);
    for (var k = 0u; k < ROWS; k++) {
        let row = start + k * WG_SIZE;
        if row < params.len {
            r[row] = mine[k];
            sum += Acc(mine[k]) * Acc(mine[k]);
        }
    }
    let total = workgroup_sum(lane, sum);
    if lane.index == 0u {
        partials[workgroup] = vec2<Acc>(total, 0.0);
    }
}
