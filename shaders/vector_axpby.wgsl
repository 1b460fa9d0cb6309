// y = alpha * x + beta * y (BLAS axpby): x is not read when alpha == 0, y not when beta == 0.
#import invocation
#import real
#import scaling

struct Params {
    len: u32,
    scaling: Scaling,
}

var<immediate> params: Params;
@group(0) @binding(0) var<storage, read> x: array<Real>;
@group(0) @binding(1) var<storage, read> alpha_dev: array<Real>;
@group(0) @binding(2) var<storage, read> beta_dev: array<Real>;
@group(0) @binding(3) var<storage, read_write> y: array<Real>;

override WG_SIZE: u32 = 256u;

fn run(i: u32) {
    if i >= params.len {
        return;
    }
    let a = alpha();
    let b = beta();
    // `== 0.0` with an else, not `!= 0.0`: see combine().
    var sum = Acc(0.0);
    if a == 0.0 {
    } else {
        sum = Acc(x[i]);
    }
    var old = Real(0.0);
    if b == 0.0 {
    } else {
        old = y[i];
    }
    y[i] = combine(a, sum, b, old);
}
