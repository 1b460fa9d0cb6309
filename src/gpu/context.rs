//! The GPU context: adapter choice, device with the adapter's own limits, optional features.

use std::fmt;
use std::sync::{Arc, Mutex};

use crate::pipeline::PipelineCache;
use crate::{Error, Result};

/// Optional features wgsparse uses when the adapter has them.
const OPTIONAL_FEATURES: wgpu::Features = wgpu::Features::SUBGROUP
    .union(wgpu::Features::TIMESTAMP_QUERY)
    .union(wgpu::Features::TIMESTAMP_QUERY_INSIDE_ENCODERS);

const NO_ADAPTER_HINT: &str = "wgsparse needs a Vulkan, Metal, DX12 or GL driver; on a machine without a GPU \
     install the lavapipe software driver (Debian/Ubuntu: `apt-get install mesa-vulkan-drivers`) or run \
     `cargo xtask test`, which does it for you";

/// How to pick and open the GPU.
#[derive(Debug, Clone)]
pub struct ContextOptions {
    /// Keep only adapters whose name contains this (case-insensitive).
    pub adapter_name: Option<String>,
    /// Backends to consider; `None` means all that wgpu was built with.
    pub backends: Option<wgpu::Backends>,
    /// Preference when several adapters remain.
    pub power_preference: wgpu::PowerPreference,
    /// Use subgroup operations when the adapter has them. `false` forces the workgroup-memory
    /// fallback everywhere, so that path can be tested on hardware with subgroups.
    pub subgroups: bool,
    /// Limits to request instead of the adapter's own (each must be within the adapter's).
    /// Tests use this to shrink binding sizes and exercise splitting.
    pub limits: Option<wgpu::Limits>,
    /// Refuse allocations (with [`Error::OutOfMemory`]) once device memory use would pass
    /// this percentage of the driver's budget, instead of letting the driver page or lose
    /// the device. Needs a driver that reports its budget (Vulkan `VK_EXT_memory_budget`,
    /// DX12); ignored elsewhere.
    pub memory_budget_percent: Option<u8>,
    /// How wgpu should trade speed for memory when it places buffers.
    pub memory_hints: wgpu::MemoryHints,
}

impl Default for ContextOptions {
    fn default() -> Self {
        ContextOptions {
            adapter_name: None,
            backends: None,
            power_preference: wgpu::PowerPreference::HighPerformance,
            subgroups: true,
            limits: None,
            memory_budget_percent: None,
            memory_hints: wgpu::MemoryHints::Performance,
        }
    }
}

impl ContextOptions {
    /// Defaults, overridden by `WGSPARSE_ADAPTER` (adapter-name substring),
    /// `WGSPARSE_BACKEND` (`vulkan|metal|dx12|gl`, comma-separated) and
    /// `WGSPARSE_SUBGROUPS=0` (force the no-subgroup path) and
    /// `WGSPARSE_MEMORY_HINTS=performance|memory`.
    pub fn from_env() -> Result<Self> {
        let mut options = ContextOptions::default();
        if let Ok(name) = std::env::var("WGSPARSE_ADAPTER") {
            if !name.is_empty() {
                options.adapter_name = Some(name);
            }
        }
        if let Ok(list) = std::env::var("WGSPARSE_BACKEND") {
            options.backends = Some(parse_backends(&list)?);
        }
        if let Ok(v) = std::env::var("WGSPARSE_MEMORY_HINTS") {
            options.memory_hints = match v.as_str() {
                "memory" => wgpu::MemoryHints::MemoryUsage,
                _ => wgpu::MemoryHints::Performance,
            };
        }
        if let Ok(v) = std::env::var("WGSPARSE_SUBGROUPS") {
            options.subgroups = !matches!(v.as_str(), "0" | "off" | "false" | "no");
        }
        Ok(options)
    }

    /// The same options with subgroups switched on or off.
    pub fn with_subgroups(mut self, on: bool) -> Self {
        self.subgroups = on;
        self
    }
}

/// Parses `vulkan,metal,dx12,gl` (any case, comma-separated).
pub fn parse_backends(list: &str) -> Result<wgpu::Backends> {
    let mut backends = wgpu::Backends::empty();
    for name in list.split(',').map(|s| s.trim().to_ascii_lowercase()).filter(|s| !s.is_empty()) {
        backends |= match name.as_str() {
            "vulkan" | "vk" => wgpu::Backends::VULKAN,
            "metal" | "mtl" => wgpu::Backends::METAL,
            "dx12" | "d3d12" => wgpu::Backends::DX12,
            "gl" | "gles" | "opengl" => wgpu::Backends::GL,
            _ => return Err(Error::UnknownBackend(name)),
        };
    }
    if backends.is_empty() {
        return Err(Error::UnknownBackend(list.to_string()));
    }
    Ok(backends)
}

/// A GPU device opened for wgsparse. Cheap to clone and safe to share across threads.
#[derive(Clone)]
pub struct Context {
    pub(crate) inner: Arc<Inner>,
}

pub(crate) struct Inner {
    pub(crate) device: wgpu::Device,
    pub(crate) queue: wgpu::Queue,
    pub(crate) info: wgpu::AdapterInfo,
    pub(crate) limits: wgpu::Limits,
    pub(crate) features: wgpu::Features,
    pub(crate) subgroups: bool,
    pub(crate) pipelines: PipelineCache,
    /// Set by the device-lost callback; checked before any work is recorded.
    pub(crate) lost: Arc<Mutex<Option<String>>>,
}

impl Context {
    /// Opens the GPU described by `options`.
    pub async fn new(options: ContextOptions) -> Result<Self> {
        let mut descriptor = wgpu::InstanceDescriptor::new_without_display_handle();
        descriptor.backends = options.backends.unwrap_or(wgpu::Backends::all());
        descriptor.memory_budget_thresholds.for_resource_creation = options.memory_budget_percent;
        let instance = wgpu::Instance::new(descriptor);
        let adapter = pick_adapter(&instance, &options).await?;
        let info = adapter.get_info();
        let adapter_limits = adapter.limits();
        let limits = match &options.limits {
            Some(l) => {
                if !l.check_limits(&adapter_limits) {
                    return Err(Error::RequestDevice(format!(
                        "requested limits exceed those of adapter {:?}",
                        info.name
                    )));
                }
                l.clone()
            }
            None => adapter_limits,
        };
        let features = adapter.features() & OPTIONAL_FEATURES;
        let (device, queue) = adapter
            .request_device(&wgpu::DeviceDescriptor {
                label: Some("wgsparse"),
                required_features: features,
                required_limits: limits.clone(),
                experimental_features: wgpu::ExperimentalFeatures::disabled(),
                memory_hints: options.memory_hints.clone(),
                trace: wgpu::Trace::Off,
            })
            .await
            .map_err(|e| Error::RequestDevice(e.to_string()))?;
        // wgpu's default handler panics; wgsparse captures errors with scopes, and anything
        // that escapes them is logged rather than allowed to abort the caller.
        device.on_uncaptured_error(Arc::new(|e| eprintln!("wgsparse: uncaptured wgpu error: {e}")));
        let lost = Arc::new(Mutex::new(None));
        let flag = lost.clone();
        device.set_device_lost_callback(move |reason, message| {
            *flag.lock().unwrap_or_else(|p| p.into_inner()) = Some(format!("{reason:?}: {message}"));
        });
        let subgroups = options.subgroups && features.contains(wgpu::Features::SUBGROUP);
        Ok(Context {
            inner: Arc::new(Inner {
                device,
                queue,
                info,
                limits,
                features,
                subgroups,
                pipelines: PipelineCache::default(),
                lost,
            }),
        })
    }

    /// Blocking [`Context::new`].
    pub fn new_blocking(options: ContextOptions) -> Result<Self> {
        pollster::block_on(Self::new(options))
    }

    /// The wgpu device (for callers that mix wgsparse with their own passes).
    pub fn device(&self) -> &wgpu::Device {
        &self.inner.device
    }
    /// The wgpu queue.
    pub fn queue(&self) -> &wgpu::Queue {
        &self.inner.queue
    }
    /// What the adapter says about itself.
    pub fn adapter_info(&self) -> &wgpu::AdapterInfo {
        &self.inner.info
    }
    /// The limits the device was opened with.
    pub fn limits(&self) -> &wgpu::Limits {
        &self.inner.limits
    }
    /// The optional features the device was opened with.
    pub fn features(&self) -> wgpu::Features {
        self.inner.features
    }
    /// Whether kernels use subgroup operations on this context.
    pub fn subgroups(&self) -> bool {
        self.inner.subgroups
    }
    /// The adapter's subgroup size range, `None` when subgroups are off or absent.
    pub fn subgroup_size_range(&self) -> Option<(u32, u32)> {
        self.inner.subgroups.then_some((self.inner.info.subgroup_min_size, self.inner.info.subgroup_max_size))
    }
    /// Whether GPU timestamps can be taken (needed by the benchmark).
    pub fn has_timestamps(&self) -> bool {
        self.inner.features.contains(wgpu::Features::TIMESTAMP_QUERY)
    }
    /// Whether this adapter runs on the CPU (lavapipe, WARP, SwiftShader).
    pub fn is_cpu(&self) -> bool {
        self.inner.info.device_type == wgpu::DeviceType::Cpu
    }

    /// A summary of the adapter: name, backend, driver, subgroups, limits.
    pub fn report(&self) -> AdapterReport {
        let i = &self.inner.info;
        AdapterReport {
            name: i.name.clone(),
            backend: format!("{:?}", i.backend),
            device_type: format!("{:?}", i.device_type),
            driver: format!("{} {}", i.driver, i.driver_info).trim().to_string(),
            subgroup_min: i.subgroup_min_size,
            subgroup_max: i.subgroup_max_size,
            subgroups_used: self.inner.subgroups,
            timestamps: self.has_timestamps(),
            max_storage_buffer_binding_size: self.inner.limits.max_storage_buffer_binding_size,
            max_buffer_size: self.inner.limits.max_buffer_size,
            max_compute_workgroups_per_dimension: self.inner.limits.max_compute_workgroups_per_dimension,
            max_compute_workgroup_storage_size: self.inner.limits.max_compute_workgroup_storage_size,
            max_compute_invocations_per_workgroup: self.inner.limits.max_compute_invocations_per_workgroup,
        }
    }

    /// How many compute pipelines this context has compiled (each kernel variant once).
    pub fn pipelines_compiled(&self) -> usize {
        self.inner.pipelines.compiled()
    }

    /// Fails with [`Error::DeviceLost`] once the device is gone. wgpu reports a loss
    /// through a callback that runs when the device is polled, so this polls (without
    /// waiting) before looking.
    pub(crate) fn check_alive(&self) -> Result<()> {
        let lost = || self.inner.lost.lock().unwrap_or_else(|p| p.into_inner()).clone();
        if lost().is_none() {
            let _ = self.inner.device.poll(wgpu::PollType::Poll);
        }
        match lost() {
            Some(why) => Err(Error::DeviceLost(why)),
            None => Ok(()),
        }
    }

    /// Runs `f` inside wgpu error scopes and returns what they caught as a typed error:
    /// out-of-memory as [`Error::OutOfMemory`], anything on a lost device as
    /// [`Error::DeviceLost`], other validation errors as [`Error::Validation`] (a wgsparse
    /// bug: inputs are validated before they reach wgpu).
    pub(crate) fn scoped<T>(&self, what: &str, f: impl FnOnce() -> T) -> Result<T> {
        self.check_alive()?;
        let device = &self.inner.device;
        let oom = device.push_error_scope(wgpu::ErrorFilter::OutOfMemory);
        let validation = device.push_error_scope(wgpu::ErrorFilter::Validation);
        let internal = device.push_error_scope(wgpu::ErrorFilter::Internal);
        let value = f();
        let internal = pollster::block_on(internal.pop());
        let validation = pollster::block_on(validation.pop());
        let oom = pollster::block_on(oom.pop());
        if let Some(e) = oom {
            return Err(Error::OutOfMemory(format!("{what}: {e}")));
        }
        if let Some(e) = validation.or(internal) {
            self.check_alive()?;
            return Err(Error::Validation(format!("{what}: {e}")));
        }
        Ok(value)
    }
}

impl fmt::Debug for Context {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Context")
            .field("adapter", &self.inner.info.name)
            .field("subgroups", &self.inner.subgroups)
            .finish()
    }
}

/// What [`Context::report`] found.
#[derive(Debug, Clone, PartialEq)]
#[allow(missing_docs)]
pub struct AdapterReport {
    pub name: String,
    pub backend: String,
    pub device_type: String,
    pub driver: String,
    pub subgroup_min: u32,
    pub subgroup_max: u32,
    pub subgroups_used: bool,
    pub timestamps: bool,
    pub max_storage_buffer_binding_size: u64,
    pub max_buffer_size: u64,
    pub max_compute_workgroups_per_dimension: u32,
    pub max_compute_workgroup_storage_size: u32,
    pub max_compute_invocations_per_workgroup: u32,
}

impl fmt::Display for AdapterReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "adapter   {} ({}, {})", self.name, self.backend, self.device_type)?;
        writeln!(f, "driver    {}", self.driver)?;
        let used = if self.subgroups_used { "used" } else { "not used" };
        writeln!(f, "subgroups {}..{} ({used})", self.subgroup_min, self.subgroup_max)?;
        writeln!(f, "timestamps {}", if self.timestamps { "yes" } else { "no" })?;
        write!(
            f,
            "limits    binding {} B, buffer {} B, {} workgroups/dim, {} B workgroup storage, {} invocations",
            self.max_storage_buffer_binding_size,
            self.max_buffer_size,
            self.max_compute_workgroups_per_dimension,
            self.max_compute_workgroup_storage_size,
            self.max_compute_invocations_per_workgroup
        )
    }
}

async fn pick_adapter(instance: &wgpu::Instance, options: &ContextOptions) -> Result<wgpu::Adapter> {
    let backends = options.backends.unwrap_or(wgpu::Backends::all());
    let request = || {
        let mut r = format!("backends {backends:?}");
        if let Some(n) = &options.adapter_name {
            r.push_str(&format!(", name containing {n:?}"));
        }
        r
    };
    let mut adapters: Vec<wgpu::Adapter> = instance.enumerate_adapters(backends).await;
    if let Some(name) = &options.adapter_name {
        let needle = name.to_lowercase();
        adapters.retain(|a| a.get_info().name.to_lowercase().contains(&needle));
    }
    // Rank: the requested power preference first, then real GPUs before CPU ones.
    let rank = |a: &wgpu::Adapter| {
        use wgpu::DeviceType::*;
        let preferred = match options.power_preference {
            wgpu::PowerPreference::LowPower => IntegratedGpu,
            _ => DiscreteGpu,
        };
        match a.get_info().device_type {
            t if t == preferred => 0,
            DiscreteGpu | IntegratedGpu => 1,
            VirtualGpu => 2,
            Other => 3,
            Cpu => 4,
        }
    };
    adapters.sort_by_key(|a| (rank(a), a.get_info().backend != wgpu::Backend::Vulkan));
    adapters.into_iter().next().ok_or_else(|| Error::NoAdapter { request: request(), hint: NO_ADAPTER_HINT })
}
