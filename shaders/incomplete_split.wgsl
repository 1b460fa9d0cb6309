// The unit-diagonal form of an incomplete factor, split into its two strict triangles, each
// a CSR matrix of its own, for the Jacobi-sweep application (`triangle_sweep.wgsl`): a sweep
// then streams only its triangle's entries, where half rows of the whole factor would pull
// in the other half's memory sectors too. Per row, the diagonal's share goes to `scale`:
// - ILU(0), L unit and U = D·U₁: L's strict part as it is, U's divided by its row's pivot
//   (U₁), scale = D⁻¹; then M⁻¹ = U₁⁻¹·D⁻¹·L⁻¹.
// - IC(0), L = L₁·D (D = L's diagonal): L's strict part divided by its column's pivot (L₁),
//   Lᵀ's strict part by its row's (L₁ᵀ), scale = D⁻²; then M⁻¹ = L₁⁻ᵀ·D⁻²·L₁⁻¹.
// Two phases around a device scan: COUNT writes each row's strict-lower count (0 for the
// entry past the last row); the scan makes them the lower triangle's row offsets; FILL
// writes both triangles (the upper's offsets follow: every row has one diagonal entry, so
// the strict entries before row i number row_offsets[i] − i).
// Diagonal entries and pivots were checked by the factorization (present, nonzero, finite;
// positive for IC(0)).
#import csr_find
#import invocation
#import real

const COUNT: u32 = 0u;
const FILL: u32 = 1u;

struct Params {
    rows: u32,
    cholesky: u32,
    phase: u32,
}

var<immediate> params: Params;
@group(0) @binding(0) var<storage, read> row_offsets: array<u32>;
@group(0) @binding(1) var<storage, read> col_indices: array<u32>;
@group(0) @binding(2) var<storage, read> factor: array<Real>;
@group(0) @binding(3) var<storage, read_write> lower_offsets: array<u32>;
@group(0) @binding(4) var<storage, read_write> lower_cols: array<u32>;
@group(0) @binding(5) var<storage, read_write> lower_values: array<Real>;
@group(0) @binding(6) var<storage, read_write> upper_offsets: array<u32>;
@group(0) @binding(7) var<storage, read_write> upper_cols: array<u32>;
@group(0) @binding(8) var<storage, read_write> upper_values: array<Real>;
@group(0) @binding(9) var<storage, read_write> scale: array<Real>;

override WG_SIZE: u32 = 256u;

// Where row i's strict upper entries start: the strict entries before it, less the lower ones.
fn upper_start(i: u32) -> u32 {
    return row_offsets[i] - i - lower_offsets[i];
}

fn run(i: u32) {
    if params.phase == COUNT {
        if i < params.rows {
            lower_offsets[i] = csr_find(i, i) - row_offsets[i];
        } else if i == params.rows {
            lower_offsets[i] = 0u;
        }
        return;
    }
    if i >= params.rows {
        return;
    }
    let d = csr_find(i, i);
    let pivot = factor[d];
    scale[i] = select(Real(1.0) / pivot, Real(1.0) / (pivot * pivot), params.cholesky != 0u);
    var out = lower_offsets[i];
    for (var p = row_offsets[i]; p < d; p += 1u) {
        // IC(0): divided by the column's pivot; ILU(0): L is unit already.
        let j = col_indices[p];
        var value = factor[p];
        if params.cholesky != 0u {
            value /= factor[csr_find(j, j)];
        }
        lower_cols[out] = j;
        lower_values[out] = value;
        out += 1u;
    }
    out = upper_start(i);
    upper_offsets[i] = out;
    if i + 1u == params.rows {
        upper_offsets[params.rows] = upper_start(params.rows);
    }
    for (var p = d + 1u; p < row_offsets[i + 1u]; p += 1u) {
        upper_cols[out] = col_indices[p];
        upper_values[out] = factor[p] / pivot;
        out += 1u;
    }
}
