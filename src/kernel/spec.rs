//! What the generated shader interfaces implement: one trait per part (params, flags,
//! overrides, bindings) and [`ShaderSpec`] joining them. Host code never writes these by
//! hand; `build.rs` derives them from naga's reflection of each shader.

use std::fmt::Debug;
use std::hash::Hash;

pub use super::registry::ShaderId;
pub use crate::element::{ElementKind, Scalar, Stored};
pub use crate::gpu::Bind;
pub(crate) use crate::gpu::BindEntry;

/// A shader's typed interface.
pub(crate) trait ShaderSpec: 'static {
    /// Its registry entry.
    const ID: ShaderId;
    /// Whether it is compiled per element type (it uses `Real`).
    const ELEMENT_GENERIC: bool;
    /// `var<immediate> params`.
    type Params<T: Scalar>: Immediate;
    /// The storage bindings, by name.
    type Bindings<'a, T: Scalar>: BindingSet<'a>;
    /// The shader's own `#ifdef` flags.
    type Flags: FlagSet;
    /// The `override` constants.
    type Overrides: OverrideSet;
}

/// Immediate data, at most this many bytes (every adapter wgsparse accepts has at least 128).
pub(crate) const MAX_IMMEDIATE_BYTES: usize = 128;

/// The bytes of one dispatch's `params`, as `set_immediates` takes them.
#[derive(Clone, Copy)]
pub(crate) struct ImmediateData {
    bytes: [u8; MAX_IMMEDIATE_BYTES],
    len: usize,
}

impl Default for ImmediateData {
    fn default() -> Self {
        ImmediateData { bytes: [0; MAX_IMMEDIATE_BYTES], len: 0 }
    }
}

impl ImmediateData {
    /// Sets the size (the params struct's span, a multiple of 4).
    pub(crate) fn resize(&mut self, len: usize) {
        assert!(len <= MAX_IMMEDIATE_BYTES, "params of {len} bytes: build.rs keeps them within {MAX_IMMEDIATE_BYTES}");
        self.len = len;
    }

    /// Writes `value` at byte `offset` (offsets come from naga's layout).
    pub(crate) fn put<V: bytemuck::Pod>(&mut self, offset: usize, value: V) {
        let bytes = bytemuck::bytes_of(&value);
        self.bytes[offset..offset + bytes.len()].copy_from_slice(bytes);
    }

    pub(crate) fn as_bytes(&self) -> &[u8] {
        &self.bytes[..self.len]
    }
}

/// A params struct that can be written as immediate data.
pub(crate) trait Immediate {
    fn write(&self, out: &mut ImmediateData);
}

/// A shader's own flags: selects the variant together with subgroups and the element type.
pub(crate) trait FlagSet: Copy + Eq + Hash + Debug + Default {
    /// The variant index (bit mask over the shader's flags).
    fn variant(&self, subgroups: bool, element: ElementKind) -> usize;
}

/// A shader's `override` constants.
pub(crate) trait OverrideSet: Copy + Eq + Hash + Debug + Default {
    /// `(name, value)` for `PipelineCompilationOptions::constants`.
    fn constants(&self) -> Vec<(&'static str, f64)>;
    /// Invocations per workgroup along x.
    fn workgroup_size(&self) -> u32;
}

/// A shader's bindings, in binding order.
pub(crate) trait BindingSet<'a> {
    fn entries(&self) -> Vec<BindEntry<'a>>;
}
