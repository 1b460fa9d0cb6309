// One Jacobi sweep towards the solution of a unit triangular system (I + T)·y = s⊙b, T the
// strict lower or upper triangle of a CSR matrix that holds both (the unit-diagonal form of an
// incomplete factorization: its strict lower part L's, its strict upper part U's, the
// diagonals taken out into `scale`): y_new = s⊙b − T·y_old. T is nilpotent, so the sweeps
// reach the exact solution after as many as T has levels; a few approximate it with no
// dependencies between rows (Anzt, Chow & Dongarra, "Iterative sparse triangular solves for
// preconditioning", Euro-Par 2015). The unit form spares the pass that starts a non-unit
// sweep (y = D⁻¹·b): the first sweep reads s⊙b itself as y_old (`first`).
//
// A row's entries of one side are a contiguous run (columns sorted): `diagonal[i]` is the
// position of row i's diagonal entry, so a sweep reads only its triangle's half of the row.
#import invocation
#import real

struct Params {
    rows: u32,
    upper: u32,
    // b is multiplied by `scale` element-wise (else taken as is).
    scaled: u32,
    // y_old is s⊙b (read from b and scale; the y_old binding is not read).
    first: u32,
    // No sum: y_new = s⊙b (zero sweeps).
    copy: u32,
}

var<immediate> params: Params;
@group(0) @binding(0) var<storage, read> row_offsets: array<u32>;
@group(0) @binding(1) var<storage, read> col_indices: array<u32>;
@group(0) @binding(2) var<storage, read> values: array<Real>;
@group(0) @binding(3) var<storage, read> diagonal: array<u32>;
@group(0) @binding(4) var<storage, read> scale: array<Real>;
@group(0) @binding(5) var<storage, read> b: array<Real>;
@group(0) @binding(6) var<storage, read> y_old: array<Real>;
@group(0) @binding(7) var<storage, read_write> y_new: array<Real>;

override WG_SIZE: u32 = 256u;

fn scaled_b(i: u32) -> Acc {
    if params.scaled != 0u {
        return Acc(b[i]) * Acc(scale[i]);
    }
    return Acc(b[i]);
}

fn run(i: u32) {
    if i >= params.rows {
        return;
    }
    var sum = scaled_b(i);
    if params.copy == 0u {
        var start = row_offsets[i];
        var end = diagonal[i];
        if params.upper != 0u {
            start = end + 1u;
            end = row_offsets[i + 1u];
        }
        for (var p = start; p < end; p += 1u) {
            let j = col_indices[p];
            var old: Acc;
            if params.first != 0u {
                old = scaled_b(j);
            } else {
                old = Acc(y_old[j]);
            }
            sum -= Acc(values[p]) * old;
        }
    }
    y_new[i] = Real(sum);
}
