// The blocked LU's picked panel (lu_tournament.wgsl says what each step does) on a batch
// whose n is a multiple of 4: A bound as vec4s, so that a lane reads and writes its row's
// panel block a vec4 at a time (the panel starts at a multiple of 32 and its width, n − j0
// or 32, is a multiple of 4: no vec4 straddles its edge).
#import real

@group(0) @binding(0) var<storage, read_write> a: array<vec4<Real>>;
@group(0) @binding(1) var<storage, read_write> pivots: array<u32>;
@group(0) @binding(2) var<storage, read_write> info: array<u32>;

// Element (i, j) of matrix m.
fn at(m: u32, i: u32, j: u32) -> u32 {
    return (m * params.n + i) * params.n + j;
}

// Block b (columns c0 + 4b … c0 + 4b + 3; c0 a multiple of 4) of row i: zeros past n.
fn load_block_at(m: u32, i: u32, c0: u32, b: u32) -> vec4<Real> {
    if c0 + 4u * b < params.n {
        return a[at(m, i, c0) / 4u + b];
    }
    return vec4<Real>(0.0);
}

fn store_block_at(m: u32, i: u32, c0: u32, b: u32, v: vec4<Real>) {
    if c0 + 4u * b < params.n {
        a[at(m, i, c0) / 4u + b] = v;
    }
}

fn entry_of(m: u32, i: u32, j: u32) -> Real {
    let e = at(m, i, j);
    return a[e / 4u][e % 4u];
}

#import lu_tournament_body
