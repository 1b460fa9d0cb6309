// z = x ⊙ y element by element, or with DIVIDE z = x ⊘ y (IEEE division: x/0 is ±Inf or NaN).
#import invocation
#import real

struct Params {
    len: u32,
}

var<immediate> params: Params;
@group(0) @binding(0) var<storage, read> x: array<Real>;
@group(0) @binding(1) var<storage, read> y: array<Real>;
@group(0) @binding(2) var<storage, read_write> z: array<Real>;

override WG_SIZE: u32 = 256u;

fn run(i: u32) {
    if i >= params.len {
        return;
    }
#ifdef DIVIDE
    z[i] = x[i] / y[i];
#else
    z[i] = x[i] * y[i];
#endif
}
