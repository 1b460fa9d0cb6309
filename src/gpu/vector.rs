//! Device arrays: [`GpuVec`], the owner of one buffer, and [`Bind`], a typed range of one
//! that a kernel's bindings name.

use std::fmt;
use std::marker::PhantomData;
use std::ops::Range;

use bytemuck::Pod;

use std::sync::Arc;

use super::device::{next_object_id, Device, DeviceId};
use super::readback;
use super::PooledBuffer;
use crate::element::Stored;
use crate::{Error, Result};

/// The usages of every device array: kernels read and write it, copies and readbacks use it.
const USAGE: wgpu::BufferUsages =
    wgpu::BufferUsages::STORAGE.union(wgpu::BufferUsages::COPY_SRC).union(wgpu::BufferUsages::COPY_DST);

/// A typed array in GPU memory, owning its buffer. Results stay on the device until read.
///
/// Not `Clone`: like a `Vec`, one owner, so an op's input and output are distinct arrays
/// unless the caller explicitly binds two ranges of one (which ops check). Dropping it frees
/// the memory as soon as no submitted work uses it, except that the context keeps buffers of
/// 8 MiB and more for its next arrays of their size
/// ([`ContextOptions::buffer_pool_bytes`](crate::ContextOptions::buffer_pool_bytes)).
pub struct GpuVec<T: Stored> {
    /// Shared by the vectors of a block; back to the device's pool when the last one goes.
    buffer: Arc<PooledBuffer>,
    /// Where the elements start in the buffer: 0, except for the vectors of a block
    /// ([`GpuVec::block_on`]), which share one buffer.
    offset: u64,
    len: usize,
    id: u64,
    device: Device,
    _element: PhantomData<fn() -> T>,
}

impl<T: Stored> GpuVec<T> {
    /// `len` zero-initialised elements on `device`.
    pub(crate) fn zeros_on(device: &Device, len: usize) -> Result<Self> {
        Self::allocate(device, len, wgpu::BufferUsages::empty(), false)
    }

    /// `len` zeros whose buffer can also hold indirect dispatch arguments.
    pub(crate) fn indirect_on(device: &Device, len: usize) -> Result<Self> {
        Self::allocate(device, len, wgpu::BufferUsages::INDIRECT, false)
    }

    fn allocate(device: &Device, len: usize, extra: wgpu::BufferUsages, mapped: bool) -> Result<Self> {
        let buffer = Self::create_buffer(device, len, extra, mapped)?;
        Ok(GpuVec { buffer, offset: 0, len, id: next_object_id(), device: device.clone(), _element: PhantomData })
    }

    /// A buffer for `len` elements (at least one).
    fn create_buffer(
        device: &Device,
        len: usize,
        extra: wgpu::BufferUsages,
        mapped: bool,
    ) -> Result<Arc<PooledBuffer>> {
        // Every kernel indexes elements in u32 (a binding past 2^32 elements, which Metal's
        // limits allow, would have its indices wrap).
        if len > u32::MAX as usize {
            return Err(Error::LimitExceeded {
                what: format!("a vector of {len} elements"),
                limit: "2^32 elements (u32 indices)",
                requested: len as u64,
                max: u32::MAX as u64,
            });
        }
        Ok(Arc::new(device.array_buffer(len.max(1) as u64 * T::stride(), USAGE | extra, mapped)?))
    }

    /// `count` zeroed vectors of `len` elements in one buffer, `stride` elements apart
    /// (`len` rounded up to the storage-offset alignment), so that one binding can span
    /// several of them ([`GpuVec::bind_span`]). They share the buffer's id, so an op may not
    /// read one of them and write another in one dispatch (wgpu tracks usage per buffer).
    pub(crate) fn block_on(device: &Device, len: usize, count: usize) -> Result<(Vec<Self>, usize)> {
        let align = (device.limits().min_storage_buffer_offset_alignment as u64).max(T::stride());
        let stride = (len.max(1) as u64 * T::stride()).next_multiple_of(align) / T::stride();
        let total = (stride as usize).checked_mul(count).ok_or_else(|| Error::LimitExceeded {
            what: format!("{count} vectors of {len} elements"),
            limit: "max_buffer_size",
            requested: u64::MAX,
            max: device.limits().max_buffer_size,
        })?;
        let buffer = Self::create_buffer(device, total, wgpu::BufferUsages::empty(), false)?;
        let id = next_object_id();
        let vectors = (0..count as u64)
            .map(|k| GpuVec {
                buffer: buffer.clone(),
                offset: k * stride * T::stride(),
                len,
                id,
                device: device.clone(),
                _element: PhantomData,
            })
            .collect();
        Ok((vectors, stride as usize))
    }

    /// A new vector holding a copy of this one (copied on the GPU, ordered before any work
    /// submitted afterwards).
    pub(crate) fn duplicate(&self) -> Result<Self> {
        let copy = Self::allocate(&self.device, self.len, wgpu::BufferUsages::empty(), false)?;
        let mut encoder = self.device.wgpu().create_command_encoder(&Default::default());
        encoder.copy_buffer_to_buffer(&self.buffer, self.offset, &copy.buffer, 0, self.byte_len());
        self.device.submit([encoder.finish()]);
        Ok(copy)
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        self.len
    }
    /// Whether there are no elements.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    /// Bytes holding the `len` elements.
    pub fn byte_len(&self) -> u64 {
        self.len as u64 * T::stride()
    }
    /// The underlying wgpu buffer, for callers that mix wgsparse with their own passes: the
    /// elements are bytes `byte_offset()..byte_offset() + byte_len()` of it (its size may
    /// exceed that: allocations are padded, and a solver's Krylov basis keeps its vectors
    /// in one buffer).
    ///
    /// A buffer whose handle was taken here is freed when dropped, never kept by the context
    /// for reuse (the caller's commands may still use it).
    pub fn buffer(&self) -> &wgpu::Buffer {
        self.buffer.expose()
    }

    /// The buffer for wgsparse's own recording (within batches, which the pool sees).
    pub(crate) fn raw_buffer(&self) -> &wgpu::Buffer {
        &self.buffer
    }
    /// Where the elements start in [`buffer`](Self::buffer), in bytes (a multiple of
    /// `min_storage_buffer_offset_alignment`).
    pub fn byte_offset(&self) -> u64 {
        self.offset
    }
    /// Process-unique id of the buffer (bind-group cache keys, aliasing checks).
    pub(crate) fn id(&self) -> u64 {
        self.id
    }
    /// The device (context) the vector lives on.
    pub fn device_id(&self) -> DeviceId {
        self.device.id()
    }

    /// The whole vector as a binding.
    pub(crate) fn bind(&self) -> Bind<'_, T> {
        self.bind_range(0..self.len)
    }

    /// `elements` elements from this vector's start as one binding: for a vector of a block
    /// ([`GpuVec::block_on`]), this one and the vectors after it.
    pub(crate) fn bind_span(&self, elements: usize) -> Bind<'_, T> {
        let size = (elements.max(1) as u64 * T::stride()).min(self.buffer.size() - self.offset);
        Bind {
            buffer: &self.buffer,
            id: self.id,
            device: self.device.id(),
            offset: self.offset,
            size,
            _element: PhantomData,
        }
    }

    /// Elements `range` as a binding at their offset (callers keep the offset aligned to
    /// `min_storage_buffer_offset_alignment`). An empty range binds one element: bindings
    /// of size zero are invalid, and allocations hold at least one.
    pub(crate) fn bind_range(&self, range: Range<usize>) -> Bind<'_, T> {
        let stride = T::stride();
        Bind {
            buffer: &self.buffer,
            id: self.id,
            device: self.device.id(),
            offset: self.offset + range.start as u64 * stride,
            size: range.len().max(1) as u64 * stride,
            _element: PhantomData,
        }
    }
}

impl<T: Stored + Pod> GpuVec<T> {
    /// Uploads `data` into a new vector on `device`.
    pub(crate) fn upload_on(device: &Device, data: &[T]) -> Result<Self> {
        let vec = Self::allocate(device, data.len(), wgpu::BufferUsages::empty(), true)?;
        let bytes: &[u8] = bytemuck::cast_slice(data);
        {
            let mut view = vec.buffer.slice(..).get_mapped_range_mut().map_err(|e| {
                device.check_alive().err().unwrap_or_else(|| Error::Validation(format!("mapping a new buffer: {e}")))
            })?;
            view.slice(..bytes.len()).copy_from_slice(bytes);
        }
        vec.buffer.unmap();
        Ok(vec)
    }

    /// Overwrites the vector with `data` (same length). The write is ordered before any work
    /// submitted afterwards.
    pub fn write(&self, data: &[T]) -> Result<()> {
        self.device.check_alive()?;
        if data.len() != self.len {
            return Err(Error::dimension("GpuVec::write", "data length", self.len, data.len()));
        }
        self.write_at(0, data)
    }

    /// Overwrites elements `offset..offset + data.len()`.
    pub fn write_at(&self, offset: usize, data: &[T]) -> Result<()> {
        self.device.check_alive()?;
        if offset.checked_add(data.len()).is_none_or(|end| end > self.len) {
            return Err(Error::InvalidArgument(format!(
                "GpuVec::write_at: elements {offset}.. (+{}) reach past the length {}",
                data.len(),
                self.len
            )));
        }
        if !data.is_empty() {
            self.device.queue().write_buffer(
                &self.buffer,
                self.offset + offset as u64 * T::stride(),
                bytemuck::cast_slice(data),
            );
        }
        Ok(())
    }

    /// Copies the vector to the host. The future never blocks the thread: the context's
    /// poller thread (started on first use, idle without readbacks) submits the copy and
    /// polls the device while the task waits.
    pub async fn read(&self) -> Result<Vec<T>> {
        let mut out = vec![T::zeroed(); self.len];
        if self.len > 0 {
            let read = readback::read_in_background(&self.device, (*self.buffer).clone(), self.offset, self.byte_len());
            readback::finish_background(read, bytemuck::cast_slice_mut(&mut out)).await?;
        }
        Ok(out)
    }

    /// Copies the vector to the host, waiting on this thread.
    pub fn read_blocking(&self) -> Result<Vec<T>> {
        let mut out = vec![T::zeroed(); self.len];
        self.read_into(&mut out)?;
        Ok(out)
    }

    /// The vector in host memory, waiting on this thread: a view of the mapped staging
    /// buffer the GPU copied into, with no copy on the host (see [`HostView`](super::HostView)).
    pub fn read_view(&self) -> Result<super::HostView<T>> {
        let pending = readback::start_read(&self.device, &self.buffer, self.offset, self.byte_len())?;
        pending.finish_view()
    }

    /// Copies the vector into `out` (same length), waiting on this thread: no allocation.
    pub fn read_into(&self, out: &mut [T]) -> Result<()> {
        if out.len() != self.len {
            return Err(Error::dimension("GpuVec::read_into", "output length", self.len, out.len()));
        }
        if self.len == 0 {
            return self.device.check_alive();
        }
        let pending = readback::start_read(&self.device, &self.buffer, self.offset, self.byte_len())?;
        pending.finish_blocking(bytemuck::cast_slice_mut(out))
    }
}

impl<T: Stored> Drop for GpuVec<T> {
    fn drop(&mut self) {
        self.device.bind_groups().forget(self.id);
    }
}

impl<T: Stored> fmt::Debug for GpuVec<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GpuVec")
            .field("element", &std::any::type_name::<T>())
            .field("len", &self.len)
            .field("device", &self.device.id())
            .finish()
    }
}

/// A typed range of a device array, as a kernel binding takes it. Made only from a
/// [`GpuVec`] of the right element type, so a kernel cannot be handed indices where it
/// reads values.
pub struct Bind<'a, E> {
    buffer: &'a wgpu::Buffer,
    id: u64,
    device: DeviceId,
    offset: u64,
    size: u64,
    _element: PhantomData<fn() -> E>,
}

impl<E> Clone for Bind<'_, E> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<E> Copy for Bind<'_, E> {}

impl<'a, E> Bind<'a, E> {
    /// A binding of bytes `offset..offset + size` of a buffer known by its parts (a handle
    /// kept past the borrow of its vector).
    pub(crate) fn from_raw(buffer: &'a wgpu::Buffer, id: u64, device: DeviceId, offset: u64, size: u64) -> Self {
        Bind { buffer, id, device, offset, size, _element: PhantomData }
    }

    /// The binding as the kernel layer sees it (generated code calls this).
    pub(crate) fn entry(&self, name: &'static str, writable: bool) -> BindEntry<'a> {
        BindEntry {
            name,
            writable,
            buffer: self.buffer,
            id: self.id,
            device: self.device,
            offset: self.offset,
            size: self.size,
        }
    }

    /// The same buffer from this binding's offset, `size` bytes, as another element type:
    /// for kernels that move raw words, or that exist for one element type only.
    pub(crate) fn reinterpret<U>(self, size: u64) -> Bind<'a, U> {
        Bind { buffer: self.buffer, id: self.id, device: self.device, offset: self.offset, size, _element: PhantomData }
    }

    /// The same range read as vec4s (its length is a multiple of 4 elements).
    pub(crate) fn as_vec4(self) -> Bind<'a, [E; 4]> {
        let unit = 4 * std::mem::size_of::<E>() as u64;
        debug_assert!(
            self.size.is_multiple_of(unit) && self.offset.is_multiple_of(unit),
            "a vec4 binding of whole vec4s: offset {} size {}",
            self.offset,
            self.size
        );
        let size = self.size;
        self.reinterpret(size)
    }
}

/// One binding of a kernel, untyped: what bind groups, their cache and the checks need.
#[derive(Clone, Copy)]
pub(crate) struct BindEntry<'a> {
    pub(crate) name: &'static str,
    pub(crate) writable: bool,
    pub(crate) buffer: &'a wgpu::Buffer,
    pub(crate) id: u64,
    pub(crate) device: DeviceId,
    pub(crate) offset: u64,
    pub(crate) size: u64,
}

impl BindEntry<'_> {
    /// Whether one dispatch may not bind both: they share written bytes, or (wgpu's rule,
    /// which tracks usage per buffer) one range of a buffer is read and another written.
    pub(crate) fn conflicts(&self, other: &BindEntry<'_>) -> bool {
        let overlap = self.offset < other.offset + other.size && other.offset < self.offset + self.size;
        self.id == other.id && (self.writable != other.writable || (self.writable && overlap))
    }
}
