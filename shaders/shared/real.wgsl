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
