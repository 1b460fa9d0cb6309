// y = alpha * y (BLAS scal; alpha == 0 writes zeros whatever y held, NaN included), or with
// FILL y = alpha in every element.
#import invocation
#import real
#import scaling

struct Params {
    len: u32,
    scaling: Scaling,
}

var<immediate> params: Params;
@group(0) @binding(0) var<storage, read> alpha_dev: array<Real>;
@group(0) @binding(1) var<storage, read> beta_dev: array<Real>;
@group(0) @binding(2) var<storage, read_write> y: array<Real>;

override WG_SIZE: u32 = 256u;

fn run(i: u32) {
    if i >= params.len {
        return;
    }
    let a = alpha();
#ifdef FILL
    y[i] = a;
#else
    y[i] = select(a * y[i], Real(0.0), a == 0.0);
#endif
}
