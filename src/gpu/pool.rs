//! Large device buffers kept for reuse after their vectors are dropped.
//!
//! wgpu places buffers up to its memory blocks (128–256 MiB with `MemoryHints::Performance`)
//! inside blocks it already holds, in a few µs; a larger buffer is a driver allocation of its
//! own, made and freed with it: 7.6 ms for 256 MiB on the H100 (NVIDIA 580), against 154 µs to
//! clear a kept one (`benches/NOTES.md`, session 37). One-shot ops with large outputs (a
//! bitmap sum's C, an incomplete factor, GMRES's basis) paid that at every call, and so did
//! smaller arrays whenever wgpu's blocks were full: 5.5–7 ms for a CG solve's vectors of
//! 33 MB (session 38).
//!
//! A dropped buffer of at least [`POOL_MIN_BYTES`] is kept while the pool holds less than its
//! cap; an allocation of the same usage takes a kept one of its size (up to an eighth larger)
//! and clears it. Reuse is safe against work already submitted (the queue runs the clear after
//! it), but not against a batch recorded and not yet submitted: a vector may be dropped after
//! a batch recorded it, and that batch would then run on the buffer's next owner. So every
//! batch holds a [`BatchMark`] until it is submitted or dropped, and a kept buffer is handed
//! out only once every batch open when it was dropped has gone. Work wgsparse cannot see is
//! kept out the same way: a buffer whose handle a caller took (`GpuVec::buffer`, for the
//! caller's own passes) is never kept, nor is any once ops were recorded into a caller's pass
//! (`Recorder::new`). When the cap is reached, the oldest kept buffers make room.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};

/// Buffers this large or larger are kept for reuse: vectors of 2 M f32 or 1 M f64 rows and
/// up. A one-shot CG solve's four or five vectors of 33 MB (f64, 4 M rows) had taken 5.5–7 ms
/// to allocate on the H100 where wgpu's blocks had no room left, ~0.15 ms once kept here, and
/// vectors of 16.4 MB (f32, 4.1 M rows) as much (`benches/NOTES.md`, session 38).
pub(crate) const POOL_MIN_BYTES: u64 = 8 << 20;

/// The default cap on the bytes kept ([`crate::ContextOptions::buffer_pool_bytes`]).
pub const DEFAULT_POOL_BYTES: u64 = 2 << 30;

pub(crate) struct BufferPool {
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    kept: Vec<Kept>,
    bytes: u64,
    cap: u64,
    /// Batches recorded and not yet submitted or dropped, by id.
    open: BTreeSet<u64>,
    next_batch: u64,
}

struct Kept {
    buffer: wgpu::Buffer,
    usage: wgpu::BufferUsages,
    /// Batches with a smaller id were open when the buffer was dropped.
    batches_before: u64,
}

impl BufferPool {
    pub fn new(cap: u64) -> Arc<Self> {
        Arc::new(BufferPool { state: Mutex::new(State { cap, ..State::default() }) })
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A kept buffer of `size` bytes (or up to an eighth more) with `usage`, the smallest
    /// such, that no open batch may still use.
    pub fn take(&self, size: u64, usage: wgpu::BufferUsages) -> Option<wgpu::Buffer> {
        let mut state = self.state();
        let oldest_open = state.open.first().copied().unwrap_or(u64::MAX);
        let fits = |k: &Kept| {
            k.usage == usage && (size..=size + size / 8).contains(&k.buffer.size()) && oldest_open >= k.batches_before
        };
        let (index, _) = state.kept.iter().enumerate().filter(|(_, k)| fits(k)).min_by_key(|(_, k)| k.buffer.size())?;
        // In order of keeping: the oldest go first when the cap needs room.
        let kept = state.kept.remove(index);
        state.bytes -= kept.buffer.size();
        Some(kept.buffer)
    }

    /// Keeps `buffer` for reuse, freeing the oldest kept ones if the cap needs it (a buffer
    /// larger than the cap is freed).
    fn keep(&self, buffer: wgpu::Buffer, usage: wgpu::BufferUsages) {
        let mut state = self.state();
        if buffer.size() > state.cap {
            return;
        }
        while state.bytes + buffer.size() > state.cap {
            let oldest = state.kept.remove(0);
            state.bytes -= oldest.buffer.size();
        }
        state.bytes += buffer.size();
        let batches_before = state.next_batch;
        state.kept.push(Kept { buffer, usage, batches_before });
    }

    /// Frees every kept buffer; returns the bytes released.
    pub fn trim(&self) -> u64 {
        let mut state = self.state();
        state.kept.clear();
        std::mem::take(&mut state.bytes)
    }

    /// Bytes kept now.
    pub fn bytes(&self) -> u64 {
        self.state().bytes
    }

    /// Keeps nothing from now on, and frees what is kept: for a context whose ops are
    /// recorded into a caller's passes, whose submission it cannot see.
    pub fn disable(&self) {
        let mut state = self.state();
        state.cap = 0;
        state.kept.clear();
        state.bytes = 0;
    }

    /// Marks a batch open until the mark is dropped.
    pub fn open_batch(self: &Arc<Self>) -> BatchMark {
        let mut state = self.state();
        let id = state.next_batch;
        state.next_batch += 1;
        state.open.insert(id);
        BatchMark { pool: self.clone(), id }
    }
}

/// A batch's claim on the buffers dropped while it is open (see the module's text).
pub(crate) struct BatchMark {
    pool: Arc<BufferPool>,
    id: u64,
}

impl Drop for BatchMark {
    fn drop(&mut self) {
        self.pool.state().open.remove(&self.id);
    }
}

/// A device buffer that returns to its pool when the last vector using it is dropped (if it
/// is large enough to be kept).
pub(crate) struct PooledBuffer {
    buffer: wgpu::Buffer,
    usage: wgpu::BufferUsages,
    pool: Option<Weak<BufferPool>>,
    /// A caller holds the wgpu handle: its own commands may use the buffer after the drop.
    exposed: AtomicBool,
}

impl PooledBuffer {
    /// A buffer that goes back to `pool` when dropped if it is large; `None` keeps it out
    /// (buffers mapped at creation: uploads, which could not take a kept buffer either, and
    /// one whose upload failed would be dropped still mapped).
    pub fn new(buffer: wgpu::Buffer, usage: wgpu::BufferUsages, pool: Option<&Arc<BufferPool>>) -> Self {
        let pool = pool.filter(|_| buffer.size() >= POOL_MIN_BYTES).map(Arc::downgrade);
        PooledBuffer { buffer, usage, pool, exposed: AtomicBool::new(false) }
    }

    /// The handle for a caller's own use: the buffer is then never kept.
    pub fn expose(&self) -> &wgpu::Buffer {
        self.exposed.store(true, Ordering::Relaxed);
        &self.buffer
    }
}

impl std::ops::Deref for PooledBuffer {
    type Target = wgpu::Buffer;

    fn deref(&self) -> &wgpu::Buffer {
        &self.buffer
    }
}

impl Drop for PooledBuffer {
    fn drop(&mut self) {
        let exposed = *self.exposed.get_mut();
        if let Some(pool) = self.pool.as_ref().filter(|_| !exposed).and_then(Weak::upgrade) {
            pool.keep(self.buffer.clone(), self.usage);
        }
    }
}
