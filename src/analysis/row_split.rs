//! The row decomposition of RoDe (seed 002) as csr-split uses it: rows longer than a
//! threshold are cut into chunks of a fixed number of entries, each processed like an
//! independent row, and the chunks of one row are combined afterwards. Built on the GPU by
//! counts and prefix sums, once per pattern, panel (or block of a panel's rows) and
//! (threshold, chunk length). SpMV's csr-split and SpMM share it where these agree.

use std::ops::Range;

use super::scan::Scan;
use crate::context::Context;
use crate::gpu::GpuVec;
use crate::kernel::shaders::structs::{Chunk, LongRow};
use crate::kernel::shaders::{split_count, split_fill};
use crate::matrix::Analysis;
use crate::Result;

/// The chunks of a panel's long rows.
pub(crate) struct RowSplit {
    /// (row, first entry, index among the long rows) of every chunk of every long row, row by
    /// row.
    pub(crate) chunks: GpuVec<Chunk>,
    /// (row, first chunk) of every long row, then a sentinel holding the chunk count.
    pub(crate) long_rows: GpuVec<LongRow>,
}

impl Analysis for RowSplit {
    fn device_bytes(&self) -> u64 {
        self.chunks.byte_len() + self.long_rows.byte_len()
    }
}

impl RowSplit {
    /// The name the decomposition of `source`'s rows (`panel 3`, `transpose`) is kept under
    /// in the matrix's analyses; `rows`, when only a block of them is decomposed.
    pub(crate) fn name(source: &str, rows: Option<&Range<usize>>, max_len: u32, chunk_len: u32) -> String {
        let block = rows.map_or(String::new(), |r| format!(", rows {}..{}", r.start, r.end));
        format!("row split ({source}{block}, rows longer than {max_len}, chunks of {chunk_len})")
    }

    /// Rows `block` of the CSR rows described by `row_offsets` (starting at a multiple of 64
    /// rows), with more than `max_len` entries, go to chunks of `chunk_len` entries; chunk
    /// rows count from `block.start`.
    pub(crate) fn build(
        ctx: &Context,
        row_offsets: &GpuVec<u32>,
        block: Range<usize>,
        max_len: u32,
        chunk_len: u32,
    ) -> Result<Self> {
        let rows = block.len();
        let row_offsets = row_offsets.bind_range(block.start..block.end + 1);
        let params = split_count::Params { rows: rows as u32, max_len, chunk_len };
        let chunk_counts = ctx.zeros::<u32>(rows)?;
        let long_flags = ctx.zeros::<u32>(rows)?;
        let (chunk_total, long_total) = (ctx.zeros::<u32>(1)?, ctx.zeros::<u32>(1)?);
        let scan = Scan::new(ctx, rows)?;
        let count = ctx.plain_kernel::<split_count::Shader>(Default::default(), Default::default())?;
        let mut batch = ctx.batch();
        {
            let mut rec = batch.recorder();
            rec.dispatch_items(
                &count,
                params,
                split_count::Bindings { row_offsets, chunk_counts: chunk_counts.bind(), long_flags: long_flags.bind() },
                rows as u64,
            )?;
            scan.record(&mut rec, &chunk_counts, rows, &chunk_total)?;
            scan.record(&mut rec, &long_flags, rows, &long_total)?;
        }
        let chunk_ticket = batch.read_back(&chunk_total)?;
        let long_ticket = batch.read_back(&long_total)?;
        batch.submit()?;
        // The sizes of what follows: one small readback, once per pattern.
        let chunk_count = chunk_ticket.wait()?[0] as usize;
        let long_row_count = long_ticket.wait()?[0] as usize;

        let chunks = ctx.zeros::<Chunk>(chunk_count)?;
        let long_rows = ctx.zeros::<LongRow>(long_row_count + 1)?;
        long_rows.write_at(long_row_count, &[LongRow { row: u32::MAX, first_chunk: chunk_count as u32 }])?;
        if long_row_count > 0 {
            let fill = ctx.plain_kernel::<split_fill::Shader>(Default::default(), Default::default())?;
            let mut batch = ctx.batch();
            batch.recorder().dispatch_items(
                &fill,
                split_fill::Params { rows: rows as u32, max_len, chunk_len },
                split_fill::Bindings {
                    row_offsets,
                    chunk_starts: chunk_counts.bind(),
                    long_index: long_flags.bind(),
                    chunks: chunks.bind(),
                    long_rows: long_rows.bind(),
                },
                rows as u64,
            )?;
            batch.submit()?;
        }
        Ok(RowSplit { chunks, long_rows })
    }

    /// Chunks of long rows.
    pub(crate) fn chunk_count(&self) -> usize {
        self.chunks.len()
    }

    /// Long rows.
    pub(crate) fn long_row_count(&self) -> usize {
        self.long_rows.len() - 1
    }
}
