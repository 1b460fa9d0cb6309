// Batched LU of bitmap matrices of at most 32 rows (one flag word a row), fused: lane t of a
// team reads row t of its matrix straight from A's bitmap, the team factors the matrix with
// the team elimination (shared/lu_team_factor.wgsl: seed 004's with NO_PIVOT, else getrf's
// partial pivoting) and writes L (strictly lower) and U (on and above the diagonal) into the
// factors' bitmaps. The factors' positions need a scan over the whole batch, so the kernel
// runs twice, COUNT first, around an exclusive scan:
// - NO_PIVOT: the factors' pattern does not depend on the values (A's entries and their
//   fill: (i, j) is fill when some k < min(i, j) has l_ik and u_kj in the pattern), so COUNT
//   computes it from A's flags alone (a flag word a lane, one shuffle a step), writes the
//   flags and, in workgroups of many teams, scans the workgroup's row counts: each matrix's
//   start in its workgroup, and each workgroup's counts (`matrix_starts`, layout in
//   `count_pattern`). After the scan of the workgroups' counts (one dispatch: 10,000
//   matrices of 32² make 313 workgroups of 1,024 lanes) the second run factors, places each
//   row after the rows before it, and writes every value at its place.
// - partial pivoting: which rows meet depends on the values, and the factors keep the entries
//   that are not exactly zero (NaN counts as nonzero). COUNT factors, writes the pivots, the
//   infos, each row's counts (rank directories, scanned into row starts) and the factored
//   matrices densely to `scratch`; the second run reads them back and writes flags, row
//   starts and values. (Factoring again in the second run instead of keeping the scratch
//   measured slower on the H100: 362 against 264 µs for 10,000 × 32², the elimination being
//   most of the time.)
#import entry
#import real

struct Params {
    n: u32,
    batch: u32,
    // Without pivoting: the matrices of a COUNT workgroup.
    group_matrices: u32,
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
@group(0) @binding(14) var<storage, read_write> matrix_starts: array<u32>;

#import lu_team_factor
#import block_scan

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

// Block b of a row whose flag word is `word`, its values read from A from *p on.
fn load_block_from(word: u32, b: u32, p: ptr<function, u32>) -> vec4<Real> {
    var v = vec4<Real>(0.0);
    for (var c = 0u; c < 4u; c++) {
        if (word & (1u << (4u * b + c))) != 0u {
            v[c] = a_values[*p];
            *p += 1u;
        }
    }
    return v;
}

// Row t of the team's matrix from A's bitmap, by its own lane (zeros where not `mine`): its
// values lie side by side, so each lane reads its own (through a stage, a row at a time
// with lane t on column t, measured 10 µs slower on 10,000 × 32² at 20%).
fn load_bitmap_row(at: u32, mine: bool) -> RowBlocks {
    var row: RowBlocks;
    if mine {
        let word = a_flags[at];
        var p = a_offsets[at];
        row.r0 = load_block_from(word, 0u, &p);
        row.r1 = load_block_from(word, 1u, &p);
        row.r2 = load_block_from(word, 2u, &p);
        row.r3 = load_block_from(word, 3u, &p);
        row.r4 = load_block_from(word, 4u, &p);
        row.r5 = load_block_from(word, 5u, &p);
        row.r6 = load_block_from(word, 6u, &p);
        row.r7 = load_block_from(word, 7u, &p);
    }
    return row;
}

// Block b's entries that L (`masks.x`) or U (`masks.y`) keep, written at *p (L's next, U's
// next) on.
fn store_block_to(v: vec4<Real>, b: u32, masks: vec2<u32>, p: ptr<function, vec2<u32>>) {
    for (var c = 0u; c < 4u; c++) {
        let bit = 1u << (4u * b + c);
        if (masks.x & bit) != 0u {
            l_values[(*p).x] = v[c];
            (*p).x += 1u;
        } else if (masks.y & bit) != 0u {
            u_values[(*p).y] = v[c];
            (*p).y += 1u;
        }
    }
}

// The rank directories' entries and row starts of a lane's row `at` of the factors, whose
// entries start at `starts` (absolute) and number `counts` (and the totals, by the batch's
// last row).
fn write_row_starts(at: u32, starts: vec2<u32>, counts: vec2<u32>) {
    l_rank[at] = starts.x;
    u_rank[at] = starts.y;
    l_offsets[at] = starts.x;
    u_offsets[at] = starts.y;
    if at + 1u == params.batch * params.n {
        l_offsets[at + 1u] = starts.x + counts.x;
        u_offsets[at + 1u] = starts.y + counts.y;
    }
}

// A lane's row of the factors, the columns L and U keep (`masks`) written from `starts`
// (absolute) on, by the lane itself. (The partial-pivoting run writes through the stage
// instead, `write_staged`: there this measured 230 against 181 µs on 10,000 × 32² at 20%,
// where without pivoting it measured 145 against 148.)
fn write_own_row(row: RowBlocks, masks: vec2<u32>, starts: vec2<u32>) {
    var p = starts;
    store_block_to(row.r0, 0u, masks, &p);
    store_block_to(row.r1, 1u, masks, &p);
    store_block_to(row.r2, 2u, masks, &p);
    store_block_to(row.r3, 3u, masks, &p);
    store_block_to(row.r4, 4u, masks, &p);
    store_block_to(row.r5, 5u, masks, &p);
    store_block_to(row.r6, 6u, masks, &p);
    store_block_to(row.r7, 7u, masks, &p);
}

// The team's rows of the factors (lane t: row t, the columns L and U keep in `masks`, from
// `starts` on) through the stage a slice at a time, a row at a time with lane t on column t
// (a row's stores side by side), each row's masks and starts from its lane. Every lane of
// the workgroup calls it.
fn write_staged(team: TeamLane, mine: bool, row: RowBlocks, masks: vec2<u32>, starts: vec2<u32>) {
    let n = params.n;
    let t = team.t;
    for (var s = 0u; s < n; s += SLICE) {
        put_slice(team, s, row, t);
        for (var j = 0u; j < SLICE && s + j < n; j++) {
            let source = team.base + s + j;
            let l_row = shuffle_u32(masks.x, source, team.me);
            let u_row = shuffle_u32(masks.y, source, team.me);
            let l_at = shuffle_u32(starts.x, source, team.me);
            let u_at = shuffle_u32(starts.y, source, team.me);
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
}

// The sum of v over the lanes of the team before this one (t of them). Every lane of the
// team calls it (shuffles).
fn team_exclusive_add(v: u32, team: TeamLane) -> u32 {
#ifdef SUBGROUP
    if TEAM == team.sg_size {
        return subgroupExclusiveAdd(v);
    }
#endif
    var sum = v;
    for (var offset = 1u; offset < TEAM; offset <<= 1u) {
        let other = shuffle_u32(sum, select(team.me, team.me - offset, team.t >= offset), team.me);
        if team.t >= offset {
            sum += other;
        }
    }
    return sum - v;
}

// Seed 004's pattern of the factors from A's flags alone (lane t: row t's flag word): at step
// k every row below with column k in its pattern gains row k's columns after k. Writes the
// flags of L and U and, with G the workgroups and g this one, into `matrix_starts`: g's
// counts of L's and U's entries (at g and G + g, which the host scans), and each matrix's
// counts in the rows of g before it (at `matrix_offset()` + `matrix` and + `batch +
// matrix`). (A lane a matrix, its 32 words in registers and no shuffles, measured slower on
// the H200: 144.7 against 131.1 µs for the whole LU of 10,000 × 32².) Every lane of the
// workgroup calls it.
fn count_pattern(team: TeamLane, matrix: u32, mine: bool, lane: Lane, workgroup: u32) {
    let n = params.n;
    let batch = params.batch;
    let t = team.t;
    var word = 0u;
    if mine {
        word = a_flags[matrix * n + t];
    }
    for (var k = 0u; k < n; k++) {
        // Row k's word is final: only steps before k change it. (Four steps a round, rows
        // k … k + 3 fetched together and brought up to date by each lane, measured slower on
        // the H200: 136 against 131 µs for the whole LU of 10,000 × 32².)
        let pivot_word = shuffle_u32(word, team.base + k, team.me);
        if t > k && (word & (1u << k)) != 0u {
            // Columns after k (none after 31: 2 << 31 wraps to 0).
            word |= pivot_word & ~((2u << k) - 1u);
        }
    }
    var lower = 0u;
    if mine {
        let at = matrix * n + t;
        lower = word & ((1u << t) - 1u);
        l_flags[at] = lower;
        u_flags[at] = word & ~lower;
    }
    // Row counts, L's in the low half: at most WG_SIZE ≤ 1,024 rows of 32 sum to 2^15.
    let scanned = workgroup_exclusive_add(countOneBits(lower) | (countOneBits(word & ~lower) << 16u), lane);
    let total = scanned.y;
    if t == 0u && matrix < batch {
        let before = scanned.x;
        matrix_starts[matrix_offset() + matrix] = before & 0xffffu;
        matrix_starts[matrix_offset() + batch + matrix] = before >> 16u;
    }
    if lane.index == 0u {
        matrix_starts[workgroup] = total & 0xffffu;
        matrix_starts[groups() + workgroup] = total >> 16u;
    }
}

#ifdef SUBGROUP
var<workgroup> subgroup_sums: array<u32, WG_SIZE>;
#endif

// The sum of v over the workgroup's lanes before this one, and over all of them. With
// subgroups: each subgroup's scan, their sums through workgroup memory (one barrier), each
// subgroup adding those before its own; without: block_scan's barriers.
fn workgroup_exclusive_add(v: u32, lane: Lane) -> vec2<u32> {
#ifdef SUBGROUP
    let inclusive = subgroupInclusiveAdd(v);
    let subgroup = lane.index / lane.sg_size;
    let subgroups = WG_SIZE / lane.sg_size;
    if lane.sg_lane == lane.sg_size - 1u {
        subgroup_sums[subgroup] = inclusive;
    }
    workgroupBarrier();
    var before = 0u;
    var total = 0u;
    if subgroups <= lane.sg_size {
        let sum = select(0u, subgroup_sums[min(lane.sg_lane, subgroups - 1u)], lane.sg_lane < subgroups);
        before = subgroupShuffle(subgroupExclusiveAdd(sum), subgroup);
        total = subgroupAdd(sum);
    } else {
        for (var s = 0u; s < subgroups; s++) {
            let sum = subgroup_sums[s];
            before += select(0u, sum, s < subgroup);
            total += sum;
        }
    }
    return vec2<u32>(before + inclusive - v, total);
#else
    block[lane.index] = v;
    workgroupBarrier();
    let total = scan_block(lane.index);
    return vec2<u32>(block[lane.index], total);
#endif
}

// The COUNT workgroups (G), and where `matrix_starts` holds the matrices' counts: after the
// workgroups' (2·G) and the factors' totals (2).
fn groups() -> u32 {
    return (params.batch + params.group_matrices - 1u) / params.group_matrices;
}

fn matrix_offset() -> u32 {
    return 2u * groups() + 2u;
}

fn run(workgroup: u32, lane: Lane) {
    let n = params.n;
    let team = team_lane(lane, SLICE);
    let t = team.t;
    let matrix = workgroup * (WG_SIZE / TEAM) + lane.index / TEAM;
    // Teams past the batch run along (shuffles and barriers need every lane) and write nothing.
    let mine = matrix < params.batch && t < n;
    let at = matrix * n + t;
#ifdef NO_PIVOT
#ifdef COUNT
    count_pattern(team, matrix, mine, lane, workgroup);
#else
    // Rows stay in place without pivoting (pos = t); the pattern is the COUNT run's. A row's
    // entries follow those of its team's rows before it, after the matrices before.
    let factored = factor_rows(team, load_bitmap_row(at, mine));
    var masks = vec2<u32>(0u);
    if mine {
        masks = vec2<u32>(l_flags[at], u_flags[at]);
    }
    let before = team_exclusive_add(countOneBits(masks.x) | (countOneBits(masks.y) << 16u), team);
    if mine {
        pivots[at] = factored.factor.pivot;
        if t == 0u {
            info[matrix] = factored.factor.first_zero;
        }
        // The COUNT workgroup's start (scanned: U's counts follow all of L's), the matrix's
        // in it, the row's in the matrix.
        let batch = params.batch;
        let g = matrix / params.group_matrices;
        let l_group = matrix_starts[g];
        let u_group = matrix_starts[groups() + g] - matrix_starts[groups()];
        let starts = vec2<u32>(
            l_group + matrix_starts[matrix_offset() + matrix] + (before & 0xffffu),
            u_group + matrix_starts[matrix_offset() + batch + matrix] + (before >> 16u),
        );
        let counts = vec2<u32>(countOneBits(masks.x), countOneBits(masks.y));
        write_row_starts(at, starts, counts);
        write_own_row(factored.row, masks, starts);
        if at + 1u == batch * n {
            matrix_starts[2u * groups()] = starts.x + counts.x;
            matrix_starts[2u * groups() + 1u] = starts.y + counts.y;
        }
    }
#endif
#else
    let first = matrix * n * n;
#ifdef COUNT
    let factored = factor_rows(team, load_bitmap_row(at, mine));
    if mine {
        pivots[at] = factored.factor.pivot;
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
    var masks = vec2<u32>(0u);
    var starts = vec2<u32>(0u);
    if mine {
        masks = factor_masks(row, t);
        l_flags[at] = masks.x;
        u_flags[at] = masks.y;
        starts = vec2<u32>(l_rank[at], u_rank[at]);
        write_row_starts(at, starts, vec2<u32>(countOneBits(masks.x), countOneBits(masks.y)));
    }
    write_staged(team, mine, row, masks, starts);
#endif
#endif
}
