//! Compiled pipelines, keyed by (shader variant, override constants), and the typed handle
//! ops dispatch through. Depends on the device only, never on the `Context`.

use std::collections::HashMap;
use std::marker::PhantomData;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use super::registry::{ShaderInfo, ShaderVariant};
use super::spec::{BindingSet, FlagSet, Immediate, ImmediateData, OverrideSet, ShaderSpec, MAX_IMMEDIATE_BYTES};
use crate::element::{ElementKind, Scalar};
use crate::gpu::{next_object_id, BindEntry, BindKey, Device};
use crate::{Error, Result};

/// Everything that selects one compiled pipeline.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct KernelKey {
    shader: usize,
    variant: usize,
    /// Override constants as (name, f64 bits).
    constants: Vec<(&'static str, u64)>,
}

/// A compiled compute pipeline with its bind-group layout.
#[derive(Debug)]
pub(crate) struct Compiled {
    /// Process-unique, for bind-group cache keys.
    id: u64,
    pipeline: wgpu::ComputePipeline,
    layout: wgpu::BindGroupLayout,
    info: &'static ShaderInfo,
    variant: &'static ShaderVariant,
    workgroup_size: u32,
}

/// A kernel compiled once, on first use; concurrent askers wait for the same compilation.
type Slot = Arc<OnceLock<Result<Arc<Compiled>>>>;

/// Pipelines compiled so far. Compilation happens at most once per key, outside the map's
/// lock, so threads asking for other keys are not held up.
#[derive(Default)]
pub(crate) struct PipelineCache {
    map: Mutex<HashMap<KernelKey, Slot>>,
    compiled: AtomicUsize,
}

impl PipelineCache {
    /// How many pipelines have been compiled (each key once).
    pub(crate) fn compiled(&self) -> usize {
        self.compiled.load(Ordering::Relaxed)
    }

    fn get(&self, device: &Device, key: KernelKey) -> Result<Arc<Compiled>> {
        let slot = {
            let mut map = self.map.lock().unwrap_or_else(|p| p.into_inner());
            map.entry(key.clone()).or_default().clone()
        };
        slot.get_or_init(|| {
            self.compiled.fetch_add(1, Ordering::Relaxed);
            compile(device, &key).map(Arc::new)
        })
        .clone()
    }
}

/// A compiled shader for element type `T` with its typed interface: what ops hold and
/// record. (Kernels that do not depend on the element type are compiled once, as `f32`.)
pub(crate) struct Kernel<S: ShaderSpec, T: Scalar = f32> {
    compiled: Arc<Compiled>,
    _shader: PhantomData<fn() -> (S, T)>,
}

impl<S: ShaderSpec, T: Scalar> Clone for Kernel<S, T> {
    fn clone(&self) -> Self {
        Kernel { compiled: self.compiled.clone(), _shader: PhantomData }
    }
}

impl<S: ShaderSpec, T: Scalar> std::fmt::Debug for Kernel<S, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Kernel({}{:?})", self.compiled.info.name, self.compiled.variant.defines)
    }
}

impl<S: ShaderSpec, T: Scalar> Kernel<S, T> {
    /// The variant of `S` for the context's subgroup mode and element `T`, with `flags` and
    /// `overrides`, compiled once per device. Kernels are compiled without naga's bounds
    /// checks: every op validates its operands' shapes before recording, and device formats
    /// are built only from validated host data or by kernels of this crate.
    pub(crate) fn get(
        device: &Device,
        cache: &PipelineCache,
        subgroups: bool,
        flags: S::Flags,
        overrides: S::Overrides,
    ) -> Result<Self> {
        let element = if S::ELEMENT_GENERIC { T::KIND } else { ElementKind::F32 };
        if S::ELEMENT_GENERIC && !device.features().contains(element.required_feature()) {
            return Err(Error::Unsupported(format!(
                "{} kernels need the {:?} feature, which adapter {:?} lacks",
                element.name(),
                element.required_feature(),
                device.info().name
            )));
        }
        let key = KernelKey {
            shader: S::ID.0,
            variant: flags.variant(subgroups, element),
            constants: overrides.constants().into_iter().map(|(n, v)| (n, v.to_bits())).collect(),
        };
        let max = device.limits().max_compute_invocations_per_workgroup;
        if overrides.workgroup_size() > max {
            return Err(Error::LimitExceeded {
                what: format!("kernel {}", S::ID.info().name),
                limit: "max_compute_invocations_per_workgroup",
                requested: overrides.workgroup_size() as u64,
                max: max as u64,
            });
        }
        Ok(Kernel { compiled: cache.get(device, key)?, _shader: PhantomData })
    }

    /// Invocations per workgroup.
    pub(crate) fn workgroup_size(&self) -> u32 {
        self.compiled.workgroup_size
    }

    /// The bind group for `bindings`, made on first use and cached on the device.
    ///
    /// Checked when made, so that no misuse reaches wgpu: every buffer belongs to `device`,
    /// no read-write binding overlaps another binding, and every range is within the
    /// binding-size limit and aligned.
    pub(crate) fn bind_group<'a>(&self, device: &Device, bindings: &S::Bindings<'a, T>) -> Result<wgpu::BindGroup> {
        let entries = bindings.entries();
        let key =
            BindKey { kernel: self.compiled.id, ranges: entries.iter().map(|e| (e.id, e.offset, e.size)).collect() };
        device.bind_groups().get_or_try_insert(key, || self.make_bind_group(device, &entries))
    }

    fn make_bind_group(&self, device: &Device, entries: &[BindEntry<'_>]) -> Result<wgpu::BindGroup> {
        let name = self.compiled.info.name;
        let limits = device.limits();
        for (i, e) in entries.iter().enumerate() {
            if e.device != device.id() {
                return Err(Error::ContextMismatch(format!("{name}: operand {} belongs to another context", e.name)));
            }
            if let Some(other) =
                entries.iter().enumerate().find(|(j, o)| *j != i && (e.writable || o.writable) && e.overlaps(o))
            {
                return Err(Error::Aliasing(format!(
                    "{name}: {} and {} share memory, but one of them is written",
                    e.name, other.1.name
                )));
            }
            if e.size > limits.max_storage_buffer_binding_size {
                return Err(Error::LimitExceeded {
                    what: format!("{name} binding {}", e.name),
                    limit: "max_storage_buffer_binding_size",
                    requested: e.size,
                    max: limits.max_storage_buffer_binding_size,
                });
            }
            if e.offset % limits.min_storage_buffer_offset_alignment as u64 != 0 {
                return Err(Error::Validation(format!("{name}: binding {} at unaligned offset {}", e.name, e.offset)));
            }
        }
        device.scoped(name, || {
            let resources: Vec<wgpu::BindGroupEntry<'_>> = entries
                .iter()
                .enumerate()
                .map(|(i, e)| wgpu::BindGroupEntry {
                    binding: i as u32,
                    resource: wgpu::BindingResource::Buffer(wgpu::BufferBinding {
                        buffer: e.buffer,
                        offset: e.offset,
                        size: std::num::NonZeroU64::new(e.size),
                    }),
                })
                .collect();
            device.wgpu().create_bind_group(&wgpu::BindGroupDescriptor {
                label: Some(name),
                layout: &self.compiled.layout,
                entries: &resources,
            })
        })
    }

    /// Records pipeline, bind group and params, then `dispatch` (direct or indirect).
    pub(crate) fn record(
        &self,
        pass: &mut wgpu::ComputePass<'_>,
        group: &wgpu::BindGroup,
        params: &S::Params<T>,
        dispatch: Dispatch<'_>,
    ) {
        pass.set_pipeline(&self.compiled.pipeline);
        pass.set_bind_group(0, Some(group), &[]);
        if self.compiled.variant.immediate_size > 0 {
            let mut data = ImmediateData::default();
            params.write(&mut data);
            pass.set_immediates(0, data.as_bytes());
        }
        match dispatch {
            Dispatch::Direct(x, y) => pass.dispatch_workgroups(x, y, 1),
            Dispatch::Indirect(buffer, offset) => pass.dispatch_workgroups_indirect(buffer, offset),
        }
    }
}

/// How many workgroups a recorded dispatch runs.
#[derive(Clone, Copy)]
pub(crate) enum Dispatch<'a> {
    /// (x, y) workgroups.
    Direct(u32, u32),
    /// Three u32 counts read from the buffer at this byte offset when the dispatch runs.
    Indirect(&'a wgpu::Buffer, u64),
}

/// Splits a linear workgroup count into `(x, y)` with `x, y <= max` and `x * y >= n`,
/// wasting fewer than `y` workgroups. Shaders recover the linear index as
/// `id.x + id.y * num_workgroups.x` and bound-check it themselves.
pub(crate) fn fold_workgroups(n: u64, max: u32) -> Option<(u32, u32)> {
    let max = max.max(1) as u64;
    let y = n.div_ceil(max);
    if y > max {
        return None;
    }
    let x = n.div_ceil(y.max(1));
    Some((x as u32, y as u32))
}

fn compile(device: &Device, key: &KernelKey) -> Result<Compiled> {
    device.check_alive()?;
    let info = &super::registry::SHADERS[key.shader];
    let variant = &info.variants[key.variant];
    let label = format!("{}{:?}", info.name, variant.defines);
    let workgroup_size = match variant.workgroup_size_override {
        Some(name) => key
            .constants
            .iter()
            .find(|c| c.0 == name)
            .map(|c| f64::from_bits(c.1) as u32)
            .ok_or_else(|| Error::Validation(format!("{label}: workgroup size override {name} has no value")))?,
        None => variant.workgroup_size[0],
    };
    let immediate_size = variant.immediate_size;
    let max_immediates = device.limits().max_immediate_size.min(MAX_IMMEDIATE_BYTES as u32);
    if immediate_size > max_immediates {
        return Err(Error::LimitExceeded {
            what: format!("kernel {label} params"),
            limit: "max_immediate_size",
            requested: immediate_size as u64,
            max: max_immediates as u64,
        });
    }
    let wgpu_device = device.wgpu();
    let (pipeline, layout) = device.scoped(&format!("compiling {label}"), || {
        let source = wgpu::ShaderModuleDescriptor {
            label: Some(&label),
            source: wgpu::ShaderSource::Wgsl(variant.source.into()),
        };
        // SAFETY: ops validate every operand's shape before recording and device formats hold
        // only validated or kernel-built indices (see `Kernel::get`), so every access is in
        // bounds without naga's checks.
        let module =
            unsafe { wgpu_device.create_shader_module_trusted(source, wgpu::ShaderRuntimeChecks::unchecked()) };
        let entries: Vec<wgpu::BindGroupLayoutEntry> = info
            .bindings
            .iter()
            .map(|b| wgpu::BindGroupLayoutEntry {
                binding: b.binding,
                visibility: wgpu::ShaderStages::COMPUTE,
                ty: wgpu::BindingType::Buffer {
                    ty: wgpu::BufferBindingType::Storage { read_only: !b.writable },
                    has_dynamic_offset: false,
                    min_binding_size: None,
                },
                count: None,
            })
            .collect();
        let layout = wgpu_device
            .create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor { label: Some(&label), entries: &entries });
        let pipeline_layout = wgpu_device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
            label: Some(&label),
            bind_group_layouts: &[Some(&layout)],
            immediate_size,
        });
        let constants: Vec<(&str, f64)> = key.constants.iter().map(|&(n, v)| (n, f64::from_bits(v))).collect();
        let pipeline = wgpu_device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
            label: Some(&label),
            layout: Some(&pipeline_layout),
            module: &module,
            entry_point: Some(variant.entry_point),
            compilation_options: wgpu::PipelineCompilationOptions {
                constants: &constants,
                zero_initialize_workgroup_memory: false,
            },
            cache: None,
        });
        (pipeline, layout)
    })?;
    Ok(Compiled { id: next_object_id(), pipeline, layout, info, variant, workgroup_size })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn folding_covers_every_workgroup_within_limits() {
        for &(n, max) in
            &[(1u64, 65535u32), (65535, 65535), (65536, 65535), (65535 * 65535, 65535), (1000, 40), (49, 7)]
        {
            let (x, y) = fold_workgroups(n, max).unwrap();
            assert!(x <= max && y <= max, "{n} {max}: {x} {y}");
            assert!(x as u64 * y as u64 >= n && (x as u64 * y as u64) - n < y as u64, "{n} {max}: {x} {y}");
        }
        assert_eq!(fold_workgroups(50, 7), None);
    }
}
