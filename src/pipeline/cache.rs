//! Compiled pipelines, keyed by (shader, variant flags, override constants, bounds checks).

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use wgpu::util::DeviceExt;

use super::registry::{BindingKind, ShaderId, ShaderVariant};
use crate::gpu::Context;
use crate::{Error, Result};

/// Everything that selects one compiled pipeline.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct KernelKey {
    shader: ShaderId,
    defines: Vec<&'static str>,
    constants: Vec<(&'static str, u32)>,
    bounds_checks: bool,
}

impl KernelKey {
    /// The shader with no flags, default constants and naga's bounds checks on.
    pub(crate) fn new(shader: ShaderId) -> Self {
        KernelKey { shader, defines: Vec::new(), constants: Vec::new(), bounds_checks: true }
    }

    /// The `SUBGROUP` variant when the context uses subgroups.
    pub(crate) fn subgroups(self, ctx: &Context) -> Self {
        self.flag("SUBGROUP", ctx.subgroups())
    }

    /// Defines `name` for the preprocessor when `on`.
    pub(crate) fn flag(mut self, name: &'static str, on: bool) -> Self {
        if on && !self.defines.contains(&name) {
            self.defines.push(name);
            self.defines.sort_unstable();
        }
        self
    }

    /// Sets an `override` constant.
    pub(crate) fn constant(mut self, name: &'static str, value: u32) -> Self {
        self.constants.retain(|c| c.0 != name);
        self.constants.push((name, value));
        self.constants.sort_unstable();
        self
    }

    /// Drops naga's bounds checks. Only for inputs the host has validated: every index a
    /// kernel reads through must have been checked on upload.
    pub(crate) fn unchecked(mut self) -> Self {
        self.bounds_checks = false;
        self
    }

    fn variant(&self) -> &'static ShaderVariant {
        self.shader.info().variant(&self.defines)
    }

    fn label(&self) -> String {
        format!("{}{:?}{:?}", self.shader.info().name, self.defines, self.constants)
    }
}

/// A compiled compute pipeline with the interface it was reflected with.
#[derive(Debug)]
pub(crate) struct Kernel {
    pipeline: wgpu::ComputePipeline,
    layout: wgpu::BindGroupLayout,
    variant: &'static ShaderVariant,
    name: &'static str,
    /// Invocations per workgroup along x, after overrides.
    pub(crate) workgroup_size: u32,
}

/// Pipelines compiled so far. Compilation happens at most once per key, outside the map's
/// lock, so threads asking for other keys are not held up.
/// A kernel compiled once, on first use; concurrent askers wait for the same compilation.
type Slot = Arc<OnceLock<Result<Arc<Kernel>>>>;

#[derive(Default)]
pub(crate) struct PipelineCache {
    map: Mutex<HashMap<KernelKey, Slot>>,
    compiled: AtomicUsize,
}

impl PipelineCache {
    pub(crate) fn get(&self, ctx: &Context, key: &KernelKey) -> Result<Arc<Kernel>> {
        let slot = {
            let mut map = self.map.lock().unwrap_or_else(|p| p.into_inner());
            map.entry(key.clone()).or_default().clone()
        };
        slot.get_or_init(|| {
            self.compiled.fetch_add(1, Ordering::Relaxed);
            compile(ctx, key).map(Arc::new)
        })
        .clone()
    }

    /// How many pipelines have been compiled (each key once).
    pub(crate) fn compiled(&self) -> usize {
        self.compiled.load(Ordering::Relaxed)
    }
}

fn compile(ctx: &Context, key: &KernelKey) -> Result<Kernel> {
    ctx.check_alive()?;
    let variant = key.variant();
    let device = ctx.device();
    let label = key.label();
    for (name, _) in &key.constants {
        if !variant.overrides.iter().any(|o| o.name == *name) {
            return Err(Error::Validation(format!("{label}: shader has no override named {name}")));
        }
    }
    let workgroup_size = match variant.workgroup_size_override {
        Some(name) => key
            .constants
            .iter()
            .find(|c| c.0 == name)
            .map(|c| c.1)
            .or_else(|| variant.overrides.iter().find(|o| o.name == name).and_then(|o| o.default))
            .ok_or_else(|| Error::Validation(format!("{label}: workgroup size override {name} has no value")))?,
        None => variant.workgroup_size[0],
    };
    let max = ctx.limits().max_compute_invocations_per_workgroup;
    if workgroup_size > max {
        return Err(Error::LimitExceeded {
            what: format!("kernel {label}"),
            limit: "max_compute_invocations_per_workgroup",
            requested: workgroup_size as u64,
            max: max as u64,
        });
    }

    let (pipeline, layout) = ctx.scoped(&format!("compiling {label}"), || {
        let source = wgpu::ShaderModuleDescriptor {
            label: Some(&label),
            source: wgpu::ShaderSource::Wgsl(variant.source.into()),
        };
        let module = if key.bounds_checks {
            device.create_shader_module(source)
        } else {
            // SAFETY: unchecked kernels are only requested for matrices whose indices the host
            // validated on upload (see `KernelKey::unchecked`), so every access is in bounds.
            unsafe { device.create_shader_module_trusted(source, wgpu::ShaderRuntimeChecks::unchecked()) }
        };
        let entries: Vec<wgpu::BindGroupLayoutEntry> = variant
            .bindings
            .iter()
            .map(|b| wgpu::BindGroupLayoutEntry {
                binding: b.binding,
                visibility: wgpu::ShaderStages::COMPUTE,
                ty: wgpu::BindingType::Buffer {
                    ty: match b.kind {
                        BindingKind::Uniform => wgpu::BufferBindingType::Uniform,
                        BindingKind::StorageRead => wgpu::BufferBindingType::Storage { read_only: true },
                        BindingKind::StorageReadWrite => wgpu::BufferBindingType::Storage { read_only: false },
                    },
                    has_dynamic_offset: false,
                    min_binding_size: None,
                },
                count: None,
            })
            .collect();
        let layout = device
            .create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor { label: Some(&label), entries: &entries });
        let pipeline_layout = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
            label: Some(&label),
            bind_group_layouts: &[Some(&layout)],
            immediate_size: 0,
        });
        let constants: Vec<(&str, f64)> = key.constants.iter().map(|&(n, v)| (n, v as f64)).collect();
        let pipeline = device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
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
    Ok(Kernel { pipeline, layout, variant, name: key.shader.info().name, workgroup_size })
}

impl Kernel {
    /// Makes a bind group: `params` goes to binding 0, then `resources` in binding order,
    /// each named as in the shader. A name or count that differs from the reflection is a
    /// wgsparse bug and is reported as [`Error::Validation`] before wgpu sees it.
    pub(crate) fn bind<P: bytemuck::Pod>(
        &self,
        ctx: &Context,
        params: &P,
        resources: &[(&str, wgpu::BufferBinding<'_>)],
    ) -> Result<wgpu::BindGroup> {
        let bindings = self.variant.bindings;
        let params_size = bindings.first().map(|b| b.size as usize);
        if params_size != Some(std::mem::size_of::<P>()) {
            return Err(Error::Validation(format!(
                "{}: params struct is {} bytes on the host, {:?} in the shader",
                self.name,
                std::mem::size_of::<P>(),
                params_size
            )));
        }
        let names: Vec<&str> = resources.iter().map(|r| r.0).collect();
        let expected: Vec<&str> = bindings[1..].iter().map(|b| b.name).collect();
        if names != expected {
            return Err(Error::Validation(format!(
                "{}: host binds {names:?}, shader declares {expected:?}",
                self.name
            )));
        }
        let max = ctx.limits().max_storage_buffer_binding_size;
        for (name, b) in resources {
            let size = b.size.map_or(b.buffer.size() - b.offset, |s| s.get());
            if size > max {
                return Err(Error::LimitExceeded {
                    what: format!("{} binding {name}", self.name),
                    limit: "max_storage_buffer_binding_size",
                    requested: size,
                    max,
                });
            }
        }
        let device = ctx.device();
        ctx.scoped(self.name, || {
            let uniform = device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
                label: Some("params"),
                contents: bytemuck::bytes_of(params),
                usage: wgpu::BufferUsages::UNIFORM,
            });
            let mut entries = vec![wgpu::BindGroupEntry { binding: 0, resource: uniform.as_entire_binding() }];
            for (i, (_, resource)) in resources.iter().enumerate() {
                entries.push(wgpu::BindGroupEntry {
                    binding: i as u32 + 1,
                    resource: wgpu::BindingResource::Buffer(resource.clone()),
                });
            }
            device.create_bind_group(&wgpu::BindGroupDescriptor {
                label: Some(self.name),
                layout: &self.layout,
                entries: &entries,
            })
        })
    }

    /// Records enough workgroups for one invocation per item.
    pub(crate) fn dispatch_items(
        &self,
        ctx: &Context,
        pass: &mut wgpu::ComputePass<'_>,
        bind_group: &wgpu::BindGroup,
        items: u64,
    ) -> Result<()> {
        self.dispatch(ctx, pass, bind_group, items.div_ceil(self.workgroup_size as u64))
    }

    /// Records `workgroups` workgroups, folded into two dimensions past the per-dimension
    /// limit. Shaders recover the linear index as `id.x + id.y * num_workgroups.x` and
    /// bound-check it themselves.
    pub(crate) fn dispatch(
        &self,
        ctx: &Context,
        pass: &mut wgpu::ComputePass<'_>,
        bind_group: &wgpu::BindGroup,
        workgroups: u64,
    ) -> Result<()> {
        if workgroups == 0 {
            return Ok(());
        }
        let (x, y) =
            fold_workgroups(workgroups, ctx.limits().max_compute_workgroups_per_dimension).ok_or_else(|| {
                Error::LimitExceeded {
                    what: format!("dispatch of {}", self.name),
                    limit: "max_compute_workgroups_per_dimension",
                    requested: workgroups,
                    max: (ctx.limits().max_compute_workgroups_per_dimension as u64).pow(2),
                }
            })?;
        pass.set_pipeline(&self.pipeline);
        pass.set_bind_group(0, Some(bind_group), &[]);
        pass.dispatch_workgroups(x, y, 1);
        Ok(())
    }
}

/// Splits a linear workgroup count into `(x, y)` with `x, y <= max` and `x * y >= n`,
/// wasting fewer than `y` workgroups.
pub(crate) fn fold_workgroups(n: u64, max: u32) -> Option<(u32, u32)> {
    let max = max.max(1) as u64;
    let y = n.div_ceil(max);
    if y > max {
        return None;
    }
    let x = n.div_ceil(y);
    Some((x as u32, y as u32))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pipeline::registry::ids;
    use crate::ContextOptions;

    #[test]
    fn a_key_is_compiled_once_even_when_threads_race_for_it() {
        let ctx = Context::new_blocking(ContextOptions::from_env().unwrap()).expect("a GPU adapter (lavapipe will do)");
        let key = KernelKey::new(ids::SCALE_VECTOR).constant("WG_SIZE", 64);
        let before = ctx.inner.pipelines.compiled();
        let kernels: Vec<Arc<Kernel>> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..8).map(|_| s.spawn(|| ctx.inner.pipelines.get(&ctx, &key).unwrap())).collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        assert_eq!(ctx.inner.pipelines.compiled(), before + 1);
        assert!(kernels.iter().all(|k| Arc::ptr_eq(k, &kernels[0])));
        assert_eq!(kernels[0].workgroup_size, 64);
        // Another constant is another pipeline.
        ctx.inner.pipelines.get(&ctx, &key.clone().constant("WG_SIZE", 128)).unwrap();
        assert_eq!(ctx.inner.pipelines.compiled(), before + 2);
    }

    #[test]
    fn a_binding_named_differently_on_the_host_is_refused() {
        let ctx = Context::new_blocking(ContextOptions::from_env().unwrap()).expect("a GPU adapter (lavapipe will do)");
        let kernel = ctx.inner.pipelines.get(&ctx, &KernelKey::new(ids::SCALE_VECTOR)).unwrap();
        let y = ctx.zeros::<f32>(4).unwrap();
        let params = [4u32, 0, 0, 0];
        let err = kernel.bind(&ctx, &params, &[("z", y.binding())]).unwrap_err();
        assert!(matches!(err, Error::Validation(ref m) if m.contains("z")), "{err}");
        let err = kernel.bind(&ctx, &[0u32; 2], &[("y", y.binding())]).unwrap_err();
        assert!(matches!(err, Error::Validation(ref m) if m.contains("params")), "{err}");
        kernel.bind(&ctx, &params, &[("y", y.binding())]).unwrap();
    }

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
