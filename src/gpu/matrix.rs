//! Sparse matrices resident on the GPU, uploaded from validated host formats.
//!
//! Uploading only accepts the host types, whose constructors validated every index, so the
//! kernels that read these buffers may run without naga's bounds checks.
//!
//! A matrix whose arrays exceed the device's `max_storage_buffer_binding_size` (or
//! `max_buffer_size`) is cut into row panels, each within the limits; ops run panel by
//! panel, each writing its own rows of y. Panels start at multiples of the rows that fit
//! `min_storage_buffer_offset_alignment`, so y can be bound at the panel's offset.

use std::sync::Arc;

use super::{Context, GpuVec};
use crate::format::{
    CooMatrix, CsrMatrix, EllMatrix, EllOptions, HybMatrix, HybSplit, ELL_PADDING, MAX_DIAGONAL_OFFSET,
};
use crate::{Error, Result};

/// A device format with its conversion options, for [`GpuMatrix::from_csr`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Format {
    /// Chosen from the row lengths: ELL when rows are nearly uniform (ELL slots at most
    /// 1.25 × the entries and no row longer than 64), since its column-major layout makes
    /// every load coalesced — with 16-bit diagonal offsets for banded matrices (see
    /// [`EllOptions::compact_indices`]); CSR otherwise.
    Auto,
    /// Compressed sparse rows.
    Csr,
    /// Row-sorted coordinates.
    Coo,
    /// Padded ELL; conversion refuses matrices whose padding exceeds the options' bound.
    Ell(EllOptions),
    /// ELL + COO split as given.
    Hyb(HybSplit),
}

impl Format {
    /// What [`Format::Auto`] picks for `a` (other formats stay as they are).
    pub fn resolve(self, a: &CsrMatrix<f32>) -> Format {
        if self != Format::Auto {
            return self;
        }
        let stats = RowStats::from_offsets(a.row_offsets());
        let slots = stats.max_len as f64 * stats.rows as f64;
        if stats.max_len <= 64 && slots <= 1.25 * stats.nnz as f64 {
            Format::Ell(EllOptions::default())
        } else {
            Format::Csr
        }
    }

    /// `csr`, `coo`, `ell` or `hyb`.
    pub fn name(&self) -> &'static str {
        match self {
            Format::Auto => "auto",
            Format::Csr => "csr",
            Format::Coo => "coo",
            Format::Ell(_) => "ell",
            Format::Hyb(_) => "hyb",
        }
    }
}

/// A sparse matrix on the GPU in one of the formats the kernels read.
#[derive(Debug, Clone)]
pub struct GpuMatrix {
    rows: usize,
    cols: usize,
    nnz: usize,
    format: &'static str,
    stats: RowStats,
    pub(crate) panels: Vec<Panel>,
}

/// Rows `row_start..row_start + rows` of a matrix, in one device format.
#[derive(Debug, Clone)]
pub(crate) struct Panel {
    pub(crate) row_start: usize,
    pub(crate) storage: Storage,
}

#[derive(Debug, Clone)]
pub(crate) enum Storage {
    Csr(GpuCsr),
    Coo(GpuCoo),
    Ell(GpuEll),
    Hyb(GpuHyb),
}

/// CSR on the GPU.
#[derive(Debug, Clone)]
pub(crate) struct GpuCsr {
    pub(crate) rows: usize,
    pub(crate) row_offsets: GpuVec<u32>,
    pub(crate) col_indices: GpuVec<u32>,
    pub(crate) values: GpuVec<f32>,
    pub(crate) stats: RowStats,
    /// The row offsets, kept on the host for plans that decompose rows (csr-split).
    pub(crate) host_row_offsets: Arc<[u32]>,
}

/// Row-sorted COO on the GPU (the order the segmented-reduction kernel needs).
#[derive(Debug, Clone)]
pub(crate) struct GpuCoo {
    pub(crate) rows: usize,
    pub(crate) row_indices: GpuVec<u32>,
    pub(crate) col_indices: GpuVec<u32>,
    pub(crate) values: GpuVec<f32>,
}

/// Column-major padded ELL on the GPU.
#[derive(Debug, Clone)]
pub(crate) struct GpuEll {
    pub(crate) rows: usize,
    pub(crate) width: usize,
    pub(crate) indices: EllIndices,
    pub(crate) values: GpuVec<f32>,
}

/// How a [`GpuEll`] stores its columns (spmv_ell.wgsl reads both).
#[derive(Debug, Clone)]
pub(crate) enum EllIndices {
    /// The column of each slot, column-major; [`ELL_PADDING`] pads.
    Columns(GpuVec<u32>),
    /// `column − (first_row + row)` as i16, two per word: slot `k` of row `i` is halfword
    /// `k * stride + i` with `stride` = rows rounded up to even; `0x8000` pads.
    DiagonalOffsets { packed: GpuVec<u32>, first_row: u32, stride: u32 },
}

/// The halfword marking an ELL padding slot among 16-bit diagonal offsets.
const OFFSET_PADDING: u16 = 0x8000;

/// HYB on the GPU: an ELL part and a row-sorted COO tail.
#[derive(Debug, Clone)]
pub(crate) struct GpuHyb {
    pub(crate) ell: GpuEll,
    pub(crate) coo: GpuCoo,
}

/// Cheap row-length statistics, taken on upload, that drive the automatic choices.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct RowStats {
    /// Rows.
    pub rows: usize,
    /// Stored entries.
    pub nnz: usize,
    /// Longest row.
    pub max_len: usize,
    /// Rows with no entry.
    pub empty_rows: usize,
    /// Mean row length.
    pub mean: f64,
    /// Standard deviation of the row lengths.
    pub std_dev: f64,
}

impl RowStats {
    /// Statistics of CSR row offsets.
    pub fn from_offsets(row_offsets: &[u32]) -> Self {
        Self::from_lengths(row_offsets.windows(2).map(|w| (w[1] - w[0]) as usize))
    }

    /// Statistics of a sequence of row lengths.
    pub fn from_lengths(lengths: impl Iterator<Item = usize>) -> Self {
        let (mut rows, mut nnz, mut max_len, mut empty_rows, mut sum_sq) = (0usize, 0usize, 0usize, 0usize, 0f64);
        for len in lengths {
            rows += 1;
            nnz += len;
            max_len = max_len.max(len);
            empty_rows += (len == 0) as usize;
            sum_sq += (len as f64) * (len as f64);
        }
        let mean = if rows == 0 { 0.0 } else { nnz as f64 / rows as f64 };
        let variance = if rows == 0 { 0.0 } else { (sum_sq / rows as f64 - mean * mean).max(0.0) };
        RowStats { rows, nnz, max_len, empty_rows, mean, std_dev: variance.sqrt() }
    }
}

impl GpuMatrix {
    /// Converts a validated CSR matrix to `format` on the host and uploads it, in row panels
    /// when it exceeds the device's buffer limits.
    pub fn from_csr(ctx: &Context, a: &CsrMatrix<f32>, format: Format) -> Result<Self> {
        ctx.check_alive()?;
        let format = format.resolve(a);
        let compact_indices = match format {
            Format::Ell(options) => options.compact_indices,
            Format::Hyb(_) => true,
            _ => false,
        } && within_diagonal_band(a);
        let bounds = panel_bounds(ctx, a.row_offsets(), format)?;
        let mut panels = Vec::with_capacity(bounds.len());
        for rows in bounds {
            let part;
            let a_part = if rows.start == 0 && rows.end == a.rows() {
                a
            } else {
                part = row_panel(a, rows.clone());
                &part
            };
            let storage = match format {
                Format::Auto | Format::Csr => Storage::Csr(GpuCsr::upload(ctx, a_part)?),
                Format::Coo => Storage::Coo(GpuCoo::upload(ctx, &a_part.to_coo())?),
                Format::Ell(options) => Storage::Ell(GpuEll::upload(
                    ctx,
                    &EllMatrix::from_csr(a_part, &options)?,
                    rows.start,
                    compact_indices,
                )?),
                Format::Hyb(split) => Storage::Hyb(GpuHyb::upload(
                    ctx,
                    &HybMatrix::from_csr(a_part, split)?,
                    rows.start,
                    compact_indices,
                )?),
            };
            panels.push(Panel { row_start: rows.start, storage });
        }
        Ok(GpuMatrix {
            rows: a.rows(),
            cols: a.cols(),
            nnz: a.nnz(),
            format: format.name(),
            stats: RowStats::from_offsets(a.row_offsets()),
            panels,
        })
    }

    /// Uploads a validated COO matrix (sorted by row on the host first if needed).
    pub fn from_coo(ctx: &Context, a: &CooMatrix<f32>) -> Result<Self> {
        let sorted;
        let a = if a.is_row_sorted() {
            a
        } else {
            sorted = a.sorted_by_row();
            &sorted
        };
        // Row-sorted COO with duplicates kept is CSR structure plus repeated columns; split
        // and upload it through the same path, but keep the entries as they are.
        let offsets = a.row_offsets();
        let bounds = panel_bounds(ctx, &offsets, Format::Coo)?;
        let mut panels = Vec::with_capacity(bounds.len());
        for rows in bounds {
            let entries = offsets[rows.start] as usize..offsets[rows.end] as usize;
            let shifted: Vec<u32> = a.row_indices()[entries.clone()].iter().map(|&r| r - rows.start as u32).collect();
            let coo = GpuCoo {
                rows: rows.len(),
                row_indices: ctx.upload(&shifted)?,
                col_indices: ctx.upload(&a.col_indices()[entries.clone()])?,
                values: ctx.upload(&a.values()[entries])?,
            };
            panels.push(Panel { row_start: rows.start, storage: Storage::Coo(coo) });
        }
        Ok(GpuMatrix {
            rows: a.rows(),
            cols: a.cols(),
            nnz: a.nnz(),
            format: "coo",
            stats: RowStats::from_offsets(&offsets),
            panels,
        })
    }

    /// Rows.
    pub fn rows(&self) -> usize {
        self.rows
    }
    /// Columns.
    pub fn cols(&self) -> usize {
        self.cols
    }
    /// Stored entries (padding excluded).
    pub fn nnz(&self) -> usize {
        self.nnz
    }
    /// The format's name (`csr`, `coo`, `ell`, `hyb`).
    pub fn format_name(&self) -> &'static str {
        self.format
    }
    /// Bits per stored column index the kernels read: 16 for ELL (and HYB's ELL part)
    /// stored as diagonal offsets (see [`EllOptions::compact_indices`]), else 32.
    pub fn index_bits(&self) -> u32 {
        let compact = |ell: &GpuEll| matches!(ell.indices, EllIndices::DiagonalOffsets { .. });
        let any_compact = self.panels.iter().any(|p| match &p.storage {
            Storage::Ell(m) => compact(m),
            Storage::Hyb(m) => compact(&m.ell),
            Storage::Csr(_) | Storage::Coo(_) => false,
        });
        if any_compact {
            16
        } else {
            32
        }
    }
    /// Row-length statistics taken on upload.
    pub fn stats(&self) -> &RowStats {
        &self.stats
    }
    /// How many row panels the device limits forced (1 for most matrices, 0 without rows).
    pub fn panel_count(&self) -> usize {
        self.panels.len()
    }
    /// Bytes of device memory the matrix occupies.
    pub fn device_bytes(&self) -> u64 {
        fn coo(m: &GpuCoo) -> u64 {
            m.row_indices.byte_len() + m.col_indices.byte_len() + m.values.byte_len()
        }
        fn ell(m: &GpuEll) -> u64 {
            let indices = match &m.indices {
                EllIndices::Columns(columns) => columns.byte_len(),
                EllIndices::DiagonalOffsets { packed, .. } => packed.byte_len(),
            };
            indices + m.values.byte_len()
        }
        self.panels
            .iter()
            .map(|p| match &p.storage {
                Storage::Csr(m) => m.row_offsets.byte_len() + m.col_indices.byte_len() + m.values.byte_len(),
                Storage::Coo(m) => coo(m),
                Storage::Ell(m) => ell(m),
                Storage::Hyb(m) => ell(&m.ell) + coo(&m.coo),
            })
            .sum()
    }
}

impl Storage {
    pub(crate) fn rows(&self) -> usize {
        match self {
            Storage::Csr(m) => m.rows,
            Storage::Coo(m) => m.rows,
            Storage::Ell(m) => m.rows,
            Storage::Hyb(m) => m.ell.rows,
        }
    }
}

impl GpuCsr {
    fn upload(ctx: &Context, a: &CsrMatrix<f32>) -> Result<Self> {
        Ok(GpuCsr {
            rows: a.rows(),
            row_offsets: ctx.upload(a.row_offsets())?,
            col_indices: ctx.upload(a.col_indices())?,
            values: ctx.upload(a.values())?,
            stats: RowStats::from_offsets(a.row_offsets()),
            host_row_offsets: a.row_offsets().into(),
        })
    }
}

impl GpuCoo {
    /// Uploads a row-sorted COO matrix.
    fn upload(ctx: &Context, a: &CooMatrix<f32>) -> Result<Self> {
        debug_assert!(a.is_row_sorted());
        Ok(GpuCoo {
            rows: a.rows(),
            row_indices: ctx.upload(a.row_indices())?,
            col_indices: ctx.upload(a.col_indices())?,
            values: ctx.upload(a.values())?,
        })
    }
}

impl GpuEll {
    /// Uploads rows `first_row..` of a matrix; `compact` (the caller checked
    /// [`within_diagonal_band`]) stores 16-bit diagonal offsets instead of columns.
    fn upload(ctx: &Context, a: &EllMatrix<f32>, first_row: usize, compact: bool) -> Result<Self> {
        debug_assert!(a.col_indices().iter().all(|&c| c == ELL_PADDING || (c as usize) < a.cols()));
        let indices = if compact {
            let stride = a.rows() + a.rows() % 2;
            EllIndices::DiagonalOffsets {
                packed: ctx.upload(&pack_diagonal_offsets(a, first_row, stride))?,
                first_row: first_row as u32,
                stride: stride as u32,
            }
        } else {
            EllIndices::Columns(ctx.upload(a.col_indices())?)
        };
        Ok(GpuEll { rows: a.rows(), width: a.width(), indices, values: ctx.upload(a.values())? })
    }
}

/// Whether every entry of `a` lies within [`MAX_DIAGONAL_OFFSET`] of the diagonal.
fn within_diagonal_band(a: &CsrMatrix<f32>) -> bool {
    (0..a.rows())
        .all(|i| a.row(i).0.iter().all(|&c| (c as i64 - i as i64).unsigned_abs() <= MAX_DIAGONAL_OFFSET as u64))
}

/// The 16-bit diagonal offsets of [`EllIndices::DiagonalOffsets`], packed two per word.
fn pack_diagonal_offsets(a: &EllMatrix<f32>, first_row: usize, stride: usize) -> Vec<u32> {
    let (rows, columns) = (a.rows(), a.col_indices());
    let mut halves = vec![OFFSET_PADDING; a.width() * stride];
    for k in 0..a.width() {
        for i in 0..rows {
            let c = columns[k * rows + i];
            if c != ELL_PADDING {
                let offset = c as i64 - (first_row + i) as i64;
                debug_assert!(offset.unsigned_abs() <= MAX_DIAGONAL_OFFSET as u64);
                halves[k * stride + i] = offset as i16 as u16;
            }
        }
    }
    halves.chunks(2).map(|pair| pair[0] as u32 | (pair[1] as u32) << 16).collect()
}

impl GpuHyb {
    fn upload(ctx: &Context, a: &HybMatrix<f32>, first_row: usize, compact: bool) -> Result<Self> {
        Ok(GpuHyb { ell: GpuEll::upload(ctx, a.ell(), first_row, compact)?, coo: GpuCoo::upload(ctx, a.coo())? })
    }
}

/// What a block of rows puts in its panel's largest device array.
#[derive(Debug, Clone, Copy, Default)]
struct Extent {
    rows: u64,
    nnz: u64,
    /// Longest row, for ELL's width × rows slots.
    width: u64,
}

impl Extent {
    fn of(row_offsets: &[u32], rows: std::ops::Range<usize>) -> Extent {
        let width = rows.clone().map(|r| row_offsets[r + 1] - row_offsets[r]).max().unwrap_or(0);
        Extent {
            rows: rows.len() as u64,
            nnz: (row_offsets[rows.end] - row_offsets[rows.start]) as u64,
            width: width as u64,
        }
    }

    fn join(self, other: Extent) -> Extent {
        Extent { rows: self.rows + other.rows, nnz: self.nnz + other.nnz, width: self.width.max(other.width) }
    }

    /// Bytes of the largest array of `format`: its entry slots, or its row offsets.
    fn bytes(self, format: Format) -> u64 {
        let slots = match format {
            Format::Auto | Format::Csr | Format::Coo => self.nnz,
            Format::Ell(_) => self.nnz.max(self.width * self.rows),
            // The automatic split keeps ELL slots within 3 per stored entry.
            Format::Hyb(HybSplit::Auto) => 3 * self.nnz,
            Format::Hyb(HybSplit::Width(k)) => self.nnz.max(self.width.min(k as u64) * self.rows),
        };
        4 * slots.max(self.rows + 1)
    }
}

/// Cuts `0..rows` into panels whose arrays each fit the device limits, starting at
/// multiples of the rows the y offset alignment allows. One pass over the row offsets.
fn panel_bounds(ctx: &Context, row_offsets: &[u32], format: Format) -> Result<Vec<std::ops::Range<usize>>> {
    let limits = ctx.limits();
    let limit = limits.max_storage_buffer_binding_size.min(limits.max_buffer_size) / 4 * 4;
    let rows = row_offsets.len() - 1;
    let align = (limits.min_storage_buffer_offset_alignment as usize / 4).max(1);
    let mut bounds = Vec::new();
    let (mut start, mut extent) = (0, Extent::default());
    let mut block_start = 0;
    while block_start < rows {
        let block = block_start..(block_start + align).min(rows);
        let block_extent = Extent::of(row_offsets, block.clone());
        if block_extent.bytes(format) > limit {
            return Err(Error::LimitExceeded {
                what: format!("rows {}..{} of the matrix (a panel cannot be smaller)", block.start, block.end),
                limit: "max_storage_buffer_binding_size",
                requested: block_extent.bytes(format),
                max: limit,
            });
        }
        if extent.join(block_extent).bytes(format) > limit {
            bounds.push(start..block.start);
            (start, extent) = (block.start, Extent::default());
        }
        extent = extent.join(block_extent);
        block_start = block.end;
    }
    if start < rows {
        bounds.push(start..rows);
    }
    Ok(bounds)
}

/// Rows `rows` of `a` as a matrix of their own (offsets rebased to 0).
fn row_panel(a: &CsrMatrix<f32>, rows: std::ops::Range<usize>) -> CsrMatrix<f32> {
    let offsets = &a.row_offsets()[rows.start..=rows.end];
    let entries = offsets[0] as usize..offsets[offsets.len() - 1] as usize;
    CsrMatrix::from_parts_unchecked(
        rows.len(),
        a.cols(),
        offsets.iter().map(|&o| o - offsets[0]).collect(),
        a.col_indices()[entries.clone()].to_vec(),
        a.values()[entries].to_vec(),
    )
}
