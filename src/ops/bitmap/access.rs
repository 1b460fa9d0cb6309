//! Element access: a batch of `(i, j)` queries read or written on the GPU, on a bitmap
//! (O(1) a query through the rank directory) or, as the baseline it is measured against, on
//! CSR with sorted columns (a binary search of the row).

use crate::context::Context;
use crate::element::Scalar;
use crate::gpu::GpuVec;
use crate::kernel::shaders::{bitmap_access, csr_access};
use crate::matrix::{GpuBitmap, GpuSparse, PanelStorage};
use crate::ops::common::{check_len, Operands};
use crate::record::Recorder;
use crate::{Error, Result};

/// What the queries recorded since the last reset met.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct AccessReport {
    /// Writes to positions inside the matrix that store no entry: nothing was written
    /// there (the bitmap keeps its pattern).
    pub absent_writes: u32,
    /// Queries outside the matrix (read as absent, never written).
    pub out_of_range: u32,
    /// The first query (its index) counted above, if any.
    pub first_refused: Option<u32>,
}

impl AccessReport {
    /// Whether every query was inside the matrix and every write landed.
    pub fn is_clean(&self) -> bool {
        self.first_refused.is_none()
    }
}

/// Batched element access. Reads give each query's value (0 where nothing is stored) and a
/// present flag (1 or 0); writes change stored entries only, and count the rest in an
/// [`AccessReport`] (read by [`check`](Self::check), or returned by the `get`/`set` calls).
/// Two writes to one position in one call leave one of the two values.
pub struct ElementAccess {
    ctx: Context,
    /// Counters: absent writes, out-of-range queries, first refused query.
    status: GpuVec<u32>,
    /// Bound as `present` by writes, which have none.
    no_present: GpuVec<u32>,
}

/// The matrix a query batch runs on.
enum Target<'a, T: Scalar> {
    Bitmap(&'a GpuBitmap<T>),
    Csr(&'a GpuSparse<T>),
}

impl ElementAccess {
    /// Plans element access on `ctx`.
    pub fn new(ctx: &Context) -> Result<Self> {
        Ok(ElementAccess { ctx: ctx.clone(), status: ctx.zeros(3)?, no_present: ctx.zeros(1)? })
    }

    /// Records reads of `(rows[q], cols[q])` into `values[q]` and `present[q]`.
    pub fn record_get<T: Scalar>(
        &self,
        rec: &mut Recorder<'_, '_>,
        a: &GpuBitmap<T>,
        rows: &GpuVec<u32>,
        cols: &GpuVec<u32>,
        values: &mut GpuVec<T>,
        present: &mut GpuVec<u32>,
    ) -> Result<()> {
        self.record(rec, Target::Bitmap(a), rows, cols, values, Some(present))
    }

    /// Records writes of `values[q]` to the stored entries `(rows[q], cols[q])`.
    pub fn record_set<T: Scalar>(
        &self,
        rec: &mut Recorder<'_, '_>,
        a: &mut GpuBitmap<T>,
        rows: &GpuVec<u32>,
        cols: &GpuVec<u32>,
        values: &GpuVec<T>,
    ) -> Result<()> {
        self.record(rec, Target::Bitmap(a), rows, cols, values, None)
    }

    /// [`record_get`](Self::record_get) on a CSR matrix (one panel, sorted columns: a binary
    /// search per query).
    pub fn record_get_csr<T: Scalar>(
        &self,
        rec: &mut Recorder<'_, '_>,
        a: &GpuSparse<T>,
        rows: &GpuVec<u32>,
        cols: &GpuVec<u32>,
        values: &mut GpuVec<T>,
        present: &mut GpuVec<u32>,
    ) -> Result<()> {
        self.record(rec, Target::Csr(a), rows, cols, values, Some(present))
    }

    /// [`record_set`](Self::record_set) on a CSR matrix.
    pub fn record_set_csr<T: Scalar>(
        &self,
        rec: &mut Recorder<'_, '_>,
        a: &mut GpuSparse<T>,
        rows: &GpuVec<u32>,
        cols: &GpuVec<u32>,
        values: &GpuVec<T>,
    ) -> Result<()> {
        self.record(rec, Target::Csr(a), rows, cols, values, None)
    }

    /// Reads the queries on a bitmap, submits and waits for the report.
    pub fn get<T: Scalar>(
        &self,
        a: &GpuBitmap<T>,
        rows: &GpuVec<u32>,
        cols: &GpuVec<u32>,
        values: &mut GpuVec<T>,
        present: &mut GpuVec<u32>,
    ) -> Result<AccessReport> {
        let mut batch = self.ctx.batch();
        self.record_get(&mut batch.recorder(), a, rows, cols, values, present)?;
        batch.submit()?;
        self.check()
    }

    /// Writes the queries on a bitmap, submits and waits for the report.
    pub fn set<T: Scalar>(
        &self,
        a: &mut GpuBitmap<T>,
        rows: &GpuVec<u32>,
        cols: &GpuVec<u32>,
        values: &GpuVec<T>,
    ) -> Result<AccessReport> {
        let mut batch = self.ctx.batch();
        self.record_set(&mut batch.recorder(), a, rows, cols, values)?;
        batch.submit()?;
        self.check()
    }

    /// The report of everything recorded since the last record's reset (waits for the GPU).
    pub fn check(&self) -> Result<AccessReport> {
        let [absent_writes, out_of_range, first] = self.status.read_blocking()?[..] else {
            unreachable!("three counters")
        };
        Ok(AccessReport { absent_writes, out_of_range, first_refused: (first != u32::MAX).then_some(first) })
    }

    fn record<T: Scalar>(
        &self,
        rec: &mut Recorder<'_, '_>,
        a: Target<'_, T>,
        rows: &GpuVec<u32>,
        cols: &GpuVec<u32>,
        values: &GpuVec<T>,
        present: Option<&GpuVec<u32>>,
    ) -> Result<()> {
        let op = if present.is_some() { "element read" } else { "element write" };
        let csr = match &a {
            Target::Bitmap(_) => None,
            Target::Csr(m) => match m.panels() {
                [] => None,
                [panel] => match panel.storage() {
                    PanelStorage::Csr(csr) if m.columns_sorted() => Some(csr),
                    _ => return Err(Error::InvalidArgument(format!("{op}: CSR with sorted columns only"))),
                },
                _ => return Err(Error::InvalidArgument(format!("{op}: a CSR matrix in one row panel only"))),
            },
        };
        let (owner, stored) = match &a {
            Target::Bitmap(m) => (m.device_id(), Some(m.values())),
            Target::Csr(m) => (m.device_id(), csr.map(|c| c.values())),
        };
        let mut ops = Operands::new(rec.context(), op)?
            .owned("the plan", self.ctx.id())?
            .owned("A", owner)?
            .input("rows", rows)?
            .input("cols", cols)?;
        if let Some(stored) = stored {
            ops = if present.is_some() { ops.input("A's values", stored)? } else { ops.output("A's values", stored)? };
        }
        ops = match present {
            Some(present) => ops.output("values", values)?.output("present", present)?,
            None => ops.input("values", values)?,
        };
        drop(ops);
        let count = rows.len();
        check_len(op, "cols length", count, cols.len())?;
        check_len(op, "values length", count, values.len())?;
        if let Some(present) = present {
            check_len(op, "present length", count, present.len())?;
        }
        let ctx = rec.context().clone();
        let set = present.is_none();
        let unused = &self.no_present;
        let present = present.unwrap_or(unused);
        self.status.write(&[0, 0, u32::MAX])?;
        match a {
            Target::Bitmap(m) => {
                let kernel =
                    ctx.kernel::<bitmap_access::Shader, T>(bitmap_access::Flags { set }, Default::default())?;
                let params = bitmap_access::Params {
                    rows: m.rows() as u32,
                    cols: m.cols() as u32,
                    words: m.words_per_row() as u32,
                    blocks: m.blocks_per_row() as u32,
                    count: count as u32,
                };
                let bindings = bitmap_access::Bindings {
                    flags: m.flags().bind(),
                    rank: m.rank_directory().bind(),
                    values: m.values().bind(),
                    query_rows: rows.bind(),
                    query_cols: cols.bind(),
                    data: values.bind(),
                    present: present.bind(),
                    status: self.status.bind(),
                };
                rec.dispatch_items(&kernel, params, bindings, count as u64)
            }
            Target::Csr(m) => {
                let kernel = ctx.kernel::<csr_access::Shader, T>(csr_access::Flags { set }, Default::default())?;
                let params = csr_access::Params { rows: m.rows() as u32, cols: m.cols() as u32, count: count as u32 };
                let empty = ctx.unused::<T>()?;
                let bindings = csr_access::Bindings {
                    row_offsets: csr.map_or(unused, |c| c.row_offsets()).bind(),
                    col_indices: csr.map_or(unused, |c| c.col_indices()).bind(),
                    values: csr.map_or(empty, |c| c.values()).bind(),
                    query_rows: rows.bind(),
                    query_cols: cols.bind(),
                    data: values.bind(),
                    present: present.bind(),
                    status: self.status.bind(),
                };
                rec.dispatch_items(&kernel, params, bindings, count as u64)
            }
        }
    }
}
