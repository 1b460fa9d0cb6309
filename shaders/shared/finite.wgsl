// Whether a value is finite: NaN fails the comparison, and so does ±Inf (a comparison that
// shader compilers keep, where `v != v` may be folded away).
#import real

#ifdef F64
const MAX_REAL: f64 = 1.7976931348623157e308;
#else
const MAX_REAL: f32 = 3.40282347e38;
#endif

fn finite(v: Real) -> bool {
    return abs(v) <= MAX_REAL;
}
