// One Jacobi sweep of ILU(0)/IC(0) applied in diagonal form (diagonal_pivots.wgsl): with
// M = (D + L)·D⁻¹·(D + U), L and U A's own strict triangles, z = M⁻¹·r is u = (D + L)⁻¹·r,
// then z = (I + D⁻¹·U)⁻¹·u. Lower: u ← D⁻¹·(r − L·u), the first sweep from u = D⁻¹·r;
// upper: z ← u − D⁻¹·U·z, the first from z = u (`b` is r or u). The same operator as
// triangle_sweep.wgsl's on the factor (its unit form scaled by D), read from A itself: on a
// stencil A's entries as coded ELL slots (4 bytes) and one vector of 1/d, instead of a
// factor's column and value per entry. With `dot`, each workgroup leaves a partial sum of
// r·z (CG's ρ, without a pass over r and z of its own): in the upper triangle's last sweep
// dot_operand·y_new, or for IC(0) in the lower's last, d_i·u_i² summed, equal to r·z in
// exact arithmetic whatever the sweep count (z = Cᵀ·D⁻¹·C·r with D·u = C·r, C the lower
// sweeps' polynomial in L·D⁻¹, whose transpose in D⁻¹·Lᵀ = D⁻¹·U the upper sweeps apply), so
// the upper pass reads no r.
#import entry
#import real
#import split_rows
#import triangle_sums
#import workgroup_sum

struct Params {
    rows: u32,
    width: u32,
    first_row: u32,
    index_stride: u32,
    // The most strict lower (upper) entries of any row; 0 reads none (zero sweeps: the
    // first pass is u = D⁻¹·r, z = u).
    lower_width: u32,
    upper_width: u32,
    // The upper triangle's sweep (else the lower's).
    upper: u32,
    // The first sweep: y_old stands for D⁻¹·b (lower) or b (upper), read from b.
    first: u32,
    dot: u32,
}

var<immediate> params: Params;
@group(0) @binding(0) var<storage, read> row_offsets: array<u32>;
@group(0) @binding(1) var<storage, read> col_indices: array<u32>;
@group(0) @binding(2) var<storage, read> values: array<Real>;
// 1/d in f32 (diagonal_pivots.wgsl).
@group(0) @binding(3) var<storage, read> inverse_pivots: array<f32>;
@group(0) @binding(4) var<storage, read> b: array<Real>;
@group(0) @binding(5) var<storage, read> y_old: array<Real>;
@group(0) @binding(6) var<storage, read_write> y_new: array<Real>;
@group(0) @binding(7) var<storage, read> dot_operand: array<Real>;
@group(0) @binding(8) var<storage, read_write> partials: array<vec2<Acc>>;

override WG_SIZE: u32 = 256u;
// The previous sweep's value at a neighbour.
fn neighbour(col: u32) -> Acc {
    if params.first == 0u {
        return Acc(y_old[col]);
    }
    if params.upper != 0u {
        return Acc(b[col]);
    }
    return Acc(b[col]) * Acc(inverse_pivots[col]);
}

fn run(workgroup: u32, lane: Lane) {
    // Whole workgroups past the rows (a folded dispatch's last row) have no partial.
    if workgroup * WG_SIZE >= params.rows {
        return;
    }
    let row = workgroup * WG_SIZE + lane.index;
    var dot = Acc(0.0);
    if row < params.rows {
        var y: Real;
        if params.upper == 0u {
            y = Real(Acc(inverse_pivots[row]) * (Acc(b[row]) - lower_sum(row)));
        } else {
            y = Real(Acc(b[row]) - Acc(inverse_pivots[row]) * upper_sum(row));
        }
        y_new[row] = y;
        if params.dot != 0u {
            if params.upper == 0u {
                dot = Acc(y) * Acc(y) / Acc(inverse_pivots[row]);
            } else {
                dot = Acc(dot_operand[row]) * Acc(y);
            }
        }
    }
    if params.dot != 0u {
        let total = workgroup_sum(lane, dot);
        if lane.index == 0u {
            partials[workgroup] = vec2<Acc>(total, 0.0);
        }
    }
}
