//! Reading device memory back to the host: pooled staging buffers, a blocking path that
//! waits on the submission, and an async path that never blocks the caller's thread.
//!
//! The async path needs someone to poll the device so that wgpu runs the map callback: a
//! background thread owned by the device ([`Poller`]) does, and only while readbacks are
//! pending. Awaiting a readback therefore parks the task, not the thread.

use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use super::device::{Device, Lifecycle, Maintenance};
use crate::{Error, Result};

/// Staging buffers are at least this large, so small reads share a few buffers.
const MIN_STAGING: u64 = 1 << 16;
/// At most this many idle staging buffers are kept...
const MAX_POOLED: usize = 8;
/// ...holding at most this many bytes.
const MAX_POOLED_BYTES: u64 = 1 << 30;

/// Idle MAP_READ buffers, reused by later reads: a read of a large vector then costs a copy,
/// not an allocation and the page faults of fresh mappings.
#[derive(Default)]
pub(crate) struct StagingPool {
    free: Mutex<Vec<wgpu::Buffer>>,
}

impl StagingPool {
    fn take(&self, device: &Device, size: u64) -> Result<wgpu::Buffer> {
        {
            let mut free = self.free.lock().unwrap_or_else(|p| p.into_inner());
            // The smallest idle buffer that fits.
            let best = free.iter().enumerate().filter(|(_, b)| b.size() >= size).min_by_key(|(_, b)| b.size());
            if let Some((i, _)) = best {
                return Ok(free.swap_remove(i));
            }
        }
        let size = size.max(MIN_STAGING).next_power_of_two();
        device.create_buffer(
            "wgsparse readback staging",
            size,
            wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            false,
        )
    }

    fn give_back(&self, buffer: wgpu::Buffer) {
        let mut free = self.free.lock().unwrap_or_else(|p| p.into_inner());
        free.push(buffer);
        // Keep the largest few within the byte budget.
        free.sort_by_key(|b| std::cmp::Reverse(b.size()));
        let mut total = 0;
        free.retain(|b| {
            total += b.size();
            total <= MAX_POOLED_BYTES
        });
        free.truncate(MAX_POOLED);
    }

    /// Idle staging buffers held now.
    pub(crate) fn pooled(&self) -> usize {
        self.free.lock().unwrap_or_else(|p| p.into_inner()).len()
    }
}

/// Work for the poller thread.
type Job = Box<dyn FnOnce() + Send>;

/// The background thread of async readbacks: it submits their copies (on some drivers a
/// submission waits for earlier work) and polls the device while mappings are pending, so
/// that a task awaiting a readback never blocks its thread.
#[derive(Default)]
pub(crate) struct Poller {
    state: Mutex<PollerState>,
    wake: Condvar,
}

#[derive(Default)]
struct PollerState {
    jobs: std::collections::VecDeque<Job>,
    /// Mappings requested and not yet completed.
    pending: usize,
    running: bool,
    shut_down: bool,
    /// The thread, joined when the device's state is dropped ([`Poller::shut_down`]).
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Poller {
    /// Runs `job` on the poller thread, starting it if needed.
    fn spawn(self: &Arc<Self>, device: &wgpu::Device, maintenance: &Maintenance, job: Job) {
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        state.jobs.push_back(job);
        if !state.running && !state.shut_down {
            let poller = self.clone();
            let (device, maintenance) = (device.clone(), maintenance.clone());
            let spawned = std::thread::Builder::new().name("wgsparse-poller".into()).spawn(move || {
                poller.run(&device, &maintenance);
                // Its handle is the device's last where the device's state was dropped
                // on this thread, by a job ([`Lifecycle`]).
                let _closing = Lifecycle::enter();
                drop(device);
            });
            state.running = spawned.is_ok();
            state.thread = spawned.ok();
        }
        self.wake.notify_all();
    }

    fn begin_mapping(&self) {
        self.state.lock().unwrap_or_else(|p| p.into_inner()).pending += 1;
    }

    fn end_mapping(&self) {
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        state.pending = state.pending.saturating_sub(1);
    }

    /// Ends the thread and waits until it has (unless this is that thread: a job that dropped
    /// the device's state), so that its handle of the device is gone before the device's state
    /// is: a thread left to drop the device later raced the process's exit, which crashed
    /// NVIDIA's driver at exit now and then (RELIABILITY.md, concurrency).
    pub(crate) fn shut_down(&self) {
        let thread = {
            let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
            state.shut_down = true;
            self.wake.notify_all();
            state.thread.take()
        };
        if let Some(thread) = thread.filter(|t| t.thread().id() != std::thread::current().id()) {
            // A job that panicked ended the thread already; nothing is left to wait for.
            let _ = thread.join();
        }
    }

    fn run(&self, device: &wgpu::Device, maintenance: &Maintenance) {
        loop {
            let (jobs, pending) = {
                let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
                while state.jobs.is_empty() && state.pending == 0 && !state.shut_down {
                    state = self.wake.wait(state).unwrap_or_else(|p| p.into_inner());
                }
                if state.shut_down {
                    state.running = false;
                    // Jobs not run drop their senders: their readers get "dropped", not a hang.
                    return;
                }
                (std::mem::take(&mut state.jobs), state.pending)
            };
            jobs.into_iter().for_each(|job| job());
            if pending > 0 || !self.state.lock().unwrap_or_else(|p| p.into_inner()).jobs.is_empty() {
                // Polls for the newest submission, running map callbacks as copies complete,
                // and sleeps between polls (never holding the maintenance lock while it waits).
                match maintenance.poll_done(device, None) {
                    Ok(_) => {}
                    Err(wgpu::PollError::Timeout) => std::thread::sleep(Duration::from_micros(50)),
                    // A lost device fails every poll at once: do not spin.
                    Err(_) => std::thread::sleep(Duration::from_millis(10)),
                }
            }
        }
    }
}

/// A copy to a staging buffer, recorded but not yet submitted. The buffer is declared before
/// the device, and so dropped first: a holder of wgpu objects lets them go before its handle
/// of the device's state, whose drop must release the device last (`Lifecycle`).
pub(crate) struct Staged {
    staging: wgpu::Buffer,
    len: u64,
    copy_len: u64,
    device: Device,
}

/// Records a copy of bytes `offset..offset + len` of `source` into a pooled staging buffer.
pub(crate) fn stage(
    device: &Device,
    encoder: &mut wgpu::CommandEncoder,
    source: &wgpu::Buffer,
    offset: u64,
    len: u64,
) -> Result<Staged> {
    // Copies and maps need 4-byte multiples; allocations are padded, so rounding stays inside.
    let copy_len = len.max(1).div_ceil(wgpu::COPY_BUFFER_ALIGNMENT) * wgpu::COPY_BUFFER_ALIGNMENT;
    let staging = device.staging().take(device, copy_len)?;
    encoder.copy_buffer_to_buffer(source, offset, &staging, 0, copy_len);
    Ok(Staged { staging, len, copy_len, device: device.clone() })
}

impl Staged {
    /// Asks for the mapping once the copy's submission is made; the caller waits on it.
    pub(crate) fn map(self, submission: wgpu::SubmissionIndex) -> PendingRead {
        let (sender, receiver) = futures_intrusive::channel::shared::oneshot_channel();
        self.staging.slice(..self.copy_len).map_async(wgpu::MapMode::Read, move |result| {
            let _ = sender.send(result);
        });
        PendingRead { staged: self, submission, receiver }
    }

    /// The mapped bytes as a view: no copy. Dropping it unmaps and returns the buffer to the
    /// pool.
    fn into_view<T: bytemuck::Pod>(self) -> Result<HostView<T>> {
        let view =
            self.staging.slice(..self.copy_len).get_mapped_range().map_err(|e| Error::Readback(e.to_string()))?;
        let len = self.len as usize / std::mem::size_of::<T>().max(1);
        Ok(HostView { view: Some(view), staged: Some(self), len, _element: std::marker::PhantomData })
    }

    /// Copies the mapped bytes into `out`, unmaps and returns the buffer to the pool.
    fn copy_out(self, out: &mut [u8]) -> Result<()> {
        if out.len() as u64 != self.len {
            return Err(Error::dimension("readback", "output bytes", self.len as usize, out.len()));
        }
        {
            let view =
                self.staging.slice(..self.copy_len).get_mapped_range().map_err(|e| Error::Readback(e.to_string()))?;
            out.copy_from_slice(&view[..self.len as usize]);
        }
        self.staging.unmap();
        self.device.staging().give_back(self.staging);
        Ok(())
    }
}

/// A readback done entirely by the poller thread (copy, submission, mapping): the receiver
/// gets the mapped staging buffer, or why there is none.
pub(crate) type BackgroundRead =
    futures_intrusive::channel::shared::OneshotReceiver<std::result::Result<Staged, Error>>;

/// Starts reading bytes `offset..offset + len` of `source` on the poller thread.
pub(crate) fn read_in_background(device: &Device, source: wgpu::Buffer, offset: u64, len: u64) -> BackgroundRead {
    let (sender, receiver) = futures_intrusive::channel::shared::oneshot_channel();
    let worker = device.clone();
    let poller = device.poller().clone();
    device.poller().spawn(
        device.wgpu(),
        device.maintenance(),
        Box::new(move || {
            let staged = (|| {
                worker.check_alive()?;
                let mut encoder = worker
                    .wgpu()
                    .create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("wgsparse readback") });
                let staged = stage(&worker, &mut encoder, &source, offset, len)?;
                worker.scoped(&format!("reading back {len} bytes"), || worker.submit([encoder.finish()]))?;
                Ok(staged)
            })();
            match staged {
                Err(e) => {
                    let _ = sender.send(Err(e));
                }
                Ok(staged) => {
                    poller.begin_mapping();
                    let buffer = staged.staging.clone();
                    let done = poller.clone();
                    buffer.slice(..staged.copy_len).map_async(wgpu::MapMode::Read, move |result| {
                        let delivery = match result {
                            Ok(()) => Ok(staged),
                            // The callback runs inside a poll, under the maintenance lock:
                            // what is known of a loss, without polling again.
                            Err(e) => {
                                Err(staged.device.check_known_alive().err().unwrap_or(Error::Readback(e.to_string())))
                            }
                        };
                        let _ = sender.send(delivery);
                        done.end_mapping();
                    });
                }
            }
        }),
    );
    receiver
}

/// Awaits a background read and copies it into `out`.
pub(crate) async fn finish_background(read: BackgroundRead, out: &mut [u8]) -> Result<()> {
    match read.receive().await {
        Some(Ok(staged)) => staged.copy_out(out),
        Some(Err(e)) => Err(e),
        None => Err(Error::DeviceLost("the readback was dropped before it completed".into())),
    }
}

/// A submitted copy whose mapping is requested.
pub(crate) struct PendingRead {
    staged: Staged,
    submission: wgpu::SubmissionIndex,
    receiver: futures_intrusive::channel::shared::OneshotReceiver<std::result::Result<(), wgpu::BufferAsyncError>>,
}

/// Copies bytes `offset..offset + len` of `source` to the host through a pooled staging
/// buffer: one submission of its own, made on this thread.
pub(crate) fn start_read(device: &Device, source: &wgpu::Buffer, offset: u64, len: u64) -> Result<PendingRead> {
    device.check_alive()?;
    let mut encoder =
        device.wgpu().create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("wgsparse readback") });
    let staged = stage(device, &mut encoder, source, offset, len)?;
    let submission = device.scoped(&format!("reading back {len} bytes"), || device.submit([encoder.finish()]))?;
    Ok(staged.map(submission))
}

impl PendingRead {
    /// Waits for the copy on this thread, then copies the bytes into `out`.
    pub(crate) fn finish_blocking(self, out: &mut [u8]) -> Result<()> {
        self.wait()?.copy_out(out)
    }

    /// Waits for the copy on this thread and returns the mapped bytes without copying them.
    pub(crate) fn finish_view<T: bytemuck::Pod>(self) -> Result<HostView<T>> {
        self.wait()?.into_view()
    }

    fn wait(self) -> Result<Staged> {
        self.staged.device.wait(Some(self.submission.clone()))?;
        match pollster::block_on(self.receiver.receive()) {
            Some(Ok(())) => Ok(self.staged),
            Some(Err(e)) => {
                self.staged.device.check_alive()?;
                Err(Error::Readback(e.to_string()))
            }
            None => Err(Error::DeviceLost("the readback was dropped before it completed".into())),
        }
    }
}

/// Data read back from the device, in host memory: a view of the mapped staging buffer the
/// GPU copied into, so reaching it costs no copy on the host. Dereferences to `&[T]`.
/// Dropping it unmaps the buffer and returns it to the context's pool; hold it no longer than
/// needed, since a held view keeps that staging buffer from reuse.
pub struct HostView<T> {
    view: Option<wgpu::BufferView>,
    staged: Option<Staged>,
    len: usize,
    _element: std::marker::PhantomData<fn() -> T>,
}

impl<T: bytemuck::Pod> std::ops::Deref for HostView<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        let view = self.view.as_ref().expect("held until drop");
        // Mapped ranges start at the buffer's start, aligned far beyond any element.
        bytemuck::cast_slice(&view[..self.len * std::mem::size_of::<T>()])
    }
}

impl<T> Drop for HostView<T> {
    fn drop(&mut self) {
        self.view = None;
        if let Some(staged) = self.staged.take() {
            staged.staging.unmap();
            staged.device.staging().give_back(staged.staging);
        }
    }
}

impl<T> std::fmt::Debug for HostView<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HostView").field("len", &self.len).finish()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    use std::time::Duration;

    use crate::{Context, ContextOptions};

    /// Dropping a context waits until its poller thread has ended: a thread left to drop the
    /// device later raced the process's exit (crashes at exit on NVIDIA's driver). The thread is
    /// kept busy by a slow job when the context goes.
    #[test]
    fn a_device_goes_only_after_its_poller_thread() {
        let ctx = Context::new_blocking(ContextOptions::from_env().unwrap()).unwrap();
        let device = ctx.gpu().clone();
        let poller = device.poller().clone();
        let (started, finished) = (Arc::new(AtomicBool::new(false)), Arc::new(AtomicBool::new(false)));
        let (start, finish) = (started.clone(), finished.clone());
        let slow = move || {
            start.store(true, Ordering::SeqCst);
            std::thread::sleep(Duration::from_millis(300));
            finish.store(true, Ordering::SeqCst);
        };
        poller.spawn(device.wgpu(), device.maintenance(), Box::new(slow));
        // (A thread that sees the shutdown first drops its jobs unrun.)
        let deadline = std::time::Instant::now() + Duration::from_secs(60);
        while !started.load(Ordering::SeqCst) {
            assert!(std::time::Instant::now() < deadline, "the poller thread never ran the job");
            std::thread::yield_now();
        }
        drop((device, ctx));
        assert!(finished.load(Ordering::SeqCst), "the context went while its poller thread still ran a job");
        assert!(!poller.state.lock().unwrap().running, "the poller thread outlived its device");
    }
}
