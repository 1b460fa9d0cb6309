//! f64 twins of the iterative solvers: the same recurrences, stopping rules and iteration
//! counts as `wgsparse::solvers`, on the host (SciPy's algorithms, written out so that the
//! counts can be compared one to one).

use crate::element::Scalar;
use crate::format::CsrMatrix;

use super::incomplete::{apply_incomplete, diagonal_incomplete_factor, has_diagonal_form, incomplete_factor};
use crate::solvers::{FactorForm, Orthogonalization, Shadow, TriangularApply};

/// What a twin solve did.
#[derive(Debug, Clone, PartialEq)]
pub struct TwinSolve {
    /// The solution.
    pub x: Vec<f64>,
    /// Iterations counted as the GPU solvers count them.
    pub iterations: usize,
    /// Whether the recurrence's norm met the threshold.
    pub converged: bool,
    /// The recurrence's relative residual norm after each counted iteration (GMRES: its
    /// least-squares estimate), as `SolverReport::history`.
    pub history: Vec<f64>,
}

/// The preconditioner of a twin solve.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TwinPreconditioner {
    /// None.
    Identity,
    /// z = D⁻¹·r.
    Jacobi,
    /// ILU(0) (IC(0) with `cholesky`) from `sweeps` fine-grained sweeps, applied as `apply`
    /// says ([`incomplete_factor`], [`apply_incomplete`]).
    Incomplete {
        /// IC(0) rather than ILU(0).
        cholesky: bool,
        /// Factorization sweeps.
        sweeps: u32,
        /// Exact or Jacobi-sweep application.
        apply: TriangularApply,
        /// The form asked for: the diagonal form's factor where `IncompleteLu` would keep it
        /// ([`diagonal_incomplete_factor`]), else the full sweeps'.
        form: FactorForm,
    },
}

struct Problem<'a, T: Scalar> {
    a: &'a CsrMatrix<T>,
    m: TwinPreconditioner,
    /// D⁻¹ (Jacobi) or the factor (incomplete).
    data: Vec<f64>,
}

impl<T: Scalar> Problem<'_, T> {
    fn apply(&self, x: &[f64]) -> Vec<f64> {
        let a = self.a;
        (0..a.rows())
            .map(|r| {
                let range = a.row_offsets()[r] as usize..a.row_offsets()[r + 1] as usize;
                range.map(|p| a.values()[p].to_f64() * x[a.col_indices()[p] as usize]).sum()
            })
            .collect()
    }

    fn precondition(&self, r: &[f64]) -> Vec<f64> {
        match self.m {
            TwinPreconditioner::Identity => r.to_vec(),
            TwinPreconditioner::Jacobi => r.iter().zip(&self.data).map(|(r, d)| r * d).collect(),
            TwinPreconditioner::Incomplete { cholesky, apply, .. } => {
                apply_incomplete(self.a, &self.data, cholesky, apply, r)
            }
        }
    }
}

fn problem<T: Scalar>(a: &CsrMatrix<T>, m: TwinPreconditioner) -> Problem<'_, T> {
    let data = match m {
        TwinPreconditioner::Identity => Vec::new(),
        TwinPreconditioner::Jacobi => (0..a.rows())
            .map(|r| {
                let range = a.row_offsets()[r] as usize..a.row_offsets()[r + 1] as usize;
                let d: f64 = range.filter(|&p| a.col_indices()[p] as usize == r).map(|p| a.values()[p].to_f64()).sum();
                1.0 / d
            })
            .collect(),
        TwinPreconditioner::Incomplete { cholesky, sweeps, apply, form } => {
            let diagonal = form == FactorForm::Auto
                && matches!(apply, TriangularApply::Sweeps(_))
                && has_diagonal_form(a, cholesky);
            if diagonal {
                diagonal_incomplete_factor(a, cholesky, sweeps)
            } else {
                incomplete_factor(a, cholesky, sweeps)
            }
        }
    };
    Problem { a, m, data }
}

fn dot(x: &[f64], y: &[f64]) -> f64 {
    x.iter().zip(y).map(|(a, b)| a * b).sum()
}

fn norm(x: &[f64]) -> f64 {
    dot(x, x).sqrt()
}

fn axpy(alpha: f64, x: &[f64], y: &mut [f64]) {
    y.iter_mut().zip(x).for_each(|(y, x)| *y += alpha * x);
}

/// A twin solve's start: the problem, b and x0 in f64, the threshold `max(rtol·‖b‖, atol)`,
/// and the history's scale 1/‖b‖ (1 for b = 0).
fn start<'a, T: Scalar>(
    a: &'a CsrMatrix<T>,
    m: TwinPreconditioner,
    b: &[T],
    x0: &[T],
    rtol: f64,
    atol: f64,
) -> (Problem<'a, T>, Vec<f64>, Vec<f64>, f64, f64) {
    let b = to_f64(b);
    let b_norm = norm(&b);
    let threshold = (rtol * b_norm).max(atol);
    let scale = if b_norm > 0.0 { 1.0 / b_norm } else { 1.0 };
    (problem(a, m), b, to_f64(x0), threshold, scale)
}

fn residual<T: Scalar>(p: &Problem<'_, T>, b: &[f64], x: &[f64]) -> Vec<f64> {
    let ax = p.apply(x);
    b.iter().zip(ax).map(|(b, ax)| b - ax).collect()
}

fn to_f64<T: Scalar>(v: &[T]) -> Vec<f64> {
    v.iter().map(|v| v.to_f64()).collect()
}

/// Preconditioned CG from `x0` until `‖r‖ ≤ max(rtol·‖b‖, atol)` or `max_iterations`.
pub fn cg<T: Scalar>(
    a: &CsrMatrix<T>,
    m: TwinPreconditioner,
    b: &[T],
    x0: &[T],
    rtol: f64,
    atol: f64,
    max_iterations: usize,
) -> TwinSolve {
    let (p_, b, mut x, threshold, scale) = start(a, m, b, x0, rtol, atol);
    let mut r = residual(&p_, &b, &x);
    let mut history = Vec::new();
    if norm(&r) <= threshold {
        return TwinSolve { x, iterations: 0, converged: true, history };
    }
    let mut z = p_.precondition(&r);
    let mut rho = dot(&r, &z);
    let mut p = z.clone();
    for k in 1..=max_iterations {
        let q = p_.apply(&p);
        let alpha = rho / dot(&p, &q);
        axpy(alpha, &p, &mut x);
        axpy(-alpha, &q, &mut r);
        let r_norm = norm(&r);
        history.push(r_norm * scale);
        if r_norm <= threshold {
            return TwinSolve { x, iterations: k, converged: true, history };
        }
        z = p_.precondition(&r);
        let rho_new = dot(&r, &z);
        let beta = rho_new / rho;
        rho = rho_new;
        p.iter_mut().zip(&z).for_each(|(p, z)| *p = z + beta * *p);
    }
    TwinSolve { x, iterations: max_iterations, converged: false, history }
}

/// BiCGSTAB recomputes r = b − A·x once the recurrence's norm falls below this fraction of
/// its peak since the last time (the device's `REPLACE_BELOW`).
const REPLACE_BELOW: f64 = 0.01;

/// Right-preconditioned BiCGSTAB with the shadow residual `shadow` says and the device's
/// reliable updating, counted as the GPU's: an iteration ends at the full step (a stop at
/// the half step does not count it).
#[allow(clippy::too_many_arguments)]
pub fn bicgstab<T: Scalar>(
    a: &CsrMatrix<T>,
    m: TwinPreconditioner,
    b: &[T],
    x0: &[T],
    rtol: f64,
    atol: f64,
    max_iterations: usize,
    shadow: Shadow,
) -> TwinSolve {
    let (p_, b, mut x, threshold, scale) = start(a, m, b, x0, rtol, atol);
    let n = b.len();
    let mut r = residual(&p_, &b, &x);
    let mut history = Vec::new();
    if norm(&r) <= threshold {
        return TwinSolve { x, iterations: 0, converged: true, history };
    }
    let r_hat = match shadow {
        Shadow::Hashed(seed) => (0..n as u32).map(|i| crate::generate::hashed_value(i, seed)).collect(),
        Shadow::Residual => r.clone(),
    };
    let (mut rho, mut alpha, mut omega) = (1.0, 1.0, 1.0);
    let (mut p, mut v) = (vec![0.0; n], vec![0.0; n]);
    let mut peak: f64 = 0.0;
    for k in 1..=max_iterations {
        let rho_new = dot(&r_hat, &r);
        let beta = (rho_new / rho) * (alpha / omega);
        rho = rho_new;
        for i in 0..n {
            p[i] = r[i] + beta * (p[i] - omega * v[i]);
        }
        let p_hat = p_.precondition(&p);
        v = p_.apply(&p_hat);
        alpha = rho / dot(&r_hat, &v);
        axpy(-alpha, &v, &mut r);
        axpy(alpha, &p_hat, &mut x);
        if norm(&r) <= threshold {
            return TwinSolve { x, iterations: k - 1, converged: true, history };
        }
        let s_hat = p_.precondition(&r);
        let t = p_.apply(&s_hat);
        omega = dot(&t, &r) / dot(&t, &t);
        axpy(omega, &s_hat, &mut x);
        axpy(-omega, &t, &mut r);
        let r_norm = norm(&r);
        history.push(r_norm * scale);
        if r_norm <= threshold {
            return TwinSolve { x, iterations: k, converged: true, history };
        }
        if r_norm < REPLACE_BELOW * peak {
            r = residual(&p_, &b, &x);
            peak = norm(&r);
        } else {
            peak = peak.max(r_norm);
        }
    }
    TwinSolve { x, iterations: max_iterations, converged: false, history }
}

/// `c = Vᵀ·w` against every vector at once (classical Gram–Schmidt), then `w −= V·c`.
fn project(basis: &[Vec<f64>], w: &mut [f64]) -> Vec<f64> {
    let c: Vec<f64> = basis.iter().map(|v| dot(v, w)).collect();
    for (ci, v) in c.iter().zip(basis) {
        axpy(-ci, v, w);
    }
    c
}

/// Right-preconditioned GMRES(`restart`): classical Gram–Schmidt as `orthogonalization`
/// says, Givens rotations; an iteration is one Arnoldi step, its norm the least-squares
/// estimate.
#[allow(clippy::too_many_arguments)]
pub fn gmres<T: Scalar>(
    a: &CsrMatrix<T>,
    m: TwinPreconditioner,
    b: &[T],
    x0: &[T],
    rtol: f64,
    atol: f64,
    max_iterations: usize,
    restart: usize,
    orthogonalization: Orthogonalization,
) -> TwinSolve {
    let (p_, b, mut x, threshold, scale) = start(a, m, b, x0, rtol, atol);
    let mut iterations = 0;
    let mut history = Vec::new();
    loop {
        let r = residual(&p_, &b, &x);
        let beta = norm(&r);
        if beta <= threshold {
            return TwinSolve { x, iterations, converged: true, history };
        }
        if iterations >= max_iterations {
            return TwinSolve { x, iterations, converged: false, history };
        }
        let mut basis = vec![r.iter().map(|v| v / beta).collect::<Vec<_>>()];
        let mut h = vec![vec![0.0; restart]; restart + 1];
        let (mut cs, mut sn) = (vec![0.0; restart], vec![0.0; restart]);
        let mut g = vec![0.0; restart + 1];
        g[0] = beta;
        let mut columns = 0;
        let (mut stop, mut met) = (false, false);
        for j in 0..restart {
            let mut w = p_.apply(&p_.precondition(&basis[j]));
            // Classical Gram–Schmidt, by default twice (CGS2: the device delays the second
            // projection into the next column's pass, the same in exact arithmetic).
            for (i, c) in project(&basis, &mut w).into_iter().enumerate() {
                h[i][j] = c;
            }
            if orthogonalization == Orthogonalization::Reorthogonalized {
                for (i, c) in project(&basis, &mut w).into_iter().enumerate() {
                    h[i][j] += c;
                }
            }
            let after = norm(&w);
            h[j + 1][j] = after;
            for i in 0..j {
                let (hi, hn) = (h[i][j], h[i + 1][j]);
                h[i][j] = cs[i] * hi + sn[i] * hn;
                h[i + 1][j] = -sn[i] * hi + cs[i] * hn;
            }
            let rr = h[j][j].hypot(h[j + 1][j]);
            (cs[j], sn[j]) = if rr == 0.0 { (1.0, 0.0) } else { (h[j][j] / rr, h[j + 1][j] / rr) };
            h[j][j] = rr;
            g[j + 1] = -sn[j] * g[j];
            g[j] *= cs[j];
            iterations += 1;
            columns = j + 1;
            met = g[j + 1].abs() <= threshold;
            history.push(g[j + 1].abs() * scale);
            if met || iterations >= max_iterations {
                stop = true;
                break;
            }
            let inv = 1.0 / h[j + 1][j];
            basis.push(w.iter().map(|v| v * inv).collect());
        }
        let mut y = vec![0.0; columns];
        for i in (0..columns).rev() {
            let sum = g[i] - (i + 1..columns).map(|j| h[i][j] * y[j]).sum::<f64>();
            y[i] = sum / h[i][i];
        }
        let mut u = vec![0.0; x.len()];
        for (yi, v) in y.iter().zip(&basis) {
            axpy(*yi, v, &mut u);
        }
        axpy(1.0, &p_.precondition(&u), &mut x);
        if stop {
            return TwinSolve { x, iterations, converged: met, history };
        }
    }
}
