// Batched LU with partial pivoting for matrices of at most TEAM rows (TEAM ≤ 32), by the team
// elimination of shared/lu_team_factor.wgsl: one team of TEAM lanes per matrix, WG_SIZE /
// TEAM matrices per workgroup, each matrix staged from `a` (or `source`) and written back.
// Same outputs and conventions as lu_small.wgsl.
#import entry
#import real

#import lu_interface
#import lu_team_factor

// The team's matrix between global memory (from `first`) and its stage, a row at a time with
// lane t on column t (coalesced). Loads go STAGE_LOADS rows at a time, all
// issued before the first is stored: a lane's loads then wait out one memory latency
// together, not one each. Barriers around these order the stage.
fn stage_matrix(first: u32, stage_base: u32, t: u32, in_batch: bool) {
    let n = params.n;
    if !in_batch || t >= n {
        return;
    }
    for (var i0 = 0u; i0 < n; i0 += STAGE_LOADS) {
        var rows: array<Real, STAGE_LOADS>;
        for (var j = 0u; j < STAGE_LOADS; j++) {
            let i = min(i0 + j, n - 1u);
#ifdef OUT_OF_PLACE
            rows[j] = source[first + i * n + t];
#else
            rows[j] = a[first + i * n + t];
#endif
        }
        for (var j = 0u; j < STAGE_LOADS && i0 + j < n; j++) {
            stage_set(stage_base, i0 + j, t, rows[j]);
        }
    }
}

fn unstage_matrix(first: u32, stage_base: u32, t: u32, in_batch: bool) {
    let n = params.n;
    if !in_batch || t >= n {
        return;
    }
    for (var i = 0u; i < n; i++) {
        a[first + i * n + t] = stage_get(stage_base, i, t);
    }
}

fn run(workgroup: u32, lane: Lane) {
    let n = params.n;
    let team = team_lane(lane);
    let matrix = workgroup * (WG_SIZE / TEAM) + lane.index / TEAM;
    // Teams past the batch run along with zeros (shuffles and barriers need every lane) and
    // write nothing.
    let in_batch = matrix < params.batch;
    let first = matrix * n * n;
    stage_matrix(first, team.stage_base, team.t, in_batch);
    workgroupBarrier();
    let factor = factor_stage(team);
    unstage_matrix(first, team.stage_base, team.t, in_batch);
    if in_batch && team.t < n {
        pivots[matrix * n + team.t] = factor.pivot;
    }
    if in_batch && team.t == 0u {
        info[matrix] = factor.first_zero;
    }
}
