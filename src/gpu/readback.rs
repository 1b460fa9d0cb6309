//! Reading device memory back to the host: pooled staging buffers, a blocking path that
//! waits on the submission, and an async path that never blocks the caller's thread.
//!
//! The async path needs someone to poll the device so that wgpu runs the map callback: a
//! background thread owned by the device ([`Poller`]) does, and only while readbacks are
//! pending. Awaiting a readback therefore parks the task, not the thread.

use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use super::device::Device;
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

/// The background thread that polls the device while async readbacks are pending.
#[derive(Default)]
pub(crate) struct Poller {
    state: Mutex<PollerState>,
    wake: Condvar,
}

#[derive(Default)]
struct PollerState {
    pending: usize,
    running: bool,
    shut_down: bool,
}

impl Poller {
    /// Registers a pending readback and makes sure the thread runs.
    fn begin(self: &Arc<Self>, device: &wgpu::Device) {
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        state.pending += 1;
        if !state.running && !state.shut_down {
            state.running = true;
            let poller = self.clone();
            let device = device.clone();
            let spawned = std::thread::Builder::new().name("wgsparse-poller".into()).spawn(move || poller.run(&device));
            if spawned.is_err() {
                state.running = false;
            }
        }
        self.wake.notify_all();
    }

    /// A readback completed (or failed).
    fn end(&self) {
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        state.pending = state.pending.saturating_sub(1);
    }

    pub(crate) fn shut_down(&self) {
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        state.shut_down = true;
        self.wake.notify_all();
    }

    fn run(&self, device: &wgpu::Device) {
        loop {
            {
                let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
                while state.pending == 0 && !state.shut_down {
                    state = self.wake.wait(state).unwrap_or_else(|p| p.into_inner());
                }
                if state.shut_down {
                    state.running = false;
                    return;
                }
            }
            // Waits for the newest submission, running map callbacks as copies complete.
            let polled =
                device.poll(wgpu::PollType::Wait { submission_index: None, timeout: Some(Duration::from_millis(50)) });
            if polled.is_err() {
                // A lost device fails every poll at once: do not spin.
                std::thread::sleep(Duration::from_millis(10));
            }
        }
    }
}

/// A copy to a staging buffer, recorded but not yet submitted.
pub(crate) struct Staged {
    device: Device,
    staging: wgpu::Buffer,
    len: u64,
    copy_len: u64,
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
    Ok(Staged { device: device.clone(), staging, len, copy_len })
}

impl Staged {
    /// Asks for the mapping once the copy's submission is made. With `poll_in_background`,
    /// the device's poller thread will run the callback.
    pub(crate) fn map(self, submission: wgpu::SubmissionIndex, poll_in_background: bool) -> PendingRead {
        let (sender, receiver) = futures_intrusive::channel::shared::oneshot_channel();
        let poller = poll_in_background.then(|| self.device.poller().clone());
        if let Some(p) = &poller {
            p.begin(self.device.wgpu());
        }
        self.staging.slice(..self.copy_len).map_async(wgpu::MapMode::Read, move |result| {
            let _ = sender.send(result);
            if let Some(p) = poller {
                p.end();
            }
        });
        PendingRead { staged: self, submission, receiver }
    }
}

/// A submitted copy whose mapping is requested.
pub(crate) struct PendingRead {
    staged: Staged,
    submission: wgpu::SubmissionIndex,
    receiver: futures_intrusive::channel::shared::OneshotReceiver<std::result::Result<(), wgpu::BufferAsyncError>>,
}

/// Copies bytes `offset..offset + len` of `source` to the host through a pooled staging
/// buffer: one submission of its own.
pub(crate) fn start_read(
    device: &Device,
    source: &wgpu::Buffer,
    offset: u64,
    len: u64,
    poll_in_background: bool,
) -> Result<PendingRead> {
    device.check_alive()?;
    let mut encoder =
        device.wgpu().create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("wgsparse readback") });
    let staged = stage(device, &mut encoder, source, offset, len)?;
    let submission = device.scoped(&format!("reading back {len} bytes"), || device.queue().submit([encoder.finish()]))?;
    Ok(staged.map(submission, poll_in_background))
}

impl PendingRead {
    /// Waits for the copy on this thread, then copies the bytes into `out`.
    pub(crate) fn finish_blocking(self, out: &mut [u8]) -> Result<()> {
        self.staged.device.wait(Some(self.submission.clone()))?;
        let mapped = pollster::block_on(self.receiver.receive());
        self.finish(mapped, out)
    }

    /// Waits for the map callback without blocking the thread, then copies into `out`.
    pub(crate) async fn finish_async(self, out: &mut [u8]) -> Result<()> {
        let mapped = self.receiver.receive().await;
        self.finish(mapped, out)
    }

    fn finish(
        self,
        mapped: Option<std::result::Result<(), wgpu::BufferAsyncError>>,
        out: &mut [u8],
    ) -> Result<()> {
        let Staged { device, staging, len, copy_len } = self.staged;
        match mapped {
            Some(Ok(())) => {}
            Some(Err(e)) => {
                device.check_alive()?;
                return Err(Error::Readback(e.to_string()));
            }
            None => return Err(Error::DeviceLost("the readback was dropped before it completed".into())),
        }
        if out.len() as u64 != len {
            return Err(Error::dimension("readback", "output bytes", len as usize, out.len()));
        }
        {
            let view = staging.slice(..copy_len).get_mapped_range().map_err(|e| Error::Readback(e.to_string()))?;
            out.copy_from_slice(&view[..len as usize]);
        }
        staging.unmap();
        device.staging().give_back(staging);
        Ok(())
    }
}
