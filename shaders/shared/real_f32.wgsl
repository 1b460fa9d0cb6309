// The element types of a kernel that exists for f32 only (WGSL atomics are 32-bit, so a
// float atomic add has no f64 form). Import instead of `real`.
alias Real = f32;
alias Acc = f32;
