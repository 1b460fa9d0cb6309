// CSR SDDMM `C ← α·(A ⊙ (B1·B2ᵀ)) + β·C` by entries (the `entries` algorithm): a group of
// GROUP lanes per entry of A, whatever its row, so every task is one dot product of k
// columns and a matrix of a few thousand rows still fills the GPU (the row tasks of RoDe
// and row-group are chains of a row's entries there). An entry's row is found by a binary
// search of the block's row offsets; its lanes split the row's units (`Unit`: four columns
// where k is a multiple of 4, else one) and add their parts in a fixed order
// (shared/lane_group_sum.wgsl), so the result is deterministic. Same conventions as
// sddmm_csr.wgsl: C not read when β = 0, the products not used when α = 0.
//
// The host dispatches a group per entry the block can hold (at most its panel's entries and
// its rows times the longest row), or fewer where the grid would pass the device's limit (a
// whole square then); each group takes every params.run_stride-th entry. Groups of workgroups past those asked for (a folded grid has
// some) find their entries past the end: they come only where one round covers them all.
//
// The including shader imports its units (shared/unit_vec4.wgsl or unit_scalar.wgsl).
#import entry
#import scaling
#import gathered_rows
#import lane_group_sum
#import row_of_entry

struct Params {
    rows: u32,
    // Units a row of B1 and B2.
    k: u32,
    run_stride: u32,
    gather_panel_rows: u32,
    scaling: Scaling,
}

var<immediate> params: Params;
@group(0) @binding(0) var<storage, read> row_offsets: array<u32>;
@group(0) @binding(1) var<storage, read> col_indices: array<u32>;
@group(0) @binding(2) var<storage, read> values: array<Real>;
@group(0) @binding(3) var<storage, read> b1: array<Unit>;
@group(0) @binding(4) var<storage, read> gather0: array<Unit>;
@group(0) @binding(5) var<storage, read> gather1: array<Unit>;
@group(0) @binding(6) var<storage, read> gather2: array<Unit>;
@group(0) @binding(7) var<storage, read> gather3: array<Unit>;
@group(0) @binding(8) var<storage, read> alpha_dev: array<Real>;
@group(0) @binding(9) var<storage, read> beta_dev: array<Real>;
@group(0) @binding(10) var<storage, read_write> c_values: array<Real>;

override WG_SIZE: u32 = 256u;
// Lanes per entry: a power of two up to the smallest subgroup (32 without subgroups).
override GROUP: u32 = 4u;

fn run(workgroup: u32, lane: Lane) {
    let first = row_offsets[0u];
    let entries = row_offsets[params.rows] - first;
    let group = workgroup * (WG_SIZE / GROUP) + lane.index / GROUP;
    let member = lane.index % GROUP;
    let a = alpha();
    let b = beta();
    // The same trip count in every lane: lane_group_sum needs them all.
    let rounds = entries / params.run_stride + select(0u, 1u, entries % params.run_stride != 0u);
    for (var round = 0u; round < rounds; round++) {
        let e = round * params.run_stride + group;
        var part = Acc(0.0);
        if e < entries {
            let at = first + e;
            let row = row_of(at);
            let j = col_indices[at];
            for (var u = member; u < params.k; u += GROUP) {
                part += unit_dot(b1[row * params.k + u], gathered(j, u));
            }
        }
        let dot = lane_group_sum(part, lane.index);
        if member == 0u && e < entries {
            let at = first + e;
            var old = Real(0.0);
            if b == 0.0 {
            } else {
                old = c_values[at];
            }
            c_values[at] = combine(a, Acc(values[at]) * dot, b, old);
        }
    }
}
