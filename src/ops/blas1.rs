//! BLAS level 1 on device vectors, recorded like every op (α and β may be device scalars).
//!
//! Semantics are BLAS's, and hold for NaN and infinities: with α = 0 the vector α
//! multiplies is not read (a NaN in it does not leak), with β = 0 the output is not read.
//! Reductions ([`Reduction`]) are deterministic: fixed chunks per workgroup, partials
//! combined in a fixed order, so a solver's iterations repeat bit for bit.

use super::common::{check_len, Operands, ScalarBinds};
use crate::element::Scalar;
use crate::gpu::{Bind, GpuVec, ScalarArg};
use crate::gpu::{DeviceId, GpuScalar};
use crate::kernel::shaders::{
    copy_vector, vector_axpby, vector_multiply, vector_reduce, vector_reduce_finish, vector_scale,
};
use crate::record::Recorder;
use crate::Result;

/// `y ← α·y`.
pub fn scal<'s, T: Scalar>(
    rec: &mut Recorder<'_, '_>,
    alpha: impl Into<ScalarArg<'s, T>>,
    y: &mut GpuVec<T>,
) -> Result<()> {
    scale_or_fill(rec, "scal", alpha.into(), y, Fill::Scale)
}

/// `y ← α·x + β·y`.
pub fn axpby<'s, T: Scalar>(
    rec: &mut Recorder<'_, '_>,
    alpha: impl Into<ScalarArg<'s, T>>,
    x: &GpuVec<T>,
    beta: impl Into<ScalarArg<'s, T>>,
    y: &mut GpuVec<T>,
) -> Result<()> {
    let (alpha, beta) = (alpha.into(), beta.into());
    Operands::new(rec.context(), "axpby")?
        .scalar("alpha", &alpha)?
        .scalar("beta", &beta)?
        .input("x", x)?
        .output("y", y)?;
    check_len("axpby", "y length", x.len(), y.len())?;
    let ctx = rec.context().clone();
    let s = ScalarBinds::new(&ctx, alpha, beta)?;
    axpby_range(rec, &s, x.bind(), y.bind(), y.len())
}

/// `y ← α·x + y`.
pub fn axpy<'s, T: Scalar>(
    rec: &mut Recorder<'_, '_>,
    alpha: impl Into<ScalarArg<'s, T>>,
    x: &GpuVec<T>,
    y: &mut GpuVec<T>,
) -> Result<()> {
    axpby(rec, alpha, x, ScalarArg::Host(T::from_f64(1.0)), y)
}

/// `y[i] ← value` for every element.
pub fn fill<'s, T: Scalar>(
    rec: &mut Recorder<'_, '_>,
    value: impl Into<ScalarArg<'s, T>>,
    y: &mut GpuVec<T>,
) -> Result<()> {
    scale_or_fill(rec, "fill", value.into(), y, Fill::Value)
}

/// `y[i] ← α·h(i, seed)`: a reproducible pseudo-random vector made on the device, `h` a
/// value in [−½, ½) hashed from the index and `seed` with 24 bits (exact in f32 and f64;
/// [`generate::hashed_value`](crate::generate::hashed_value) gives the same values on the
/// host). BiCGSTAB draws its shadow residual so.
pub fn fill_hashed<'s, T: Scalar>(
    rec: &mut Recorder<'_, '_>,
    alpha: impl Into<ScalarArg<'s, T>>,
    seed: u32,
    y: &mut GpuVec<T>,
) -> Result<()> {
    scale_or_fill(rec, "fill_hashed", alpha.into(), y, Fill::Hashed(seed))
}

/// What [`scale_range`] writes.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Fill {
    /// `y ← α·y`.
    Scale,
    /// `y ← α`.
    Value,
    /// `y[i] ← α·h(i, seed)`.
    Hashed(u32),
}

fn scale_or_fill<T: Scalar>(
    rec: &mut Recorder<'_, '_>,
    op: &'static str,
    alpha: ScalarArg<'_, T>,
    y: &mut GpuVec<T>,
    fill: Fill,
) -> Result<()> {
    Operands::new(rec.context(), op)?.scalar("alpha", &alpha)?.output("y", y)?;
    let ctx = rec.context().clone();
    let s = ScalarBinds::new(&ctx, alpha, ScalarArg::Host(T::default()))?;
    scale_range(rec, &s, y.bind(), y.len(), fill)
}

/// `y ← x` (same length), for vectors of any element type: 16 bytes per invocation
/// (allocations are padded to 16 bytes, so whole words cover a vector). Also the
/// benchmark's yardstick for device bandwidth.
pub fn copy<E: crate::element::Stored>(rec: &mut Recorder<'_, '_>, x: &GpuVec<E>, y: &mut GpuVec<E>) -> Result<()> {
    Operands::new(rec.context(), "copy")?.input("x", x)?.output("y", y)?;
    check_len("copy", "y length", x.len(), y.len())?;
    copy_range(rec, x.bind(), y.bind(), x.byte_len())
}

/// Copies `bytes` from the start of `src` to the start of `dst` in 16-byte words (the
/// caller checked the operands; allocations are padded to whole words).
pub(crate) fn copy_range<E>(rec: &mut Recorder<'_, '_>, src: Bind<'_, E>, dst: Bind<'_, E>, bytes: u64) -> Result<()> {
    let words = bytes.div_ceil(16).max(1);
    let kernel = rec.context().plain_kernel::<copy_vector::Shader>(Default::default(), Default::default())?;
    rec.dispatch_items(
        &kernel,
        copy_vector::Params { len: words as u32 },
        copy_vector::Bindings { src: src.reinterpret(words * 16), dst: dst.reinterpret(words * 16) },
        words,
    )
}

/// `z ← x ⊙ y`, element by element.
pub fn mul<T: Scalar>(rec: &mut Recorder<'_, '_>, x: &GpuVec<T>, y: &GpuVec<T>, z: &mut GpuVec<T>) -> Result<()> {
    elementwise(rec, x, y, z, false)
}

/// `z ← x ⊘ y`, element by element (IEEE division: `x/0` is ±Inf or NaN).
pub fn div<T: Scalar>(rec: &mut Recorder<'_, '_>, x: &GpuVec<T>, y: &GpuVec<T>, z: &mut GpuVec<T>) -> Result<()> {
    elementwise(rec, x, y, z, true)
}

fn elementwise<T: Scalar>(
    rec: &mut Recorder<'_, '_>,
    x: &GpuVec<T>,
    y: &GpuVec<T>,
    z: &mut GpuVec<T>,
    divide: bool,
) -> Result<()> {
    let op = if divide { "div" } else { "mul" };
    Operands::new(rec.context(), op)?.input("x", x)?.input("y", y)?.output("z", z)?;
    check_len(op, "y length", x.len(), y.len())?;
    check_len(op, "z length", x.len(), z.len())?;
    let flags = vector_multiply::Flags { divide };
    let kernel = rec.context().kernel::<vector_multiply::Shader, T>(flags, Default::default())?;
    let bindings = vector_multiply::Bindings { x: x.bind(), y: y.bind(), z: z.bind() };
    rec.dispatch_items(&kernel, vector_multiply::Params { len: x.len() as u32 }, bindings, x.len() as u64)
}

/// Deterministic reductions (dot products, Euclidean norms) of vectors of one length.
/// Holds the per-workgroup partials, so a reduction recorded every iteration allocates
/// nothing; one `Reduction` may serve any number of reductions in a batch, one after another.
pub struct Reduction<T: Scalar> {
    len: usize,
    chunk: usize,
    partials: GpuVec<[T; 2]>,
    owner: DeviceId,
}

/// Lanes per workgroup of the reduction kernels.
const REDUCE_LANES: usize = 256;
/// Partials are at most this many: the finishing workgroup reads each once or a few times.
const MAX_PARTIALS: usize = 4096;

impl<T: Scalar> Reduction<T> {
    /// Reductions of vectors of `len` elements on `ctx`.
    pub fn new(ctx: &crate::Context, len: usize) -> Result<Self> {
        ctx.check_element::<T>()?;
        let chunk = (16 * REDUCE_LANES).max(len.div_ceil(MAX_PARTIALS).next_multiple_of(REDUCE_LANES));
        Ok(Reduction { len, chunk, partials: ctx.zeros(len.div_ceil(chunk).max(1))?, owner: ctx.id() })
    }

    /// Device bytes of the partials.
    pub fn bytes(&self) -> u64 {
        self.partials.byte_len()
    }

    /// Records `out ← x·y`.
    pub fn dot(&self, rec: &mut Recorder<'_, '_>, x: &GpuVec<T>, y: &GpuVec<T>, out: &GpuScalar<T>) -> Result<()> {
        self.dot_into(rec, x, y, out.as_vec(), 0)
    }

    /// Records `out[index] ← x·y` (a column of results, as GMRES keeps them).
    pub fn dot_into(
        &self,
        rec: &mut Recorder<'_, '_>,
        x: &GpuVec<T>,
        y: &GpuVec<T>,
        out: &GpuVec<T>,
        index: usize,
    ) -> Result<()> {
        Operands::new(rec.context(), "dot")?.input("x", x)?.input("y", y)?.output("out", out)?;
        check_len("dot", "y length", x.len(), y.len())?;
        self.record(rec, x, y, out, index, false)
    }

    /// Records `out ← ‖x‖₂`, without overflow or underflow of the squares (LAPACK's
    /// scaling); infinite for an infinite element, NaN for a NaN one.
    pub fn nrm2(&self, rec: &mut Recorder<'_, '_>, x: &GpuVec<T>, out: &GpuScalar<T>) -> Result<()> {
        self.nrm2_into(rec, x, out.as_vec(), 0)
    }

    /// Records `out[index] ← ‖x‖₂`.
    pub fn nrm2_into(&self, rec: &mut Recorder<'_, '_>, x: &GpuVec<T>, out: &GpuVec<T>, index: usize) -> Result<()> {
        Operands::new(rec.context(), "nrm2")?.input("x", x)?.output("out", out)?;
        self.record(rec, x, x, out, index, true)
    }

    /// The partials the first pass writes (`.0` of each: a dot's; a norm's are pairs).
    pub(crate) fn partials(&self) -> &GpuVec<[T; 2]> {
        &self.partials
    }

    /// Records only the first pass of `x·y` and returns how many partials it wrote, for a
    /// caller's own kernel to finish (the solvers' step kernel adds them up before its op).
    pub(crate) fn partial_dot(&self, rec: &mut Recorder<'_, '_>, x: &GpuVec<T>, y: &GpuVec<T>) -> Result<usize> {
        Operands::new(rec.context(), "dot")?.input("x", x)?.input("y", y)?;
        check_len("dot", "y length", x.len(), y.len())?;
        self.first_pass(rec, "dot", x, y, false)
    }

    fn first_pass(
        &self,
        rec: &mut Recorder<'_, '_>,
        op: &'static str,
        x: &GpuVec<T>,
        y: &GpuVec<T>,
        nrm2: bool,
    ) -> Result<usize> {
        rec.context().check_owner(&format!("{op}: the reduction"), self.owner)?;
        check_len(op, "x length", self.len, x.len())?;
        let overrides = vector_reduce::Overrides { wg_size: REDUCE_LANES as u32, ..Default::default() };
        let reduce = rec.context().kernel::<vector_reduce::Shader, T>(vector_reduce::Flags { nrm2 }, overrides)?;
        let count = self.partials.len();
        rec.dispatch(
            &reduce,
            vector_reduce::Params { len: self.len as u32, chunk: self.chunk as u32 },
            vector_reduce::Bindings { x: x.bind(), y: y.bind(), partials: self.partials.bind() },
            count as u64,
        )?;
        Ok(count)
    }

    fn record(
        &self,
        rec: &mut Recorder<'_, '_>,
        x: &GpuVec<T>,
        y: &GpuVec<T>,
        out: &GpuVec<T>,
        index: usize,
        nrm2: bool,
    ) -> Result<()> {
        let op = if nrm2 { "nrm2" } else { "dot" };
        if index >= out.len() {
            return Err(crate::Error::InvalidArgument(format!("{op}: element {index} of a vector of {}", out.len())));
        }
        let count = self.first_pass(rec, op, x, y, nrm2)?;
        let overrides = vector_reduce_finish::Overrides { wg_size: REDUCE_LANES as u32, ..Default::default() };
        let finish =
            rec.context().kernel::<vector_reduce_finish::Shader, T>(vector_reduce_finish::Flags { nrm2 }, overrides)?;
        rec.dispatch(
            &finish,
            vector_reduce_finish::Params { count: count as u32, at: index as u32 },
            vector_reduce_finish::Bindings { partials: self.partials.bind(), result: out.bind() },
            1,
        )
    }
}

/// `y[..len] ← α·y[..len]`, or as `fill` says; operands checked by the caller.
pub(crate) fn scale_range<T: Scalar>(
    rec: &mut Recorder<'_, '_>,
    s: &ScalarBinds<'_, T>,
    y: Bind<'_, T>,
    len: usize,
    fill: Fill,
) -> Result<()> {
    let (flags, seed) = match fill {
        Fill::Scale => (vector_scale::Flags::default(), 0),
        Fill::Value => (vector_scale::Flags { fill: true, ..Default::default() }, 0),
        Fill::Hashed(seed) => (vector_scale::Flags { hashed: true, ..Default::default() }, seed),
    };
    let kernel = rec.context().kernel::<vector_scale::Shader, T>(flags, Default::default())?;
    let params = vector_scale::Params { len: len as u32, seed, scaling: s.params };
    let bindings = vector_scale::Bindings { alpha_dev: s.alpha_dev, beta_dev: s.beta_dev, y };
    rec.dispatch_items(&kernel, params, bindings, len as u64)
}

/// `y[..len] ← α·x[..len] + β·y[..len]`, operands checked by the caller.
pub(crate) fn axpby_range<T: Scalar>(
    rec: &mut Recorder<'_, '_>,
    s: &ScalarBinds<'_, T>,
    x: Bind<'_, T>,
    y: Bind<'_, T>,
    len: usize,
) -> Result<()> {
    let kernel = rec.context().kernel::<vector_axpby::Shader, T>(Default::default(), Default::default())?;
    let params = vector_axpby::Params { len: len as u32, scaling: s.params };
    let bindings = vector_axpby::Bindings { x, alpha_dev: s.alpha_dev, beta_dev: s.beta_dev, y };
    rec.dispatch_items(&kernel, params, bindings, len as u64)
}
