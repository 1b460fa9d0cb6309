//! The shaders wgsparse ships, as validated and reflected by `build.rs` with naga, and the
//! typed interface generated for each (`kernel::shaders::<name>`).
//!
//! One [`ShaderInfo`] per file in `shaders/`; one [`ShaderVariant`] per combination of the
//! `#ifdef` flags the file uses (with and without `SUBGROUP`, f32 and f64, …), indexed by
//! the bit mask of its defined flags in [`ShaderInfo::flags`] order.

/// Index of a shader in [`SHADERS`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ShaderId(pub usize);

/// One shader file.
#[derive(Debug)]
pub struct ShaderInfo {
    /// File stem, e.g. `spmv_csr_merge`.
    pub name: &'static str,
    /// The `#ifdef` flags the file (with its imports) mentions, sorted.
    pub flags: &'static [&'static str],
    /// Storage bindings in binding order (the same in every variant).
    pub bindings: &'static [BindingInfo],
    /// `override` constants and their WGSL defaults.
    pub overrides: &'static [OverrideInfo],
    /// Every combination of flags, preprocessed and validated; variant `m` defines the flags
    /// whose bits are set in `m`.
    pub variants: &'static [ShaderVariant],
}

/// One preprocessed, naga-validated variant of a shader.
#[derive(Debug)]
pub struct ShaderVariant {
    /// Flags defined for this variant.
    pub defines: &'static [&'static str],
    /// WGSL after `#import` and `#ifdef` processing.
    pub source: &'static str,
    /// `@workgroup_size` as written (1 where an override sets it).
    pub workgroup_size: [u32; 3],
    /// The override that sets the x workgroup size, if any.
    pub workgroup_size_override: Option<&'static str>,
    /// The compute entry point.
    pub entry_point: &'static str,
    /// Bytes of `var<immediate> params` (0 without).
    pub immediate_size: u32,
}

/// A reflected storage binding.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BindingInfo {
    /// `@binding(n)`.
    pub binding: u32,
    /// The WGSL variable name.
    pub name: &'static str,
    /// `read_write` (else `read`).
    pub writable: bool,
}

/// A reflected `override` constant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OverrideInfo {
    /// Its name.
    pub name: &'static str,
    /// Its WGSL default, as written.
    pub default: &'static str,
}

impl ShaderId {
    /// The shader's registry entry.
    pub fn info(self) -> &'static ShaderInfo {
        &SHADERS[self.0]
    }
}

impl ShaderInfo {
    /// The variant with exactly these flags defined; flags the shader does not use are
    /// ignored.
    pub fn variant(&self, defines: &[&str]) -> &'static ShaderVariant {
        let mask =
            self.flags.iter().enumerate().filter(|(_, f)| defines.contains(f)).map(|(i, _)| 1 << i).sum::<usize>();
        &self.variants[mask]
    }
}

/// The generated registry and typed shader modules.
mod generated {
    #![allow(clippy::all)]
    use super::*;
    include!(concat!(env!("OUT_DIR"), "/kernels.rs"));
}

pub use generated::*;
