//! Device vectors: upload, creation with error capture, readback as a future.

use std::marker::PhantomData;
use std::time::Duration;

use bytemuck::Pod;

use super::Context;
use crate::{Error, Result};

/// Allocations are rounded up to this many bytes so that kernels may read 16-byte vectors
/// and so that an empty vector still has a bindable buffer.
pub(crate) const ALLOCATION_GRANULE: u64 = 16;

/// How long a readback waits for the GPU before reporting the device as lost.
const READBACK_TIMEOUT: Duration = Duration::from_secs(120);

/// A typed array in GPU memory. Results stay here until [`GpuVec::read`] is called.
#[derive(Debug, Clone)]
pub struct GpuVec<T> {
    buffer: wgpu::Buffer,
    len: usize,
    _element: PhantomData<T>,
}

impl<T: Pod> GpuVec<T> {
    /// Number of elements.
    pub fn len(&self) -> usize {
        self.len
    }
    /// Whether there are no elements.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    /// The underlying wgpu buffer (its size may exceed `len` elements: allocations are
    /// padded).
    pub fn buffer(&self) -> &wgpu::Buffer {
        &self.buffer
    }
    /// Bytes holding the `len` elements.
    pub fn byte_len(&self) -> u64 {
        (self.len * std::mem::size_of::<T>()) as u64
    }
    /// The whole buffer, for a bind group.
    pub(crate) fn binding(&self) -> wgpu::BufferBinding<'_> {
        self.buffer.as_entire_buffer_binding()
    }

    /// Elements `range` as a slice to bind (an op's row panel of y).
    pub(crate) fn slice(&self, range: std::ops::Range<usize>) -> VecSlice<'_> {
        let size = std::mem::size_of::<T>();
        VecSlice { buffer: &self.buffer, offset: (range.start * size) as u64, len: range.len(), element_size: size }
    }

    /// Copies the vector back to the host.
    pub async fn read(&self, ctx: &Context) -> Result<Vec<T>> {
        let bytes = read_bytes(ctx, &self.buffer, self.byte_len()).await?;
        Ok(bytemuck::pod_collect_to_vec(&bytes))
    }

    /// Blocking [`GpuVec::read`].
    pub fn read_blocking(&self, ctx: &Context) -> Result<Vec<T>> {
        pollster::block_on(self.read(ctx))
    }

    /// Overwrites the vector with `data` (same length).
    pub fn write(&self, ctx: &Context, data: &[T]) -> Result<()> {
        ctx.check_alive()?;
        if data.len() != self.len {
            return Err(Error::dimension("GpuVec::write", "data length", self.len, data.len()));
        }
        if !data.is_empty() {
            ctx.queue().write_buffer(&self.buffer, 0, bytemuck::cast_slice(data));
        }
        Ok(())
    }
}

/// A range of a device vector, bindable at its offset (which the caller keeps aligned to
/// `min_storage_buffer_offset_alignment`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct VecSlice<'a> {
    buffer: &'a wgpu::Buffer,
    offset: u64,
    len: usize,
    element_size: usize,
}

impl<'a> VecSlice<'a> {
    pub(crate) fn len(&self) -> usize {
        self.len
    }
    pub(crate) fn binding(&self) -> wgpu::BufferBinding<'a> {
        // An empty range still binds one element: bindings of size zero are invalid.
        let size = (self.len.max(1) * self.element_size) as u64;
        wgpu::BufferBinding { buffer: self.buffer, offset: self.offset, size: std::num::NonZeroU64::new(size) }
    }
}

impl Context {
    /// Uploads `data` into a new device vector (usable as input and output of any op).
    pub fn upload<T: Pod>(&self, data: &[T]) -> Result<GpuVec<T>> {
        let bytes: &[u8] = bytemuck::cast_slice(data);
        let buffer = self.create_buffer("wgsparse vector", bytes.len() as u64, true)?;
        {
            let mut view = buffer.slice(..).get_mapped_range_mut().map_err(|e| {
                self.check_alive().err().unwrap_or_else(|| Error::Validation(format!("mapping a new buffer: {e}")))
            })?;
            view.slice(..bytes.len()).copy_from_slice(bytes);
        }
        buffer.unmap();
        Ok(GpuVec { buffer, len: data.len(), _element: PhantomData })
    }

    /// A new device vector of `len` zeros.
    pub fn zeros<T: Pod>(&self, len: usize) -> Result<GpuVec<T>> {
        let bytes = (len as u64).checked_mul(std::mem::size_of::<T>() as u64).ok_or(Error::LimitExceeded {
            what: format!("a vector of {len} elements"),
            limit: "max_buffer_size",
            requested: u64::MAX,
            max: self.limits().max_buffer_size,
        })?;
        let buffer = self.create_buffer("wgsparse vector", bytes, false)?;
        Ok(GpuVec { buffer, len, _element: PhantomData })
    }

    /// Creates a storage buffer of at least `size` bytes, refusing sizes past the device's
    /// limits and turning wgpu's out-of-memory and validation errors into [`Error`]s.
    pub(crate) fn create_buffer(&self, label: &str, size: u64, mapped: bool) -> Result<wgpu::Buffer> {
        self.check_alive()?;
        let padded = size.max(1).div_ceil(ALLOCATION_GRANULE) * ALLOCATION_GRANULE;
        let max = self.limits().max_buffer_size;
        if padded > max {
            return Err(Error::LimitExceeded {
                what: format!("{label} of {size} bytes ({padded} allocated)"),
                limit: "max_buffer_size",
                requested: padded,
                max,
            });
        }
        let buffer = self.scoped(&format!("allocating {label} ({padded} bytes)"), || {
            self.device().create_buffer(&wgpu::BufferDescriptor {
                label: Some(label),
                size: padded,
                usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: mapped,
            })
        })?;
        Ok(buffer)
    }

    /// Waits until all submitted work has finished.
    pub fn synchronize(&self) -> Result<()> {
        self.wait(None)
    }

    pub(crate) fn wait(&self, submission: Option<wgpu::SubmissionIndex>) -> Result<()> {
        self.check_alive()?;
        let result =
            self.device().poll(wgpu::PollType::Wait { submission_index: submission, timeout: Some(READBACK_TIMEOUT) });
        self.check_alive()?;
        result.map(|_| ()).map_err(|e| Error::DeviceLost(format!("waiting for the GPU: {e}")))
    }
}

/// Copies `len` bytes of `source` to the host through a staging buffer.
pub(crate) async fn read_bytes(ctx: &Context, source: &wgpu::Buffer, len: u64) -> Result<Vec<u8>> {
    ctx.check_alive()?;
    if len == 0 {
        return Ok(Vec::new());
    }
    let device = ctx.device();
    // Copies and maps need 4-byte multiples; allocations are padded, so rounding stays inside.
    let copy_len = len.div_ceil(wgpu::COPY_BUFFER_ALIGNMENT) * wgpu::COPY_BUFFER_ALIGNMENT;
    let (staging, submission) = ctx.scoped(&format!("reading back {len} bytes"), || {
        let staging = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("wgsparse readback"),
            size: copy_len,
            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let mut encoder = device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("readback") });
        encoder.copy_buffer_to_buffer(source, 0, &staging, 0, copy_len);
        let submission = ctx.queue().submit([encoder.finish()]);
        (staging, submission)
    })?;
    let (sender, receiver) = futures_intrusive::channel::shared::oneshot_channel();
    staging.slice(..).map_async(wgpu::MapMode::Read, move |result| {
        let _ = sender.send(result);
    });
    ctx.wait(Some(submission))?;
    match receiver.receive().await {
        Some(Ok(())) => {}
        Some(Err(e)) => return Err(Error::Readback(e.to_string())),
        None => return Err(Error::DeviceLost("the readback was dropped before it completed".into())),
    }
    let bytes = {
        let view = staging.slice(..).get_mapped_range().map_err(|e| Error::Readback(e.to_string()))?;
        view[..len as usize].to_vec()
    };
    staging.unmap();
    Ok(bytes)
}
