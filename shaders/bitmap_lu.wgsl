// Batched LU of bitmap matrices of at most 32 rows (one flag word a row), fused: each team
// stages its matrix straight from A's bitmap, factors it with the team elimination
// (shared/lu_team_factor.wgsl: seed 004's with NO_PIVOT, else getrf's partial pivoting) and
// writes L (strictly lower) and U (on and above the diagonal) as bitmaps of the entries that
// are not exactly zero (NaN counts as nonzero). The factors' positions need a scan over the
// whole batch, so the kernel runs twice: COUNT factors, writes the pivots, the infos and the
// factored matrices densely to `scratch`, and leaves each row's entry counts of L and U in
// their rank directories; after an exclusive scan of those (each row's absolute start) the
// default variant stages the factored matrices from `scratch` and writes flags, row starts
// and values. (Factoring again in the second run instead of keeping the scratch measured
// slower on the H100: 362 against 264 µs for 10,000 × 32², the elimination being most of
// the time.)
#import entry
#import real

struct Params {
    n: u32,
    batch: u32,
}

var<immediate> params: Params;
@group(0) @binding(0) var<storage, read> a_offsets: array<u32>;
@group(0) @binding(1) var<storage, read> a_flags: array<u32>;
@group(0) @binding(2) var<storage, read> a_values: array<Real>;
@group(0) @binding(3) var<storage, read_write> l_flags: array<u32>;
@group(0) @binding(4) var<storage, read_write> l_rank: array<u32>;
@group(0) @binding(5) var<storage, read_write> l_offsets: array<u32>;
@group(0) @binding(6) var<storage, read_write> l_values: array<Real>;
@group(0) @binding(7) var<storage, read_write> u_flags: array<u32>;
@group(0) @binding(8) var<storage, read_write> u_rank: array<u32>;
@group(0) @binding(9) var<storage, read_write> u_offsets: array<u32>;
@group(0) @binding(10) var<storage, read_write> u_values: array<Real>;
@group(0) @binding(11) var<storage, read_write> pivots: array<u32>;
@group(0) @binding(12) var<storage, read_write> info: array<u32>;
@group(0) @binding(13) var<storage, read_write> scratch: array<Real>;

#import lu_team_factor

// Row i of the team's matrix into the stage, lane t on column t: its value is at the row's
// start plus the flags set before bit t. Lane i loads row i's flag word and start, the team
// shares them; values go STAGE_LOADS rows at a time, all loads issued before any store.
fn stage_bitmap(team: TeamLane, matrix: u32, mine: bool) {
    let n = params.n;
    let t = team.t;
    var my_word = 0u;
    var my_start = 0u;
    if mine {
        my_word = a_flags[matrix * n + t];
        my_start = a_offsets[matrix * n + t];
    }
    let bit = 1u << t;
    for (var i0 = 0u; i0 < n; i0 += STAGE_LOADS) {
        var rows: array<Real, STAGE_LOADS>;
        for (var j = 0u; j < STAGE_LOADS; j++) {
            let source = team.base + min(i0 + j, n - 1u);
            let word = shuffle_u32(my_word, source, team.me);
            let start = shuffle_u32(my_start, source, team.me);
            rows[j] = Real(0.0);
            if mine && (word & bit) != 0u {
                rows[j] = a_values[start + countOneBits(word & (bit - 1u))];
            }
        }
        for (var j = 0u; j < STAGE_LOADS && i0 + j < n; j++) {
            if mine {
                stage_set(team.stage_base, i0 + j, t, rows[j]);
            }
        }
    }
}

// The factored matrix from `scratch` into the stage (the second run), as stage_bitmap.
fn stage_scratch(team: TeamLane, first: u32, mine: bool) {
    let n = params.n;
    if !mine {
        return;
    }
    for (var i0 = 0u; i0 < n; i0 += STAGE_LOADS) {
        var rows: array<Real, STAGE_LOADS>;
        for (var j = 0u; j < STAGE_LOADS; j++) {
            rows[j] = scratch[first + min(i0 + j, n - 1u) * n + team.t];
        }
        for (var j = 0u; j < STAGE_LOADS && i0 + j < n; j++) {
            stage_set(team.stage_base, i0 + j, team.t, rows[j]);
        }
    }
}

fn run(workgroup: u32, lane: Lane) {
    let n = params.n;
    let team = team_lane(lane, TEAM);
    let t = team.t;
    let matrix = workgroup * (WG_SIZE / TEAM) + lane.index / TEAM;
    // Teams past the batch run along (shuffles and barriers need every lane) and write nothing.
    let mine = matrix < params.batch && t < n;
    let first = matrix * n * n;
#ifdef COUNT
    stage_bitmap(team, matrix, mine);
    workgroupBarrier();
    let factor = factor_stage(team);
    if mine {
        pivots[matrix * n + t] = factor.pivot;
        if t == 0u {
            info[matrix] = factor.first_zero;
        }
        for (var i = 0u; i < n; i++) {
            scratch[first + i * n + t] = stage_get(team.stage_base, i, t);
        }
    }
#else
    stage_scratch(team, first, mine);
    workgroupBarrier();
#endif
    // Lane t takes row t of the factors: which of its entries L and U keep.
    let row = matrix * n + t;
    var l_mask = 0u;
    var u_mask = 0u;
    if mine {
        for (var b = 0u; 4u * b < n; b++) {
            let nonzero = !(load_block(team.stage_base, t, b) == vec4<Real>(0.0)) & (block_columns(b) < vec4<u32>(n));
            for (var c = 0u; c < 4u; c++) {
                let j = 4u * b + c;
                if nonzero[c] {
                    if j < t {
                        l_mask |= 1u << j;
                    } else {
                        u_mask |= 1u << j;
                    }
                }
            }
        }
    }
#ifdef COUNT
    if mine {
        l_rank[row] = countOneBits(l_mask);
        u_rank[row] = countOneBits(u_mask);
    }
#else
    var l_start = 0u;
    var u_start = 0u;
    if mine {
        l_start = l_rank[row];
        u_start = u_rank[row];
        l_flags[row] = l_mask;
        u_flags[row] = u_mask;
        l_offsets[row] = l_start;
        u_offsets[row] = u_start;
        if row + 1u == params.batch * n {
            l_offsets[row + 1u] = l_start + countOneBits(l_mask);
            u_offsets[row + 1u] = u_start + countOneBits(u_mask);
        }
    }
    // The values a row at a time, lane t on column t (stores of a row side by side), the
    // row's masks and starts from its lane.
    for (var i = 0u; i < n; i++) {
        let source = team.base + i;
        let l_row = shuffle_u32(l_mask, source, team.me);
        let u_row = shuffle_u32(u_mask, source, team.me);
        let l_at = shuffle_u32(l_start, source, team.me);
        let u_at = shuffle_u32(u_start, source, team.me);
        if mine {
            let bit = 1u << t;
            let v = stage_get(team.stage_base, i, t);
            if (l_row & bit) != 0u {
                l_values[l_at + countOneBits(l_row & (bit - 1u))] = v;
            } else if (u_row & bit) != 0u {
                u_values[u_at + countOneBits(u_row & (bit - 1u))] = v;
            }
        }
    }
#endif
}
