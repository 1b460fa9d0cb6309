// CG's residual update folded into the lower pass of IC(0) in diagonal form with one sweep a
// triangle (diagonal_sweep.wgsl): r_new ← r − α·q (α = state[alpha]; r as it is where α = 0,
// without reading q, which may not be finite then), u ← D⁻¹·(r_new − L·D⁻¹·r_new), and per
// workgroup the partial sums of r·z (Σ d_i·u_i², as in diagonal_sweep.wgsl) and of r_new·r_new
// in the two halves. A row's neighbours' r_new are recomputed from r and q, so r_new needs a
// buffer of its own (CG alternates two). One pass instead of cg_residual's and the lower
// sweep's: r and q are read once, r_new written once.
#import entry
#import real
#import triangle_sums
#import workgroup_sum

struct Params {
    rows: u32,
    width: u32,
    first_row: u32,
    index_stride: u32,
    lower_width: u32,
    upper_width: u32,
    alpha: u32,
}

var<immediate> params: Params;
@group(0) @binding(0) var<storage, read> row_offsets: array<u32>;
@group(0) @binding(1) var<storage, read> col_indices: array<u32>;
@group(0) @binding(2) var<storage, read> values: array<Real>;
// 1/d in f32 (diagonal_pivots.wgsl).
@group(0) @binding(3) var<storage, read> inverse_pivots: array<f32>;
@group(0) @binding(4) var<storage, read> state: array<Real>;
@group(0) @binding(5) var<storage, read> r: array<Real>;
@group(0) @binding(6) var<storage, read> q: array<Real>;
@group(0) @binding(7) var<storage, read_write> r_new: array<Real>;
@group(0) @binding(8) var<storage, read_write> u: array<Real>;
@group(0) @binding(9) var<storage, read_write> partials: array<vec2<Acc>>;

override WG_SIZE: u32 = 256u;

// Row i of the updated residual, rounded as cg_residual.wgsl stores it.
fn residual(i: u32) -> Real {
    let alpha = state[params.alpha];
    if alpha == 0.0 {
        return r[i];
    }
    return fma(-alpha, q[i], r[i]);
}

// The sweep starts from u = D⁻¹·r_new.
fn neighbour(col: u32) -> Acc {
    return Acc(residual(col)) * Acc(inverse_pivots[col]);
}

fn run(workgroup: u32, lane: Lane) {
    if workgroup * WG_SIZE >= params.rows {
        return;
    }
    let row = workgroup * WG_SIZE + lane.index;
    var rz = Acc(0.0);
    var rr = Acc(0.0);
    if row < params.rows {
        let mine = residual(row);
        r_new[row] = mine;
        let y = Real(Acc(inverse_pivots[row]) * (Acc(mine) - lower_sum(row)));
        u[row] = y;
        rz = Acc(y) * Acc(y) / Acc(inverse_pivots[row]);
        rr = Acc(mine) * Acc(mine);
    }
    let rz_total = workgroup_sum(lane, rz);
    let rr_total = workgroup_sum(lane, rr);
    if lane.index == 0u {
        partials[workgroup] = vec2<Acc>(rz_total, rr_total);
    }
}
