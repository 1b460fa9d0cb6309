//! GMRES's Krylov basis and the Gram–Schmidt passes over it (`shaders/gram_schmidt.wgsl`,
//! `gram_schmidt_finish.wgsl`).
//!
//! The m basis vectors live in as few buffers as the binding limit allows, `stride` elements
//! apart, so that one pass reads a block of them once. A column takes two passes over the
//! basis, delayed classical Gram–Schmidt (DCGS2; Świrydowicz et al., 2020): the dots of the
//! column's vector u (projected once) and of p = A·u against every basis vector, then the
//! update that projects u a second time into the next basis vector and p once into the next
//! u. Between them `Steps::column` turns the dots into coefficients. Classical Gram–Schmidt
//! with a second projection (DGKS) would read the basis four times; modified Gram–Schmidt
//! five times with a dispatch per vector.

use std::ops::Range;

use crate::element::Scalar;
use crate::gpu::GpuVec;
use crate::kernel::shaders::{gram_schmidt as pass, gram_schmidt_finish as finish};
use crate::kernel::Kernel;
use crate::ops::blas1;
use crate::record::Recorder;
use crate::{Context, Result};

/// Rows a lane keeps of each vector in registers (`ROWS` in the shader): 32 bytes' worth.
fn rows_per_lane<T: Scalar>() -> usize {
    32 / T::stride() as usize
}
const LANES: usize = 256;
const NONE: u32 = u32::MAX;

/// Where a column's scalars are: its dots (`dots`, 2(j + 1) slots: vᵢ·u, u·u, vᵢ·p, u·p),
/// and the update's 1/β and μ.
#[derive(Debug, Clone, Copy)]
pub(super) struct ColumnSlots {
    pub dots: usize,
    pub inv_beta: usize,
    pub mu: usize,
}

/// The basis, its blocks, and the kernels and partials of its passes.
pub(super) struct Basis<T: Scalar> {
    /// The m vectors, each usable as an ordinary vector.
    pub vectors: Vec<GpuVec<T>>,
    /// The vectors of each block (one buffer each).
    blocks: Vec<Range<usize>>,
    stride: usize,
    /// Workgroups of a pass: the length of a row of partials.
    workgroups: usize,
    /// A column's dots: 2(m + 1) rows.
    partials: GpuVec<[T; 2]>,
    /// Bound as `u` by the passes that have none.
    unused: GpuVec<T>,
    add: Kernel<pass::Shader, T>,
    column_dots: Kernel<pass::Shader, T>,
    column_update: Kernel<pass::Shader, T>,
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
        let workgroups = len.div_ceil(rows_per_lane::<T>() * LANES).max(1);
        let overrides = pass::Overrides { wg_size: LANES as u32, ..Default::default() };
        let kernel = |pair, update| ctx.kernel(pass::Flags { pair, update }, overrides);
        Ok(Basis {
            vectors,
            blocks,
            stride,
            workgroups,
            partials: ctx.zeros(workgroups * 2 * (count + 1))?,
            unused: ctx.zeros(1)?,
            add: kernel(false, false)?,
            column_dots: kernel(true, false)?,
            column_update: kernel(true, true)?,
            finish: ctx
                .kernel(Default::default(), finish::Overrides { wg_size: LANES as u32, ..Default::default() })?,
        })
    }

    /// Device bytes of the vectors (with their padding) and partials.
    pub fn bytes(&self) -> u64 {
        self.vectors.len() as u64 * self.stride as u64 * T::stride() + self.partials.byte_len()
    }

    fn params(&self, block: &Range<usize>, count: usize) -> pass::Params {
        pass::Params {
            len: self.vectors[0].len() as u32,
            workgroups: self.workgroups as u32,
            count: count as u32,
            stride: self.stride as u32,
            first: block.start as u32,
            second: 0,
            extra: NONE,
            coef: 0,
            scale: 0,
            mu: 0,
        }
    }

    /// The blocks that hold vectors below `upto`, with how many of them each holds.
    fn blocks_below(&self, upto: usize) -> impl Iterator<Item = (&Range<usize>, usize)> {
        self.blocks.iter().filter(move |b| b.start < upto).map(move |b| (b, b.end.min(upto) - b.start))
    }

    /// The blocks a column pass visits: those of v₀ … v_{j−1}, and the block of v_j (or the
    /// first block when j = m: the pass then reads no vector of it).
    fn column_blocks(&self, j: usize) -> impl Iterator<Item = (&Range<usize>, usize)> {
        let upto = (j + 1).min(self.vectors.len());
        self.blocks_below(upto.max(1)).map(move |(b, _)| (b, j.clamp(b.start, b.end) - b.start))
    }

    /// Records column j's dots into `state[slots.dots..]`: vᵢ·u and vᵢ·p for i < j, u·u
    /// and u·p (see [`ColumnSlots`]). j may be m (the cycle's last vector's second
    /// projection; p is then not used).
    pub fn column_dots(
        &self,
        rec: &mut Recorder<'_, '_>,
        j: usize,
        u: &GpuVec<T>,
        p: &GpuVec<T>,
        state: &GpuVec<T>,
        slots: ColumnSlots,
    ) -> Result<()> {
        let params = |block: &Range<usize>, count, last| pass::Params {
            second: (j + 1) as u32,
            extra: if last { j as u32 } else { NONE },
            ..self.params(block, count)
        };
        self.record_column(rec, j, &self.column_dots, params, u, p, state)?;
        let params =
            finish::Params { workgroups: self.workgroups as u32, rows: 2 * (j + 1) as u32, out: slots.dots as u32 };
        let bindings = finish::Bindings { partials: self.partials.bind(), state: state.bind() };
        rec.dispatch(&self.finish, params, bindings, 2 * (j + 1) as u64)
    }

    /// Records column j's update (j < m), after `Steps::column`: v_j ← (u − Σ sᵢ·vᵢ)/β
    /// into the basis (through u, then copied) and p ← (p − Σ tᵢ·vᵢ − μ·v_j)/β, the next
    /// column's u. u and p are written (partial sums between blocks) though borrowed shared.
    pub fn column_update(
        &mut self,
        rec: &mut Recorder<'_, '_>,
        j: usize,
        u: &GpuVec<T>,
        p: &GpuVec<T>,
        state: &GpuVec<T>,
        slots: ColumnSlots,
    ) -> Result<()> {
        let params = |block: &Range<usize>, count, last| pass::Params {
            second: (j + 1) as u32,
            extra: if last { 0 } else { NONE },
            coef: (slots.dots + block.start) as u32,
            scale: slots.inv_beta as u32,
            mu: slots.mu as u32,
            ..self.params(block, count)
        };
        self.record_column(rec, j, &self.column_update, params, u, p, state)?;
        blas1::copy(rec, u, &mut self.vectors[j])
    }

    /// One pass of column j's `kernel` per block it visits, `params(block, vectors, last)`.
    #[allow(clippy::too_many_arguments)]
    fn record_column(
        &self,
        rec: &mut Recorder<'_, '_>,
        j: usize,
        kernel: &Kernel<pass::Shader, T>,
        params: impl Fn(&Range<usize>, usize, bool) -> pass::Params,
        u: &GpuVec<T>,
        p: &GpuVec<T>,
        state: &GpuVec<T>,
    ) -> Result<()> {
        let mut blocks = self.column_blocks(j).peekable();
        while let Some((block, count)) = blocks.next() {
            let params = params(block, count, blocks.peek().is_none());
            self.record_pass(rec, kernel, params, block, count, p, u, state)?;
        }
        Ok(())
    }

    /// Records `w ← w + Σ_{i < upto} cᵢ·vᵢ`, cᵢ = `state[first + i]`; a vector whose
    /// coefficient is zero is not read (nor a NaN in it spread: the cycle's update, whose y is
    /// zero past the cycle's columns). `w` (not in the basis: a dispatch may not read one
    /// range of a buffer and write another) is written though borrowed shared.
    pub fn add(
        &self,
        rec: &mut Recorder<'_, '_>,
        upto: usize,
        first: usize,
        w: &GpuVec<T>,
        state: &GpuVec<T>,
    ) -> Result<()> {
        for (block, count) in self.blocks_below(upto) {
            let params = pass::Params { coef: (first + block.start) as u32, ..self.params(block, count) };
            self.record_pass(rec, &self.add, params, block, count, w, &self.unused, state)?;
        }
        Ok(())
    }

    /// One pass over `bound` vectors of `block` (at least one is bound: a binding is never
    /// empty).
    #[allow(clippy::too_many_arguments)]
    fn record_pass(
        &self,
        rec: &mut Recorder<'_, '_>,
        kernel: &Kernel<pass::Shader, T>,
        params: pass::Params,
        block: &Range<usize>,
        bound: usize,
        w: &GpuVec<T>,
        u: &GpuVec<T>,
        state: &GpuVec<T>,
    ) -> Result<()> {
        let len = self.vectors[0].len();
        debug_assert_eq!(w.len(), len, "w has the basis vectors' length");
        let span = (bound.max(1) - 1) * self.stride + len;
        let bindings = pass::Bindings {
            basis: self.vectors[block.start].bind_span(span),
            state: state.bind(),
            w: w.bind(),
            u: u.bind(),
            partials: self.partials.bind(),
        };
        rec.dispatch(kernel, params, bindings, self.workgroups as u64)
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

    /// The passes against their f64 twins, at lengths around the lane, subgroup and
    /// workgroup tiles and with the basis in one block and in several: a column's dots
    /// (j = 0, inside, the last vector, and m), its update (v_j into the basis, the next u
    /// into p, no other vector touched), and the cycle's update w ∓ Σ cᵢ·vᵢ with one zero
    /// coefficient skipped.
    fn passes_match_twin<T: Scalar>() {
        // More than a chunk of the dots pass (16 vectors with 8-lane subgroups).
        const COUNT: usize = 18;
        let slots = ColumnSlots { dots: 0, inv_beta: 2 * (COUNT + 1), mu: 2 * (COUNT + 1) + 1 };
        let coefs = slots.mu + 1;
        let tolerance = if T::KIND == crate::ElementKind::F64 { 1e-12 } else { 1e-5 };
        let contexts = contexts();
        for len in [1, 7, 8, 255, 256, 257, 2047, 2048, 2049, LONGEST] {
            for (mode, ctx) in &contexts {
                if !ctx.supports::<T>() {
                    continue;
                }
                let mut basis = Basis::<T>::new(ctx, len, COUNT).unwrap();
                if len == LONGEST && mode.contains("small") {
                    assert!(basis.blocks.len() > 1, "{mode}: {} blocks", basis.blocks.len());
                }
                let host: Vec<Vec<T>> = (0..COUNT).map(|i| values(len, 10 + i as u64)).collect();
                let as_f64 = |v: &[T]| v.iter().map(|e| e.to_f64()).collect::<Vec<f64>>();
                let v64: Vec<Vec<f64>> = host.iter().map(|v| as_f64(v)).collect();
                let (u_host, p_host) = (values::<T>(len, 98), values::<T>(len, 99));
                let (u64, p64) = (as_f64(&u_host), as_f64(&p_host));
                let bound = |x: &[f64], y: &[f64]| tolerance * x.iter().zip(y).map(|(a, b)| (a * b).abs()).sum::<f64>();
                for j in [0, 2, COUNT - 1, COUNT] {
                    let what = format!("{} {mode} len {len} column {j}", T::KIND.name());
                    for (v, data) in basis.vectors.iter().zip(&host) {
                        v.write(data).unwrap();
                    }
                    let (u, p) = (ctx.upload(&u_host).unwrap(), ctx.upload(&p_host).unwrap());
                    let state = ctx.upload(&vec![T::from_f64(f64::NAN); coefs + COUNT]).unwrap();
                    let mut batch = ctx.batch();
                    basis.column_dots(&mut batch.recorder(), j, &u, &p, &state, slots).unwrap();
                    batch.submit().unwrap();
                    let got = as_f64(&state.read_blocking().unwrap());
                    // Rounding is bounded by the sum of |xᵢ·yᵢ|, whatever the order.
                    let mut want = Vec::new();
                    for y in [&u64, &p64] {
                        want.extend(v64[..j].iter().map(|v| (dot(v, y), bound(v, y))));
                        want.push((dot(&u64, y), bound(&u64, y)));
                    }
                    for (k, &(value, slack)) in want.iter().enumerate() {
                        assert!((got[k] - value).abs() <= slack, "{what}: dot {k}: {} vs {value}", got[k]);
                    }
                    assert!(got[want.len()..slots.inv_beta].iter().all(|v| v.is_nan()), "{what}: dots past 2(j + 1)");
                    if j == COUNT {
                        continue;
                    }

                    // The update with chosen coefficients: s at the dots of u, t at those of p.
                    let s: Vec<f64> = (0..j).map(|i| 0.3 - 0.2 * i as f64).collect();
                    let t: Vec<f64> = (0..j).map(|i| -0.1 + 0.25 * i as f64).collect();
                    let (inv_beta, mu) = (1.25, -0.75);
                    let mut coefficients = vec![T::from_f64(f64::NAN); coefs];
                    for i in 0..j {
                        coefficients[i] = T::from_f64(s[i]);
                        coefficients[j + 1 + i] = T::from_f64(t[i]);
                    }
                    coefficients[slots.inv_beta] = T::from_f64(inv_beta);
                    coefficients[slots.mu] = T::from_f64(mu);
                    state.write_at(0, &coefficients).unwrap();
                    let mut batch = ctx.batch();
                    basis.column_update(&mut batch.recorder(), j, &u, &p, &state, slots).unwrap();
                    batch.submit().unwrap();
                    let (mut v_j, mut next) = (u64.clone(), p64.clone());
                    for i in 0..j {
                        v_j.iter_mut().zip(&v64[i]).for_each(|(x, v)| *x -= s[i] * v);
                        next.iter_mut().zip(&v64[i]).for_each(|(x, v)| *x -= t[i] * v);
                    }
                    v_j.iter_mut().for_each(|x| *x *= inv_beta);
                    next.iter_mut().zip(&v_j).for_each(|(x, v)| *x = (*x - mu * v) * inv_beta);
                    for (i, vector) in basis.vectors.iter().enumerate() {
                        let got = as_f64(&vector.read_blocking().unwrap());
                        let want = if i == j { &v_j } else { &v64[i] };
                        let error = crate::reference::relative_error(&got, want);
                        assert!(error <= 10.0 * tolerance, "{what}: basis vector {i} off by {error:e}");
                    }
                    let error = crate::reference::relative_error(&as_f64(&p.read_blocking().unwrap()), &next);
                    assert!(error <= 10.0 * tolerance, "{what}: the next u off by {error:e}");
                }

                // The cycle's update: w + V·(−c) over part of the basis and all of it, then
                // w + V·c with v₁ (coefficient 0) poisoned, skipped.
                for (v, data) in basis.vectors.iter().zip(&host) {
                    v.write(data).unwrap();
                }
                for upto in [COUNT - 2, COUNT] {
                    let what = format!("{} {mode} len {len} update upto {upto}", T::KIND.name());
                    let c: Vec<f64> = (0..COUNT).map(|i| if i == 1 { 0.0 } else { 0.5 - i as f64 * 0.3 }).collect();
                    // c at 0.., −c at COUNT...
                    let signed: Vec<T> =
                        c.iter().chain(&c.iter().map(|v| -v).collect::<Vec<_>>()).map(|&v| T::from_f64(v)).collect();
                    let state = ctx.upload(&signed).unwrap();
                    let w = ctx.upload(&u_host).unwrap();
                    let mut batch = ctx.batch();
                    basis.add(&mut batch.recorder(), upto, COUNT, &w, &state).unwrap();
                    batch.submit().unwrap();
                    let mut want = u64.clone();
                    for i in 0..upto {
                        want.iter_mut().zip(&v64[i]).for_each(|(w, v)| *w -= c[i] * v);
                    }
                    let error = crate::reference::relative_error(&as_f64(&w.read_blocking().unwrap()), &want);
                    assert!(error <= 10.0 * tolerance, "{what}: w − V·c off by {error:e}");
                    basis.vectors[1].write(&vec![T::from_f64(f64::NAN); len]).unwrap();
                    let mut batch = ctx.batch();
                    basis.add(&mut batch.recorder(), upto, 0, &w, &state).unwrap();
                    batch.submit().unwrap();
                    let error = crate::reference::relative_error(&as_f64(&w.read_blocking().unwrap()), &u64);
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
