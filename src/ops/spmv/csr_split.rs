//! csr-split: rows up to a threshold one invocation each, longer rows cut into chunks for
//! groups of lanes, all in one dispatch (chunks first so that their longer work starts
//! early); the group that finishes a long row's last chunk adds the row's chunk sums in
//! order. The chunks are RoDe's row decomposition (seed 002), an analysis of the matrix
//! built on the GPU and shared.

use std::sync::Arc;

use super::{panel_as, PanelKernel, Run, SpmvAlgorithm, SpmvOptions};
use crate::analysis::row_split::RowSplit;
use crate::context::Context;
use crate::element::{ElementKind, Scalar};
use crate::gpu::GpuVec;
use crate::kernel::shaders::spmv_csr_split as split;
use crate::kernel::Kernel;
use crate::matrix::{GpuSparse, PanelStorage};
use crate::ops::common::Groups;
use crate::record::Recorder;
use crate::Result;

struct CsrSplit<T: Scalar> {
    split: Kernel<split::Shader, T>,
    groups: Groups,
    max_len: u32,
    chunk_len: u32,
    decomposition: Arc<RowSplit>,
    /// An arrival counter per long row, then two sets of chunk sums as ready-state words
    /// (the layout is the shader's).
    scratch: GpuVec<u32>,
}

#[cfg(test)]
thread_local! {
    /// Tests: the adding group recomputes every chunk, the path of a sum not yet visible.
    static RECOMPUTE_CHUNKS: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

fn recompute_chunks() -> bool {
    #[cfg(test)]
    return RECOMPUTE_CHUNKS.get();
    #[cfg(not(test))]
    false
}

/// Words of one chunk sum in the scratch buffer (the shader's `VALUE_WORDS`).
fn value_words<T: Scalar>() -> usize {
    match T::KIND {
        ElementKind::F32 => 1,
        ElementKind::F64 => 3,
    }
}

/// The shader's `NOT_READY`.
const NOT_READY: u32 = u32::MAX;

pub(super) fn plan<T: Scalar>(
    ctx: &Context,
    a: &GpuSparse<T>,
    panel: usize,
    options: &SpmvOptions,
) -> Result<Box<dyn PanelKernel<T>>> {
    let csr = panel_as!(a.panels()[panel].storage(), Csr);
    let wg_size = options.workgroup_size_for(ctx, SpmvAlgorithm::CsrSplit);
    let groups = Groups::new(ctx, wg_size);
    let max_len = options.split_threshold;
    let chunk_len = groups.max_size * options.chunk_steps;
    let name = RowSplit::name(&format!("panel {panel}"), None, max_len, chunk_len);
    let decomposition = a
        .structure()
        .get_or_build(&name, || RowSplit::build(ctx, csr.row_offsets(), 0..csr.rows(), max_len, chunk_len))?;
    let overrides = split::Overrides { wg_size, tasks_per_workgroup: groups.tasks_per_workgroup };
    let mut scratch = vec![0; decomposition.long_row_count()];
    scratch.resize(scratch.len() + 2 * value_words::<T>() * decomposition.chunk_count(), NOT_READY);
    Ok(Box::new(CsrSplit {
        split: ctx.kernel::<split::Shader, T>(Default::default(), overrides)?,
        groups,
        max_len,
        chunk_len,
        scratch: ctx.upload(&scratch)?,
        decomposition,
    }))
}

impl<T: Scalar> PanelKernel<T> for CsrSplit<T> {
    fn record(&self, rec: &mut Recorder<'_, '_>, panel: &PanelStorage<T>, run: &Run<'_, T>) -> Result<()> {
        let a = panel_as!(panel, Csr);
        let chunks = self.decomposition.chunk_count() as u64;
        let row_workgroups = (run.rows as u64).div_ceil(self.split.workgroup_size() as u64);
        let chunk_workgroups = self.groups.workgroups(chunks);
        let long_rows = self.decomposition.long_row_count() as u64;
        let params = split::Params {
            rows: run.rows as u32,
            max_len: self.max_len,
            chunk_workgroups: chunk_workgroups as u32,
            chunks: chunks as u32,
            chunk_len: self.chunk_len,
            long_rows: long_rows as u32,
            recompute_chunks: u32::from(recompute_chunks()),
            scaling: run.scaling.params,
        };
        let bindings = split::Bindings {
            row_offsets: a.row_offsets().bind(),
            col_indices: a.col_indices().bind(),
            values: a.values().bind(),
            x: run.x,
            chunks: self.decomposition.chunks.bind(),
            long_rows: self.decomposition.long_rows.bind(),
            alpha_dev: run.scaling.alpha_dev,
            beta_dev: run.scaling.beta_dev,
            y: run.y,
            scratch: self.scratch.bind(),
        };
        rec.dispatch(&self.split, params, bindings, chunk_workgroups + row_workgroups)
    }

    fn extra_bytes(&self) -> u64 {
        self.scratch.byte_len() + crate::matrix::Analysis::device_bytes(&*self.decomposition)
    }
}

#[cfg(test)]
mod tests {
    use super::RECOMPUTE_CHUNKS;
    use crate::generate::{self, Rng};
    use crate::ops::{Spmv, SpmvAlgorithm, SpmvOptions};
    use crate::reference::{relative_error, spmv_csr};
    use crate::{Context, ContextOptions, Conversion, CsrMatrix, GpuSparse, Scalar};

    /// The adding group's fallback, which hardware takes when a chunk's sum is not visible
    /// yet: every chunk recomputed gives the twin's result, bit for bit the published sums'.
    fn recomputed_chunks_match<T: Scalar>() {
        let seed = 0x5b11;
        let mut rng = Rng::new(seed);
        let matrices = [generate::dense_row_mix(3000, 2900, seed), generate::rmat(10, 6, 0.57, 0.19, 0.19, seed)];
        for subgroups in [true, false] {
            let ctx =
                Context::new_blocking(ContextOptions { subgroups, ..ContextOptions::from_env().unwrap() }).unwrap();
            if !ctx.supports::<T>() {
                continue;
            }
            for a in &matrices {
                let a: CsrMatrix<T> = a.map_values(|v| T::from_f64(v as f64));
                let matrix = GpuSparse::from_csr(&ctx, &a, Conversion::Csr).unwrap();
                // Chunks of one entry per lane of a group (a subgroup, or 64 lanes): many per long
                // row, R-MAT's included.
                let options = SpmvOptions::default().split_threshold(32).chunk_steps(1).workgroup_size(64);
                let plan = Spmv::with_options(&ctx, &matrix, SpmvAlgorithm::CsrSplit, &options).unwrap();
                let mut results = Vec::new();
                for recompute in [false, true, false] {
                    RECOMPUTE_CHUNKS.set(recompute);
                    let x: Vec<T> = generate::random_vector(a.cols(), rng.next_u64())
                        .into_iter()
                        .map(|v| T::from_f64(v as f64))
                        .collect();
                    let mut y = ctx.upload(&vec![T::from_f64(f64::NAN); a.rows()]).unwrap();
                    let run = plan.run(T::from_f64(1.0), &ctx.upload(&x).unwrap(), T::from_f64(0.0), &mut y);
                    RECOMPUTE_CHUNKS.set(false);
                    run.unwrap();
                    let got = y.read_blocking().unwrap();
                    let error = relative_error(&got, &spmv_csr(1.0, &a, &x, 0.0, &[]));
                    let what = format!("{} subgroups {subgroups} recompute {recompute}", T::KIND.name());
                    assert!(error <= 1e-5, "seed {seed} {what}: {error:e}");
                    results.push((x, got));
                }
                // Once more on the second x, published sums only: the same bits.
                let (x, recomputed) = &results[1];
                let mut y = ctx.upload(&vec![T::from_f64(f64::NAN); a.rows()]).unwrap();
                plan.run(T::from_f64(1.0), &ctx.upload(x).unwrap(), T::from_f64(0.0), &mut y).unwrap();
                assert!(y.read_blocking().unwrap() == *recomputed, "seed {seed} subgroups {subgroups}: bits differ");
            }
        }
    }

    #[test]
    fn recomputed_chunks_match_f32() {
        recomputed_chunks_match::<f32>();
    }

    #[test]
    fn recomputed_chunks_match_f64() {
        recomputed_chunks_match::<f64>();
    }
}
