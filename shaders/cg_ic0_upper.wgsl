// CG's direction update folded into the upper pass of IC(0) in diagonal form with one sweep a
// triangle (diagonal_sweep.wgsl): z = u − D⁻¹·U·u for the row, then, as cg_direction.wgsl,
// x ← x + α·p and p ← z + β·p (shared/cg_direction_row.wgsl). z is never stored: one pass
// instead of the upper sweep's and cg_direction's.
#import cg_direction_row
#import entry
#import real
#import triangle_sums

struct Params {
    rows: u32,
    width: u32,
    first_row: u32,
    index_stride: u32,
    lower_width: u32,
    upper_width: u32,
    alpha: u32,
    rho_new: u32,
    rho: u32,
}

var<immediate> params: Params;
@group(0) @binding(0) var<storage, read> row_offsets: array<u32>;
@group(0) @binding(1) var<storage, read> col_indices: array<u32>;
@group(0) @binding(2) var<storage, read> values: array<Real>;
// 1/d in f32 (diagonal_pivots.wgsl).
@group(0) @binding(3) var<storage, read> inverse_pivots: array<f32>;
@group(0) @binding(4) var<storage, read> state: array<Real>;
@group(0) @binding(5) var<storage, read> u: array<Real>;
@group(0) @binding(6) var<storage, read_write> x: array<Real>;
@group(0) @binding(7) var<storage, read_write> p: array<Real>;

override WG_SIZE: u32 = 256u;

// The sweep starts from z = u.
fn neighbour(col: u32) -> Acc {
    return Acc(u[col]);
}

fn run(workgroup: u32, lane: Lane) {
    let row = workgroup * WG_SIZE + lane.index;
    if row >= params.rows {
        return;
    }
    let z = Real(Acc(u[row]) - Acc(inverse_pivots[row]) * upper_sum(row));
    direction_row(row, z);
}
