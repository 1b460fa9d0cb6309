#!/usr/bin/env python3
"""The vendor-library peer of the wgsparse bench (`bench --peer cusparse`): times cuSPARSE
through CuPy (PyTorch where CuPy lacks the op) on exactly the matrices the bench wrote.

usage: python3 peer_cusparse.py MANIFEST.json OUT.json
       python3 peer_cusparse.py --check     (exit 0 when CuPy and a CUDA device are there)

The manifest (written by benches/bench/peer.rs) names raw little-endian files per matrix and
the ops to run on it:

    {"warmup": 3, "runs": 20, "e2e_runs": 5, "dtype": "float32" | "float64",
     "matrices": [{"name", "rows", "cols", "nnz",
                   "row_offsets" (u32), "col_indices" (u32), "values" (f32), "x" (f32, cols),
                   "ops": [{"op": "spmv", "k": null, "copies": 8}, ...]}]}

A dense case (GEMV's matrices, LU's batches) has "dense": {"batch", "rows", "cols"} and no
arrays: the script draws operands of that shape itself.

Each case is timed with CUDA events around every run, median of `runs` runs after `warmup`
(at least one per copy), rotating among `copies` copies of its operands as the bench does, and
checked against a float64 result computed on the GPU. The timed runs are queued behind a
spinning kernel so that they run back to back: the events then time the GPU, not Python's
launch overhead (tens of µs a call, more than a small SpMV takes). Ops that have an
end-to-end form (the result on the host, as a user calls it: `(A @ x).get()`) are also timed
by the wall clock, median of `e2e_runs` calls. Values are float32, or float64 when the
manifest says so. The answer:

    {"peer": "cusparse (CuPy X.Y, CUDA Z.W)", "device": "...",
     "results": [{"matrix", "op", "k", "time_us", "e2e_time_us", "rel_err",
                  "repeated_time_us" or "repeated_error" where the op has a repeated form,
                  and "library", "libraries" where several libraries do the op}
                 or {"matrix", "op", "k", "error"}]}

Ops are functions in OPS, keyed by the bench's op name; each returns `run(copy)` (one timed
run), `check()` (relative error), the stream it runs on and `e2e(copy)` (the call with its
result on the host) or None; or a list of those, one per library (CuPy and PyTorch for
SpMM), of which the faster is reported: its name in "library", every library's time in
"libraries". An op whose work splits into a setup a caller does once and a phase it repeats
(the triangular solves: analysis, then solve) adds a fifth element, `repeated(copy)`: the
repeated phase alone, timed like `run` into "repeated_time_us"; or, where that form could not
be set up (an older CuPy without the bindings), the reason, reported as "repeated_error".
The solvers (cg, bicgstab, gmres) solve A x = 1 from x0 = 0 by the manifest's "solver" rule
({"rtol", "max_iterations", "restart"}), or with "k" that many systems one after another
(solver_system's right-hand sides); their run is a whole call (k calls), timed by the wall
clock (median of a few), and they add "iterations" (of all systems) and "history" (the first
system's [iteration, relative residual] pairs) to their result. An op whose output size the host learns between phases (the bitmap ops' sparse sum and
product) marks run with `wall_clock`: it is then timed by the wall clock with a synchronize,
as the bench times ours. Exit status 3: CuPy or a CUDA device is missing.
"""

import json
import math
import statistics
import sys
import time

EXIT_UNAVAILABLE = 3


def unavailable(why):
    print(why, file=sys.stderr)
    sys.exit(EXIT_UNAVAILABLE)


try:
    import numpy as np
    import cupy as cp
    import cupyx.scipy.sparse as cusparse
except ImportError as e:
    unavailable(f"CuPy and NumPy are needed ({e}); install cupy-cuda12x or cupy-cuda13x")

try:
    if cp.cuda.runtime.getDeviceCount() == 0:
        unavailable("CuPy finds no CUDA device")
except cp.cuda.runtime.CUDARuntimeError as e:
    unavailable(f"CuPy finds no usable CUDA device ({e})")


def relative_error(y, reference):
    """||y - ref||_2 / ||ref||_2 in float64; a huge finite number where it is not finite, so
    the output stays valid JSON."""
    reference = cp.asarray(reference, dtype=cp.float64).ravel()
    difference = float(cp.linalg.norm(cp.asarray(y, dtype=cp.float64).ravel() - reference))
    norm = float(cp.linalg.norm(reference))
    if difference == 0.0:
        return 0.0
    error = difference / norm if norm > 0.0 else math.inf
    return error if math.isfinite(error) else sys.float_info.max


SPIN = r"""
extern "C" __global__ void spin(unsigned long long nanoseconds) {
    unsigned long long start, now;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
    do {
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
    } while (now - start < nanoseconds);
}
"""
_spin = None


def hold(stream, seconds):
    """Keeps `stream` busy for `seconds` (one thread spinning on the global timer)."""
    global _spin
    if _spin is None:
        _spin = cp.RawKernel(SPIN, "spin")
    _spin((1,), (1,), (np.uint64(seconds * 1e9),), stream=stream)


def median_us(run, copies, warmup, runs, stream=None):
    """Median CUDA-event time of run(copy), µs; runs rotate through the copies."""
    stream = stream or cp.cuda.get_current_stream()
    for i in range(max(warmup, copies)):
        run(i % copies)
    stream.synchronize()
    # Time the host's side of one run to hold the stream long enough for all of them.
    host = time.perf_counter()
    run(0)
    host = time.perf_counter() - host
    starts = [cp.cuda.Event() for _ in range(runs)]
    ends = [cp.cuda.Event() for _ in range(runs)]
    hold(stream, min(2.0, 2 * runs * host + 1e-3))
    for i in range(runs):
        starts[i].record(stream)
        run(i % copies)
        ends[i].record(stream)
    ends[-1].synchronize()
    return statistics.median(cp.cuda.get_elapsed_time(s, e) * 1e3 for s, e in zip(starts, ends))


def wall_us(call, copies, runs):
    """Median wall-clock time of call(copy) including its synchronisation, µs."""
    call(0)
    times = []
    for i in range(max(runs, copies)):
        start = time.perf_counter()
        call(i % copies)
        times.append((time.perf_counter() - start) * 1e6)
    return statistics.median(times)


def random_dense(shape, seed, dtype=cp.float32):
    return cp.random.default_rng(seed).uniform(-1.0, 1.0, shape, dtype=cp.float64).astype(dtype)


def torch_csr(a):
    """The CuPy CSR matrix as a PyTorch sparse CSR tensor on the same device (int64 indices)."""
    import torch

    device = torch.device("cuda", cp.cuda.Device().id)
    crow, col = (torch.from_dlpack(v.astype(cp.int64)) for v in (a.indptr, a.indices))
    return torch.sparse_csr_tensor(crow, col, torch.from_dlpack(a.data), size=a.shape, device=device)


def torch_stream():
    """PyTorch's current stream, for CuPy's events."""
    import torch

    return cp.cuda.ExternalStream(torch.cuda.current_stream().cuda_stream)


# Ops: each takes the matrix (CuPy CSR, float32 or float64), x, the case from the manifest and
# the copy count, and returns (run, check, stream, e2e), or a list of (library, (run, check,
# stream, e2e)) where several libraries do the op: each is timed and the faster reported,
# named. run(copy) is one timed run, check() its relative error against float64, stream the
# stream run() issues work on (None: CuPy's current one), e2e(copy) the call with its result
# on the host (None where not timed). The triangular solves (sptrsv, sptrsv-upper) return
# (run, check, stream, e2e, repeated): run is the one-shot solve (analysis + solve),
# repeated(copy) the solve phase alone after one analysis, or a string saying why it is
# missing; their check() covers both.


def spmv(a, x, case, copies):
    """y = A x (cuSPARSE SpMV through CuPy's csr_matrix @ vector); end to end
    `(A @ x).get()`."""
    mats = [a] + [a.copy() for _ in range(copies - 1)]
    xs = [x] + [x.copy() for _ in range(copies - 1)]

    def check():
        return relative_error(a @ x, a.astype(cp.float64) @ x.astype(cp.float64))

    return (lambda i: mats[i] @ xs[i]), check, None, (lambda i: (mats[i] @ xs[i]).get())


def spmm(a, x, case, copies, transposed=False):
    """C = A B with B dense cols x k: cuSPARSE SpMM through CuPy (`csr @ B`) and through
    PyTorch (`torch.sparse.mm`, 1.4-9x faster on the H100); the faster is reported. With
    `transposed`, C = A^T B with B rows x k: CuPy's `A.T` is a CSC view (no copy) whose product
    runs cuSPARSE SpMM with op = transpose; PyTorch multiplies A^T's CSR, built once outside
    the timing, as wgsparse keeps its transpose."""
    import torch

    k = case["k"]
    mats = [a] + [a.copy() for _ in range(copies - 1)]
    b_rows = a.shape[0] if transposed else a.shape[1]
    bs = [random_dense((b_rows, k), 7 + i, a.dtype) for i in range(copies)]
    ops = [m.T for m in mats] if transposed else mats
    reference = ops[0].astype(cp.float64) @ bs[0].astype(cp.float64)
    tensors = [torch_csr(m.tocsr() if transposed else m) for m in ops]
    tbs = [torch.from_dlpack(b) for b in bs]

    def torch_run(i):
        return torch.sparse.mm(tensors[i], tbs[i])

    cupy = "CuPy csr.T @ B" if transposed else "CuPy csr @ B"
    return [
        (cupy, ((lambda i: ops[i] @ bs[i]), lambda: relative_error(ops[0] @ bs[0], reference), None, None)),
        (
            f"PyTorch {torch.__version__} torch.sparse.mm",
            (torch_run, lambda: relative_error(cp.from_dlpack(torch_run(0)), reference), torch_stream(), None),
        ),
    ]


def spmm_t(a, x, case, copies):
    """C = A^T B (see spmm)."""
    return spmm(a, x, case, copies, transposed=True)


def sddmm(a, x, case, copies):
    """S = (M1 M2) sampled at A's pattern, M1 rows x k, M2 k x cols (torch.sparse.sampled_addmm:
    cuSPARSE SDDMM; CuPy has none)."""
    import torch

    k = case["k"]
    device = torch.device("cuda", cp.cuda.Device().id)
    pattern = torch_csr(a)
    dtype = pattern.values().dtype
    generator = torch.Generator(device=device).manual_seed(11)
    rows, cols = a.shape

    def dense(shape):
        return torch.rand(shape, generator=generator, device=device, dtype=dtype) * 2 - 1

    operands = [(pattern if i == 0 else pattern.clone(), dense((rows, k)), dense((k, cols))) for i in range(copies)]

    def run(i):
        s, m1, m2 = operands[i]
        return torch.sparse.sampled_addmm(s, m1, m2, beta=0.0, alpha=1.0)

    def check():
        result = cp.from_dlpack(run(0).values())
        _, m1, m2 = operands[0]
        m1, m2t = cp.from_dlpack(m1).astype(cp.float64), cp.from_dlpack(m2.t().contiguous()).astype(cp.float64)
        row_of = cp.repeat(cp.arange(rows), cp.diff(a.indptr).astype(cp.int64))
        reference = cp.empty(a.nnz, dtype=cp.float64)
        chunk = max(1, (1 << 26) // max(k, 1))  # bounds the gathered rows to ~512 MiB
        for start in range(0, a.nnz, chunk):
            stop = min(start + chunk, a.nnz)
            reference[start:stop] = (m1[row_of[start:stop]] * m2t[a.indices[start:stop]]).sum(axis=1)
        return relative_error(result, reference)

    return [(f"PyTorch {torch.__version__} torch.sparse.sampled_addmm", (run, check, torch_stream(), None))]


def triangle(a, lower):
    """The triangle the solves run on: A's strictly lower (or upper) part plus a diagonal D with
    D_ii = 1 + sum_j |strict_ij|, so the system is row diagonally dominant and the solution
    stays bounded whatever A's values; A's own diagonal is dropped. CSR, canonical (sorted
    columns, no duplicates, as cuSPARSE SpSM wants), int32 indices, A's dtype."""
    n, cols = a.shape
    if n != cols:
        raise ValueError("sptrsv needs a square matrix")
    coo = a.tocoo()
    coo.sum_duplicates()
    keep = coo.row > coo.col if lower else coo.row < coo.col
    rows, columns, values = coo.row[keep].astype(cp.int32), coo.col[keep].astype(cp.int32), coo.data[keep]
    diagonal = cp.ones(n, dtype=cp.float64)
    cp.add.at(diagonal, rows, cp.abs(values.astype(cp.float64)))
    index = cp.arange(n, dtype=cp.int32)
    entries = (
        cp.concatenate([values, diagonal.astype(a.dtype)]),
        (cp.concatenate([rows, index]), cp.concatenate([columns, index])),
    )
    return cusparse.coo_matrix(entries, shape=(n, n)).tocsr()  # tocsr sorts and marks it canonical


class AnalysedSolve:
    """cuSPARSE SpSM on one triangular CSR matrix with its buffer size and analysis done once,
    here, so that a call times the solve phase alone, as a solver applying one factor to many
    right-hand sides pays it. CuPy has no such form (cupyx.cusparse.spsm analyses on every
    call), so this is that function split at the analysis: the same low-level bindings with
    the same arguments. One analysis serves every copy of the right-hand side: it belongs to
    the matrix, and the solve phase takes its B and C afresh (the check solves every copy, so
    a solve that kept the analysed ones would fail it). Each copy solves into its own
    preallocated output."""

    def __init__(self, m, bs, lower):
        self.descr = None  # for __del__ when a binding below is missing
        from cupy_backends.cuda.libs import cusparse as capi
        from cupyx import cusparse as cupyx_cusparse

        self.capi = capi
        n = m.shape[0]
        self.m = m  # the descriptors point into these arrays: keep them alive
        self.bs = [b.reshape(n, 1) for b in bs]  # a contiguous (n, 1) view is F-contiguous
        self.outs = [cp.empty((n, 1), dtype=m.dtype, order="F") for _ in bs]
        self.matrix = cupyx_cusparse.SpMatDescriptor.create(m)
        fill = capi.CUSPARSE_FILL_MODE_LOWER if lower else capi.CUSPARSE_FILL_MODE_UPPER
        self.matrix.set_attribute(capi.CUSPARSE_SPMAT_FILL_MODE, fill)
        self.matrix.set_attribute(capi.CUSPARSE_SPMAT_DIAG_TYPE, capi.CUSPARSE_DIAG_TYPE_NON_UNIT)
        self.b_descs = [cupyx_cusparse.DnMatDescriptor.create(b) for b in self.bs]
        self.out_descs = [cupyx_cusparse.DnMatDescriptor.create(c) for c in self.outs]
        self.alpha = np.ones((), dtype=m.dtype)  # host scalar: the handle's default pointer mode
        runtime = cp.cuda.runtime
        self.compute = runtime.CUDA_R_32F if m.dtype == cp.float32 else runtime.CUDA_R_64F
        self.handle = cp.cuda.device.get_cusparse_handle()
        self.descr = capi.spSM_createDescr()
        size = capi.spSM_bufferSize(*self.arguments(0))
        self.buffer = cp.empty(size, dtype=cp.int8)  # kept: the solve phase reads the analysis from it
        capi.spSM_analysis(*self.arguments(0), self.buffer.data.ptr)
        for i in range(len(bs)):  # a binding that fails at solve time fails here, not in the timing
            self(i)

    def arguments(self, i):
        """The arguments bufferSize, analysis and solve share, for copy i."""
        capi = self.capi
        return (
            self.handle,
            capi.CUSPARSE_OPERATION_NON_TRANSPOSE,
            capi.CUSPARSE_OPERATION_NON_TRANSPOSE,
            self.alpha.ctypes.data,
            self.matrix.desc,
            self.b_descs[i].desc,
            self.out_descs[i].desc,
            self.compute,
            capi.CUSPARSE_SPSM_ALG_DEFAULT,
            self.descr,
        )

    def __call__(self, i):
        """The solve phase alone: outs[i] = T^-1 bs[i] (on CuPy's current stream)."""
        self.capi.spSM_solve(*self.arguments(i), self.buffer.data.ptr)

    def solution(self, i):
        """Copy i solved afresh into an output poisoned first, so that a solve that leaves its
        output unwritten, or adds to it, fails the check. The poison is finite: NaN would also
        fail a solve that scales its output by zero, which is correct."""
        self.outs[i].fill(1.0e6)
        self(i)
        return self.outs[i].ravel()

    def __del__(self):
        if self.descr is not None and not sys.is_finalizing():
            self.capi.spSM_destroyDescr(self.descr)


def sptrsv(a, x, case, copies, lower=True):
    """Solve T y = x, T the lower triangle of `triangle` (upper with `lower=False`), by cuSPARSE
    SpSM through CuPy. run(copy) is the one-shot solve, what a caller of spsolve_triangular
    pays on every call: cupyx.cusparse.spsm, which spsolve_triangular calls on CUDA 12+ (buffer
    size, analysis, solve) without the float64 copy of a float32 result it adds for SciPy.
    The fifth element is the repeated solve: the solve phase alone (see AnalysedSolve)."""
    from cupyx import cusparse as cupyx_cusparse

    m = triangle(a, lower)
    mats = [m] + [m.copy() for _ in range(copies - 1)]
    xs = [x] + [x.copy() for _ in range(copies - 1)]
    try:
        repeated = AnalysedSolve(m, xs, lower)
    except Exception as e:  # without the low-level path the one-shot time still stands
        repeated = f"{type(e).__name__}: {e}"

    def run(i):
        return cupyx_cusparse.spsm(mats[i], xs[i], lower=lower)

    def check():
        m64 = m.astype(cp.float64)
        solutions = [run(0)]
        if isinstance(repeated, AnalysedSolve):
            solutions += [repeated.solution(i) for i in range(copies)]
        return max(relative_error(m64 @ y.astype(cp.float64), x) for y in solutions)

    return run, check, None, None, repeated


def sptrsv_upper(a, x, case, copies):
    """Solve U y = x (see sptrsv)."""
    return sptrsv(a, x, case, copies, lower=False)


def gemv(a, x, case, copies, transpose=False):
    """y = M x with M dense rows x cols, row-major (cuBLAS GEMV through CuPy matmul); with
    `transpose` y = M^T x. M is random for a dense shape, the densified matrix for a file."""
    rows, cols = a.shape
    dtype = x.dtype
    if isinstance(a, DenseShape):
        mats = [random_dense((rows, cols), 13 + i, dtype) for i in range(copies)]
    else:
        mats = [a.toarray()] + [None] * (copies - 1)
        mats[1:] = [mats[0].copy() for _ in range(copies - 1)]
    vectors = [random_dense(rows if transpose else cols, 17 + i, dtype) for i in range(copies)]

    def run(i):
        return (mats[i].T if transpose else mats[i]) @ vectors[i]

    def check():
        m = mats[0].astype(cp.float64)
        return relative_error(run(0), (m.T if transpose else m) @ vectors[0].astype(cp.float64))

    return run, check, None, (lambda i: run(i).get())


def gemv_t(a, x, case, copies):
    """y = M^T x (see gemv)."""
    return gemv(a, x, case, copies, transpose=True)


def lu(a, x, case, copies):
    """P A = L U with partial pivoting of a batch of square matrices, out of place
    (torch.linalg.lu_factor: cuSOLVER/cuBLAS getrf, batched). A dense shape draws its batch;
    a file is factored densely. rel_err: the worst matrix's ||A - P L U||_F / (n ||A||_F) in
    float64, the bench's measure."""
    import torch

    device = torch.device("cuda", cp.cuda.Device().id)
    dtype = torch.float64 if x.dtype == cp.float64 else torch.float32
    if isinstance(a, DenseShape):
        batch, n = a.batch, a.shape[0]
        generator = torch.Generator(device=device).manual_seed(19)
        mats = [torch.rand((batch, n, n), generator=generator, device=device, dtype=dtype) * 2 - 1 for _ in range(copies)]
    else:
        n = a.shape[0]
        if a.shape[1] != n:
            raise ValueError("lu needs a square matrix")
        dense = torch.from_dlpack(a.toarray()).to(dtype).reshape(1, n, n)
        mats = [dense] + [dense.clone() for _ in range(copies - 1)]

    def run(i):
        return torch.linalg.lu_factor(mats[i])

    def check():
        factors, pivots = run(0)
        p, lower, upper = torch.lu_unpack(factors.double(), pivots)
        a64 = mats[0].double()
        difference = torch.linalg.matrix_norm(a64 - p @ lower @ upper)
        norm = torch.linalg.matrix_norm(a64)
        return float((difference / norm).max()) / n

    return [(f"PyTorch {torch.__version__} torch.linalg.lu_factor", (run, check, torch_stream(), None))]


def wall_clock(run, stream=None):
    """Marks run(copy) to be timed by the wall clock, with a synchronize: for ops whose
    output size is decided between phases (sparse sums and products), timed as the bench
    times ours, from the call to the result on the device."""

    def timed(i):
        result = run(i)
        (stream or cp.cuda.get_current_stream()).synchronize()
        return result

    timed.wall = True
    return timed


def sparse_error(c, c64):
    """max |C - C64| / max |C64| over the entries, in float64."""
    difference = (c.astype(cp.float64) - c64).tocsr()
    scale = float(cp.abs(c64.data).max()) if c64.nnz else 1.0
    return float(cp.abs(difference.data).max()) / scale if difference.nnz else 0.0


def bitmap_add(a, x, case, copies, subtract=False):
    """C = A + B (or A - B) with B = A's columns mirrored (j -> cols - 1 - j), cuSPARSE csrgeam
    through CuPy, wall clock of the call and a synchronize (the bench's bitmap-add one-shot)."""
    cols = a.shape[1]
    b = cusparse.csr_matrix((a.data, (cols - 1) - a.indices, a.indptr), shape=a.shape)
    b.sort_indices()
    pairs = [(a.copy(), b.copy()) for _ in range(copies)]

    def run(i):
        p, q = pairs[i]
        return p - q if subtract else p + q

    def check():
        a64, b64 = a.astype(cp.float64), b.astype(cp.float64)
        return sparse_error(run(0), a64 - b64 if subtract else a64 + b64)

    return wall_clock(run), check, None, None


def bitmap_sub(a, x, case, copies):
    """C = A - B (see bitmap_add)."""
    return bitmap_add(a, x, case, copies, subtract=True)


def bitmap_spgemm(a, x, case, copies):
    """C = A A^T, cuSPARSE SpGEMM through CuPy (A^T built outside the timing), wall clock of
    the call and a synchronize (the bench's bitmap-spgemm one-shot)."""
    at = a.T.tocsr()
    at.sort_indices()
    pairs = [(a.copy(), at.copy()) for _ in range(copies)]

    def run(i):
        p, q = pairs[i]
        return p @ q

    def check():
        return sparse_error(run(0), a.astype(cp.float64) @ at.astype(cp.float64))

    return wall_clock(run), check, None, None


def bitmap_lu(a, x, case, copies):
    """The bitmap LU's batch (rows = batch * n stacked n x n matrices) densified outside the
    timing and factored by torch.linalg.lu_factor (see lu)."""
    import torch

    n = a.shape[1]
    batch = a.shape[0] // n
    dtype = torch.float64 if x.dtype == cp.float64 else torch.float32
    dense = torch.from_dlpack(a.toarray()).to(dtype).reshape(batch, n, n)
    mats = [dense] + [dense.clone() for _ in range(copies - 1)]

    def run(i):
        return torch.linalg.lu_factor(mats[i])

    def check():
        factors, pivots = run(0)
        p, lower, upper = torch.lu_unpack(factors.double(), pivots)
        a64 = mats[0].double()
        difference = torch.linalg.matrix_norm(a64 - p @ lower @ upper)
        return float((difference / torch.linalg.matrix_norm(a64)).max()) / n

    return [(f"PyTorch {torch.__version__} torch.linalg.lu_factor", (run, check, torch_stream(), None))]


def solver_system(a, case):
    """The right-hand sides (case k of them, one without k) and the stopping rule of the
    manifest: (bs, rtol, maxiter, restart). System i's b[j] = 1 + ((j*i) mod 7)/7, in float64
    rounded once, as the bench's solver::right_hand_side (b = 1 for the first)."""
    n = a.shape[0]
    j = cp.arange(n, dtype=cp.int64)
    bs = [(1.0 + ((j * i) % 7) / 7.0).astype(a.dtype) for i in range(case.get("k") or 1)]
    rule = case["solver"]
    return bs, rule["rtol"], rule["max_iterations"], rule["restart"]


def tolerance_kwargs(function, rtol):
    """CuPy 14 names the relative tolerance `rtol`, earlier versions `tol`; atol 0."""
    import inspect

    name = "rtol" if "rtol" in inspect.signature(function).parameters else "tol"
    return {name: rtol, "atol": 0.0}


def true_residual(a, b, x):
    """||b - A x|| / ||b|| in float64."""
    a64 = a.astype(cp.float64)
    b64 = b.astype(cp.float64)
    return float(cp.linalg.norm(b64 - a64 @ x.astype(cp.float64)) / cp.linalg.norm(b64))


def solver_case(a, bs, solve, rtol, history_run):
    """The (run, check, stream, e2e) of a solver on A x = b for each b of bs, one after
    another: run(copy) solves them from x0 = 0 with the results on the device (timed by the
    wall clock, a few calls: see main); run.figures() gives the iterations of all of them and
    the first's residual history from history_run(b) (untimed calls)."""
    solution = {}

    def run(i):
        solution["x"] = [solve(b) for b in bs]
        cp.cuda.get_current_stream().synchronize()

    def check():
        worst = 0.0
        for b, x in zip(bs, solution["x"]):
            if not bool(cp.isfinite(x).all()):
                return sys.float_info.max
            if rtol != 0.0:
                worst = max(worst, true_residual(a, b, x) - rtol)
        return worst

    def figures():
        runs = [history_run(b) for b in bs]
        iterations = sum(count for count, _ in runs)
        # JSON has no NaN: a history entry that is not a number is left out.
        return {"iterations": iterations, "history": [(i, v) for i, v in runs[0][1] if math.isfinite(v)]}

    run.solve = True
    run.figures = figures
    return run, check, None, None


def cg(a, x, case, copies):
    """CuPy's CG on A x = b (A symmetric positive definite), the manifest's stopping rule."""
    from cupyx.scipy.sparse.linalg import cg as cupy_cg

    bs, rtol, maxiter, _ = solver_system(a, case)
    kwargs = tolerance_kwargs(cupy_cg, rtol)

    def history_run(b):
        history = []
        b_norm = float(cp.linalg.norm(b))
        cupy_cg(a, b, maxiter=maxiter, callback=lambda xk: history.append(
            (len(history) + 1, float(cp.linalg.norm(b - a @ xk)) / b_norm)), **kwargs)
        return len(history), history

    return solver_case(a, bs, lambda b: cupy_cg(a, b, maxiter=maxiter, **kwargs)[0], rtol, history_run)


def gmres(a, x, case, copies):
    """CuPy's GMRES(m) on A x = b (convergence tested once a cycle)."""
    from cupyx.scipy.sparse.linalg import gmres as cupy_gmres

    bs, rtol, maxiter, restart = solver_system(a, case)
    kwargs = tolerance_kwargs(cupy_gmres, rtol)

    def history_run(b):
        history = []
        cupy_gmres(a, b, restart=restart, maxiter=maxiter, callback_type="pr_norm",
                   callback=lambda norm: history.append((restart * (len(history) + 1), float(norm))), **kwargs)
        return restart * len(history), history

    return solver_case(a, bs, lambda b: cupy_gmres(a, b, restart=restart, maxiter=maxiter, **kwargs)[0], rtol,
                       history_run)


# wgsparse's default BiCGSTAB shadow residual (solvers::Shadow::Hashed(0x5eed)): element i is
# h(i) in [-1/2, 1/2) from Wellons' lowbias32, as shaders/vector_scale.wgsl makes it.
SHADOW_SEED = 0x5EED
# Its first elements, pinned in tests/blas1.rs too.
SHADOW_START = [0.2523842453956604, -0.31249862909317017, -0.04866039752960205, -0.3937928080558777]


def mix32_int(x):
    """lowbias32 on a Python int, wrapping at 32 bits as WGSL's u32 does."""
    x ^= x >> 16
    x = (x * 0x7FEB352D) & 0xFFFFFFFF
    x ^= x >> 15
    x = (x * 0x846CA68B) & 0xFFFFFFFF
    return x ^ (x >> 16)


def mix32_array(x):
    """lowbias32 on a uint32 CuPy array (every operand uint32, so it wraps whatever NumPy's
    promotion rules)."""
    x = x ^ (x >> cp.uint32(16))
    x = x * cp.uint32(0x7FEB352D)
    x = x ^ (x >> cp.uint32(15))
    x = x * cp.uint32(0x846CA68B)
    return x ^ (x >> cp.uint32(16))


def hashed_shadow(n, dtype):
    offset = cp.uint32(mix32_int(SHADOW_SEED))
    h = mix32_array(cp.arange(n, dtype=cp.uint32) + offset) >> cp.uint32(8)
    shadow = h.astype(dtype) / 16777216.0 - 0.5
    start = shadow[: len(SHADOW_START)].get().tolist()
    if n >= len(SHADOW_START) and start != SHADOW_START:
        raise AssertionError(f"hashed shadow {start} is not wgsparse's {SHADOW_START}")
    return shadow


def cupy_bicgstab(a, b, rtol, maxiter, history=None):
    """BiCGSTAB (SciPy's form, no preconditioner) written with CuPy ops, in the style of CuPy's
    own cg: coefficients stay on the device, the convergence test reads a norm each half step.
    The shadow residual is wgsparse's hashed one (SciPy's r_hat = r0 breaks down on the
    convection-diffusion case: benches/NOTES.md, session 34), and like wgsparse it recomputes
    r = b - A x once the residual norm falls below 1% of its peak since the last time
    (reliable updating), so both run the same method."""
    from cupy import cublas

    x = cp.zeros_like(b)
    r = b.copy()
    r_hat = hashed_shadow(b.size, b.dtype)
    p = cp.zeros_like(b)
    v = cp.zeros_like(b)
    rho = alpha = omega = cp.ones((), dtype=b.dtype)
    b_norm = float(cublas.nrm2(b))
    atol = rtol * b_norm
    peak = 0.0
    for iteration in range(1, maxiter + 1):
        rho_new = cublas.dotc(r_hat, r)
        beta = (rho_new / rho) * (alpha / omega)
        p = r + beta * (p - omega * v)
        v = a @ p
        alpha = rho_new / cublas.dotc(r_hat, v)
        s = r - alpha * v
        x = x + alpha * p
        s_norm = float(cublas.nrm2(s))
        if s_norm <= atol or not math.isfinite(s_norm):
            break
        t = a @ s
        omega = cublas.dotc(t, s) / cublas.dotc(t, t)
        x = x + omega * s
        r = s - omega * t
        r_norm = float(cublas.nrm2(r))
        if history is not None:
            history.append((iteration, r_norm / b_norm))
        if r_norm <= atol or r_norm == 0.0 or not math.isfinite(r_norm):
            break  # converged, or broken down (as SciPy stops on a zero rho)
        if r_norm < 0.01 * peak:
            r = b - a @ x
            peak = float(cublas.nrm2(r))
        else:
            peak = max(peak, r_norm)
        rho = rho_new
    return x, iteration


def bicgstab(a, x, case, copies):
    """BiCGSTAB with CuPy ops (CuPy has no bicgstab) on A x = b."""
    bs, rtol, maxiter, _ = solver_system(a, case)

    def history_run(b):
        history = []
        _, iterations = cupy_bicgstab(a, b, rtol, maxiter, history)
        return iterations, history

    return solver_case(a, bs, lambda b: cupy_bicgstab(a, b, rtol, maxiter)[0], rtol, history_run)


OPS = {
    "spmv": spmv,
    "spmm": spmm,
    "spmm-t": spmm_t,
    "sddmm": sddmm,
    "sptrsv": sptrsv,
    "sptrsv-upper": sptrsv_upper,
    "gemv": gemv,
    "gemv-t": gemv_t,
    "lu": lu,
    "bitmap-add": bitmap_add,
    "bitmap-sub": bitmap_sub,
    "bitmap-spgemm": bitmap_spgemm,
    "bitmap-lu": bitmap_lu,
    "cg": cg,
    "bicgstab": bicgstab,
    "gmres": gmres,
}


class DenseShape:
    """A dense case's shape (the manifest's "dense": batch, rows, cols): the ops draw their
    own operands of it, since dense times do not depend on the values."""

    def __init__(self, dense):
        self.batch, self.shape = dense["batch"], (dense["rows"], dense["cols"])


def load(entry, dtype):
    """The matrix (int32 indices, as CuPy wants) and x of a manifest entry, values of dtype;
    for a dense case its DenseShape and an empty x of dtype."""
    if entry.get("dense"):
        return DenseShape(entry["dense"]), cp.empty(0, dtype=dtype)

    def array(key, stored):
        return cp.asarray(np.fromfile(entry[key], dtype=stored))

    shape = (entry["rows"], entry["cols"])
    offsets = array("row_offsets", "<u4").astype(cp.int32)
    indices = array("col_indices", "<u4").astype(cp.int32)
    a = cusparse.csr_matrix((array("values", "<f4").astype(dtype), indices, offsets), shape=shape)
    return a, array("x", "<f4").astype(dtype)


def main():
    if sys.argv[1:] == ["--check"]:
        return
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    with open(sys.argv[1]) as f:
        manifest = json.load(f)
    warmup, runs = manifest["warmup"], manifest["runs"]
    e2e_runs = manifest.get("e2e_runs", 5)
    dtype = cp.dtype(manifest.get("dtype", "float32"))
    results = []
    for entry in manifest["matrices"]:
        start = time.perf_counter()
        try:
            a, x = load(entry, dtype)
            print(f"loaded {entry['name']} ({time.perf_counter() - start:.1f} s)", file=sys.stderr)
        except Exception as e:  # a matrix CuPy refuses must not stop the others
            a = x = None
            load_error = f"loading: {type(e).__name__}: {e}"
        for case in entry["ops"]:
            result = {"matrix": entry["name"], "op": case["op"], "k": case.get("k")}
            start = time.perf_counter()
            try:
                if a is None:
                    raise RuntimeError(load_error)
                if case["op"] not in OPS:
                    raise KeyError(f"the peer has no op {case['op']!r}")
                copies = max(1, case.get("copies", 1))
                case["solver"] = manifest.get("solver")
                libraries = OPS[case["op"]](a, x, case, copies)
                if not isinstance(libraries, list):
                    libraries = [(None, libraries)]
                timed = []
                for library, timings in libraries:
                    run, check, stream, e2e = timings[:4]
                    repeated = timings[4] if len(timings) > 4 else None
                    if getattr(run, "solve", False):
                        # A whole solve a call: a few calls after one untimed.
                        one = {"time_us": wall_us(run, 1, min(3, e2e_runs))}
                        one.update(run.figures())
                    elif getattr(run, "wall", False):
                        one = {"time_us": wall_us(run, copies, runs)}
                    else:
                        one = {"time_us": median_us(run, copies, warmup, runs, stream)}
                    if isinstance(repeated, str):
                        one["repeated_error"] = repeated
                    elif repeated is not None:
                        one["repeated_time_us"] = median_us(repeated, copies, warmup, runs, stream)
                    if e2e is not None:
                        one["e2e_time_us"] = wall_us(e2e, copies, e2e_runs)
                    one["rel_err"] = check()
                    if library is not None:
                        one["library"] = library
                        result.setdefault("libraries", {})[library] = one["time_us"]
                    timed.append(one)
                result.update(min(timed, key=lambda t: t["time_us"]))
            except Exception as e:
                result["error"] = f"{type(e).__name__}: {e}"
            results.append(result)
            print(f"{result} ({time.perf_counter() - start:.1f} s)", file=sys.stderr)
        del a, x
        cp.get_default_memory_pool().free_all_blocks()
    version = cp.cuda.runtime.runtimeGetVersion()
    properties = cp.cuda.runtime.getDeviceProperties(cp.cuda.Device().id)
    name = properties["name"]
    output = {
        "peer": f"cusparse (CuPy {cp.__version__}, CUDA {version // 1000}.{version % 1000 // 10})",
        "device": name.decode() if isinstance(name, bytes) else str(name),
        "results": results,
    }
    with open(sys.argv[2], "w") as f:
        json.dump(output, f, allow_nan=False)


if __name__ == "__main__":
    main()
