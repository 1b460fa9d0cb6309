// The unit-diagonal form of an incomplete factor, for its Jacobi-sweep application
// (`triangle_sweep.wgsl`): per row, the position of its diagonal entry, the factor's values
// scaled so that both triangles have unit diagonals, and the diagonal's share in `scale`.
// - ILU(0), L unit and U = D·U₁: L's entries as they are, U's strict part divided by its
//   row's pivot (U₁), scale = D⁻¹; then M⁻¹ = U₁⁻¹·D⁻¹·L⁻¹.
// - IC(0), L = L₁·D (D = L's diagonal): L's strict part divided by its column's pivot (L₁),
//   Lᵀ's strict part by its row's (L₁ᵀ), scale = D⁻²; then M⁻¹ = L₁⁻ᵀ·D⁻²·L₁⁻¹.
// Diagonal entries and pivots were checked by the factorization (present, nonzero, finite;
// positive for IC(0)).
#import csr_find
#import invocation
#import real

struct Params {
    rows: u32,
    cholesky: u32,
}

var<immediate> params: Params;
@group(0) @binding(0) var<storage, read> row_offsets: array<u32>;
@group(0) @binding(1) var<storage, read> col_indices: array<u32>;
@group(0) @binding(2) var<storage, read> factor: array<Real>;
@group(0) @binding(3) var<storage, read_write> unit: array<Real>;
@group(0) @binding(4) var<storage, read_write> diagonal: array<u32>;
@group(0) @binding(5) var<storage, read_write> scale: array<Real>;

override WG_SIZE: u32 = 256u;

fn run(i: u32) {
    if i >= params.rows {
        return;
    }
    let d = csr_find(i, i);
    diagonal[i] = d;
    let pivot = factor[d];
    scale[i] = select(Real(1.0) / pivot, Real(1.0) / (pivot * pivot), params.cholesky != 0u);
    unit[d] = Real(1.0);
    for (var p = row_offsets[i]; p < d; p += 1u) {
        // IC(0): divided by the column's pivot; ILU(0): L is unit already.
        var value = factor[p];
        if params.cholesky != 0u {
            let j = col_indices[p];
            value /= factor[csr_find(j, j)];
        }
        unit[p] = value;
    }
    for (var p = d + 1u; p < row_offsets[i + 1u]; p += 1u) {
        unit[p] = factor[p] / pivot;
    }
}
