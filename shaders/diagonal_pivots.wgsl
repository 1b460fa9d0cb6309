// The pivots of ILU(0)/IC(0) in diagonal form, by fine-grained sweeps. Where no entry of
// A's pattern is filled in by the elimination (no k < min(i, j) with (i, k) and (k, j) in it
// for any (i, j) in it: 5- and 7-point stencils, any bipartite graph), the factors' strict
// triangles are A's own, L·U = (D + L_A)·D⁻¹·(D + U_A), and only the pivots are new:
// d_i = a_ii − Σ_{k<i} a_ik·a_ki/d_k. The recurrence is swept like ilu_sweep.wgsl's: every
// d from the previous sweep's, all rows at once, the first sweep d = a_ii; each sweep
// stores 1/d (the application multiplies), in f32 whatever the element type: a
// preconditioner needs no more, and an f64 solve's two sweeps read 4 bytes a row less each
// (the twin rounds the same way). IC(0): the same d (A = (D + L)·D⁻¹·(D + Lᵀ)),
// with A's values checked symmetric, as its upper triangle stands in for Lᵀ.
//
// The initial sweep also checks the pattern and measures it: `problems` [0] the first row
// without a diagonal entry, [2] (IC(0)) the first with an entry whose mirror is missing, [3]
// the first where the elimination fills an entry of the pattern or (IC(0)) whose value
// differs from its mirror's (atomicMin), [4] and [5] the most strict lower and upper
// entries of a row (atomicMax); the last sweep (`check`) puts in [1] the first row whose
// pivot is zero or not finite (IC(0): not positive) or that stores a value not finite; and
// any sweep puts in [6] a row whose 1/d f32 cannot hold (beyond its normal range).
#import invocation
#import real
#import finite
#import split_rows

struct Params {
    rows: u32,
    width: u32,
    first_row: u32,
    index_stride: u32,
    cholesky: u32,
    initial: u32,
    check: u32,
}

var<immediate> params: Params;
@group(0) @binding(0) var<storage, read> row_offsets: array<u32>;
@group(0) @binding(1) var<storage, read> col_indices: array<u32>;
@group(0) @binding(2) var<storage, read> values: array<Real>;
@group(0) @binding(3) var<storage, read> previous: array<f32>;
@group(0) @binding(4) var<storage, read_write> next: array<f32>;
@group(0) @binding(5) var<storage, read_write> problems: array<atomic<u32>>;

override WG_SIZE: u32 = 256u;

// Whether the elimination of row i's entry (i, k), k < i, fills an entry that row i stores:
// some (k, j), j > k, j ≠ i, with (i, j) in the pattern.
fn fills_pattern(i: u32, k: u32) -> bool {
    for (var e = 0u; e < row_capacity(k); e++) {
        let slot = row_entry(k, e);
        if !slot.real {
            break;
        }
        if slot.col > k && slot.col != i && find_entry(i, slot.col) != NO_ENTRY {
            return true;
        }
    }
    return false;
}

fn run(i: u32) {
    if i >= params.rows {
        return;
    }
    let initial = params.initial != 0u;
    let cholesky = params.cholesky != 0u;
    var diagonal = NO_ENTRY;
    var sum = Acc(0.0);
    var lower = 0u;
    var upper = 0u;
    for (var e = 0u; e < row_capacity(i); e++) {
        let slot = row_entry(i, e);
        if !slot.real {
            break;
        }
        let k = slot.col;
        if params.check != 0u && !finite(values[slot.value]) {
            atomicMin(&problems[1], i);
        }
        if k == i {
            diagonal = slot.value;
            continue;
        }
        if k > i {
            upper += 1u;
            if initial && cholesky && find_entry(k, i) == NO_ENTRY {
                atomicMin(&problems[2], i);
            }
            continue;
        }
        lower += 1u;
        var mirror = NO_ENTRY;
        if initial || !cholesky {
            mirror = find_entry(k, i);
        }
        if initial {
            if cholesky && mirror == NO_ENTRY {
                atomicMin(&problems[2], i);
            }
            // (A value not finite is refused as such by the check, not taken for asymmetry.)
            let asymmetric = cholesky && mirror != NO_ENTRY && finite(values[slot.value]) && finite(values[mirror])
                && values[mirror] != values[slot.value];
            if asymmetric || fills_pattern(i, k) {
                atomicMin(&problems[3], i);
            }
        } else if cholesky {
            // The mirror's value is this one (checked in the initial sweep).
            sum += Acc(values[slot.value]) * Acc(values[slot.value]) * Acc(previous[k]);
        } else if mirror != NO_ENTRY {
            sum += Acc(values[slot.value]) * Acc(values[mirror]) * Acc(previous[k]);
        }
    }
    if diagonal == NO_ENTRY {
        atomicMin(&problems[0], i);
        next[i] = 0.0;
        return;
    }
    if initial {
        // Every row reports its widths: an atomicMax a row would be 2n read-modify-writes of
        // two words, which the memory serialises (suspected of most of the ~4 ms this setup
        // took on 4M rows: NOTES, session 40). The words only grow, so a row whose width is
        // no larger than what it reads has nothing to add.
        if lower > atomicLoad(&problems[4]) {
            atomicMax(&problems[4], lower);
        }
        if upper > atomicLoad(&problems[5]) {
            atomicMax(&problems[5], upper);
        }
    }
    let d = Real(Acc(values[diagonal]) - sum);
    let bad = !finite(d) || d == Real(0.0) || (cholesky && !(d > Real(0.0)));
    if params.check != 0u && bad {
        atomicMin(&problems[1], i);
    }
    // 1/d outside f32's normal range (an f64 pivot beyond 1e±38): the form cannot keep it,
    // the full factor can. Checked before the conversion, whose result WGSL leaves open.
    let inverse = Acc(1.0) / Acc(d);
    if !bad && !(abs(inverse) >= Acc(1.17549435e-38) && abs(inverse) <= Acc(3.40282347e38)) {
        atomicMin(&problems[6], i);
        next[i] = 0.0;
        return;
    }
    next[i] = f32(inverse);
}
