//! Scratch of the kernels that publish partial sums for another workgroup to add up
//! (`shaders/shared/ready_sums.wgsl`: arrival counters, then two sets of ready-state sums),
//! and the test hook that makes their completing groups recompute every piece.

use crate::context::Context;
use crate::element::{ElementKind, Scalar};
use crate::gpu::GpuVec;
use crate::Result;

/// The shader's `NOT_READY`.
const NOT_READY: u32 = u32::MAX;

/// `counters` zero words, then two sets of `slots` sums, not ready.
pub(crate) fn ready_sums_scratch<T: Scalar>(ctx: &Context, counters: usize, slots: usize) -> Result<GpuVec<u32>> {
    // The shader's VALUE_WORDS: f64 spreads its bits over three words.
    let value_words = match T::KIND {
        ElementKind::F32 => 1,
        ElementKind::F64 => 3,
    };
    let mut scratch = vec![0; counters];
    scratch.resize(counters + 2 * value_words * slots, NOT_READY);
    ctx.upload(&scratch)
}

#[cfg(test)]
thread_local! {
    /// Tests: completing groups recompute every piece, the path of a sum not yet visible.
    pub(crate) static RECOMPUTE_PIECES: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// The kernels' `recompute` parameter: 1 only under [`RECOMPUTE_PIECES`] in tests.
pub(crate) fn recompute_pieces() -> u32 {
    #[cfg(test)]
    return u32::from(RECOMPUTE_PIECES.get());
    #[cfg(not(test))]
    0
}
