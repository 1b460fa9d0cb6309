//! Matrices on the GPU, one file per format: [`GpuCsr`], [`GpuCoo`], [`GpuEll`], [`GpuHyb`]
//! held by a [`GpuSparse`] (in row panels when the device limits require), and [`GpuDense`].
//! The bitmap format of seed 004 is its own type, [`GpuBitmap`]: its ops build new matrices
//! whose patterns the GPU decides, and it has no row panels.
//!
//! Uploading only accepts the validated host types, whose constructors checked every index,
//! so the kernels that read these buffers run without naga's bounds checks. Which format
//! suits an op is the op's business (`ops::spmv::preferred_conversion`); this module stores
//! what it is asked to.

mod bitmap;
mod coo;
mod csr;
mod dense;
mod ell;
mod hyb;
mod panels;
mod structure;

use std::ops::Range;
use std::sync::Arc;

pub use bitmap::GpuBitmap;
pub use coo::GpuCoo;
pub use csr::GpuCsr;
pub use dense::{DenseLayout, GpuDense};
use ell::EllEncoding;
pub use ell::{EllIndices, GpuEll};
pub use hyb::GpuHyb;
pub(crate) use structure::{Analysis, Structure};
pub use structure::{AnalysisInfo, RowStats};

use crate::context::Context;
use crate::element::{Scalar, Stored};
use crate::format::{CooMatrix, CsrMatrix, EllMatrix, EllOptions, HybMatrix, HybSplit};
use crate::gpu::{Device, DeviceId};
use crate::{Error, Result};
use panels::{panel_bounds, row_panel};

/// The sparse formats a [`GpuSparse`] can be stored in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Format {
    /// Compressed sparse rows.
    Csr,
    /// Row-sorted coordinates.
    Coo,
    /// Padded ELL, column-major.
    Ell,
    /// ELL for the first entries of each row, COO for the rest.
    Hyb,
}

impl Format {
    /// Every format, in the order reports list them.
    pub const ALL: [Format; 4] = [Format::Csr, Format::Coo, Format::Ell, Format::Hyb];

    /// `csr`, `coo`, `ell` or `hyb`.
    pub fn name(self) -> &'static str {
        match self {
            Format::Csr => "csr",
            Format::Coo => "coo",
            Format::Ell => "ell",
            Format::Hyb => "hyb",
        }
    }
}

/// How to store a host CSR matrix on the GPU: a format with its conversion options.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Conversion {
    /// As CSR.
    Csr,
    /// As row-sorted COO.
    Coo,
    /// As ELL; refused when the padding passes the options' bound.
    Ell(EllOptions),
    /// As HYB, split as given.
    Hyb(HybSplit),
}

impl Conversion {
    /// The format this conversion produces.
    pub fn format(self) -> Format {
        match self {
            Conversion::Csr => Format::Csr,
            Conversion::Coo => Format::Coo,
            Conversion::Ell(_) => Format::Ell,
            Conversion::Hyb(_) => Format::Hyb,
        }
    }

    /// This format with default options.
    pub fn of(format: Format) -> Conversion {
        match format {
            Format::Csr => Conversion::Csr,
            Format::Coo => Conversion::Coo,
            Format::Ell => Conversion::Ell(EllOptions::default()),
            Format::Hyb => Conversion::Hyb(HybSplit::Auto),
        }
    }
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for u32 {}
}

/// The integer type of row offsets and column indices on the device. `u32` today; a
/// parameter of the format types so that 64-bit offsets can follow.
pub trait Index: Stored + bytemuck::Pod + sealed::Sealed {
    /// Bits per index.
    const BITS: u32;
}

impl Index for u32 {
    const BITS: u32 = 32;
}

/// Rows `row_start..row_start + rows` of a matrix, in one device format.
#[derive(Debug)]
pub struct Panel<T: Scalar, I: Index = u32> {
    row_start: usize,
    storage: PanelStorage<T, I>,
}

/// A panel's arrays, by format.
#[derive(Debug)]
pub enum PanelStorage<T: Scalar, I: Index = u32> {
    /// CSR.
    Csr(GpuCsr<T, I>),
    /// COO.
    Coo(GpuCoo<T, I>),
    /// ELL.
    Ell(GpuEll<T>),
    /// HYB.
    Hyb(GpuHyb<T>),
}

impl<T: Scalar, I: Index> Panel<T, I> {
    /// The matrix row of the panel's first row.
    pub fn row_start(&self) -> usize {
        self.row_start
    }
    /// The panel's rows of the matrix.
    pub fn rows(&self) -> Range<usize> {
        let rows = match &self.storage {
            PanelStorage::Csr(m) => m.rows(),
            PanelStorage::Coo(m) => m.rows(),
            PanelStorage::Ell(m) => m.rows(),
            PanelStorage::Hyb(m) => m.ell().rows(),
        };
        self.row_start..self.row_start + rows
    }
    /// Its arrays.
    pub fn storage(&self) -> &PanelStorage<T, I> {
        &self.storage
    }
    fn device_bytes(&self) -> u64 {
        match &self.storage {
            PanelStorage::Csr(m) => m.device_bytes(),
            PanelStorage::Coo(m) => m.device_bytes(),
            PanelStorage::Ell(m) => m.device_bytes(),
            PanelStorage::Hyb(m) => m.device_bytes(),
        }
    }
}

/// A sparse matrix on the GPU in one of the [`Format`]s, with its pattern's analyses.
///
/// A cheap handle: clones share the device arrays, as do the plans made for the matrix, so
/// [`update_values`](Self::update_values) reaches them all.
pub struct GpuSparse<T: Scalar, I: Index = u32> {
    inner: Arc<Inner<T, I>>,
}

struct Inner<T: Scalar, I: Index> {
    rows: usize,
    cols: usize,
    nnz: usize,
    format: Format,
    /// How it was converted from CSR (`None`: uploaded from COO).
    conversion: Option<Conversion>,
    panels: Vec<Panel<T, I>>,
    structure: Arc<Structure>,
    device: DeviceId,
    /// Whether every row's columns increase (what lookups by binary search need).
    columns_sorted: bool,
}

impl<T: Scalar, I: Index> Clone for GpuSparse<T, I> {
    fn clone(&self) -> Self {
        GpuSparse { inner: self.inner.clone() }
    }
}

impl<T: Scalar, I: Index> std::fmt::Debug for GpuSparse<T, I> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GpuSparse")
            .field("rows", &self.inner.rows)
            .field("cols", &self.inner.cols)
            .field("nnz", &self.inner.nnz)
            .field("format", &self.inner.format)
            .field("panels", &self.inner.panels.len())
            .finish()
    }
}

impl<T: Scalar> GpuSparse<T> {
    /// Converts a validated CSR matrix as `conversion` says and uploads it, in row panels
    /// when it exceeds the device's buffer limits.
    pub fn from_csr(ctx: &Context, a: &CsrMatrix<T>, conversion: Conversion) -> Result<Self> {
        ctx.check_alive()?;
        ctx.check_element::<T>()?;
        let encoding = Self::ell_encoding(a, conversion);
        let bounds = panel_bounds(ctx.limits(), a.row_offsets(), conversion, T::KIND.size())?;
        let mut panels = Vec::with_capacity(bounds.len());
        for rows in bounds {
            with_panel(a, rows.clone(), |part| {
                let storage = upload_panel(ctx.gpu(), part, conversion, rows.start, encoding)?;
                panels.push(Panel { row_start: rows.start, storage });
                Ok(())
            })?;
        }
        let stats = RowStats::from_offsets(a.row_offsets());
        let fingerprint = structure::fingerprint(a.rows(), a.cols(), a.row_offsets(), a.col_indices());
        Ok(Self::assemble(
            ctx,
            a.rows(),
            a.cols(),
            a.nnz(),
            conversion.format(),
            Some(conversion),
            panels,
            stats,
            fingerprint,
            a.columns_sorted(),
        ))
    }

    /// Uploads a validated COO matrix (sorted by row on the host first if needed; repeated
    /// positions are kept and add up).
    pub fn from_coo(ctx: &Context, a: &CooMatrix<T>) -> Result<Self> {
        ctx.check_alive()?;
        ctx.check_element::<T>()?;
        let sorted;
        let a = if a.is_row_sorted() {
            a
        } else {
            sorted = a.sorted_by_row();
            &sorted
        };
        // Row-sorted COO with repeats is CSR structure plus repeated columns: split and upload
        // it through the same panel rule, keeping the entries as they are.
        let offsets = a.row_offsets();
        let bounds = panel_bounds(ctx.limits(), &offsets, Conversion::Coo, T::KIND.size())?;
        let mut panels = Vec::with_capacity(bounds.len());
        for rows in bounds {
            let entries = offsets[rows.start] as usize..offsets[rows.end] as usize;
            let coo = GpuCoo::upload_rows(
                ctx.gpu(),
                rows.clone(),
                &a.row_indices()[entries.clone()],
                &a.col_indices()[entries.clone()],
                &a.values()[entries],
            )?;
            panels.push(Panel { row_start: rows.start, storage: PanelStorage::Coo(coo) });
        }
        let stats = RowStats::from_offsets(&offsets);
        let fingerprint = structure::fingerprint(a.rows(), a.cols(), a.row_indices(), a.col_indices());
        Ok(Self::assemble(ctx, a.rows(), a.cols(), a.nnz(), Format::Coo, None, panels, stats, fingerprint, false))
    }

    /// A CSR matrix with this one's pattern (row panels, columns and analyses shared; the
    /// index arrays copied on the GPU) and zero values: the output of SDDMM.
    /// [`Error::InvalidArgument`] unless this matrix is CSR.
    pub fn zeros_like(&self, ctx: &Context) -> Result<Self> {
        ctx.check_owner("GpuSparse::zeros_like", self.device_id())?;
        let mut panels = Vec::with_capacity(self.inner.panels.len());
        for panel in &self.inner.panels {
            let PanelStorage::Csr(csr) = &panel.storage else {
                return Err(Error::InvalidArgument(format!(
                    "GpuSparse::zeros_like copies CSR matrices, this one is {}",
                    self.inner.format.name()
                )));
            };
            panels.push(Panel { row_start: panel.row_start, storage: PanelStorage::Csr(csr.zeros_like(ctx.gpu())?) });
        }
        let inner = &self.inner;
        Ok(GpuSparse {
            inner: Arc::new(Inner {
                rows: inner.rows,
                cols: inner.cols,
                nnz: inner.nnz,
                format: inner.format,
                conversion: inner.conversion,
                panels,
                structure: inner.structure.clone(),
                device: inner.device,
                columns_sorted: inner.columns_sorted,
            }),
        })
    }

    #[allow(clippy::too_many_arguments)]
    fn assemble(
        ctx: &Context,
        rows: usize,
        cols: usize,
        nnz: usize,
        format: Format,
        conversion: Option<Conversion>,
        panels: Vec<Panel<T>>,
        stats: RowStats,
        fingerprint: u64,
        columns_sorted: bool,
    ) -> Self {
        let structure = Arc::new(Structure::new(stats, fingerprint));
        GpuSparse {
            inner: Arc::new(Inner {
                rows,
                cols,
                nnz,
                format,
                conversion,
                panels,
                structure,
                device: ctx.id(),
                columns_sorted,
            }),
        }
    }

    /// A matrix of one panel whose arrays were built on the GPU (CSR or row-sorted COO with
    /// sorted columns and no repeats), with its pattern given on the host for the statistics
    /// and the fingerprint.
    pub(crate) fn from_device_panel(
        ctx: &Context,
        cols: usize,
        storage: PanelStorage<T>,
        row_offsets: &[u32],
        col_indices: &[u32],
    ) -> Self {
        let rows = row_offsets.len() - 1;
        let (format, conversion) = match storage {
            PanelStorage::Coo(_) => (Format::Coo, None),
            _ => (Format::Csr, Some(Conversion::Csr)),
        };
        let panels = if rows == 0 { Vec::new() } else { vec![Panel { row_start: 0, storage }] };
        let stats = RowStats::from_offsets(row_offsets);
        let fingerprint = match format {
            Format::Coo => {
                let row_indices = crate::format::row_indices_from_offsets(row_offsets);
                structure::fingerprint(rows, cols, &row_indices, col_indices)
            }
            _ => structure::fingerprint(rows, cols, row_offsets, col_indices),
        };
        Self::assemble(ctx, rows, cols, col_indices.len(), format, conversion, panels, stats, fingerprint, true)
    }

    /// How ELL (or HYB's ELL part) stores its slots: 16-bit diagonal offsets when asked and
    /// every entry lies within 32,767 of the diagonal, and then value codes when asked (each
    /// panel takes them if its distinct values are few enough).
    fn ell_encoding(a: &CsrMatrix<T>, conversion: Conversion) -> EllEncoding {
        let (compact, limit) = match conversion {
            Conversion::Ell(options) => (options.compact_indices, options.value_table_limit),
            Conversion::Hyb(_) => (true, 0),
            Conversion::Csr | Conversion::Coo => (false, 0),
        };
        match (compact && ell::within_diagonal_band(a), limit) {
            (false, _) => EllEncoding::Columns,
            (true, 0) => EllEncoding::DiagonalOffsets,
            (true, limit) => EllEncoding::ValueTable { limit },
        }
    }

    /// Replaces the values, keeping the pattern and every analysis: `a` must have the
    /// pattern the matrix was uploaded with (checked by a fingerprint of its row offsets and
    /// columns; [`Error::InvalidArgument`] otherwise, nothing written). Plans made for the
    /// matrix see the new values in work submitted afterwards.
    ///
    /// An ELL matrix whose values were coded into a table on upload
    /// ([`EllOptions::value_table_limit`], on by default for at most 256 distinct values)
    /// is recoded in place; its table has room for the larger of the distinct values it was
    /// uploaded with and a quarter of each row panel's entries (at most 65,536). New values
    /// with more distinct ones are refused with [`Error::Unsupported`], nothing written:
    /// upload such a matrix with `value_table_limit: 0` if its values will change that way
    /// (placeholders first, the real values later).
    pub fn update_values(&mut self, a: &CsrMatrix<T>) -> Result<()> {
        let inner = &self.inner;
        let Some(conversion) = inner.conversion else {
            return Err(Error::InvalidArgument(
                "this matrix was uploaded from COO: update it with update_coo_values".into(),
            ));
        };
        let fingerprint = structure::fingerprint(a.rows(), a.cols(), a.row_offsets(), a.col_indices());
        if a.nnz() != inner.nnz || fingerprint != inner.structure.fingerprint() {
            return Err(Error::InvalidArgument("update_values: the pattern differs from the uploaded one".into()));
        }
        // Value tables refuse values they cannot code: checked on every panel before any write.
        // The write below converts and codes those panels again, rather than holding every
        // panel's converted copy at once (an update is not a hot path; memory is the bound).
        for panel in &inner.panels {
            if let (PanelStorage::Ell(m), Conversion::Ell(options)) = (&panel.storage, conversion) {
                if m.value_table() {
                    with_panel(a, panel.rows(), |part| m.check_values(&EllMatrix::from_csr(part, &options)?))?;
                }
            }
        }
        for panel in &inner.panels {
            with_panel(a, panel.rows(), |part| match (&panel.storage, conversion) {
                (PanelStorage::Csr(m), _) => m.write_values(part),
                (PanelStorage::Coo(m), _) => m.write_values(part.values()),
                (PanelStorage::Ell(m), Conversion::Ell(options)) => {
                    m.write_values(&EllMatrix::from_csr(part, &options)?)
                }
                (PanelStorage::Hyb(m), Conversion::Hyb(split)) => m.write_values(&HybMatrix::from_csr(part, split)?),
                _ => Err(Error::Validation("a panel's storage differs from the matrix's conversion".into())),
            })?;
        }
        Ok(())
    }

    /// [`update_values`](Self::update_values) for a matrix uploaded from COO: `a` must have
    /// the same entries in the same positions (after sorting by row).
    pub fn update_coo_values(&mut self, a: &CooMatrix<T>) -> Result<()> {
        let inner = &self.inner;
        if inner.conversion.is_some() {
            return Err(Error::InvalidArgument(
                "this matrix was uploaded from CSR: update it with update_values".into(),
            ));
        }
        let sorted;
        let a = if a.is_row_sorted() {
            a
        } else {
            sorted = a.sorted_by_row();
            &sorted
        };
        let fingerprint = structure::fingerprint(a.rows(), a.cols(), a.row_indices(), a.col_indices());
        if a.nnz() != inner.nnz || fingerprint != inner.structure.fingerprint() {
            return Err(Error::InvalidArgument("update_coo_values: the pattern differs from the uploaded one".into()));
        }
        let offsets = a.row_offsets();
        for panel in &inner.panels {
            let rows = panel.rows();
            let entries = offsets[rows.start] as usize..offsets[rows.end] as usize;
            if let PanelStorage::Coo(m) = &panel.storage {
                m.write_values(&a.values()[entries])?;
            }
        }
        Ok(())
    }
}

impl<T: Scalar, I: Index> GpuSparse<T, I> {
    /// Rows.
    pub fn rows(&self) -> usize {
        self.inner.rows
    }
    /// Columns.
    pub fn cols(&self) -> usize {
        self.inner.cols
    }
    /// Stored entries (padding excluded).
    pub fn nnz(&self) -> usize {
        self.inner.nnz
    }
    /// The storage format.
    pub fn format(&self) -> Format {
        self.inner.format
    }
    /// The row panels (one for most matrices, none without rows).
    pub fn panels(&self) -> &[Panel<T, I>] {
        &self.inner.panels
    }
    /// How many row panels the device limits forced.
    pub fn panel_count(&self) -> usize {
        self.inner.panels.len()
    }
    /// Row-length statistics taken on upload.
    pub fn stats(&self) -> &RowStats {
        self.inner.structure.stats()
    }
    /// The context the matrix lives on.
    pub fn device_id(&self) -> DeviceId {
        self.inner.device
    }
    /// Bits per stored column index the kernels read: 16 for ELL (and HYB's ELL part)
    /// stored as diagonal offsets (see [`EllOptions::compact_indices`]; with value codes
    /// too), else `I::BITS`.
    pub fn index_bits(&self) -> u32 {
        if self.any_ell(GpuEll::compact) {
            16
        } else {
            I::BITS
        }
    }
    /// Bits per stored entry's value the kernels read: 16 where ELL codes its values into a
    /// table (see [`EllOptions::value_table_limit`]; each row panel decides for itself, and
    /// like [`index_bits`](Self::index_bits) this says 16 if any does), else the element's.
    pub fn value_bits(&self) -> u32 {
        if self.any_ell(GpuEll::value_table) {
            16
        } else {
            8 * T::KIND.size() as u32
        }
    }
    /// Whether some panel's ELL (or HYB's ELL part) is as `test` asks.
    fn any_ell(&self, test: impl Fn(&GpuEll<T>) -> bool) -> bool {
        self.inner.panels.iter().any(|p| match &p.storage {
            PanelStorage::Ell(m) => test(m),
            PanelStorage::Hyb(m) => test(m.ell()),
            PanelStorage::Csr(_) | PanelStorage::Coo(_) => false,
        })
    }
    /// Bytes of device memory the matrix's arrays occupy (analyses excluded).
    pub fn device_bytes(&self) -> u64 {
        self.inner.panels.iter().map(Panel::device_bytes).sum()
    }
    /// The analyses the matrix holds, with their device bytes.
    pub fn analyses(&self) -> Vec<AnalysisInfo> {
        self.inner.structure.list()
    }
    /// Drops the analyses the matrix holds. Plans keep the ones they use; plans made later
    /// build them again.
    pub fn drop_analyses(&self) {
        self.inner.structure.drop_all()
    }
    pub(crate) fn structure(&self) -> &Structure {
        &self.inner.structure
    }
    /// Whether every row's columns are sorted (CSR uploaded from a matrix with sorted
    /// columns, or built on the GPU by a conversion that sorts them).
    pub fn columns_sorted(&self) -> bool {
        self.inner.columns_sorted
    }
    /// Whether `other` holds the same pattern in the same format and row panels (the
    /// patterns compared by fingerprint, as [`GpuSparse::update_values`] does).
    pub fn has_pattern_of(&self, other: &GpuSparse<T, I>) -> bool {
        let (a, b) = (&self.inner, &other.inner);
        (a.rows, a.cols, a.nnz, a.format) == (b.rows, b.cols, b.nnz, b.format)
            && a.structure.fingerprint() == b.structure.fingerprint()
            && a.panels.iter().map(|p| p.rows()).eq(b.panels.iter().map(|p| p.rows()))
    }
}

/// Runs `f` on rows `rows` of `a`: `a` itself when they are all of it, else a copy.
fn with_panel<T: Scalar, R>(
    a: &CsrMatrix<T>,
    rows: Range<usize>,
    f: impl FnOnce(&CsrMatrix<T>) -> Result<R>,
) -> Result<R> {
    if rows.start == 0 && rows.end == a.rows() {
        f(a)
    } else {
        f(&row_panel(a, rows))
    }
}

fn upload_panel<T: Scalar>(
    device: &Device,
    a: &CsrMatrix<T>,
    conversion: Conversion,
    first_row: usize,
    encoding: EllEncoding,
) -> Result<PanelStorage<T>> {
    Ok(match conversion {
        Conversion::Csr => PanelStorage::Csr(GpuCsr::upload(device, a)?),
        Conversion::Coo => PanelStorage::Coo(GpuCoo::upload(device, &a.to_coo())?),
        Conversion::Ell(options) => {
            PanelStorage::Ell(GpuEll::upload(device, &EllMatrix::from_csr(a, &options)?, first_row, encoding)?)
        }
        Conversion::Hyb(split) => {
            PanelStorage::Hyb(GpuHyb::upload(device, &HybMatrix::from_csr(a, split)?, first_row, encoding)?)
        }
    })
}
