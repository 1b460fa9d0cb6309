// Batched LU with partial pivoting for matrices of at most TEAM rows (TEAM ≤ 32), by the team
// elimination of shared/lu_team_factor.wgsl: one team of TEAM lanes per matrix, WG_SIZE /
// TEAM matrices per workgroup, each matrix read from `a` (or `source`) into the lanes' rows
// and written back, a slice of rows at a time through workgroup memory.
// Same outputs and conventions as lu_small.wgsl.
#import entry
#import real

#import lu_interface
#import lu_team_factor

// The stage holds a slice of SLICE rows of a team's matrix (shared/lu_team_factor.wgsl): the
// matrix goes through it a slice at a time, a row at a time with lane t on column t
// (coalesced), the slice's loads all issued before the first is stored.

// Lane t's row of the team's matrix, from `first` through the stage (zeros for t ≥ n).
// Barriers: every lane of the workgroup calls it.
fn load_rows(first: u32, team: TeamLane, in_batch: bool) -> RowBlocks {
    let n = params.n;
    let t = team.t;
    var row: RowBlocks;
    for (var s = 0u; s < n; s += SLICE) {
        // Every lane has read the last slice before it is overwritten.
        workgroupBarrier();
        var rows: array<Real, STAGE_LOADS>;
        if in_batch && t < n {
            for (var j = 0u; j < SLICE; j++) {
                let i = min(s + j, n - 1u);
#ifdef OUT_OF_PLACE
                rows[j] = source[first + i * n + t];
#else
                rows[j] = a[first + i * n + t];
#endif
            }
        }
        row = take_slice(team, s, rows, in_batch && t < n, row);
    }
    return row;
}

// The factored rows back to `first`, each at its position, through the stage.
fn store_rows(first: u32, team: TeamLane, in_batch: bool, factored: Factored) {
    let n = params.n;
    let t = team.t;
    for (var s = 0u; s < n; s += SLICE) {
        put_slice(team, s, factored.row, factored.pos);
        if in_batch && t < n {
            for (var j = 0u; j < SLICE && s + j < n; j++) {
                a[first + (s + j) * n + t] = stage_get(team.stage_base, j, t);
            }
        }
    }
}

fn run(workgroup: u32, lane: Lane) {
    let team = team_lane(lane, SLICE);
    let matrix = workgroup * (WG_SIZE / TEAM) + lane.index / TEAM;
    // Teams past the batch run along on whatever their part of the stage holds (shuffles and
    // barriers need every lane) and write nothing.
    let in_batch = matrix < params.batch;
    let first = matrix * params.n * params.n;
    let factored = factor_rows(team, load_rows(first, team, in_batch));
    store_rows(first, team, in_batch, factored);
    if in_batch && team.t < params.n {
        pivots[matrix * params.n + team.t] = factored.factor.pivot;
    }
    if in_batch && team.t == 0u {
        info[matrix] = factored.factor.first_zero;
    }
}
