// One Jacobi sweep towards the solution of a unit triangular system (I + T)·y = b, T one
// strict triangle of an incomplete factor in its own CSR arrays (`incomplete_split.wgsl`):
// y_new = b − T·y_old. T is nilpotent, so the sweeps reach the exact solution after as many
// as T has levels; a few approximate it with no dependencies between rows (Anzt, Chow &
// Dongarra, "Iterative sparse triangular solves for preconditioning", Euro-Par 2015). The
// first sweep reads b itself as y_old (`first`: no pass spent on y = b), and the last sweep
// of the lower triangle multiplies its rows by the diagonal's share (`scaled`), so that
// the upper triangle's sweeps start from S·L₁⁻¹·r with nothing more to read.
#import invocation
#import real

struct Params {
    rows: u32,
    // y_old is b (read from b; the y_old binding is not read).
    first: u32,
    // No sum: y_new = b (zero sweeps), times scale with `scaled`.
    copy: u32,
    // y_new is multiplied by `scale` row by row.
    scaled: u32,
}

var<immediate> params: Params;
@group(0) @binding(0) var<storage, read> offsets: array<u32>;
@group(0) @binding(1) var<storage, read> cols: array<u32>;
@group(0) @binding(2) var<storage, read> values: array<Real>;
@group(0) @binding(3) var<storage, read> scale: array<Real>;
@group(0) @binding(4) var<storage, read> b: array<Real>;
@group(0) @binding(5) var<storage, read> y_old: array<Real>;
@group(0) @binding(6) var<storage, read_write> y_new: array<Real>;

override WG_SIZE: u32 = 256u;

fn run(i: u32) {
    if i >= params.rows {
        return;
    }
    var sum = Acc(b[i]);
    if params.copy == 0u {
        for (var p = offsets[i]; p < offsets[i + 1u]; p += 1u) {
            let j = cols[p];
            var old: Acc;
            if params.first != 0u {
                old = Acc(b[j]);
            } else {
                old = Acc(y_old[j]);
            }
            sum -= Acc(values[p]) * old;
        }
    }
    if params.scaled != 0u {
        sum *= Acc(scale[i]);
    }
    y_new[i] = Real(sum);
}
