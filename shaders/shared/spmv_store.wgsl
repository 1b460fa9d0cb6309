// y[row] = alpha * sum + beta * y[row], with BLAS semantics for beta == 0: y is not read,
// so NaN or garbage already in y does not leak into the result.
// Expects `params.alpha`, `params.beta` and a read_write `y: array<f32>` in the shader.
fn store_y(row: u32, sum: f32) {
    var r = params.alpha * sum;
    if params.beta != 0.0 {
        r = fma(params.beta, y[row], r);
    }
    y[row] = r;
}
