//! The wgpu device as wgsparse uses it: handles, limits, features, loss detection, error
//! scopes, and the per-device caches (bind groups, readback staging, the readback poller).
//!
//! This is the bottom of the GPU stack: it knows nothing of kernels or of the `Context`
//! above it, so the pipeline cache can depend on it without a cycle.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use super::bind_cache::BindGroupCache;
use super::pool::{BatchMark, BufferPool, PooledBuffer, POOL_MIN_BYTES};
use super::readback::{Poller, StagingPool};
use crate::{Error, Result};

/// How long a wait for the GPU lasts before it is given up with [`Error::Timeout`]: far past
/// any sane op, so that a hung device (a driver without a watchdog) ends the wait.
pub(crate) const WAIT_TIMEOUT: Duration = Duration::from_secs(600);

/// How long a wait polls back to back before it sleeps between polls, on adapters that are
/// not the CPU ([`ContextOptions::wait_spin`](crate::ContextOptions::wait_spin)).
pub const DEFAULT_WAIT_SPIN: Duration = Duration::from_millis(1);

/// Identifies one device (and the context around it) within the process. Every device
/// object carries the id of the device that made it, so operands of another context are
/// refused before anything is recorded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct DeviceId(u64);

impl DeviceId {
    fn next() -> Self {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        DeviceId(NEXT.fetch_add(1, Ordering::Relaxed))
    }
}

/// A process-unique id for buffers and compiled kernels (bind-group cache keys).
pub(crate) fn next_object_id() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

/// Opening and closing devices, one thread at a time in the process. NVIDIA's Vulkan driver
/// (580, H200) deadlocked now and then when a thread destroyed a device while other threads
/// opened, used or closed theirs: the destroying thread waits inside `vkDestroyDevice` on a
/// driver thread, the others on the driver's lock (RELIABILITY.md, concurrency). Held while a
/// context opens its device (`Context::new`) and while the last handles of a device wgsparse
/// holds are dropped (the device's state, or the readback poller's thread when it ends last).
/// It made the deadlock rare (1 run in 100 of the execution tests, from 3 in 8), not
/// impossible: other threads' ordinary driver calls stay outside it.
/// Not re-entrant: nothing done under it opens or closes another device.
pub(crate) struct Lifecycle(());

static LIFECYCLE_BUSY: Mutex<bool> = Mutex::new(false);
static LIFECYCLE_FREED: Condvar = Condvar::new();

impl Lifecycle {
    /// Waits until no other thread opens or closes a device, and holds that until dropped.
    pub(crate) fn enter() -> Lifecycle {
        let mut busy = LIFECYCLE_BUSY.lock().unwrap_or_else(|p| p.into_inner());
        while *busy {
            busy = LIFECYCLE_FREED.wait(busy).unwrap_or_else(|p| p.into_inner());
        }
        *busy = true;
        Lifecycle(())
    }
}

impl Drop for Lifecycle {
    fn drop(&mut self) {
        *LIFECYCLE_BUSY.lock().unwrap_or_else(|p| p.into_inner()) = false;
        LIFECYCLE_FREED.notify_one();
    }
}

/// Serialises wgpu's device maintenance. wgpu 30 runs it in every poll and every submission,
/// and two at once could panic inside wgpu ("If the queue is empty, the current submission
/// index … should be at least the wait submission index"): one that waited samples the fence,
/// another retires newer submissions and empties the queue, and the first then finds the queue
/// empty past its stale sample (fixed upstream by gfx-rs/wgpu#9958, not in 30.0.2). Seen on an
/// H200 with test threads sharing a context. So wgsparse polls and submits a device only under
/// this lock, and never holds it across a blocking wait: waits poll, and sleep between polls.
/// (A caller's own polls of a device wrapped with `Context::from_wgpu` are outside it.)
#[derive(Clone, Default)]
pub(crate) struct Maintenance(Arc<Mutex<()>>);

impl Maintenance {
    fn hold(&self) -> std::sync::MutexGuard<'_, ()> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Polls without waiting (runs finished submissions' callbacks).
    pub(crate) fn poll(&self, device: &wgpu::Device) {
        let _held = self.hold();
        let _ = device.poll(wgpu::PollType::Poll);
    }

    /// Whether `submission` (the newest, if `None`) has finished, without waiting.
    pub(crate) fn poll_done(
        &self,
        device: &wgpu::Device,
        submission: Option<&wgpu::SubmissionIndex>,
    ) -> std::result::Result<wgpu::PollStatus, wgpu::PollError> {
        let _held = self.hold();
        device.poll(wgpu::PollType::Wait { submission_index: submission.cloned(), timeout: Some(Duration::ZERO) })
    }

    /// Submits `commands` to `queue`.
    pub(crate) fn submit<I: IntoIterator<Item = wgpu::CommandBuffer>>(
        &self,
        queue: &wgpu::Queue,
        commands: I,
    ) -> wgpu::SubmissionIndex {
        let _held = self.hold();
        queue.submit(commands)
    }
}

/// A device and its queue with what wgsparse learned about them. Cheap to clone.
#[derive(Clone)]
pub(crate) struct Device {
    inner: Arc<Inner>,
}

struct Inner {
    device: wgpu::Device,
    queue: wgpu::Queue,
    info: wgpu::AdapterInfo,
    limits: wgpu::Limits,
    features: wgpu::Features,
    id: DeviceId,
    /// Set by the device-lost callback (devices wgsparse opened) or when an error says the
    /// device is gone (devices wrapped with `Context::from_wgpu`, whose callbacks are the
    /// caller's).
    lost: Arc<Mutex<Option<String>>>,
    bind_groups: BindGroupCache,
    staging: StagingPool,
    /// Large buffers kept for reuse.
    pool: Arc<BufferPool>,
    poller: Arc<Poller>,
    maintenance: Maintenance,
    /// How long [`Device::wait`] polls back to back before it sleeps between polls.
    wait_spin: Duration,
    /// The longest sleep between two of its polls.
    longest_pause: Duration,
    /// Taken when the state is dropped, before its fields are: the last field, so that the
    /// device's handles and resources above go under it ([`Lifecycle`]).
    closing: Option<Lifecycle>,
}

impl Device {
    /// Wraps an open device. With `own_callbacks`, wgsparse installs its device-lost and
    /// uncaptured-error handlers (devices it opened itself); otherwise the caller's stay.
    /// Dropped buffers of 8 MiB and more are kept for reuse up to `pool_bytes`; waits poll back
    /// to back for `wait_spin` before they sleep between polls (`None`: [`DEFAULT_WAIT_SPIN`],
    /// none on a CPU adapter).
    pub(crate) fn new(
        device: wgpu::Device,
        queue: wgpu::Queue,
        own_callbacks: bool,
        pool_bytes: u64,
        wait_spin: Option<Duration>,
    ) -> Self {
        let lost = Arc::new(Mutex::new(None));
        if own_callbacks {
            // wgpu's default handler panics; errors are captured with scopes, and anything
            // that escapes them is logged rather than allowed to abort the caller.
            device.on_uncaptured_error(Arc::new(|e| eprintln!("wgsparse: uncaptured wgpu error: {e}")));
            let flag = lost.clone();
            device.set_device_lost_callback(move |reason, message| {
                *flag.lock().unwrap_or_else(|p| p.into_inner()) = Some(format!("{reason:?}: {message}"));
            });
        }
        let info = device.adapter_info();
        // A software driver runs the work on the CPU cores a polling thread would take: no
        // spin, and polls up to 1 ms apart (each poll is a device maintenance).
        let cpu = info.device_type == wgpu::DeviceType::Cpu;
        let wait_spin = wait_spin.unwrap_or(if cpu { Duration::ZERO } else { DEFAULT_WAIT_SPIN });
        let longest_pause = Duration::from_micros(if cpu { 1000 } else { 50 });
        Device {
            inner: Arc::new(Inner {
                info,
                limits: device.limits(),
                features: device.features(),
                poller: Arc::new(Poller::default()),
                device,
                queue,
                id: DeviceId::next(),
                lost,
                bind_groups: BindGroupCache::default(),
                staging: StagingPool::default(),
                pool: BufferPool::new(pool_bytes),
                maintenance: Maintenance::default(),
                wait_spin,
                longest_pause,
                closing: None,
            }),
        }
    }

    pub(crate) fn wgpu(&self) -> &wgpu::Device {
        &self.inner.device
    }
    pub(crate) fn queue(&self) -> &wgpu::Queue {
        &self.inner.queue
    }
    pub(crate) fn info(&self) -> &wgpu::AdapterInfo {
        &self.inner.info
    }
    pub(crate) fn limits(&self) -> &wgpu::Limits {
        &self.inner.limits
    }
    pub(crate) fn features(&self) -> wgpu::Features {
        self.inner.features
    }
    pub(crate) fn id(&self) -> DeviceId {
        self.inner.id
    }
    pub(crate) fn bind_groups(&self) -> &BindGroupCache {
        &self.inner.bind_groups
    }
    pub(crate) fn staging(&self) -> &StagingPool {
        &self.inner.staging
    }
    pub(crate) fn poller(&self) -> &Arc<Poller> {
        &self.inner.poller
    }
    pub(crate) fn maintenance(&self) -> &Maintenance {
        &self.inner.maintenance
    }

    /// Submits `commands` to the queue (under the maintenance lock: [`Maintenance`]).
    pub(crate) fn submit<I: IntoIterator<Item = wgpu::CommandBuffer>>(&self, commands: I) -> wgpu::SubmissionIndex {
        self.inner.maintenance.submit(&self.inner.queue, commands)
    }

    /// Marks a batch open (see `pool.rs`): buffers dropped meanwhile are not reused before
    /// the mark is dropped.
    pub(crate) fn open_batch(&self) -> BatchMark {
        self.inner.pool.open_batch()
    }

    /// Frees the buffers kept for reuse; returns the bytes released.
    pub(crate) fn trim_pool(&self) -> u64 {
        self.inner.pool.trim()
    }

    /// Bytes of the buffers kept for reuse.
    pub(crate) fn pooled_bytes(&self) -> u64 {
        self.inner.pool.bytes()
    }

    /// Keeps no buffers for reuse from now on (ops recorded into a caller's pass: wgsparse
    /// cannot see when they are submitted).
    pub(crate) fn disable_pool(&self) {
        self.inner.pool.disable()
    }

    /// A buffer for a device array of `size` bytes: a kept one when one fits (cleared), else
    /// a new one (zeroed by wgpu); returned to the pool when dropped if it is large. One
    /// `mapped` at creation (an upload) is always new and never kept. Out of memory, the pool
    /// is emptied and the allocation tried once more.
    pub(crate) fn array_buffer(&self, size: u64, usage: wgpu::BufferUsages, mapped: bool) -> Result<PooledBuffer> {
        let padded = self.padded_size("wgsparse vector", size)?;
        if !mapped && padded >= POOL_MIN_BYTES {
            if let Some(buffer) = self.inner.pool.take(padded, usage) {
                self.check_alive()?;
                let mut encoder = self.inner.device.create_command_encoder(&Default::default());
                encoder.clear_buffer(&buffer, 0, None);
                self.scoped("clearing a reused buffer", || self.submit([encoder.finish()]))?;
                return Ok(PooledBuffer::new(buffer, usage, Some(&self.inner.pool)));
            }
        }
        let label = "wgsparse vector";
        let buffer = match self.create_buffer(label, size, usage, mapped) {
            Err(Error::OutOfMemory(_)) if self.trim_pool() > 0 => self.create_buffer(label, size, usage, mapped)?,
            other => other?,
        };
        Ok(PooledBuffer::new(buffer, usage, (!mapped).then_some(&self.inner.pool)))
    }

    /// Fails with [`Error::DeviceLost`] once the device is gone. wgpu reports a loss through
    /// a callback that runs when the device is polled, so this polls (without waiting)
    /// before looking.
    pub(crate) fn check_alive(&self) -> Result<()> {
        if self.lost_reason().is_none() {
            self.inner.maintenance.poll(&self.inner.device);
        }
        match self.lost_reason() {
            Some(why) => Err(Error::DeviceLost(why)),
            None => Ok(()),
        }
    }

    /// [`check_alive`](Self::check_alive) without polling: what is known of a loss now.
    /// For the recording path, which must stay cheap; submissions poll.
    pub(crate) fn check_known_alive(&self) -> Result<()> {
        match self.lost_reason() {
            Some(why) => Err(Error::DeviceLost(why)),
            None => Ok(()),
        }
    }

    fn lost_reason(&self) -> Option<String> {
        self.inner.lost.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Records that the device is gone (an error said so).
    pub(crate) fn mark_lost(&self, why: &str) {
        let mut lost = self.inner.lost.lock().unwrap_or_else(|p| p.into_inner());
        lost.get_or_insert_with(|| why.to_string());
    }

    /// Runs `f` inside wgpu error scopes and returns what they caught as a typed error:
    /// out-of-memory as [`Error::OutOfMemory`], anything on a lost device as
    /// [`Error::DeviceLost`], other validation errors as [`Error::Validation`] (a wgsparse
    /// bug: inputs are validated before they reach wgpu).
    /// A loss not yet known (its callback runs when the device is polled) is caught by the
    /// scopes: a call on a lost device fails in them, and the error path polls. No poll before
    /// the call, then: one-shot ops make many buffers, and a poll costs ~0.5–1 µs on NVIDIA.
    pub(crate) fn scoped<T>(&self, what: &str, f: impl FnOnce() -> T) -> Result<T> {
        self.check_known_alive()?;
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
            let message = e.to_string();
            if message.contains("device is lost") {
                self.mark_lost(&message);
            }
            self.check_alive()?;
            return Err(Error::Validation(format!("{what}: {message}")));
        }
        Ok(value)
    }

    /// Waits until `submission` (all submitted work when `None`) has finished: polls back to
    /// back for the device's spin time, then sleeps between polls (from 10 µs, doubling up to
    /// 50 µs, or 1 ms on a CPU adapter), never holding the maintenance lock while it sleeps
    /// ([`Maintenance`]). On
    /// NVIDIA's Vulkan driver a poll costs ~0.4 µs, and a thread blocked in wgpu's own wait
    /// woke ~40 µs after the GPU finished (H200: an empty submission waited for in 47.8 µs,
    /// polled for in 8.4; benches/NOTES.md, session 46).
    pub(crate) fn wait(&self, submission: Option<wgpu::SubmissionIndex>) -> Result<()> {
        self.check_alive()?;
        let start = Instant::now();
        let mut pause = Duration::from_micros(10);
        let result = loop {
            match self.inner.maintenance.poll_done(&self.inner.device, submission.as_ref()) {
                Err(wgpu::PollError::Timeout) if start.elapsed() < WAIT_TIMEOUT => {
                    if start.elapsed() < self.inner.wait_spin {
                        std::hint::spin_loop();
                    } else {
                        std::thread::sleep(pause);
                        pause = (pause * 2).min(self.inner.longest_pause);
                    }
                }
                done => break done,
            }
        };
        self.check_alive()?;
        result.map(|_| ()).map_err(|e| match e {
            wgpu::PollError::Timeout => Error::Timeout(format!("the GPU did not finish within {WAIT_TIMEOUT:?}")),
            // The submission did not succeed, yet its error scope caught nothing: the device
            // was lost (destroyed) between the submission and this wait, before its lost
            // callback ran.
            wrong @ wgpu::PollError::WrongSubmissionIndex(..) => {
                let why = format!("a submission failed: {wrong}");
                self.mark_lost(&why);
                Error::DeviceLost(why)
            }
        })
    }

    /// `size` rounded up to [`ALLOCATION_GRANULE`] (at least one granule), refused past the
    /// device's `max_buffer_size` ([`Error::LimitExceeded`]).
    fn padded_size(&self, label: &str, size: u64) -> Result<u64> {
        let max = self.inner.limits.max_buffer_size;
        match size.max(1).checked_next_multiple_of(ALLOCATION_GRANULE) {
            Some(padded) if padded <= max => Ok(padded),
            padded => Err(Error::LimitExceeded {
                what: format!("{label} of {size} bytes"),
                limit: "max_buffer_size",
                requested: padded.unwrap_or(u64::MAX),
                max,
            }),
        }
    }

    /// Creates a buffer of at least `size` bytes (rounded up to [`ALLOCATION_GRANULE`]),
    /// refusing sizes past the device's limits and turning wgpu's out-of-memory and
    /// validation errors into [`Error`]s.
    pub(crate) fn create_buffer(
        &self,
        label: &str,
        size: u64,
        usage: wgpu::BufferUsages,
        mapped: bool,
    ) -> Result<wgpu::Buffer> {
        self.check_alive()?;
        let padded = self.padded_size(label, size)?;
        self.scoped(&format!("allocating {label} ({padded} bytes)"), || {
            self.inner.device.create_buffer(&wgpu::BufferDescriptor {
                label: Some(label),
                size: padded,
                usage,
                mapped_at_creation: mapped,
            })
        })
    }
}

/// Allocations are rounded up to this many bytes so that kernels may read 16-byte vectors
/// and so that an empty array still has a bindable buffer.
pub(crate) const ALLOCATION_GRANULE: u64 = 16;

impl Drop for Inner {
    fn drop(&mut self) {
        self.poller.shut_down();
        self.closing = Some(Lifecycle::enter());
    }
}

impl fmt::Debug for Device {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Device").field("adapter", &self.inner.info.name).field("id", &self.inner.id).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::Lifecycle;
    use crate::{Context, ContextOptions};
    use std::sync::mpsc;
    use std::time::Duration;

    /// Opening a context, and dropping the last handles of one, wait while another thread opens
    /// or closes a device (`Lifecycle`); a reader of the context's vector afterwards is the last
    /// holder, so the device goes with it, under the lock too.
    #[test]
    fn devices_open_and_close_one_thread_at_a_time() {
        let options = ContextOptions::from_env().unwrap();
        let ctx = Context::new_blocking(options.clone()).unwrap();
        let last_holder = ctx.upload(&[1.0f32, 2.0]).unwrap();
        let held = Lifecycle::enter();
        let (done, finished) = mpsc::channel();
        let opening = done.clone();
        std::thread::spawn(move || {
            let other = Context::new_blocking(options).unwrap();
            opening.send("opened").unwrap();
            drop(other);
            opening.send("closed the other").unwrap();
        });
        std::thread::spawn(move || {
            drop(ctx);
            drop(last_holder);
            done.send("closed").unwrap();
        });
        // Neither can finish while this thread holds the lifecycle…
        assert!(finished.recv_timeout(Duration::from_millis(300)).is_err(), "a device opened or closed under the lock");
        // …and both do once it lets go.
        drop(held);
        let mut events: Vec<_> = (0..3).map(|_| finished.recv_timeout(Duration::from_secs(60)).unwrap()).collect();
        events.sort();
        assert_eq!(events, ["closed", "closed the other", "opened"]);
    }
}
