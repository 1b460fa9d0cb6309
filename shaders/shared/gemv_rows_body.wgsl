// y = α·S·x + β·y for a row-major block S of `rows` rows of `units` units (a unit is a vec4
// or one element: the including file aliases `Unit` and defines `unit_dot`). A slot of LANES
// lanes takes a row: its lanes stride along the row (a slot reads LANES consecutive units,
// coalesced) with four loads in flight, then slot_sum adds their sums. A row may be cut into
// `splits` segments of `segment` units, each taken by its own workgroup (short-wide
// matrices, whose few rows would leave the GPU idle): with PARTIAL each segment's sum goes to
// partials[split * rows + row] unscaled, and the columns kernel (SUM) adds them up in a fixed
// order and applies α, β.
#import entry
#import real
#import spmv_store
#import slot_sum

struct Params {
    rows: u32,
    units: u32,
    splits: u32,
    segment: u32,
    scaling: Scaling,
}

var<immediate> params: Params;
@group(0) @binding(0) var<storage, read> a: array<Unit>;
@group(0) @binding(1) var<storage, read> x: array<Unit>;
@group(0) @binding(2) var<storage, read> alpha_dev: array<Real>;
@group(0) @binding(3) var<storage, read> beta_dev: array<Real>;
@group(0) @binding(4) var<storage, read_write> y: array<Real>;
@group(0) @binding(5) var<storage, read_write> partials: array<Real>;

override WG_SIZE: u32 = 256u;
// Lanes per row: a power of two up to the smallest subgroup size, or WG_SIZE.
override LANES: u32 = 32u;

fn run(workgroup: u32, lane: Lane) {
    let block = workgroup / params.splits;
    let split = workgroup % params.splits;
    let row = block * (WG_SIZE / LANES) + lane.index / LANES;
    let member = lane.index % LANES;
    var sums = vec4<Acc>(0.0);
    if row < params.rows {
        let base = row * params.units;
        let end = min((split + 1u) * params.segment, params.units);
        var j = split * params.segment + member;
        for (; j + 3u * LANES < end; j += 4u * LANES) {
            sums += vec4<Acc>(
                unit_dot(a[base + j], x[j]),
                unit_dot(a[base + j + LANES], x[j + LANES]),
                unit_dot(a[base + j + 2u * LANES], x[j + 2u * LANES]),
                unit_dot(a[base + j + 3u * LANES], x[j + 3u * LANES]),
            );
        }
        for (; j < end; j += LANES) {
            sums.x += unit_dot(a[base + j], x[j]);
        }
    }
    let sum = slot_sum(lane, (sums.x + sums.y) + (sums.z + sums.w));
    if member == 0u && row < params.rows {
#ifdef PARTIAL
        partials[split * params.rows + row] = Real(sum);
#else
        store_y(row, sum);
#endif
    }
}
