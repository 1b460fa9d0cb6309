// The blocked LU's GEMM step (A22 ← A22 − L21·U12, shared/lu_gemm_body.wgsl) on a batch whose
// n is a multiple of 4: A bound as vec4s (shared/lu_gemm_vec4_front.wgsl).
#import entry
#import real

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

fn gemm_block(m: u32, i: u32, j: u32) -> vec4<Real> {
    if i < params.n && j < params.n {
        return a[vec4_at(m, i, j)];
    }
    return vec4<Real>(0.0);
}

fn put_gemm_block(m: u32, i: u32, j: u32, v: vec4<Real>) {
    if i < params.n && j < params.n {
        a[vec4_at(m, i, j)] = v;
    }
}

#import lu_gemm_vec4_front

fn run(workgroup: u32, lane: Lane) {
    let m = workgroup / params.tiles;
    if m >= params.batch {
        return;
    }
    gemm(m, workgroup % params.tiles, lane, TrailingUpdate(params.j0, params.nb, params.j0 + params.nb));
}
