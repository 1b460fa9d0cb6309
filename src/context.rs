//! The context: a device opened for wgsparse (or the caller's, wrapped), its pipeline cache,
//! and what ops need to know about it. Everything else hangs off a `Context`.

use std::fmt;
use std::sync::Arc;

use bytemuck::Pod;

use crate::element::{Scalar, Stored};
use crate::gpu::{Device, DeviceId, GpuScalar, GpuVec, Lifecycle};
use crate::kernel::spec::ShaderSpec;
use crate::kernel::{Kernel, PipelineCache};
use crate::{Error, Result};

/// Features wgsparse cannot work without: kernel parameters travel as immediate data.
const REQUIRED_FEATURES: wgpu::Features = wgpu::Features::IMMEDIATES;

/// Optional features wgsparse uses when the adapter has them.
const OPTIONAL_FEATURES: wgpu::Features = wgpu::Features::SUBGROUP
    .union(wgpu::Features::SHADER_F64)
    .union(wgpu::Features::SHADER_INT64)
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
    /// Backends to consider. `None`: Vulkan, Metal and DX12 (wgpu's primary backends), and GL
    /// only on machines where none of them has any adapter ([`DEFAULT_BACKENDS`]).
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
    /// Device arrays of 8 MiB and more are kept for reuse when dropped, up to this many
    /// bytes in all (default [`DEFAULT_POOL_BYTES`](crate::gpu::DEFAULT_POOL_BYTES), 2 GiB; 0
    /// keeps none): past wgpu's memory blocks each new buffer is a driver allocation of its
    /// own, 7.6 ms for 256 MiB on an H100, where a kept one is cleared in 0.15 ms. An
    /// allocation that runs out of memory frees them and tries again;
    /// [`Context::release_pooled_buffers`] frees them at once.
    pub buffer_pool_bytes: u64,
    /// How long a wait for the GPU (a read to the host, [`Context::synchronize`]) polls the
    /// device back to back before it sleeps between polls (10–50 µs each): a polling thread
    /// sees the GPU finish within a µs, at the cost of a busy core meanwhile (a thread blocked
    /// in wgpu's own wait woke ~40 µs late on NVIDIA's Vulkan driver; wgsparse no longer blocks
    /// there, see `RELIABILITY.md`, concurrency). `None` (the default):
    /// [`DEFAULT_WAIT_SPIN`](crate::gpu::DEFAULT_WAIT_SPIN), 1 ms, or none on a CPU adapter (a
    /// software driver needs the cores); `Some(ZERO)` sleeps from the first poll.
    pub wait_spin: Option<std::time::Duration>,
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
            buffer_pool_bytes: crate::gpu::DEFAULT_POOL_BYTES,
            wait_spin: None,
        }
    }
}

impl ContextOptions {
    /// Defaults, overridden by `WGSPARSE_ADAPTER` (adapter-name substring),
    /// `WGSPARSE_BACKEND` (`vulkan|metal|dx12|gl`, comma-separated) and
    /// `WGSPARSE_SUBGROUPS=0` (force the no-subgroup path),
    /// `WGSPARSE_MEMORY_HINTS=performance|memory` and `WGSPARSE_WAIT_SPIN_US` (microseconds a
    /// wait polls before it blocks; 0 always blocks).
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
        if let Ok(v) = std::env::var("WGSPARSE_WAIT_SPIN_US") {
            let us = v
                .trim()
                .parse::<u64>()
                .map_err(|_| Error::InvalidArgument(format!("WGSPARSE_WAIT_SPIN_US={v:?}: expected microseconds")))?;
            options.wait_spin = Some(std::time::Duration::from_micros(us));
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

#[cfg(test)]
thread_local! {
    /// Unit tests: a loop iteration limit to plan for on any adapter, so that the work a
    /// capped adapter cuts into pieces is cut here too (and checked against the uncut run).
    pub(crate) static LOOP_LIMIT_FOR_TESTS: std::cell::Cell<Option<u32>> = const { std::cell::Cell::new(None) };
}

/// A GPU device opened for wgsparse. Cheap to clone and safe to share across threads.
#[derive(Clone)]
pub struct Context {
    inner: Arc<Inner>,
}

struct Inner {
    pipelines: PipelineCache,
    subgroups: bool,
    /// Bound where an op's α or β is a host value, so every kernel keeps one layout.
    unused_f32: GpuVec<f32>,
    unused_f64: Option<GpuVec<f64>>,
    /// Gate argument buffers of submitted batches, for the next batches' gates
    /// (`record::gate`): a solve records several batches a round, and creating a chunk's two
    /// buffers (and its gate's bind group) for each cost the recording thread.
    gate_buffers: std::sync::Mutex<Vec<GateBuffers>>,
    /// Last, so that the pipelines' layouts and the buffers above go first: the device's state
    /// must release the device last (`Lifecycle`).
    device: Device,
}

/// A gate chunk's intended counts and the indirect arguments its dispatches read.
pub(crate) struct GateBuffers {
    pub(crate) intended: GpuVec<[u32; 4]>,
    pub(crate) args: GpuVec<[u32; 4]>,
}

/// Gate buffer pairs kept for reuse at most.
const KEPT_GATE_BUFFERS: usize = 16;

impl Context {
    /// Opens the GPU described by `options`.
    pub async fn new(options: ContextOptions) -> Result<Self> {
        let (device, queue) = {
            // One thread at a time opens or closes a device (the adapter and its instance are
            // dropped inside too): `Lifecycle`, src/gpu/device.rs.
            let _opening = Lifecycle::enter();
            open_device(&options).await?
        };
        Self::from_device(
            Device::new(device, queue, true, options.buffer_pool_bytes, options.wait_spin),
            options.subgroups,
        )
    }

    /// Blocking [`Context::new`].
    pub fn new_blocking(options: ContextOptions) -> Result<Self> {
        pollster::block_on(Self::new(options))
    }

    /// Wraps a device and queue the caller opened, so that wgsparse works in the caller's
    /// wgpu program: plans can record into the caller's passes ([`crate::record::Recorder::new`]).
    /// The device needs `Features::IMMEDIATES` (and `SHADER_F64` for f64 kernels,
    /// `SUBGROUP` for the subgroup paths, `TIMESTAMP_QUERY` for profiling); its limits are
    /// used as they are. The caller's uncaptured-error and device-lost handlers are left
    /// alone: wgsparse captures its own errors with error scopes, and learns of a lost
    /// device from the errors it gets.
    pub fn from_wgpu(device: wgpu::Device, queue: wgpu::Queue, subgroups: bool) -> Result<Self> {
        let missing = REQUIRED_FEATURES - device.features();
        if !missing.is_empty() {
            return Err(Error::RequestDevice(format!(
                "the device lacks the features {missing:?}; request them when opening it"
            )));
        }
        Self::from_device(Device::new(device, queue, false, crate::gpu::DEFAULT_POOL_BYTES, None), subgroups)
    }

    fn from_device(device: Device, subgroups: bool) -> Result<Self> {
        let subgroups = subgroups && device.features().contains(wgpu::Features::SUBGROUP);
        let unused_f32 = GpuVec::zeros_on(&device, 1)?;
        let unused_f64 = match device.features().contains(wgpu::Features::SHADER_F64) {
            true => Some(GpuVec::zeros_on(&device, 1)?),
            false => None,
        };
        Ok(Context {
            inner: Arc::new(Inner {
                device,
                pipelines: PipelineCache::default(),
                subgroups,
                unused_f32,
                unused_f64,
                gate_buffers: Default::default(),
            }),
        })
    }

    /// A gate chunk's buffers of `slots` entries (every chunk has the same): a submitted
    /// batch's, kept, or new.
    pub(crate) fn take_gate_buffers(&self, slots: usize) -> Result<GateBuffers> {
        if let Some(kept) = self.inner.gate_buffers.lock().unwrap_or_else(|p| p.into_inner()).pop() {
            return Ok(kept);
        }
        Ok(GateBuffers { intended: self.zeros(slots)?, args: GpuVec::indirect_on(self.gpu(), slots)? })
    }

    /// Keeps a submitted batch's gate buffers for later batches: their next use is recorded
    /// into a later submission, which the queue orders after this one.
    pub(crate) fn keep_gate_buffers(&self, buffers: GateBuffers) {
        let mut kept = self.inner.gate_buffers.lock().unwrap_or_else(|p| p.into_inner());
        if kept.len() < KEPT_GATE_BUFFERS {
            kept.push(buffers);
        }
    }

    /// The wgpu device (for callers that mix wgsparse with their own passes).
    pub fn device(&self) -> &wgpu::Device {
        self.inner.device.wgpu()
    }
    /// The wgpu queue.
    pub fn queue(&self) -> &wgpu::Queue {
        self.inner.device.queue()
    }
    /// Identifies this context: every device object carries the id of its context.
    pub fn id(&self) -> DeviceId {
        self.inner.device.id()
    }
    /// What the adapter says about itself.
    pub fn adapter_info(&self) -> &wgpu::AdapterInfo {
        self.inner.device.info()
    }
    /// The limits the device was opened with.
    pub fn limits(&self) -> &wgpu::Limits {
        self.inner.device.limits()
    }
    /// The features the device was opened with.
    pub fn features(&self) -> wgpu::Features {
        self.inner.device.features()
    }
    /// Whether kernels use subgroup operations on this context.
    pub fn subgroups(&self) -> bool {
        self.inner.subgroups
    }
    /// The adapter's subgroup size range, `None` when subgroups are off or absent.
    pub fn subgroup_size_range(&self) -> Option<(u32, u32)> {
        let info = self.inner.device.info();
        self.inner.subgroups.then_some((info.subgroup_min_size, info.subgroup_max_size))
    }
    /// Whether GPU timestamps can be taken (the profiler needs them).
    pub fn has_timestamps(&self) -> bool {
        self.features().contains(wgpu::Features::TIMESTAMP_QUERY)
    }
    /// Whether kernels can run on `T` here (f64 needs `SHADER_F64`).
    pub fn supports<T: Scalar>(&self) -> bool {
        self.features().contains(T::KIND.required_feature())
    }
    /// Whether this adapter runs on the CPU (lavapipe, WARP, SwiftShader).
    pub fn is_cpu(&self) -> bool {
        self.adapter_info().device_type == wgpu::DeviceType::Cpu
    }

    /// The most loop iterations one invocation of a shader may run, all its loops together,
    /// where the adapter caps them: llvmpipe (lavapipe) ends every loop of an invocation past
    /// 65,535 iterations, silently (`LP_MAX_TGSI_LOOP_ITERATIONS`, shared by its loops), so a
    /// kernel whose loops may run that long (a solve's waiting teams) counts its own there.
    pub fn loop_iteration_limit(&self) -> Option<u32> {
        #[cfg(test)]
        if let Some(limit) = LOOP_LIMIT_FOR_TESTS.get() {
            return Some(limit);
        }
        let info = self.adapter_info();
        (info.driver.contains("llvmpipe") || info.name.starts_with("llvmpipe")).then_some(65_535)
    }

    /// Refuses work whose invocations may run more loop iterations than
    /// [`Context::loop_iteration_limit`] allows (`iterations`: the most one may run), with
    /// the limit named: past it the adapter would end the loops and return a wrong answer.
    pub(crate) fn check_loop_iterations(&self, what: impl FnOnce() -> String, iterations: u64) -> Result<()> {
        match self.loop_iteration_limit() {
            Some(limit) if iterations > limit as u64 => Err(Error::LimitExceeded {
                what: what(),
                limit: "loop iterations an invocation runs (llvmpipe)",
                requested: iterations,
                max: limit as u64,
            }),
            _ => Ok(()),
        }
    }

    /// A summary of the adapter: name, backend, driver, subgroups, limits.
    pub fn report(&self) -> AdapterReport {
        let i = self.adapter_info();
        let limits = self.limits();
        AdapterReport {
            name: i.name.clone(),
            backend: format!("{:?}", i.backend),
            device_type: format!("{:?}", i.device_type),
            driver: format!("{} {}", i.driver, i.driver_info).trim().to_string(),
            subgroup_min: i.subgroup_min_size,
            subgroup_max: i.subgroup_max_size,
            subgroups_used: self.inner.subgroups,
            timestamps: self.has_timestamps(),
            f64: self.supports::<f64>(),
            max_storage_buffer_binding_size: limits.max_storage_buffer_binding_size,
            max_buffer_size: limits.max_buffer_size,
            max_compute_workgroups_per_dimension: limits.max_compute_workgroups_per_dimension,
            max_compute_workgroup_storage_size: limits.max_compute_workgroup_storage_size,
            max_compute_invocations_per_workgroup: limits.max_compute_invocations_per_workgroup,
        }
    }

    /// How many compute pipelines this context has compiled (each kernel variant once).
    pub fn pipelines_compiled(&self) -> usize {
        self.inner.pipelines.compiled()
    }

    /// How many bind groups are cached (each (kernel, buffers) combination once).
    pub fn bind_groups_cached(&self) -> usize {
        self.inner.device.bind_groups().len()
    }

    /// How many readback staging buffers wait in the pool for reuse.
    pub fn readback_buffers_pooled(&self) -> usize {
        self.inner.device.staging().pooled()
    }

    /// Bytes of dropped device arrays kept for reuse ([`ContextOptions::buffer_pool_bytes`]).
    pub fn pooled_buffer_bytes(&self) -> u64 {
        self.inner.device.pooled_bytes()
    }

    /// Frees the device arrays kept for reuse; returns the bytes released.
    pub fn release_pooled_buffers(&self) -> u64 {
        self.inner.device.trim_pool()
    }

    /// Uploads `data` into a new device vector.
    pub fn upload<T: Stored + Pod>(&self, data: &[T]) -> Result<GpuVec<T>> {
        GpuVec::upload_on(&self.inner.device, data)
    }

    /// A new device vector of `len` zeros.
    pub fn zeros<T: Stored>(&self, len: usize) -> Result<GpuVec<T>> {
        GpuVec::zeros_on(&self.inner.device, len)
    }

    /// A new device scalar holding `value`.
    pub fn scalar<T: Scalar>(&self, value: T) -> Result<GpuScalar<T>> {
        GpuScalar::new_on(&self.inner.device, value)
    }

    /// Waits until all work handed to the device has finished: the batches submitted, and
    /// the uploads and writes still queued, which are submitted first (wgpu holds them until
    /// the next submission: without this they would land in the next batch's time).
    pub fn synchronize(&self) -> Result<()> {
        let device = &self.inner.device;
        device.scoped("submitting queued writes", || device.submit([]))?;
        device.wait(None)
    }

    pub(crate) fn gpu(&self) -> &Device {
        &self.inner.device
    }

    /// Kernel `S` for this context's subgroup mode and element `T`.
    pub(crate) fn kernel<S: ShaderSpec, T: Scalar>(
        &self,
        flags: S::Flags,
        overrides: S::Overrides,
    ) -> Result<Kernel<S, T>> {
        Kernel::get(&self.inner.device, &self.inner.pipelines, self.inner.subgroups, flags, overrides)
    }

    /// Kernel `S` for element `T` without subgroup operations even where the context has them
    /// (with `subgroups` false): for kernels whose lanes must exchange across more lanes than
    /// the adapter's smallest subgroup.
    pub(crate) fn kernel_in_mode<S: ShaderSpec, T: Scalar>(
        &self,
        subgroups: bool,
        flags: S::Flags,
        overrides: S::Overrides,
    ) -> Result<Kernel<S, T>> {
        Kernel::get(&self.inner.device, &self.inner.pipelines, subgroups && self.inner.subgroups, flags, overrides)
    }

    /// Kernel `S`, one whose interface does not depend on the element type.
    pub(crate) fn plain_kernel<S: ShaderSpec>(&self, flags: S::Flags, overrides: S::Overrides) -> Result<Kernel<S>> {
        self.kernel::<S, f32>(flags, overrides)
    }

    /// A one-element vector of `T` to bind where a kernel's device scalar is unused.
    pub(crate) fn unused<T: Scalar>(&self) -> Result<&GpuVec<T>> {
        let any: &dyn std::any::Any = match T::KIND {
            crate::ElementKind::F32 => &self.inner.unused_f32,
            crate::ElementKind::F64 => self.inner.unused_f64.as_ref().ok_or_else(|| {
                Error::Unsupported(format!("f64 kernels need SHADER_F64, which {:?} lacks", self.adapter_info().name))
            })?,
        };
        Ok(any.downcast_ref::<GpuVec<T>>().expect("the element kind names the type"))
    }

    /// Fails unless `object` (of kind `what`) was made on this context.
    pub(crate) fn check_owner(&self, what: &str, owner: DeviceId) -> Result<()> {
        if owner != self.id() {
            return Err(Error::ContextMismatch(format!("{what} belongs to another context")));
        }
        Ok(())
    }

    /// Fails with [`Error::DeviceLost`] once the device is gone.
    pub(crate) fn check_alive(&self) -> Result<()> {
        self.inner.device.check_alive()
    }

    /// [`check_alive`](Self::check_alive) without polling the device (recording stays cheap;
    /// submitting polls).
    pub(crate) fn check_known_alive(&self) -> Result<()> {
        self.inner.device.check_known_alive()
    }

    /// Fails with [`Error::Unsupported`] where kernels cannot run on `T`.
    pub(crate) fn check_element<T: Scalar>(&self) -> Result<()> {
        if !self.supports::<T>() {
            return Err(Error::Unsupported(format!(
                "{} kernels need {:?}, which adapter {:?} lacks",
                T::KIND.name(),
                T::KIND.required_feature(),
                self.adapter_info().name
            )));
        }
        Ok(())
    }
}

impl fmt::Debug for Context {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Context")
            .field("adapter", &self.adapter_info().name)
            .field("id", &self.id())
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
    pub f64: bool,
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
        writeln!(f, "timestamps {}, f64 {}", yes_no(self.timestamps), yes_no(self.f64))?;
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

fn yes_no(b: bool) -> &'static str {
    if b {
        "yes"
    } else {
        "no"
    }
}

/// The device and queue of the best adapter for `options`.
async fn open_device(options: &ContextOptions) -> Result<(wgpu::Device, wgpu::Queue)> {
    let tried = match options.backends {
        Some(backends) => vec![backends],
        None => vec![DEFAULT_BACKENDS, FALLBACK_BACKENDS],
    };
    let adapter = pick_adapter(&tried, options).await?;
    let info = adapter.get_info();
    let adapter_limits = adapter.limits();
    let limits = match &options.limits {
        Some(l) => {
            if !l.check_limits(&adapter_limits) {
                return Err(Error::RequestDevice(format!("requested limits exceed those of adapter {:?}", info.name)));
            }
            l.clone()
        }
        None => adapter_limits,
    };
    let missing = REQUIRED_FEATURES - adapter.features();
    if !missing.is_empty() {
        return Err(Error::RequestDevice(format!("adapter {:?} lacks the features {missing:?}", info.name)));
    }
    let features = REQUIRED_FEATURES | (adapter.features() & OPTIONAL_FEATURES);
    adapter
        .request_device(&wgpu::DeviceDescriptor {
            label: Some("wgsparse"),
            required_features: features,
            required_limits: limits,
            experimental_features: wgpu::ExperimentalFeatures::disabled(),
            memory_hints: options.memory_hints.clone(),
            trace: wgpu::Trace::Off,
        })
        .await
        .map_err(|e| Error::RequestDevice(e.to_string()))
}

/// The backends a context opens when its options name none: wgpu's primary ones. GL comes
/// second ([`FALLBACK_BACKENDS`]), only where none of them has an adapter: an instance with
/// GL in it starts the driver's EGL, and on NVIDIA's driver (580, H200) EGL torn down beside
/// another thread's `vkDestroyDevice` deadlocked inside the driver (RELIABILITY.md,
/// concurrency).
pub const DEFAULT_BACKENDS: wgpu::Backends = wgpu::Backends::PRIMARY;
/// Tried when [`DEFAULT_BACKENDS`] have no adapter at all (and the options name no backend).
pub const FALLBACK_BACKENDS: wgpu::Backends = wgpu::Backends::GL;

/// The best adapter for `options` among those of the first backend set in `tried` that has
/// any adapter at all (each set an instance of its own, dropped unless its adapter is picked):
/// a later set is a fallback for machines without the earlier, not for a name the earlier's
/// adapters do not match.
async fn pick_adapter(tried: &[wgpu::Backends], options: &ContextOptions) -> Result<wgpu::Adapter> {
    let mut asked = Vec::new();
    for &backends in tried {
        asked.push(format!("{backends:?}"));
        let mut adapters = instance_of(backends, options).enumerate_adapters(backends).await;
        if adapters.is_empty() {
            continue;
        }
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
        if let Some(best) = adapters.into_iter().next() {
            return Ok(best);
        }
        break;
    }
    let mut request = format!("backends {}", asked.join(", then "));
    if let Some(n) = &options.adapter_name {
        request.push_str(&format!(", name containing {n:?}"));
    }
    Err(Error::NoAdapter { request, hint: NO_ADAPTER_HINT })
}

/// A wgpu instance of `backends`.
fn instance_of(backends: wgpu::Backends, options: &ContextOptions) -> wgpu::Instance {
    let mut descriptor = wgpu::InstanceDescriptor::new_without_display_handle();
    descriptor.backends = backends;
    descriptor.memory_budget_thresholds.for_resource_creation = options.memory_budget_percent;
    // Every indirect dispatch wgsparse records has arguments valid by construction (a gate
    // copies host-checked counts or zeros; the triangular solve's relaunch clamps to the
    // limit), so wgpu's validation of indirect calls, on in release builds too, only adds a
    // dispatch and barriers before each one. WGPU_VALIDATION_INDIRECT_CALL=1 turns it back on.
    descriptor.flags.remove(wgpu::InstanceFlags::VALIDATION_INDIRECT_CALL);
    descriptor.flags = descriptor.flags.with_env();
    wgpu::Instance::new(descriptor)
}
