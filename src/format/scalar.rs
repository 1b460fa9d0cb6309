use std::fmt::Debug;

/// A matrix value type. The GPU kernels are written for `f32`; the host formats are generic
/// so that `f64` (and its twins) can follow without changing their shape.
pub trait Scalar: bytemuck::Pod + Copy + Default + PartialEq + Debug + Send + Sync + 'static {
    /// Widens to f64 (used by the CPU twins).
    fn to_f64(self) -> f64;
    /// Narrows from f64 (used by readers and generators).
    fn from_f64(v: f64) -> Self;
}

impl Scalar for f32 {
    fn to_f64(self) -> f64 {
        self as f64
    }
    fn from_f64(v: f64) -> Self {
        v as f32
    }
}

impl Scalar for f64 {
    fn to_f64(self) -> f64 {
        self
    }
    fn from_f64(v: f64) -> Self {
        v
    }
}
