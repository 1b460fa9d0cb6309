//! The CPU peers of the dense ops (seed 001 compares with serial and multi-threaded CPU
//! code): faer, a well-kept pure-Rust dense library, on one thread and on every core of the
//! machine the bench runs on, so that anyone can compare on their own machine. Times are
//! wall clock, the median of a few runs after one warm-up.

use std::time::{Duration, Instant};

use faer::linalg::matmul::matmul;
use faer::{Accum, Mat, Par};
use rayon::prelude::*;
use wgsparse::{DenseMatrix, ElementKind, Scalar};

/// One CPU peer's time on a case.
#[derive(Debug, Clone)]
pub struct CpuPeerTime {
    /// `faer 0.24`.
    pub name: &'static str,
    /// Threads it ran on.
    pub threads: usize,
    /// Median wall clock, µs.
    pub time_us: f64,
}

const NAME: &str = "faer 0.24";
/// Runs per case stop at this many or after this long (at least one after the warm-up).
const RUNS: usize = 7;
const BUDGET: Duration = Duration::from_millis(400);

fn threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// Median wall clock of `run` in µs: one warm-up, then up to [`RUNS`] within [`BUDGET`].
fn median_us(mut run: impl FnMut()) -> f64 {
    run();
    let start = Instant::now();
    let mut times = Vec::new();
    while times.is_empty() || (times.len() < RUNS && start.elapsed() < BUDGET) {
        let t = Instant::now();
        run();
        times.push(t.elapsed().as_secs_f64() * 1e6);
    }
    times.sort_by(f64::total_cmp);
    times[times.len() / 2]
}

/// The serial and the multi-threaded time of `run(par)`.
fn serial_and_parallel(mut run: impl FnMut(Par)) -> Vec<CpuPeerTime> {
    let all = threads();
    let mut out = vec![CpuPeerTime { name: NAME, threads: 1, time_us: median_us(|| run(Par::Seq)) }];
    if all > 1 {
        out.push(CpuPeerTime { name: NAME, threads: all, time_us: median_us(|| run(Par::rayon(all))) });
    }
    out
}

/// Element types faer and wgsparse share.
trait Real: faer::traits::RealField + Copy + bytemuck::Pod {}
impl Real for f32 {}
impl Real for f64 {}

/// `data` (of `T`, which is `E`: the callers match on the kind) as `E`.
fn same<T: Scalar, E: Real>(data: &[T]) -> &[E] {
    bytemuck::cast_slice(data)
}

/// faer's `rows × cols` matrix of row-major `data`.
fn faer_matrix<E: Real>(rows: usize, cols: usize, data: &[E]) -> Mat<E> {
    Mat::from_fn(rows, cols, |i, j| data[i * cols + j])
}

/// `y = op(A)·x` by faer's matmul.
pub fn gemv<T: Scalar>(a: &DenseMatrix<T>, x: &[T], transpose: bool) -> Vec<CpuPeerTime> {
    match T::KIND {
        ElementKind::F32 => gemv_as::<T, f32>(a, x, transpose),
        ElementKind::F64 => gemv_as::<T, f64>(a, x, transpose),
    }
}

fn gemv_as<T: Scalar, E: Real>(a: &DenseMatrix<T>, x: &[T], transpose: bool) -> Vec<CpuPeerTime> {
    let m = faer_matrix::<E>(a.rows(), a.cols(), same(a.data()));
    let v = faer_matrix::<E>(x.len(), 1, same(x));
    let out_len = if transpose { a.cols() } else { a.rows() };
    let mut y: Mat<E> = Mat::zeros(out_len, 1);
    serial_and_parallel(|par| {
        let lhs = if transpose { m.transpose() } else { m.as_ref() };
        matmul(y.as_mut(), Accum::Replace, lhs, v.as_ref(), E::one_impl(), par);
    })
}

/// `P·A = L·U` of each of `batch` matrices of n × n (stacked by rows), out of place: faer's
/// partial-pivoting LU; a batch runs its matrices in parallel, one matrix its blocks.
pub fn lu<T: Scalar>(a: &DenseMatrix<T>, batch: usize, n: usize) -> Vec<CpuPeerTime> {
    match T::KIND {
        ElementKind::F32 => lu_as::<T, f32>(a, batch, n),
        ElementKind::F64 => lu_as::<T, f64>(a, batch, n),
    }
}

fn lu_as<T: Scalar, E: Real>(a: &DenseMatrix<T>, batch: usize, n: usize) -> Vec<CpuPeerTime> {
    let data: &[E] = same(a.data());
    let mats: Vec<Mat<E>> = (0..batch).map(|b| faer_matrix(n, n, &data[b * n * n..(b + 1) * n * n])).collect();
    let factor = |m: &Mat<E>, par: Par| {
        let mut lu = m.clone();
        let mut perm = vec![0usize; n];
        let mut perm_inv = vec![0usize; n];
        let params = Default::default();
        let scratch = faer::linalg::lu::partial_pivoting::factor::lu_in_place_scratch::<usize, E>(n, n, par, params);
        let mut buffer = faer::dyn_stack::MemBuffer::new(scratch);
        let stack = faer::dyn_stack::MemStack::new(&mut buffer);
        faer::linalg::lu::partial_pivoting::factor::lu_in_place(
            lu.as_mut(),
            &mut perm,
            &mut perm_inv,
            par,
            stack,
            params,
        );
        lu
    };
    serial_and_parallel(|par| match (batch, par) {
        (1, par) => drop(factor(&mats[0], par)),
        (_, Par::Seq) => mats.iter().for_each(|m| drop(factor(m, Par::Seq))),
        (_, _) => mats.par_iter().for_each(|m| drop(factor(m, Par::Seq))),
    })
}
