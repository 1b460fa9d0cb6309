// The blocked LU's trailing update A22 ← A22 − L21·U12 of the panel of `update.nb` columns at
// column `update.jk` (the GEMM step), shared by its fronts: lu_blocked.wgsl (A an element at a
// time, any n), lu_gemm_vec4_front.wgsl (A's rows as vec4s: lu_gemm_vec4.wgsl, and the
// cooperative panel's dispatch, which runs the previous panel's update beside it). 64 × 64
// tiles of 256 lanes, a 4 × 4 block of outputs a lane: rows lr + 16·q of the tile (lr =
// lane / 16) and four columns of lane lc = lane % 16 that the front chooses. Each front
// defines
//   load_c_row(m, i, col0, lc) / store_c_row(m, i, col0, lc, v): lane lc's four columns of
//                row i of the tile at column col0 (zeros past n; stores only within it);
//   load_chunk(m, update, row0, col0, kc, lane): a `Chunk` of K_CHUNK columns of L21's tile and
//                K_CHUNK rows of U12's from column (row) kc of the panel, into registers;
//   stage_chunk(chunk, lane): the chunk into `gemm_stage`: at k · 16 + lr the vec4 of L21's
//                rows lr, lr + 16, lr + 32, lr + 48 of column k, at 16 · K_CHUNK + k · 16 +
//                lc U12's row k in lane lc's four columns.
// Needs `params.n`.

// Side of the tiles.
const TILE: u32 = 64u;
// Columns of L21 (rows of U12) staged at a time.
const K_CHUNK: u32 = 16u;
// The stage (set by the host: 2 · 16 · K_CHUNK vec4s in the pipelines that run the GEMM, 1
// in others).
override GEMM_STAGE: u32 = 1u;
var<workgroup> gemm_stage: array<vec4<Real>, GEMM_STAGE>;

// Where an update runs: the panel's first column and width, and C's first column (its rows
// start below the panel, at jk + nb; its columns at jk + nb, or further right where the
// columns between were updated another way).
struct TrailingUpdate {
    jk: u32,
    nb: u32,
    first_col: u32,
}

// A chunk of K_CHUNK columns of L21's tile and K_CHUNK rows of U12's, a vec4 of each a lane
// (16 · K_CHUNK = the GEMM's 256 lanes), loaded into registers so that the next chunk's loads
// are in flight while this one is used (`stage_chunk` then stores them).
struct Chunk {
    l: vec4<Real>,
    u: vec4<Real>,
}

// Tile `tile` of matrix m: both operands come from the stage as one vec4 each a step (16 FMAs
// for two loads). C and the first chunk are loaded together, and each later chunk while the
// one before is used, so that their latencies overlap.
fn gemm(m: u32, tile: u32, lane: Lane, update: TrailingUpdate) {
    let first_row = update.jk + update.nb;
    let cols = (params.n - min(update.first_col, params.n) + TILE - 1u) / TILE;
    let row0 = first_row + (tile / cols) * TILE;
    let col0 = update.first_col + (tile % cols) * TILE;
    let lr = lane.index / 16u;
    let lc = lane.index % 16u;
    var c0 = load_c_row(m, row0 + lr, col0, lc);
    var c1 = load_c_row(m, row0 + lr + 16u, col0, lc);
    var c2 = load_c_row(m, row0 + lr + 32u, col0, lc);
    var c3 = load_c_row(m, row0 + lr + 48u, col0, lc);
    var next = load_chunk(m, update, row0, col0, 0u, lane);
    for (var kc = 0u; kc < update.nb; kc += K_CHUNK) {
        stage_chunk(next, lane);
        workgroupBarrier();
        // The next chunk's loads are issued before this chunk's products, which hide them.
        if kc + K_CHUNK < update.nb {
            next = load_chunk(m, update, row0, col0, kc + K_CHUNK, lane);
        }
        for (var k = 0u; k < K_CHUNK; k++) {
            let l = vec4<Acc>(gemm_stage[k * 16u + lr]);
            let u = vec4<Acc>(gemm_stage[16u * K_CHUNK + k * 16u + lc]);
            c0 = fma(vec4<Acc>(-l.x), u, c0);
            c1 = fma(vec4<Acc>(-l.y), u, c1);
            c2 = fma(vec4<Acc>(-l.z), u, c2);
            c3 = fma(vec4<Acc>(-l.w), u, c3);
        }
        // The next chunk overwrites the stage.
        workgroupBarrier();
    }
    store_c_row(m, row0 + lr, col0, lc, c0);
    store_c_row(m, row0 + lr + 16u, col0, lc, c1);
    store_c_row(m, row0 + lr + 32u, col0, lc, c2);
    store_c_row(m, row0 + lr + 48u, col0, lc, c3);
}
