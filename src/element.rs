//! Element types: what a device buffer holds and what the kernels compute in.
//!
//! [`Scalar`] is the value type of matrices and vectors (f32 and f64). Kernels are written
//! once over WGSL's `Real` (shaders/shared/real.wgsl) and compiled per [`ElementKind`]; the
//! kind is part of every kernel key. Storage and accumulation types are kept apart in the
//! shaders (`Real` and `Acc`) so that narrower storage (f16, bf16) with f32 accumulation can
//! follow without changing the host interfaces.

use std::fmt::Debug;

/// The element types the kernels are compiled for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ElementKind {
    /// 32-bit IEEE floats: every adapter.
    F32,
    /// 64-bit IEEE floats: adapters with `SHADER_F64` (a typed error elsewhere).
    F64,
}

impl ElementKind {
    /// `f32` or `f64`, as reports and the benchmark's `dtype` spell it.
    pub fn name(self) -> &'static str {
        match self {
            ElementKind::F32 => "f32",
            ElementKind::F64 => "f64",
        }
    }

    /// Bytes per value.
    pub fn size(self) -> u64 {
        match self {
            ElementKind::F32 => 4,
            ElementKind::F64 => 8,
        }
    }

    /// The wgpu feature the kernels need for this element type (none for f32).
    pub fn required_feature(self) -> wgpu::Features {
        match self {
            ElementKind::F32 => wgpu::Features::empty(),
            ElementKind::F64 => wgpu::Features::SHADER_F64,
        }
    }
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for f32 {}
    impl Sealed for f64 {}
}

/// A matrix value type: `f32` or `f64`. Sealed: the kernels exist for these two.
pub trait Scalar:
    bytemuck::Pod + Copy + Default + PartialEq + PartialOrd + Debug + Send + Sync + Stored + sealed::Sealed + 'static
{
    /// Which kernels this type runs.
    const KIND: ElementKind;
    /// Widens to f64 (used by the CPU twins).
    fn to_f64(self) -> f64;
    /// Narrows from f64, rounding to nearest (values past the type's range become ±inf;
    /// readers that must not lose values check [`Scalar::represents`] first).
    fn from_f64(v: f64) -> Self;
    /// Whether `v` is within the type's finite range (or is itself not finite), so that
    /// [`Scalar::from_f64`] does not overflow it to infinity.
    fn represents(v: f64) -> bool;
}

impl Scalar for f32 {
    const KIND: ElementKind = ElementKind::F32;
    fn to_f64(self) -> f64 {
        self as f64
    }
    fn from_f64(v: f64) -> Self {
        v as f32
    }
    fn represents(v: f64) -> bool {
        !v.is_finite() || (v as f32).is_finite()
    }
}

impl Scalar for f64 {
    const KIND: ElementKind = ElementKind::F64;
    fn to_f64(self) -> f64 {
        self
    }
    fn from_f64(v: f64) -> Self {
        v
    }
    fn represents(_: f64) -> bool {
        true
    }
}

/// What a device array can hold: plain values, or a shader struct (whose layout the build
/// script reflected; see `kernel::structs`). `stride` is the bytes per element.
pub trait Stored: Send + Sync + 'static {
    /// Bytes per element in a device array.
    fn stride() -> u64;
}

macro_rules! stored_pod {
    ($($t:ty),*) => {$(
        impl Stored for $t {
            fn stride() -> u64 {
                std::mem::size_of::<$t>() as u64
            }
        }
    )*};
}
stored_pod!(u32, i32, f32, f64, [u32; 2], [u32; 4]);

impl<T: Scalar> Stored for [T; 2] {
    fn stride() -> u64 {
        2 * T::KIND.size()
    }
}
