// y[row] += alpha * sum, for kernels whose y was scaled by beta beforehand (scale_vector).
// Expects `params.alpha` and a read_write `y: array<f32>` in the shader.
fn accumulate_y(row: u32, sum: f32) {
    y[row] = fma(params.alpha, sum, y[row]);
}
