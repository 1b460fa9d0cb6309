// y[row] = alpha * sum + beta * y[row], with y not read when beta == 0 (so NaN or garbage
// already in y does not leak into the result) and sum not used when alpha == 0.
// Expects `params.scaling`, `alpha_dev`, `beta_dev` and a read_write `y: array<Real>`.
#import scaling

fn store_y(row: u32, sum: Acc) {
    let b = beta();
    var old = Real(0.0);
    if b == 0.0 {
    } else {
        old = y[row];
    }
    y[row] = combine(alpha(), sum, b, old);
}
