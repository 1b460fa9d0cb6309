//! GMRES's Krylov basis and the classical Gram–Schmidt passes over it
//! (`shaders/gram_schmidt.wgsl`, `gram_schmidt_finish.wgsl`).
//!
//! The m + 1 basis vectors live in as few buffers as the binding limit allows, `stride`
//! elements apart, so that one pass reads w once against every vector of a block: the dots
//! `V·w` in one pass and the update `w − V·h` in another: 2(j + 1) + 3 vector passes for
//! column j (with ‖w‖), where modified Gram–Schmidt takes 5(j + 1) + 1. The classical form loses
//! orthogonality under cancellation; the solver then projects a second time (DGKS), which
//! `Steps::reorthogonalize` decides on the device.

use std::ops::Range;

use crate::element::Scalar;
use crate::gpu::GpuVec;
use crate::kernel::shaders::{gram_schmidt as pass, gram_schmidt_finish as finish};
use crate::kernel::Kernel;
use crate::record::Recorder;
use crate::{Context, Result};

/// Rows a lane keeps in registers (`ROWS` in the shader).
const ROWS_PER_LANE: usize = 8;
const LANES: usize = 256;
const NONE: u32 = u32::MAX;

/// Where the dots of a projection go among the solver's scalars: `state[into + i] ← vᵢ·w`,
/// and with `add_to`, also `state[add_to + i] += vᵢ·w`.
#[derive(Debug, Clone, Copy)]
pub(super) struct Dots {
    pub into: usize,
    pub add_to: Option<usize>,
}

/// The coefficients of an update, `state[first + i]` for vᵢ, added or subtracted; with
/// `skip_zero`, a vector whose coefficient is zero is not read (nor a NaN in it spread).
#[derive(Debug, Clone, Copy)]
pub(super) struct Coefficients {
    pub first: usize,
    pub subtract: bool,
    pub skip_zero: bool,
}

/// The basis, its blocks, and the kernels and partials of its passes.
pub(super) struct Basis<T: Scalar> {
    /// The m + 1 vectors, each usable as an ordinary vector.
    pub vectors: Vec<GpuVec<T>>,
    /// The vectors of each block (one buffer each).
    blocks: Vec<Range<usize>>,
    stride: usize,
    /// Workgroups of a pass: the length of a row of partials.
    workgroups: usize,
    /// Rows 0..=m: one per basis vector's dot; row m + 1: a norm.
    partials: GpuVec<[T; 2]>,
    project: Kernel<pass::Shader, T>,
    update: Kernel<pass::Shader, T>,
    finish: Kernel<finish::Shader, T>,
}

impl<T: Scalar> Basis<T> {
    /// `count` vectors of `len` elements.
    pub fn new(ctx: &Context, len: usize, count: usize) -> Result<Self> {
        let limits = ctx.limits();
        let bytes_per_vector = (len.max(1) as u64 * T::stride())
            .next_multiple_of(limits.min_storage_buffer_offset_alignment as u64)
            .max(1);
        let limit = limits.max_storage_buffer_binding_size.min(limits.max_buffer_size);
        let per_block = ((limit / bytes_per_vector) as usize).clamp(1, count.max(1));
        let mut vectors = Vec::with_capacity(count);
        let mut blocks = Vec::new();
        let mut stride = 0;
        while vectors.len() < count {
            let first = vectors.len();
            let n = per_block.min(count - first);
            let (block, s) = GpuVec::block_on(ctx.gpu(), len, n)?;
            stride = s;
            vectors.extend(block);
            blocks.push(first..first + n);
        }
        let workgroups = len.div_ceil(ROWS_PER_LANE * LANES).max(1);
        let overrides = pass::Overrides { wg_size: LANES as u32, ..Default::default() };
        Ok(Basis {
            vectors,
            blocks,
            stride,
            workgroups,
            partials: ctx.zeros(workgroups * (count + 1))?,
            project: ctx.kernel(pass::Flags { update: false }, overrides)?,
            update: ctx.kernel(pass::Flags { update: true }, overrides)?,
            finish: ctx
                .kernel(Default::default(), finish::Overrides { wg_size: LANES as u32, ..Default::default() })?,
        })
    }

    /// Device bytes of the vectors (with their padding) and partials.
    pub fn bytes(&self) -> u64 {
        self.vectors.len() as u64 * self.stride as u64 * T::stride() + self.partials.byte_len()
    }

    /// The partial row of the norm.
    fn norm_row(&self) -> usize {
        self.vectors.len()
    }

    fn params(&self, block: &Range<usize>, upto: usize) -> pass::Params {
        pass::Params {
            len: self.vectors[0].len() as u32,
            workgroups: self.workgroups as u32,
            count: (block.end.min(upto) - block.start) as u32,
            stride: self.stride as u32,
            first: block.start as u32,
            norm_row: NONE,
            coef: 0,
            subtract: 0,
            skip_zero: 0,
        }
    }

    /// The blocks that hold vectors below `upto`, with the range each contributes.
    fn blocks_below(&self, upto: usize) -> impl Iterator<Item = &Range<usize>> {
        self.blocks.iter().filter(move |b| b.start < upto)
    }

    /// Records the dots `vᵢ·w` for i < `upto` into the scalars as `dots` says, and with
    /// `norm`, ‖w‖ into that slot. `w` is not in the basis.
    pub fn project(
        &self,
        rec: &mut Recorder<'_, '_>,
        upto: usize,
        w: &GpuVec<T>,
        state: &GpuVec<T>,
        dots: Dots,
        norm: Option<usize>,
    ) -> Result<()> {
        for (k, block) in self.blocks_below(upto).enumerate() {
            let params = pass::Params {
                norm_row: if k == 0 && norm.is_some() { self.norm_row() as u32 } else { NONE },
                ..self.params(block, upto)
            };
            self.record_pass(rec, &self.project, params, block, w, state)?;
        }
        self.record_finish(rec, state, upto, dots, norm)
    }

    /// Records `w ← w ± Σ_{i < upto} cᵢ·vᵢ` with the coefficients `coefficients` names, and
    /// with `norm`, the new ‖w‖ into that slot. `w` (not in the basis: a dispatch may not
    /// read one range of a buffer and write another) is written though borrowed shared.
    pub fn update(
        &self,
        rec: &mut Recorder<'_, '_>,
        upto: usize,
        coefficients: Coefficients,
        w: &GpuVec<T>,
        state: &GpuVec<T>,
        norm: Option<usize>,
    ) -> Result<()> {
        let Coefficients { first: coef, subtract, skip_zero } = coefficients;
        let last = self.blocks_below(upto).count() - 1;
        for (k, block) in self.blocks_below(upto).enumerate() {
            let params = pass::Params {
                norm_row: if k == last && norm.is_some() { self.norm_row() as u32 } else { NONE },
                coef: (coef + block.start) as u32,
                subtract: subtract as u32,
                skip_zero: skip_zero as u32,
                ..self.params(block, upto)
            };
            self.record_pass(rec, &self.update, params, block, w, state)?;
        }
        if norm.is_some() {
            self.record_finish(rec, state, 0, Dots { into: 0, add_to: None }, norm)?;
        }
        Ok(())
    }

    fn record_pass(
        &self,
        rec: &mut Recorder<'_, '_>,
        kernel: &Kernel<pass::Shader, T>,
        params: pass::Params,
        block: &Range<usize>,
        w: &GpuVec<T>,
        state: &GpuVec<T>,
    ) -> Result<()> {
        let count = params.count as usize;
        let len = self.vectors[0].len();
        debug_assert_eq!(w.len(), len, "w has the basis vectors' length");
        let span = (count - 1) * self.stride + len;
        let bindings = pass::Bindings {
            basis: self.vectors[block.start].bind_span(span),
            state: state.bind(),
            w: w.bind(),
            partials: self.partials.bind(),
        };
        rec.dispatch(kernel, params, bindings, self.workgroups as u64)
    }

    fn record_finish(
        &self,
        rec: &mut Recorder<'_, '_>,
        state: &GpuVec<T>,
        count: usize,
        dots: Dots,
        norm: Option<usize>,
    ) -> Result<()> {
        let params = finish::Params {
            workgroups: self.workgroups as u32,
            dots: count as u32,
            out: dots.into as u32,
            add_to: dots.add_to.map_or(NONE, |s| s as u32),
            norm_row: if norm.is_some() { self.norm_row() as u32 } else { NONE },
            norm_out: norm.unwrap_or(0) as u32,
        };
        let bindings = finish::Bindings { partials: self.partials.bind(), state: state.bind() };
        rec.dispatch(&self.finish, params, bindings, (count + norm.is_some() as usize) as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::generate::random_vector;
    use crate::ContextOptions;

    /// The longest vector tested.
    const LONGEST: usize = 5000;

    /// Contexts with and without subgroups, each also with a binding limit of two f64
    /// vectors of `LONGEST` (so that long bases span several buffers).
    fn contexts() -> Vec<(String, Context)> {
        let mut out = Vec::new();
        for subgroups in [true, false] {
            let options = ContextOptions { subgroups, ..ContextOptions::from_env().unwrap() };
            let ctx = Context::new_blocking(options.clone()).unwrap();
            let align = ctx.limits().min_storage_buffer_offset_alignment as u64;
            let two = (LONGEST as u64 * 8).next_multiple_of(align) * 2;
            let limits = wgpu::Limits { max_storage_buffer_binding_size: two, ..ctx.limits().clone() };
            let small = Context::new_blocking(ContextOptions { limits: Some(limits), ..options }).unwrap();
            out.push((format!("subgroups {subgroups}"), ctx));
            out.push((format!("subgroups {subgroups}, small bindings"), small));
        }
        out
    }

    fn values<T: Scalar>(len: usize, seed: u64) -> Vec<T> {
        random_vector(len, seed).into_iter().map(|v| T::from_f64(v as f64)).collect()
    }

    fn dot(x: &[f64], y: &[f64]) -> f64 {
        x.iter().zip(y).map(|(a, b)| a * b).sum()
    }

    /// The passes against their f64 twins: dots (into fresh slots, and added to others),
    /// ‖w‖, and w ∓ Σ cᵢ·vᵢ with one zero coefficient, over part of the basis and all of it,
    /// at lengths around the lane, subgroup and workgroup tiles.
    fn passes_match_twin<T: Scalar>() {
        const COUNT: usize = 5;
        // Slots: dots at 0.., sums at 8.., coefficients at 16.., norms at 24, 25.
        let (dots, sums, coefs, norm) = (0, 8, 16, 24);
        let tolerance = if T::KIND == crate::ElementKind::F64 { 1e-12 } else { 1e-5 };
        let contexts = contexts();
        for len in [1, 7, 8, 255, 256, 257, 2047, 2048, 2049, LONGEST] {
            for (mode, ctx) in &contexts {
                if !ctx.supports::<T>() {
                    continue;
                }
                let basis = Basis::<T>::new(ctx, len, COUNT).unwrap();
                if len == LONGEST && mode.contains("small") {
                    assert!(basis.blocks.len() > 1, "{mode}: {} blocks", basis.blocks.len());
                }
                let host: Vec<Vec<T>> = (0..COUNT).map(|i| values(len, 10 + i as u64)).collect();
                for (v, data) in basis.vectors.iter().zip(&host) {
                    v.write(data).unwrap();
                }
                let as_f64 = |v: &[T]| v.iter().map(|e| e.to_f64()).collect::<Vec<f64>>();
                let v64: Vec<Vec<f64>> = host.iter().map(|v| as_f64(v)).collect();
                for upto in [COUNT - 2, COUNT] {
                    let what = format!("{} {mode} len {len} upto {upto}", T::KIND.name());
                    let w_host = values::<T>(len, 99);
                    let w = ctx.upload(&w_host).unwrap();
                    let mut state = vec![T::from_f64(f64::NAN); 32];
                    for i in 0..COUNT {
                        state[sums + i] = T::from_f64(i as f64);
                        state[coefs + i] = T::from_f64(if i == 1 { 0.0 } else { 0.5 - i as f64 * 0.3 });
                    }
                    let state_gpu = ctx.upload(&state).unwrap();
                    let mut batch = ctx.batch();
                    let mut rec = batch.recorder();
                    basis
                        .project(&mut rec, upto, &w, &state_gpu, Dots { into: dots, add_to: None }, Some(norm))
                        .unwrap();
                    basis
                        .project(&mut rec, upto, &w, &state_gpu, Dots { into: dots, add_to: Some(sums) }, None)
                        .unwrap();
                    let minus = Coefficients { first: coefs, subtract: true, skip_zero: false };
                    basis.update(&mut rec, upto, minus, &w, &state_gpu, Some(norm + 1)).unwrap();
                    drop(rec);
                    batch.submit().unwrap();
                    let got = as_f64(&state_gpu.read_blocking().unwrap());
                    let w64 = as_f64(&w_host);
                    let scale: f64 = w64.iter().map(|v| v * v).sum::<f64>().sqrt();
                    for i in 0..upto {
                        // Rounding is bounded by the sum of |vᵢ·wᵢ|, whatever the order.
                        let want = dot(&v64[i], &w64);
                        let bound = tolerance * v64[i].iter().zip(&w64).map(|(a, b)| (a * b).abs()).sum::<f64>();
                        let got_dot = got[dots + i];
                        assert!((got_dot - want).abs() <= bound, "{what}: dot {i}: {got_dot} vs {want}");
                        let got_sum = got[sums + i] - i as f64;
                        assert!((got_sum - want).abs() <= bound + tolerance * i as f64, "{what}: sum {i}: {got_sum}");
                    }
                    for i in upto..COUNT {
                        assert!(got[dots + i].is_nan(), "{what}: slot {} past the vectors written", dots + i);
                        assert_eq!(got[sums + i], i as f64, "{what}: sum {i} past the vectors changed");
                    }
                    assert!((got[norm] - scale).abs() <= tolerance * scale, "{what}: ‖w‖ {} vs {scale}", got[norm]);
                    let mut want = w64.clone();
                    for i in 0..upto {
                        let c = state[coefs + i].to_f64();
                        want.iter_mut().zip(&v64[i]).for_each(|(w, v)| *w -= c * v);
                    }
                    let new_w = as_f64(&w.read_blocking().unwrap());
                    let error = crate::reference::relative_error(&new_w, &want);
                    assert!(error <= tolerance, "{what}: w − V·c off by {error:e}");
                    let want_norm = dot(&want, &want).sqrt();
                    assert!((got[norm + 1] - want_norm).abs() <= tolerance * want_norm, "{what}: new ‖w‖");

                    // Adding, zero coefficients skipped: w + V·c brings w back, though v₁ (whose
                    // coefficient is 0) is now NaN.
                    basis.vectors[1].write(&vec![T::from_f64(f64::NAN); len]).unwrap();
                    let mut batch = ctx.batch();
                    let plus = Coefficients { first: coefs, subtract: false, skip_zero: true };
                    basis.update(&mut batch.recorder(), upto, plus, &w, &state_gpu, None).unwrap();
                    batch.submit().unwrap();
                    let back = as_f64(&w.read_blocking().unwrap());
                    let error = crate::reference::relative_error(&back, &w64);
                    assert!(error <= 10.0 * tolerance, "{what}: w + V·c off by {error:e}");
                    basis.vectors[1].write(&host[1]).unwrap();
                }
            }
        }
    }

    #[test]
    fn passes_match_twin_f32() {
        passes_match_twin::<f32>();
    }

    #[test]
    fn passes_match_twin_f64() {
        passes_match_twin::<f64>();
    }
}
