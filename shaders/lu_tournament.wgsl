// The panel of the blocked LU by tournament pivoting (CALU: Grigori, Demmel and Xiang, 2011)
// for `Pivoting::Tournament`: a panel's pivot rows are chosen by many workgroups at once
// instead of one workgroup walking every row for each column. For the panel of NB columns at
// column j0 (`params.nb` of them), on a batch of n × n matrices stacked by rows in `a`:
//   TOURNAMENT  each workgroup takes up to WG_SIZE rows (a leaf: rows j0.. in blocks; a
//               later round: the previous round's picks), a lane each, and eliminates with
//               partial pivoting among them; the rows it pivoted on, in order, are its nb
//               picks (`cand`). Rounds repeat until one workgroup is left; its picks are the
//               panel's pivot rows, turned into getrf's interchanges (`pivots`: row j0 + k
//               swapped with pivots[j0 + k], in order), and it writes the pivot rows' block,
//               factored in its order (L11, U11), into the picks' rows, and info.
//               A leaf that is the only workgroup (every row of the panel in one) is the
//               panel's exact partial pivoting: it then writes every row, the others'
//               multipliers included, and LOWER is not needed.
//   (lu_blocked's SWAP then applies the interchanges to whole rows.)
//   LOWER       every workgroup (a pipeline of small ones) solves WG_SIZE of the rows
//               below the block for their multipliers, L21 = A21·U11⁻¹, a lane per row.
//   COLUMN      exact partial pivoting for a panel taller than a workgroup: a dispatch per
//               column k = 0..nb (`params.count`), a lane per row of the panel. Dispatch k
//               finds column k − 1's pivot row among the workgroups' candidates of the
//               dispatch before (each workgroup alike), applies that step to its unpicked
//               rows, and publishes its best row for column k. Rows do not move (the pivot
//               row is read where it is, never written once picked); the last dispatch
//               writes the interchanges, and SWAP moves the rows.
//   COOPERATIVE the same panel in one dispatch (the COOPERATIVE variant): the workgroups
//               exchange each column's candidates through `cand` within the dispatch and
//               wait for one another, each wait bounded; FINISH (one workgroup a matrix)
//               then plays whatever a wait left behind, writes the interchanges and info,
//               and moves the pivot rows' block in the panel's own columns
//               (shared/lu_tournament_body.wgsl says how).
//   SOLVE       after a COOPERATIVE panel: a workgroup a column block but the panel's
//               applies the interchanges to its columns and, right of the panel, solves
//               their U12 (lu_blocked's SWAP and TRSM in one dispatch), and resets a share
//               of the cooperative exchange for the next panel.
//   A one-round TOURNAMENT with `strips` and `ahead` is a look-ahead: the panel's workgroup
//               first applies the previous panel's interchanges to its columns and solves
//               their U12, and the previous panel's update runs beside it, in workgroups
//               after its own (the body's "Look-ahead" section). A COOPERATIVE panel with
//               them runs the previous tall panel's GEMM beside it (tiles after its
//               workgroups, right of the panel), its rows taking their own columns' part.
// A lane holds its row's panel columns in eight named vec4 registers (an indexed array would
// spill to memory), so a workgroup takes WG_SIZE rows; only the pivot rows pass through
// workgroup memory. This file reads and writes A an element at a time (any n),
// lu_tournament_vec4.wgsl a vec4 at a time (n a multiple of 4). A warp's lanes hold rows
// n elements apart, so each of its loads or stores touches 32 cache lines: a row's 32
// elements cost a warp 1 K line accesses each way, 8 vec4s a quarter of that (on the H200,
// 1024²: loads and stores ~1.0 of 2.6 ms of rounds element-wise, 2.06 ms of rounds by vec4).
#import real
#import lu_factors

// Block b (columns c0 + 4b … c0 + 4b + 3) of row i: zeros past n.
fn load_block_at(m: u32, i: u32, c0: u32, b: u32) -> vec4<Real> {
    var v = vec4<Real>(0.0);
    for (var c = 0u; c < 4u; c++) {
        if c0 + 4u * b + c < params.n {
            v[c] = a[at(m, i, c0 + 4u * b + c)];
        }
    }
    return v;
}

fn store_block_at(m: u32, i: u32, c0: u32, b: u32, v: vec4<Real>) {
    for (var c = 0u; c < 4u; c++) {
        if c0 + 4u * b + c < params.n {
            a[at(m, i, c0 + 4u * b + c)] = v[c];
        }
    }
}

fn entry_of(m: u32, i: u32, j: u32) -> Real {
    return a[at(m, i, j)];
}

#import lu_tournament_body
