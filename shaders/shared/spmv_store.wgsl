// y[row] = alpha * sum + beta * y[row], with y not read when beta == 0 (so NaN or garbage
// already in y does not leak into the result) and sum not used when alpha == 0.
// Expects `params.scaling`, `alpha_dev`, `beta_dev` and a read_write `y: array<Real>`.
#import scaling
#import finite

fn store_y(row: u32, sum: Acc) {
    _ = store_y_value(row, sum);
}

// store_y, returning the value stored (so that a caller need not read y back).
fn store_y_value(row: u32, sum: Acc) -> Real {
    let b = beta();
    var old = Real(0.0);
    if b == 0.0 {
    } else {
        old = y[row];
    }
    let value = combine(alpha(), sum, b, old);
    y[row] = value;
    return value;
}

// y[row] for a row with no entries: α·0 + β·y, with α·0 NaN where α is ±Inf or NaN. Written
// out: shader compilers may fold a product with a constant zero to zero.
fn store_empty_row(row: u32) {
#ifdef F64
    let nan = bitcast<f64>(0x7ff8000000000000lu);
#else
    let nan = bitcast<f32>(0x7fc00000u);
#endif
    store_y(row, select(Acc(0.0), Acc(nan), !finite(alpha())));
}
