// Batched LU of bitmap matrices of at most 32 rows (one flag word a row), fused: each team
// reads its matrix straight from A's bitmap (through a slice of workgroup memory), factors it with the team elimination
// (shared/lu_team_factor.wgsl: seed 004's with NO_PIVOT, else getrf's partial pivoting) and
// writes L (strictly lower) and U (on and above the diagonal) as bitmaps of the entries that
// are not exactly zero (NaN counts as nonzero). The factors' positions need a scan over the
// whole batch, so the kernel runs twice: COUNT factors, writes the pivots, the infos and the
// factored matrices densely to `scratch`, and leaves each row's entry counts of L and U in
// their rank directories; after an exclusive scan of those (each row's absolute start) the
// default variant reads the factored matrices back from `scratch` and writes flags, row
// starts and values. (Factoring again in the second run instead of keeping the scratch measured
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

// Lane t's row of the team's matrix from A's bitmap, through the stage a slice at a time
// (SLICE rows), lane t on column t: its value is at the row's start plus the flags set before
// bit t. Lane i loads row i's flag word and start, the team shares them; a slice's loads are
// all issued before any store. Every lane of the workgroup calls it (shuffles, barriers).
fn load_bitmap_rows(team: TeamLane, matrix: u32, mine: bool) -> RowBlocks {
    let n = params.n;
    let t = team.t;
    var my_word = 0u;
    var my_start = 0u;
    if mine {
        my_word = a_flags[matrix * n + t];
        my_start = a_offsets[matrix * n + t];
    }
    let bit = 1u << t;
    var row: RowBlocks;
    for (var s = 0u; s < n; s += SLICE) {
        // Every lane has read the last slice before it is overwritten.
        workgroupBarrier();
        var rows: array<Real, STAGE_LOADS>;
        for (var j = 0u; j < SLICE; j++) {
            let source = team.base + min(s + j, n - 1u);
            let word = shuffle_u32(my_word, source, team.me);
            let start = shuffle_u32(my_start, source, team.me);
            rows[j] = Real(0.0);
            if mine && (word & bit) != 0u {
                rows[j] = a_values[start + countOneBits(word & (bit - 1u))];
            }
        }
        row = take_slice(team, s, rows, mine, row);
    }
    return row;
}

// The factors of a row at position p: which of its entries L (before p) and U keep, as
// masks of its 32 columns (entries that are not exactly zero; NaN counts as nonzero).
fn block_masks(v: vec4<Real>, b: u32, p: u32, masks: vec2<u32>) -> vec2<u32> {
    var m = masks;
    let nonzero = !(v == vec4<Real>(0.0)) & (block_columns(b) < vec4<u32>(params.n));
    for (var c = 0u; c < 4u; c++) {
        let j = 4u * b + c;
        if nonzero[c] {
            if j < p {
                m.x |= 1u << j;
            } else {
                m.y |= 1u << j;
            }
        }
    }
    return m;
}

fn factor_masks(row: RowBlocks, p: u32) -> vec2<u32> {
    var m = vec2<u32>(0u);
    m = block_masks(row.r0, 0u, p, m);
    m = block_masks(row.r1, 1u, p, m);
    m = block_masks(row.r2, 2u, p, m);
    m = block_masks(row.r3, 3u, p, m);
    m = block_masks(row.r4, 4u, p, m);
    m = block_masks(row.r5, 5u, p, m);
    m = block_masks(row.r6, 6u, p, m);
    m = block_masks(row.r7, 7u, p, m);
    return m;
}

fn run(workgroup: u32, lane: Lane) {
    let n = params.n;
    let team = team_lane(lane, SLICE);
    let t = team.t;
    let matrix = workgroup * (WG_SIZE / TEAM) + lane.index / TEAM;
    // Teams past the batch run along (shuffles and barriers need every lane) and write nothing.
    let mine = matrix < params.batch && t < n;
    let first = matrix * n * n;
#ifdef COUNT
    let factored = factor_rows(team, load_bitmap_rows(team, matrix, mine));
    if mine {
        pivots[matrix * n + t] = factored.factor.pivot;
        if t == 0u {
            info[matrix] = factored.factor.first_zero;
        }
        // Each row's entry counts of L and U at its position in getrf's order.
        let masks = factor_masks(factored.row, factored.pos);
        l_rank[matrix * n + factored.pos] = countOneBits(masks.x);
        u_rank[matrix * n + factored.pos] = countOneBits(masks.y);
    }
    // The factored rows to the scratch in getrf's order, through the stage.
    for (var s = 0u; s < n; s += SLICE) {
        put_slice(team, s, factored.row, factored.pos);
        if mine {
            for (var j = 0u; j < SLICE && s + j < n; j++) {
                scratch[first + (s + j) * n + t] = stage_get(team.stage_base, j, t);
            }
        }
    }
#else
    // Lane t takes the factored row at position t from the scratch, through the stage.
    var row: RowBlocks;
    for (var s = 0u; s < n; s += SLICE) {
        workgroupBarrier();
        var rows: array<Real, STAGE_LOADS>;
        if mine {
            for (var j = 0u; j < SLICE; j++) {
                rows[j] = scratch[first + min(s + j, n - 1u) * n + t];
            }
        }
        row = take_slice(team, s, rows, mine, row);
    }
    let at = matrix * n + t;
    var masks = vec2<u32>(0u);
    var l_start = 0u;
    var u_start = 0u;
    if mine {
        masks = factor_masks(row, t);
        l_start = l_rank[at];
        u_start = u_rank[at];
        l_flags[at] = masks.x;
        u_flags[at] = masks.y;
        l_offsets[at] = l_start;
        u_offsets[at] = u_start;
        if at + 1u == params.batch * n {
            l_offsets[at + 1u] = l_start + countOneBits(masks.x);
            u_offsets[at + 1u] = u_start + countOneBits(masks.y);
        }
    }
    // The values a row at a time, lane t on column t (stores of a row side by side), the
    // row's masks and starts from its lane, a slice of rows through the stage at a time.
    for (var s = 0u; s < n; s += SLICE) {
        put_slice(team, s, row, t);
        for (var j = 0u; j < SLICE && s + j < n; j++) {
            let source = team.base + s + j;
            let l_row = shuffle_u32(masks.x, source, team.me);
            let u_row = shuffle_u32(masks.y, source, team.me);
            let l_at = shuffle_u32(l_start, source, team.me);
            let u_at = shuffle_u32(u_start, source, team.me);
            if mine {
                let bit = 1u << t;
                let v = stage_get(team.stage_base, j, t);
                if (l_row & bit) != 0u {
                    l_values[l_at + countOneBits(l_row & (bit - 1u))] = v;
                } else if (u_row & bit) != 0u {
                    u_values[u_at + countOneBits(u_row & (bit - 1u))] = v;
                }
            }
        }
    }
#endif
}
