//! The shaders wgsparse ships, as validated and reflected by `build.rs` with naga.
//!
//! One [`ShaderInfo`] per file in `shaders/`; one [`ShaderVariant`] per combination of the
//! `#ifdef` flags the file uses (for example with and without `SUBGROUP`). Host code binds
//! by the reflected names, so a binding that changes on one side only is caught.

/// Index of a shader in [`SHADERS`]; the constants in [`ids`] name them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ShaderId(pub usize);

/// One shader file.
#[derive(Debug)]
pub struct ShaderInfo {
    /// File stem, e.g. `spmv_csr_merge`.
    pub name: &'static str,
    /// The `#ifdef` flags the file (with its imports) mentions.
    pub flags: &'static [&'static str],
    /// Every combination of flags, preprocessed and validated.
    pub variants: &'static [ShaderVariant],
}

/// One preprocessed, naga-validated variant of a shader.
#[derive(Debug)]
pub struct ShaderVariant {
    /// Flags defined for this variant.
    pub defines: &'static [&'static str],
    /// WGSL after `#import` and `#ifdef` processing.
    pub source: &'static str,
    /// `@group(0)` bindings in binding order; `params` (uniform) first.
    pub bindings: &'static [BindingInfo],
    /// Pipeline-overridable constants.
    pub overrides: &'static [OverrideInfo],
    /// `@workgroup_size` as written (1 where an override sets it).
    pub workgroup_size: [u32; 3],
    /// The override that sets the x workgroup size, if any.
    pub workgroup_size_override: Option<&'static str>,
    /// The compute entry point.
    pub entry_point: &'static str,
}

/// A reflected binding.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BindingInfo {
    /// `@binding(n)`.
    pub binding: u32,
    /// The WGSL variable name; host code binds by it.
    pub name: &'static str,
    /// How the shader accesses it.
    pub kind: BindingKind,
    /// Struct size for uniforms, element stride for storage arrays.
    pub size: u32,
}

/// Address space and access of a binding.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BindingKind {
    /// `var<uniform>`.
    Uniform,
    /// `var<storage, read>`.
    StorageRead,
    /// `var<storage, read_write>`.
    StorageReadWrite,
}

/// A reflected `override` constant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OverrideInfo {
    /// Its name.
    pub name: &'static str,
    /// Its default when it is a `u32` literal.
    pub default: Option<u32>,
}

impl ShaderInfo {
    /// The variant with exactly these flags defined (others undefined); flags the shader
    /// does not use are ignored.
    pub fn variant(&self, defines: &[&str]) -> &'static ShaderVariant {
        let wanted: Vec<&str> = self.flags.iter().copied().filter(|f| defines.contains(f)).collect();
        self.variants
            .iter()
            .find(|v| v.defines == wanted.as_slice())
            .expect("build.rs emits every combination of flags")
    }
}

impl ShaderId {
    /// The shader's registry entry.
    pub fn info(self) -> &'static ShaderInfo {
        &SHADERS[self.0]
    }
}

include!(concat!(env!("OUT_DIR"), "/shader_registry.rs"));
