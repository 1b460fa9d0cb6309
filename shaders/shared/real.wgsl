// The element type of a kernel compiled per element type: Real is what buffers store, Acc
// what sums accumulate in. The host compiles the F64 variant for f64 operands. Kept apart so
// that narrower storage (f16) with f32 accumulation can follow by changing these lines.
#ifdef F64
alias Real = f64;
alias Acc = f64;
#else
alias Real = f32;
alias Acc = f32;
#endif

// Whether v is a NaN, from its bits: a driver may fold a comparison such as `v == v` or
// `abs(v) >= 0.0` to true (NVIDIA's Vulkan driver did: the team LU's pivot search took a NaN
// for a number, and a team's lanes disagreed on the pivot; benches/NOTES.md, session 54). An
// f64 NaN stays a NaN in f32 (its own bits would need SHADER_INT64).
fn is_nan(v: Real) -> bool {
    return (bitcast<u32>(f32(v)) & 0x7fffffffu) > 0x7f800000u;
}
