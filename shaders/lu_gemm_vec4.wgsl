// The blocked LU's GEMM step (A22 ← A22 − L21·U12, shared/lu_gemm_body.wgsl) on a batch whose
// n is a multiple of 4: A bound as vec4s, so that a lane moves C's rows and the operands'
// chunks a vec4 at a time (4 loads and 4 stores of C a lane where lu_blocked.wgsl's GEMM
// makes 16 and 16, each with its bounds test). Panels start at multiples of 32 and tiles at
// multiples of 64 past them, so no vec4 straddles a tile's, a panel's or a row's edge.
// Lane lc's four columns of C and U12 are 4·lc … 4·lc + 3 of the tile.
#import entry
#import real
#import lu_gemm_body

struct Params {
    n: u32,
    batch: u32,
    j0: u32,
    nb: u32,
    // Tiles per matrix.
    tiles: u32,
}

var<immediate> params: Params;

@group(0) @binding(0) var<storage, read_write> a: array<vec4<Real>>;

// 256: 16 × 16 lanes of 4 × 4 outputs.
override WG_SIZE: u32 = 256u;

// The vec4 holding columns j … j + 3 of row i of matrix m (j a multiple of 4).
fn vec4_at(m: u32, i: u32, j: u32) -> u32 {
    return ((m * params.n + i) * params.n + j) / 4u;
}

fn load_chunk(m: u32, row0: u32, col0: u32, kc: u32, lane: Lane) -> Chunk {
    let e = lane.index;
    var chunk = Chunk(vec4<Real>(0.0), vec4<Real>(0.0));
    // L21: row e / 4 of the tile, columns kc + 4·(e % 4) … (four lanes read a row's chunk).
    let r = row0 + e / 4u;
    let kl = kc + 4u * (e % 4u);
    if r < params.n && kl < params.nb {
        chunk.l = a[vec4_at(m, r, params.j0 + kl)];
    }
    // U12: row kc + e / 16, lane lc = e % 16's columns.
    let ku = kc + e / 16u;
    let c = col0 + 4u * (e % 16u);
    if c < params.n && ku < params.nb {
        chunk.u = a[vec4_at(m, params.j0 + ku, c)];
    }
    return chunk;
}

// L21's vec4 goes to the stage a column at a time: its row r is component r / 16 of the
// vec4s at k · 16 + r % 16.
fn stage_chunk(chunk: Chunk, lane: Lane) {
    let e = lane.index;
    let r = e / 4u;
    for (var t = 0u; t < 4u; t++) {
        gemm_stage[(4u * (e % 4u) + t) * 16u + r % 16u][r / 16u] = chunk.l[t];
    }
    gemm_stage[16u * K_CHUNK + e] = chunk.u;
}

fn load_c_row(m: u32, i: u32, col0: u32, lc: u32) -> vec4<Acc> {
    let j = col0 + 4u * lc;
    if i < params.n && j < params.n {
        return vec4<Acc>(a[vec4_at(m, i, j)]);
    }
    return vec4<Acc>(0.0);
}

fn store_c_row(m: u32, i: u32, col0: u32, lc: u32, v: vec4<Acc>) {
    let j = col0 + 4u * lc;
    if i < params.n && j < params.n {
        a[vec4_at(m, i, j)] = vec4<Real>(v);
    }
}

fn run(workgroup: u32, lane: Lane) {
    let m = workgroup / params.tiles;
    if m >= params.batch {
        return;
    }
    gemm(m, workgroup % params.tiles, lane);
}
