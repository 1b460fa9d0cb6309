// CSR SDDMM `C ← α·(A ⊙ (B1·B2ᵀ)) + β·C` on a block of A's rows: for every stored (i, j)
// of A, C's value there becomes α·(a_ij·dot(B1[i,:], B2[j,:])) + β·c_ij (c not read when
// β = 0, the product not used when α = 0). C has A's pattern: `c_values` in A's entry
// order. B1 is bound at the block's rows; B2, gathered by column, in row panels
// (shared/gathered_rows.wgsl).
//
// Each slot of LANES lanes (shared/slots.wgsl) takes one segment: a row, or a chunk of a
// long row (RoDe's decomposition, seed 002, which balances the work; every entry's output
// is its own, so chunks need no combining). The first params.chunk_workgroups workgroups
// take the chunks, the rest one row per slot, skipping long rows. For each entry the lanes
// split the dot product's columns (B1 and B2 loads interleaved, LANES consecutive elements
// each) and add their parts in a fixed order (shuffles, or workgroup memory without
// subgroups); BATCH entries are in flight together. (The `entries` algorithm is
// sddmm_entries.wgsl.)
#import real
#import row_split
#import slots
#import scaling
#import unit_scalar
#import gathered_rows

struct Params {
    rows: u32,
    k: u32,
    max_len: u32,
    chunk_len: u32,
    chunks: u32,
    chunk_workgroups: u32,
    gather_panel_rows: u32,
    scaling: Scaling,
}

var<immediate> params: Params;
@group(0) @binding(0) var<storage, read> row_offsets: array<u32>;
@group(0) @binding(1) var<storage, read> col_indices: array<u32>;
@group(0) @binding(2) var<storage, read> values: array<Real>;
@group(0) @binding(3) var<storage, read> b1: array<Real>;
@group(0) @binding(4) var<storage, read> gather0: array<Real>;
@group(0) @binding(5) var<storage, read> gather1: array<Real>;
@group(0) @binding(6) var<storage, read> gather2: array<Real>;
@group(0) @binding(7) var<storage, read> gather3: array<Real>;
@group(0) @binding(8) var<storage, read> chunks: array<Chunk>;
@group(0) @binding(9) var<storage, read> alpha_dev: array<Real>;
@group(0) @binding(10) var<storage, read> beta_dev: array<Real>;
@group(0) @binding(11) var<storage, read_write> c_values: array<Real>;

override WG_SIZE: u32 = 256u;
// Lanes per slot: a power of two up to the smallest subgroup.
override LANES: u32 = 8u;

fn entry_value(at: u32) -> Real {
    return values[at];
}

#ifndef SUBGROUP
var<workgroup> slot_dots: array<vec4<Acc>, WG_SIZE>;
#endif

// The sum of `part` over the lanes of each slot, in every lane of it.
fn slot_sum(s: Slot, part: vec4<Acc>) -> vec4<Acc> {
#ifdef SUBGROUP
    var sum = part;
    for (var d = 1u; d < LANES; d <<= 1u) {
        sum += subgroupShuffleXor(sum, d);
    }
    return sum;
#else
    let at = s.base + s.lane;
    slot_dots[at] = part;
    workgroupBarrier();
    for (var d = LANES >> 1u; d > 0u; d >>= 1u) {
        if s.lane < d {
            slot_dots[at] += slot_dots[at + d];
        }
        workgroupBarrier();
    }
    let sum = slot_dots[s.base];
    workgroupBarrier();
    return sum;
#endif
}

fn segment(s: Slot, row: u32, start: u32, end: u32) {
    let a = alpha();
    let b = beta();
    let rounds = tile_rounds(start, end);
    var t = tiles_begin(s, start, end);
    for (var round = 0u; round < rounds; round++) {
        tiles_prefetch(&t, s);
        let count = tile_count(t);
        let steps = tile_steps(count);
        for (var e0 = 0u; e0 < steps; e0 += BATCH) {
            // This lane's part of BATCH entries' dot products.
            var parts = vec4<Acc>(0.0);
            var scale: array<Real, BATCH>;
            for (var e = 0u; e < BATCH; e++) {
                let j = tile_col(&t, s, e0 + e);
                scale[e] = tile_value(&t, s, e0 + e);
                if e0 + e < count {
                    for (var col = s.lane; col < params.k; col += LANES) {
                        parts[e] += Acc(b1[row * params.k + col]) * Acc(gathered(j, col));
                    }
                }
            }
            let dots = slot_sum(s, parts);
            // Lane e of the slot stores entry e0 + e.
            for (var e = s.lane; e < BATCH; e += LANES) {
                if e0 + e < count {
                    let i = t.first + e0 + e;
                    var old = Real(0.0);
                    if b == 0.0 {
                    } else {
                        old = c_values[i];
                    }
                    c_values[i] = combine(a, Acc(scale[e]) * dots[e], b, old);
                }
            }
        }
        tiles_advance(&t);
    }
}

fn run(workgroup: u32, lane: Lane) {
    let s = slot_of(lane);
    var row = 0u;
    var start = 0u;
    var end = 0u;
    if workgroup < params.chunk_workgroups {
        let task = workgroup * slot_count() + s.index;
        if task < params.chunks {
            let chunk = chunks[task];
            row = chunk.row;
            start = chunk.start;
            end = min(chunk.start + params.chunk_len, row_offsets[row + 1u]);
        }
    } else {
        let task = (workgroup - params.chunk_workgroups) * slot_count() + s.index;
        if task < params.rows {
            row = task;
            start = row_offsets[row];
            end = row_offsets[row + 1u];
            if end - start > params.max_len {
                // The chunks have it.
                end = start;
            }
        }
    }
    segment(s, row, start, end);
}
