//! The byte and flop models behind the GB/s and GFLOP/s columns, one per op, kept together
//! so that every op is counted by the same rules: the compulsory traffic of the op's
//! operands in CSR (u32 indices, f32 values), whatever format an algorithm reads, so that
//! rows of one op compare; padding and re-reads are the algorithm's cost, not extra credit.
//!
//! A new op adds its [`Model`] and a function from shape to [`Cost`] here.

use wgsparse::ops::TransposedReads;

/// Bytes moved and flops done by one run of an op.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Cost {
    /// Bytes read and written; `None` where no byte count is meaningful.
    pub bytes: Option<u64>,
    /// Floating-point operations; `None` where none are counted.
    pub flops: Option<u64>,
}

/// How a [`Cost`] is counted, in words for the report footer.
#[derive(Debug, Clone, Copy)]
pub struct Model {
    /// The byte formula.
    pub bytes: &'static str,
    /// The flop formula.
    pub flops: &'static str,
    /// What the error column measures, where it is not `‖y − y_ref‖₂ / ‖y_ref‖₂`.
    pub error: Option<&'static str>,
}

/// Shape of a sparse operand.
#[derive(Debug, Clone, Copy)]
pub struct Shape {
    /// Rows.
    pub rows: u64,
    /// Columns.
    pub cols: u64,
    /// Stored entries.
    pub nnz: u64,
}

/// SpMV `y = A·x`: each entry's value (v bytes) and column index once, the row offsets, `x`
/// once and `y` written once; a multiply and an add per entry.
pub const SPMV: Model =
    Model { bytes: "nnz·(4+v) + (rows+1)·4 + (cols+rows)·v, v = 4 (f32) or 8 (f64)", flops: "2·nnz", error: None };

/// See [`SPMV`]; `v` bytes per value.
pub fn spmv(a: Shape, v: u64) -> Cost {
    Cost { bytes: Some(a.nnz * (4 + v) + (a.rows + 1) * 4 + (a.cols + a.rows) * v), flops: Some(2 * a.nnz) }
}

/// SpMM `C = A·B` (B cols × k, C rows × k): A once as SpMV counts it, B read once, C written
/// once; a multiply and an add per entry and column.
pub const SPMM: Model =
    Model {
        bytes: "nnz·(4+v) + (rows+1)·4 + (cols+rows)·k·v, v = 4 (f32) or 8 (f64)", flops: "2·nnz·k", error: None
    };

/// See [`SPMM`]; `v` bytes per value.
pub fn spmm(a: Shape, k: u64, v: u64) -> Cost {
    Cost { bytes: Some(a.nnz * (4 + v) + (a.rows + 1) * 4 + (a.cols + a.rows) * k * v), flops: Some(2 * a.nnz * k) }
}

/// SpMM with `Aᵀ` (`C = Aᵀ·B`, B rows × k, C cols × k) on the kept transpose: its offsets
/// and row indices, A's values, B and C once. A's values as the plan reads them by default
/// (`TransposedReads::default_for`): on a large matrix the plan's copy in the transpose's
/// order, and the check of A's values against the copy before it (A's values and the copy,
/// read in order; nothing written when they did not change, as in the bench's repeated
/// runs), `3v`; on a small one A's values through the permutation, `4 + v`.
/// Rows run with `reads=` or `changing` keep this default's count: a forced read mode, the
/// changed values the check scatters, and the `changing` run's SDDMM are not counted.
pub const SPMM_T: Model = Model {
    bytes: "nnz·(4+3v), or nnz·(8+v) where A's values are at most 4 MiB, + (cols+1)·4 + (rows+cols)·k·v, v = 4 (f32) or 8 (f64)",
    flops: "2·nnz·k",
    error: None,
};

/// See [`SPMM_T`]; `v` bytes per value.
pub fn spmm_t(a: Shape, k: u64, v: u64) -> Cost {
    let per_entry = match TransposedReads::default_for(a.nnz * v) {
        TransposedReads::Permuted => 8 + v,
        _ => 4 + 3 * v,
    };
    Cost { bytes: Some(a.nnz * per_entry + (a.cols + 1) * 4 + (a.cols + a.rows) * k * v), flops: Some(2 * a.nnz * k) }
}

/// SDDMM `C = A ⊙ (B1·B2ᵀ)` (B1 rows × k, B2 cols × k): A once, B1 and B2 read once, C's
/// values written once; a dot product of length k per entry.
pub const SDDMM: Model =
    Model {
        bytes: "nnz·(4+2v) + (rows+1)·4 + (rows+cols)·k·v, v = 4 (f32) or 8 (f64)", flops: "2·nnz·k", error: None
    };

/// See [`SDDMM`]; `v` bytes per value.
pub fn sddmm(a: Shape, k: u64, v: u64) -> Cost {
    Cost { bytes: Some(a.nnz * (4 + 2 * v) + (a.rows + 1) * 4 + (a.rows + a.cols) * k * v), flops: Some(2 * a.nnz * k) }
}

/// Triangular solve `T·x = b` (T n × n with nnz entries, the diagonal included): T once as
/// SpMV counts it, b read and x written once; a multiply and an add per off-diagonal entry
/// and a division per row (counted as 2·nnz).
pub const SPTRSV: Model =
    Model { bytes: "nnz·(4+v) + (rows+1)·4 + 2·rows·v, v = 4 (f32) or 8 (f64)", flops: "2·nnz", error: None };

/// See [`SPTRSV`]; `v` bytes per value.
pub fn sptrsv(t: Shape, v: u64) -> Cost {
    Cost { bytes: Some(t.nnz * (4 + v) + (t.rows + 1) * 4 + 2 * t.rows * v), flops: Some(2 * t.nnz) }
}

/// GEMV `y = op(A)·x` (A dense rows × cols): A once, x read and y written once; a multiply
/// and an add per entry of A.
pub const GEMV: Model =
    Model { bytes: "(rows·cols + rows + cols)·v, v = 4 (f32) or 8 (f64)", flops: "2·rows·cols", error: None };

/// See [`GEMV`]; `v` bytes per value.
pub fn gemv(rows: u64, cols: u64, v: u64) -> Cost {
    Cost { bytes: Some((rows * cols + rows + cols) * v), flops: Some(2 * rows * cols) }
}

/// Batched LU `P·A = L·U` of `batch` matrices n × n (out of place): A read and the factors
/// written once, the pivots written; LAPACK's flop count per matrix, 2/3·n³ − 1/2·n² + 5/6·n
/// (rounded to 2/3·n³ − n²/2 + n).
pub const LU: Model = Model {
    bytes: "batch·(2·n²·v + 4·n), v = 4 (f32) or 8 (f64)",
    flops: "batch·(2/3·n³ − 1/2·n² + 5/6·n)",
    error: Some(
        "max over the batch of ‖P·A − L·U‖_F / (n·‖A‖_F); infinite if a pivot is out of range or, with partial pivoting, a multiplier exceeds 1",
    ),
};

/// See [`LU`]; `v` bytes per value.
pub fn lu(batch: u64, n: u64, v: u64) -> Cost {
    let flops = (4 * n * n * n - 3 * n * n + 5 * n) / 6;
    Cost { bytes: Some(batch * (2 * n * n * v + 4 * n)), flops: Some(batch * flops) }
}

/// What the solvers' error column measures.
const SOLVER_ERROR: &str = "the true relative residual ‖b − A·x‖/‖b‖ (f64, on the host) above what the row must meet: \
     f64 rows converged to rtol 1e-6; f32 rows (a fixed iteration count) 1.1 × the f64 twin's after as many \
     iterations (BiCGSTAB, whose residual is not monotone: its largest over the twin's last half) \
     + 16·ε₃₂·‖|A|·|x|‖/‖b‖, or 1e-3 (f32's attainable accuracy on converged systems)";

/// One CG iteration as the solver runs it: A as SpMV counts it (p read, A·p written, p·Ap
/// folded into the product), then eight vector passes (r −= α·Ap with r·r: 3; x += α·p and
/// p ← r + β·p in one pass: 5); flops: the product and five vector ops.
pub const CG: Model = Model {
    bytes: "per iteration: SpMV's bytes + 8·rows·v",
    flops: "per iteration: 2·nnz + 10·rows",
    error: Some(SOLVER_ERROR),
};

/// See [`CG`].
pub fn cg(a: Shape, v: u64) -> Cost {
    let spmv = spmv(a, v);
    Cost { bytes: spmv.bytes.map(|b| b + 8 * a.rows * v), flops: Some(2 * a.nnz + 10 * a.rows) }
}

/// One BiCGSTAB iteration at its floor: two products and fourteen vector passes (r̂·r, p,
/// r̂·v, s and ‖s‖, t·s and t·t, x, r and ‖r‖).
pub const BICGSTAB: Model = Model {
    bytes: "per iteration: 2 × SpMV's bytes + 14·rows·v",
    flops: "per iteration: 4·nnz + 20·rows",
    error: Some(SOLVER_ERROR),
};

/// See [`BICGSTAB`].
pub fn bicgstab(a: Shape, v: u64) -> Cost {
    let spmv = spmv(a, v);
    Cost { bytes: spmv.bytes.map(|b| 2 * b + 14 * a.rows * v), flops: Some(4 * a.nnz + 20 * a.rows) }
}

/// One GMRES(m) iteration, averaged over a cycle, at its floor: the product, then delayed
/// classical Gram–Schmidt against the j basis vectors before column j in two passes (the dots
/// of u and p: j + 2 vectors read; the update: j + 2 read, v_j and the next u written) and
/// v_j's copy into the basis (2), m + 7 on average, and spread over the cycle's iterations
/// its update (1) and its last column's dots (1).
pub const GMRES: Model = Model {
    bytes: "per iteration: SpMV's bytes + (m + 9)·rows·v, m = 30 (two passes over the basis a column and \
            the new vector's copy into it, whether it is projected once, `cgs`, or twice, auto)",
    flops: "per iteration: 2·nnz + (4m + 6)·rows",
    error: Some(SOLVER_ERROR),
};

/// See [`GMRES`]; restart length `m`.
pub fn gmres(a: Shape, v: u64, m: u64) -> Cost {
    let spmv = spmv(a, v);
    Cost { bytes: spmv.bytes.map(|b| b + (m + 9) * a.rows * v), flops: Some(2 * a.nnz + (4 * m + 6) * a.rows) }
}
