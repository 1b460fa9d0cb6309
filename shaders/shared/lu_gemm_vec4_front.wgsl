// The front of the blocked LU's GEMM (shared/lu_gemm_body.wgsl says what each function
// gives) on A's rows as vec4s: a lane moves C's rows and the operands' chunks a vec4 at a time
// (4 loads and 4 stores of C a lane where lu_blocked.wgsl's front makes 16 and 16, each with
// its bounds test). Panels start at multiples of 32 and tiles at multiples of 64 past them
// (or past the next panel), so a vec4 starts at a multiple of 4. Lane lc's four columns of C
// and U12 are 4·lc … 4·lc + 3 of the tile. The including file defines
// `gemm_block(m, i, j) -> vec4<Real>` (columns j … j + 3 of row i, zeros past n or past the
// last row) and `put_gemm_block(m, i, j, v)` (only within A).
#import lu_gemm_body

fn load_chunk(m: u32, update: TrailingUpdate, row0: u32, col0: u32, kc: u32, lane: Lane) -> Chunk {
    let e = lane.index;
    var chunk = Chunk(vec4<Real>(0.0), vec4<Real>(0.0));
    // L21: row e / 4 of the tile, columns kc + 4·(e % 4) … (four lanes read a row's chunk).
    let kl = kc + 4u * (e % 4u);
    if kl < update.nb {
        chunk.l = gemm_block(m, row0 + e / 4u, update.jk + kl);
    }
    // U12: row kc + e / 16, lane lc = e % 16's columns.
    let ku = kc + e / 16u;
    if ku < update.nb {
        chunk.u = gemm_block(m, update.jk + ku, col0 + 4u * (e % 16u));
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
    return vec4<Acc>(gemm_block(m, i, col0 + 4u * lc));
}

fn store_c_row(m: u32, i: u32, col0: u32, lc: u32, v: vec4<Acc>) {
    put_gemm_block(m, i, col0 + 4u * lc, vec4<Real>(v));
}
