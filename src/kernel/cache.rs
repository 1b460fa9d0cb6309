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

/// The layouts every variant of a shader shares (build.rs makes their bindings equal):
/// bind groups made for one variant serve all, and switching between variants in a pass
/// changes only the pipeline — wgpu then neither rebinds groups nor clears immediates.
#[derive(Debug)]
struct Layouts {
    /// Process-unique, for bind-group cache keys and the pass state.
    id: u64,
    bind_group: wgpu::BindGroupLayout,
    pipeline: wgpu::PipelineLayout,
}

/// A compiled compute pipeline with its layouts.
#[derive(Debug)]
pub(crate) struct Compiled {
    /// Process-unique, for the pass state.
    id: u64,
    pipeline: wgpu::ComputePipeline,
    layouts: Arc<Layouts>,
    info: &'static ShaderInfo,
    variant: &'static ShaderVariant,
    workgroup_size: u32,
    /// Last, so that the pipeline and its layouts go first: plans hold kernels, and the
    /// device's state must release the device last (`Lifecycle`).
    _device: Device,
}

/// A kernel compiled once, on first use; concurrent askers wait for the same compilation.
type Slot = Arc<OnceLock<Result<Arc<Compiled>>>>;

/// Pipelines compiled so far. Compilation happens at most once per key, outside the map's
/// lock, so threads asking for other keys are not held up.
#[derive(Default)]
pub(crate) struct PipelineCache {
    map: Mutex<HashMap<KernelKey, Slot>>,
    /// Layouts by (shader, immediate bytes).
    layouts: Mutex<HashMap<(usize, u32), Arc<Layouts>>>,
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
            compile(device, &key, |info, size| self.layouts(device, info, size)).map(Arc::new)
        })
        .clone()
    }

    /// The layouts of `info`'s variants with `immediate_size` bytes of params, made once.
    fn layouts(&self, device: &Device, info: &'static ShaderInfo, immediate_size: u32) -> Result<Arc<Layouts>> {
        let key = (info as *const ShaderInfo as usize, immediate_size);
        if let Some(found) = self.layouts.lock().unwrap_or_else(|p| p.into_inner()).get(&key) {
            return Ok(found.clone());
        }
        let made = Arc::new(make_layouts(device, info, immediate_size)?);
        let mut layouts = self.layouts.lock().unwrap_or_else(|p| p.into_inner());
        Ok(layouts.entry(key).or_insert(made).clone())
    }
}

/// What a pass has bound, so that a dispatch re-setting the same pipeline or bind group
/// records nothing for it (a run re-applied to the same operands binds once).
#[derive(Debug, Default)]
pub(crate) struct PassState {
    pipeline: Option<u64>,
    /// The bound group and the layouts it was made for.
    group: Option<(u64, wgpu::BindGroup)>,
    /// Dispatches recorded (kept by `forget`).
    dispatches: usize,
}

impl PassState {
    /// Forgets what is bound (after something else recorded into the pass).
    pub(crate) fn forget(&mut self) {
        self.pipeline = None;
        self.group = None;
    }

    /// Dispatches recorded through this state.
    pub(crate) fn dispatches(&self) -> usize {
        self.dispatches
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
        let layouts = self.compiled.layouts.id;
        let key = BindKey { layouts, ranges: entries.iter().map(|e| (e.id, e.offset, e.size)).collect() };
        device.bind_groups().get_or_try_insert(key, || self.make_bind_group(device, &entries))
    }

    fn make_bind_group(&self, device: &Device, entries: &[BindEntry<'_>]) -> Result<wgpu::BindGroup> {
        let name = self.compiled.info.name;
        let limits = device.limits();
        for (i, e) in entries.iter().enumerate() {
            if e.device != device.id() {
                return Err(Error::ContextMismatch(format!("{name}: operand {} belongs to another context", e.name)));
            }
            if let Some(other) = entries.iter().enumerate().find(|(j, o)| *j != i && e.conflicts(o)) {
                return Err(Error::Aliasing(format!(
                    "{name}: {} and {} are in one buffer, and one of them is written",
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
                layout: &self.compiled.layouts.bind_group,
                entries: &resources,
            })
        })
    }

    /// Records pipeline, bind group and params, then `dispatch` (direct or indirect); a
    /// pipeline or group `state` says is bound already is not set again.
    pub(crate) fn record(
        &self,
        pass: &mut wgpu::ComputePass<'_>,
        state: &mut PassState,
        group: &wgpu::BindGroup,
        params: &S::Params<T>,
        dispatch: Dispatch<'_>,
    ) {
        if state.pipeline != Some(self.compiled.id) {
            pass.set_pipeline(&self.compiled.pipeline);
            state.pipeline = Some(self.compiled.id);
        }
        let layouts = self.compiled.layouts.id;
        if state.group.as_ref().is_none_or(|(l, g)| *l != layouts || g != group) {
            pass.set_bind_group(0, Some(group), &[]);
            state.group = Some((layouts, group.clone()));
        }
        if self.compiled.variant.immediate_size > 0 {
            let mut data = ImmediateData::default();
            params.write(&mut data);
            pass.set_immediates(0, data.as_bytes());
        }
        state.dispatches += 1;
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

fn compile(
    device: &Device,
    key: &KernelKey,
    layouts: impl FnOnce(&'static ShaderInfo, u32) -> Result<Arc<Layouts>>,
) -> Result<Compiled> {
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
    let layouts = layouts(info, immediate_size)?;
    let wgpu_device = device.wgpu();
    let pipeline = device.scoped(&format!("compiling {label}"), || {
        let source = wgpu::ShaderModuleDescriptor {
            label: Some(&label),
            source: wgpu::ShaderSource::Wgsl(variant.source.into()),
        };
        // SAFETY: ops validate every operand's shape before recording and device formats hold
        // only validated or kernel-built indices (see `Kernel::get`), so every access is in
        // bounds without naga's checks.
        let module =
            unsafe { wgpu_device.create_shader_module_trusted(source, wgpu::ShaderRuntimeChecks::unchecked()) };
        let constants: Vec<(&str, f64)> = key.constants.iter().map(|&(n, v)| (n, f64::from_bits(v))).collect();
        wgpu_device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
            label: Some(&label),
            layout: Some(&layouts.pipeline),
            module: &module,
            entry_point: Some(variant.entry_point),
            compilation_options: wgpu::PipelineCompilationOptions {
                constants: &constants,
                zero_initialize_workgroup_memory: false,
            },
            cache: None,
        })
    })?;
    Ok(Compiled { id: next_object_id(), pipeline, layouts, info, variant, workgroup_size, _device: device.clone() })
}

/// The bind-group and pipeline layouts of a shader's variants with `immediate_size` bytes of
/// params, from the reflected bindings.
fn make_layouts(device: &Device, info: &'static ShaderInfo, immediate_size: u32) -> Result<Layouts> {
    let wgpu_device = device.wgpu();
    device.scoped(&format!("layouts of {}", info.name), || {
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
        let bind_group = wgpu_device
            .create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor { label: Some(info.name), entries: &entries });
        let pipeline = wgpu_device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
            label: Some(info.name),
            bind_group_layouts: &[Some(&bind_group)],
            immediate_size,
        });
        Layouts { id: next_object_id(), bind_group, pipeline }
    })
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
