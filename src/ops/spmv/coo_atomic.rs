//! coo-atomic: one invocation per nonzero, summed by row within a group of lanes, then one
//! float atomic add per row segment into the row sums. Not deterministic (the order of the
//! adds is the GPU's); f32 only (WGSL atomics are 32-bit). coo-segmented is the
//! deterministic alternative.

use super::{panel_as, PanelKernel, RowSums, Run, SpmvAlgorithm, SpmvOptions};
use crate::context::Context;
use crate::element::Scalar;
use crate::gpu::Bind;
use crate::kernel::shaders::spmv_coo_atomic as kernel;
use crate::kernel::Kernel;
use crate::matrix::{GpuSparse, PanelStorage};
use crate::record::Recorder;
use crate::Result;

struct CooAtomic<T: Scalar> {
    kernel: Kernel<kernel::Shader>,
    sums: RowSums<T>,
}

pub(super) fn plan<T: Scalar>(
    ctx: &Context,
    a: &GpuSparse<T>,
    panel: usize,
    options: &SpmvOptions,
) -> Result<Box<dyn PanelKernel<T>>> {
    let coo = panel_as!(a.panels()[panel].storage(), Coo);
    let wg_size = options.workgroup_size_for(ctx, SpmvAlgorithm::CooAtomic);
    Ok(Box::new(CooAtomic {
        kernel: ctx
            .plain_kernel::<kernel::Shader>(Default::default(), kernel::Overrides { wg_size, ..Default::default() })?,
        sums: RowSums::new(ctx, coo.rows())?,
    }))
}

impl<T: Scalar> PanelKernel<T> for CooAtomic<T> {
    fn record(&self, rec: &mut Recorder<'_, '_>, panel: &PanelStorage<T>, run: &Run<'_, T>) -> Result<()> {
        let a = panel_as!(panel, Coo);
        // Spmv::with_options admits this algorithm for f32 only, so these are f32 arrays.
        fn as_f32<T, U>(b: Bind<'_, T>) -> Bind<'_, U> {
            b.reinterpret(b.size())
        }
        self.sums.clear(rec)?;
        let bindings = kernel::Bindings {
            row_indices: a.row_indices().bind(),
            col_indices: a.col_indices().bind(),
            values: as_f32(a.values().bind()),
            x: as_f32(run.x),
            sums: as_f32(self.sums.bind()),
        };
        rec.dispatch_items(&self.kernel, kernel::Params { nnz: a.nnz() as u32 }, bindings, a.nnz() as u64)?;
        self.sums.finish(rec, run)
    }

    fn extra_bytes(&self) -> u64 {
        self.sums.device_bytes()
    }
}
