//! GPU time of parts of a batch, from timestamp queries written at the start and end of a
//! compute pass (`Batch::timed`).

use crate::context::Context;
use crate::{Error, Result};

/// Timestamp pairs around timed sections of batches. Needs `TIMESTAMP_QUERY`
/// ([`Context::has_timestamps`]).
///
/// ```no_run
/// # fn demo(ctx: &wgsparse::Context, spmv: &wgsparse::ops::Spmv<f32>, x: &wgsparse::GpuVec<f32>,
/// #         y: &mut wgsparse::GpuVec<f32>) -> wgsparse::Result<()> {
/// let mut profiler = wgsparse::record::Profiler::new(ctx, 16)?;
/// let mut batch = ctx.batch();
/// batch.timed(&mut profiler, "spmv", |rec| spmv.record(rec, 1.0, x, 0.0, y))?;
/// batch.submit()?;
/// for (label, micros) in profiler.read(ctx)? {
///     println!("{label}: {micros:.1} µs");
/// }
/// # Ok(()) }
/// ```
pub struct Profiler {
    query_set: wgpu::QuerySet,
    resolve: wgpu::Buffer,
    readback: wgpu::Buffer,
    capacity: usize,
    labels: Vec<String>,
    period_ns: f64,
    /// The device it was made on. Last, so that the query set and buffers go first: a profiler
    /// may outlive its context, and the device's state must release the device last
    /// (`Lifecycle`).
    device: crate::gpu::Device,
}

/// The timestamp slots of one timed pass.
pub(crate) struct SpanWrites<'a> {
    query_set: &'a wgpu::QuerySet,
    first: u32,
}

impl SpanWrites<'_> {
    pub(crate) fn as_pass_writes(&self) -> wgpu::ComputePassTimestampWrites<'_> {
        wgpu::ComputePassTimestampWrites {
            query_set: self.query_set,
            beginning_of_pass_write_index: Some(self.first),
            end_of_pass_write_index: Some(self.first + 1),
        }
    }
}

impl Profiler {
    /// Room for `capacity` timed sections before [`Profiler::reset`].
    pub fn new(ctx: &Context, capacity: usize) -> Result<Self> {
        if !ctx.has_timestamps() {
            return Err(Error::Unsupported(format!("adapter {:?} has no timestamp queries", ctx.adapter_info().name)));
        }
        let count = capacity
            .max(1)
            .checked_mul(2)
            .and_then(|count| u32::try_from(count).ok())
            .ok_or_else(|| Error::InvalidArgument("profiler capacity".into()))?;
        let size = u64::from(count) * 8;
        let device = ctx.device();
        let (query_set, resolve, readback) = ctx.gpu().scoped("creating a profiler", || {
            let buffer = |label, usage| {
                device.create_buffer(&wgpu::BufferDescriptor {
                    label: Some(label),
                    size,
                    usage,
                    mapped_at_creation: false,
                })
            };
            (
                device.create_query_set(&wgpu::QuerySetDescriptor {
                    label: Some("wgsparse profiler"),
                    ty: wgpu::QueryType::Timestamp,
                    count,
                }),
                buffer("wgsparse profiler resolve", wgpu::BufferUsages::QUERY_RESOLVE | wgpu::BufferUsages::COPY_SRC),
                buffer("wgsparse profiler readback", wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST),
            )
        })?;
        Ok(Profiler {
            query_set,
            resolve,
            readback,
            capacity: capacity.max(1),
            labels: Vec::new(),
            period_ns: f64::from(ctx.queue().get_timestamp_period()),
            device: ctx.gpu().clone(),
        })
    }

    /// Forgets the sections timed so far (their slots are reused).
    pub fn reset(&mut self) {
        self.labels.clear();
    }

    /// How many sections fit before a reset.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Timed sections recorded since the last reset.
    pub fn len(&self) -> usize {
        self.labels.len()
    }

    /// Whether no section was timed since the last reset.
    pub fn is_empty(&self) -> bool {
        self.labels.is_empty()
    }

    pub(crate) fn next_span(&mut self, ctx: &Context, label: &str) -> Result<SpanWrites<'_>> {
        ctx.check_owner("the profiler", self.device.id())?;
        if self.labels.len() >= self.capacity {
            return Err(Error::InvalidArgument(format!(
                "the profiler holds {} sections; reset it or make it larger",
                self.capacity
            )));
        }
        let first = 2 * self.labels.len() as u32;
        self.labels.push(label.to_string());
        Ok(SpanWrites { query_set: &self.query_set, first })
    }

    /// The GPU time of every section timed since the last reset, in µs, in recording order.
    /// Call after the batches holding them were submitted; waits for them.
    pub fn read(&self, ctx: &Context) -> Result<Vec<(String, f64)>> {
        ctx.check_owner("the profiler", self.device.id())?;
        if self.labels.is_empty() {
            return Ok(Vec::new());
        }
        let count = 2 * self.labels.len() as u32;
        let size = u64::from(count) * 8;
        let device = ctx.gpu();
        let submission = device.scoped("reading timestamps", || {
            let mut encoder = ctx.device().create_command_encoder(&wgpu::CommandEncoderDescriptor { label: None });
            encoder.resolve_query_set(&self.query_set, 0..count, &self.resolve, 0);
            encoder.copy_buffer_to_buffer(&self.resolve, 0, &self.readback, 0, size);
            device.submit([encoder.finish()])
        })?;
        let slice = self.readback.slice(..size);
        let (sender, receiver) = std::sync::mpsc::channel();
        slice.map_async(wgpu::MapMode::Read, move |result| {
            let _ = sender.send(result);
        });
        device.wait(Some(submission))?;
        receiver
            .recv()
            .map_err(|_| Error::Readback("timestamp readback was dropped".into()))?
            .map_err(|e| Error::Readback(format!("mapping timestamps: {e}")))?;
        let ticks: Vec<u64> = {
            let view = slice.get_mapped_range().map_err(|e| Error::Readback(format!("timestamps: {e}")))?;
            view.chunks_exact(8).map(|b| u64::from_le_bytes(b.try_into().expect("8-byte chunks"))).collect()
        };
        self.readback.unmap();
        Ok(self
            .labels
            .iter()
            .zip(ticks.chunks_exact(2))
            .map(|(label, t)| (label.clone(), t[1].saturating_sub(t[0]) as f64 * self.period_ns / 1e3))
            .collect())
    }
}
