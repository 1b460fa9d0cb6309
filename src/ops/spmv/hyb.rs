//! hyb: the ELL kernel for the regular part (unscaled, into the row sums), the segmented COO
//! reduction for the tail (added to them), then one axpby pass applies α and β. A panel whose
//! tail is empty is plain ELL: the ELL kernel applies α and β itself, in one pass.

use super::coo_segmented::SegmentedSums;
use super::ell::EllKernel;
use super::{panel_as, PanelKernel, RowSums, Run, SpmvAlgorithm, SpmvOptions};
use crate::context::Context;
use crate::element::Scalar;
use crate::gpu::ScalarArg;
use crate::matrix::{GpuSparse, PanelStorage};
use crate::ops::common::ScalarBinds;
use crate::record::Recorder;
use crate::Result;

struct Hyb<T: Scalar> {
    ell: EllKernel<T>,
    tail: SegmentedSums<T>,
    /// `None` when the tail is empty.
    sums: Option<RowSums<T>>,
}

pub(super) fn plan<T: Scalar>(
    ctx: &Context,
    a: &GpuSparse<T>,
    panel: usize,
    options: &SpmvOptions,
) -> Result<Box<dyn PanelKernel<T>>> {
    let hyb = panel_as!(a.panels()[panel].storage(), Hyb);
    let wg_size = options.workgroup_size_for(ctx, SpmvAlgorithm::Hyb);
    Ok(Box::new(Hyb {
        ell: EllKernel::new(ctx, hyb.ell(), wg_size)?,
        tail: SegmentedSums::new(ctx, hyb.coo(), wg_size, options)?,
        sums: match hyb.coo().nnz() {
            0 => None,
            _ => Some(RowSums::new(ctx, hyb.ell().rows())?),
        },
    }))
}

impl<T: Scalar> PanelKernel<T> for Hyb<T> {
    fn record(&self, rec: &mut Recorder<'_, '_>, panel: &PanelStorage<T>, run: &Run<'_, T>) -> Result<()> {
        let a = panel_as!(panel, Hyb);
        let Some(sums) = &self.sums else {
            return self.ell.record(rec, a.ell(), run.x, &run.scaling, run.y);
        };
        let ctx = rec.context().clone();
        let raw = ScalarBinds::new(&ctx, ScalarArg::Host(T::from_f64(1.0)), ScalarArg::Host(T::default()))?;
        self.ell.record(rec, a.ell(), run.x, &raw, sums.bind())?;
        self.tail.record(rec, a.coo(), run.x, sums.bind())?;
        sums.finish(rec, run)
    }

    fn extra_bytes(&self) -> u64 {
        self.tail.device_bytes() + self.sums.as_ref().map_or(0, RowSums::device_bytes)
    }
}
