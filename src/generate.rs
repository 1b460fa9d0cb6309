//! Deterministic test and benchmark inputs: the same seed gives the same matrix on every
//! machine, so a failing test or a benchmark row can be reproduced from its printed seed.
//!
//! Every generator returns a valid [`CsrMatrix<f32>`] with sorted columns and no duplicates
//! (except [`random_coo`], which is meant to have them). Random values come from
//! [`Rng::next_f32`]: in (-1, 1) and never exactly zero, so no entry cancels by accident.
//!
//! These are tools for tests and benchmarks, not user input paths: sizes whose matrix would
//! not fit u32 indices, or out-of-domain parameters, panic with a message (see each `# Panics`).

use crate::format::{CooMatrix, CsrMatrix};

/// A small, fast, seedable generator: xoshiro256** seeded through SplitMix64.
#[derive(Debug, Clone)]
pub struct Rng {
    state: [u64; 4],
}

impl Rng {
    /// A generator whose whole stream is fixed by `seed`.
    pub fn new(seed: u64) -> Self {
        // SplitMix64 spreads any seed (0 included) over the 256-bit state.
        let mut x = seed;
        let mut split_mix = || {
            x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = x;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^ (z >> 31)
        };
        Rng { state: [split_mix(), split_mix(), split_mix(), split_mix()] }
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        let s = &mut self.state;
        let result = s[1].wrapping_mul(5).rotate_left(7).wrapping_mul(9);
        let t = s[1] << 17;
        s[2] ^= s[0];
        s[3] ^= s[1];
        s[1] ^= s[2];
        s[0] ^= s[3];
        s[2] ^= t;
        s[3] = s[3].rotate_left(45);
        result
    }

    /// Uniform in `0..n` (Lemire's multiply-shift; the bias, below 2^-32 for `n < 2^32`, does
    /// not matter here). Returns 0 when `n == 0`.
    pub fn below(&mut self, n: u64) -> u64 {
        ((self.next_u64() as u128 * n as u128) >> 64) as u64
    }

    /// Uniform in [0, 1), 53 random bits.
    pub fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// Uniform over the 2^24 points `(k + 0.5) / 2^23 - 1` of (-1, 1): symmetric, exactly
    /// representable in f32, and never zero.
    pub fn next_f32(&mut self) -> f32 {
        let k = self.next_u64() >> 40;
        ((k as f64 + 0.5) / (1u64 << 23) as f64 - 1.0) as f32
    }
}

/// The 5-point Laplacian of an `n × n` grid with Dirichlet boundary: `n²` rows, 4 on the
/// diagonal, -1 for each grid neighbour (row `i*n + j` is point (i, j)). Symmetric positive
/// definite, 5 entries per interior row: the classic regular, bandwidth-bound SpMV case.
///
/// # Panics
/// If `n²` rows or the `5n² - 4n` entries do not fit u32.
pub fn laplacian_2d(n: usize) -> CsrMatrix<f32> {
    grid_laplacian(n, 2)
}

/// The 7-point Laplacian of an `n × n × n` grid with Dirichlet boundary: `n³` rows, 6 on the
/// diagonal, -1 for each grid neighbour (row `(i*n + j)*n + k` is point (i, j, k)). Three bands
/// far apart: worse locality in `x` than [`laplacian_2d`].
///
/// # Panics
/// If `n³` rows or the `7n³ - 6n²` entries do not fit u32.
pub fn laplacian_3d(n: usize) -> CsrMatrix<f32> {
    grid_laplacian(n, 3)
}

/// The `2·dims + 1`-point Laplacian of an `n^dims` grid.
fn grid_laplacian(n: usize, dims: u32) -> CsrMatrix<f32> {
    let rows = n.checked_pow(dims).filter(|&r| r <= u32::MAX as usize);
    let rows = rows.unwrap_or_else(|| panic!("a {dims}-D grid of side {n} has more than u32::MAX points"));
    // Each dimension adds two neighbours to every point except its two faces.
    let off_diagonal = if n == 0 { 0 } else { 2 * dims as usize * (n - 1) * (rows / n) };
    let nnz = rows + off_diagonal;
    assert!(nnz <= u32::MAX as usize, "the {dims}-D Laplacian of side {n} has {nnz} entries, more than u32::MAX");
    // strides[d] of dimension d, largest first so that the row's columns come out increasing.
    let strides: Vec<usize> = (0..dims).rev().map(|d| n.pow(d)).collect();
    let mut row_offsets = Vec::with_capacity(rows + 1);
    let mut col_indices = Vec::with_capacity(nnz);
    let mut values = Vec::with_capacity(nnz);
    row_offsets.push(0u32);
    for r in 0..rows {
        for &s in &strides {
            if (r / s) % n > 0 {
                col_indices.push((r - s) as u32);
                values.push(-1.0);
            }
        }
        col_indices.push(r as u32);
        values.push(2.0 * dims as f32);
        for &s in strides.iter().rev() {
            if (r / s) % n + 1 < n {
                col_indices.push((r + s) as u32);
                values.push(-1.0);
            }
        }
        row_offsets.push(col_indices.len() as u32);
    }
    CsrMatrix::from_parts_unchecked(rows, rows, row_offsets, col_indices, values)
}

/// A 2-D convection–diffusion operator on an `n × n` grid with Dirichlet boundary: the
/// 5-point Laplacian plus first-order upwind convection with velocity (`wind`, `wind`) in
/// grid units (h·w): row `i*n + j` has `4 + 2·wind` on the diagonal, `−1 − wind` for its
/// west and south neighbours and `−1` for east and north. Non-symmetric for `wind > 0`,
/// an M-matrix (diagonally dominant) for `wind ≥ 0`: the BiCGSTAB and GMRES case.
///
/// # Panics
/// If `n²` rows or the entries do not fit u32, or `wind` is negative or not finite.
pub fn convection_diffusion_2d(n: usize, wind: f32) -> CsrMatrix<f32> {
    assert!(wind.is_finite() && wind >= 0.0, "wind {wind} must be finite and ≥ 0");
    let (rows, _, offsets, cols, mut values) = laplacian_2d(n).into_parts();
    for r in 0..rows {
        for p in offsets[r] as usize..offsets[r + 1] as usize {
            let c = cols[p] as usize;
            if c == r {
                values[p] += 2.0 * wind;
            } else if c + 1 == r || c + n == r {
                // west (j − 1) and south (i − 1) neighbours: upwind for a positive velocity
                values[p] -= wind;
            }
        }
    }
    CsrMatrix::from_parts_unchecked(rows, rows, offsets, cols, values)
}

/// An R-MAT graph (Chakrabarti, Zhan & Faloutsos 2004), the Graph500 generator without its
/// vertex permutation: `2^scale` rows and columns, `edge_factor · 2^scale` edges drawn by
/// descending `scale` times into one quadrant of the adjacency matrix with probabilities
/// `a` (top left), `b` (top right), `c` (bottom left) and `1 - a - b - c`; repeated edges are
/// merged, so nnz is somewhat below the edges drawn. With Graph500's (0.57, 0.19, 0.19) row
/// lengths follow a power law and the low rows are the heaviest: the irregular case.
/// Quadrant choices use 16-bit probabilities.
///
/// # Panics
/// If `scale > 31`, the edge count does not fit u32, or the probabilities are negative or sum
/// to more than 1.
pub fn rmat(scale: u32, edge_factor: usize, a: f64, b: f64, c: f64, seed: u64) -> CsrMatrix<f32> {
    assert!(scale <= 31, "rmat scale {scale} > 31: 2^scale rows do not fit u32");
    let n = 1usize << scale;
    let edges = edge_factor.checked_mul(n).filter(|&e| e <= u32::MAX as usize);
    let edges = edges.unwrap_or_else(|| panic!("rmat: {edge_factor} x 2^{scale} edges do not fit u32"));
    assert!(
        a >= 0.0 && b >= 0.0 && c >= 0.0 && a + b + c <= 1.0,
        "rmat probabilities must be non-negative with a + b + c <= 1, got {a}, {b}, {c}"
    );
    let threshold = |p: f64| (p * 65536.0).round() as u64;
    let (ta, tab, tabc) = (threshold(a), threshold(a + b), threshold(a + b + c));
    let mut rng = Rng::new(seed);
    // Each edge becomes the key `row << scale | col`, so sorting keys sorts by (row, col).
    let mut keys = Vec::with_capacity(edges);
    for _ in 0..edges {
        let (mut row, mut col) = (0u64, 0u64);
        let mut bits = 0u64;
        for level in 0..scale {
            if level % 4 == 0 {
                bits = rng.next_u64();
            }
            let u = bits & 0xFFFF;
            bits >>= 16;
            // Quadrants a | b over c | d: the row bit is set in c and d, the column bit in b and d.
            row = row << 1 | u64::from(u >= tab);
            col = col << 1 | u64::from((u >= ta && u < tab) || u >= tabc);
        }
        keys.push(row << scale | col);
    }
    radix_sort(&mut keys, 2 * scale);
    keys.dedup();
    let mask = (1u64 << scale) - 1;
    let mut row_offsets = vec![0u32; n + 1];
    for &k in &keys {
        row_offsets[(k >> scale) as usize + 1] += 1;
    }
    for i in 0..n {
        row_offsets[i + 1] += row_offsets[i];
    }
    let col_indices = keys.iter().map(|&k| (k & mask) as u32).collect();
    let values = (0..keys.len()).map(|_| rng.next_f32()).collect();
    CsrMatrix::from_parts_unchecked(n, n, row_offsets, col_indices, values)
}

/// LSD radix sort of keys below `2^bits`, 16 bits per pass: O(passes · n) where a comparison
/// sort of R-MAT's tens of millions of keys would dominate generation time.
fn radix_sort(keys: &mut Vec<u64>, bits: u32) {
    let mut buffer = vec![0u64; keys.len()];
    for shift in (0..bits).step_by(16) {
        let mut counts = vec![0usize; 1 << 16];
        for &k in keys.iter() {
            counts[(k >> shift) as usize & 0xFFFF] += 1;
        }
        let mut sum = 0;
        for c in &mut counts {
            (*c, sum) = (sum, sum + *c);
        }
        for &k in keys.iter() {
            let digit = (k >> shift) as usize & 0xFFFF;
            buffer[counts[digit]] = k;
            counts[digit] += 1;
        }
        std::mem::swap(keys, &mut buffer);
    }
}

/// `rows × cols` with exactly `per_row` distinct, uniformly random columns in every row: a
/// perfectly balanced load with no locality in `x`.
///
/// # Panics
/// If `per_row > cols`, or `rows`, `cols` or `rows · per_row` do not fit u32.
pub fn uniform_random(rows: usize, cols: usize, per_row: usize, seed: u64) -> CsrMatrix<f32> {
    assert_dims("uniform_random", rows, cols);
    assert!(per_row <= cols, "uniform_random: {per_row} distinct columns per row out of {cols}");
    let nnz = rows.checked_mul(per_row).filter(|&n| n <= u32::MAX as usize);
    let nnz = nnz.unwrap_or_else(|| panic!("uniform_random: {rows} x {per_row} entries do not fit u32"));
    let mut rng = Rng::new(seed);
    let mut row_offsets = Vec::with_capacity(rows + 1);
    let mut col_indices = Vec::with_capacity(nnz);
    row_offsets.push(0u32);
    for _ in 0..rows {
        sample_columns(&mut rng, cols, per_row, &mut col_indices);
        row_offsets.push(col_indices.len() as u32);
    }
    let values = (0..nnz).map(|_| rng.next_f32()).collect();
    CsrMatrix::from_parts_unchecked(rows, cols, row_offsets, col_indices, values)
}

/// A square `rows × rows` matrix of extreme row-length imbalance: the middle row
/// (`rows / 2`, so that kernels special-casing row 0 are caught) holds `dense_len` random
/// columns; every other row is empty with probability 1/2, else holds 0 to 8 random columns.
/// Tests load balancing and empty-row handling.
///
/// # Panics
/// If `dense_len > rows` or `rows` does not fit u32.
pub fn dense_row_mix(rows: usize, dense_len: usize, seed: u64) -> CsrMatrix<f32> {
    assert_dims("dense_row_mix", rows, rows);
    assert!(dense_len <= rows, "dense_row_mix: a dense row of {dense_len} in a {rows} x {rows} matrix");
    let mut rng = Rng::new(seed);
    let mut row_offsets = Vec::with_capacity(rows + 1);
    let mut col_indices = Vec::new();
    row_offsets.push(0u32);
    for i in 0..rows {
        let len = if i == rows / 2 {
            dense_len
        } else if rng.below(2) == 0 {
            0
        } else {
            (rng.below(9) as usize).min(rows)
        };
        sample_columns(&mut rng, rows, len, &mut col_indices);
        row_offsets.push(col_indices.len() as u32);
    }
    let values = (0..col_indices.len()).map(|_| rng.next_f32()).collect();
    CsrMatrix::from_parts_unchecked(rows, rows, row_offsets, col_indices, values)
}

/// `rows × cols` where each entry is present independently with probability `density`
/// (row lengths are binomial, ≈ `density · cols` on average). Drawn by geometric skips, so
/// time is O(rows + nnz), not O(rows · cols).
///
/// # Panics
/// If `density` is not in [0, 1], or the matrix does not fit u32.
pub fn random(rows: usize, cols: usize, density: f64, seed: u64) -> CsrMatrix<f32> {
    assert!((0.0..=1.0).contains(&density), "random: density {density} is not in [0, 1]");
    assert_dims("random", rows, cols);
    let mut rng = Rng::new(seed);
    let log_miss = (-density).ln_1p(); // ln(1 - density) < 0; -inf when density == 1
    let mut row_offsets = Vec::with_capacity(rows + 1);
    let mut col_indices = Vec::new();
    row_offsets.push(0u32);
    for _ in 0..rows {
        if density > 0.0 {
            let mut c = 0usize;
            loop {
                // Columns skipped before the next hit: Geometric(density), from u in (0, 1].
                let u = 1.0 - rng.next_f64();
                let skip = (u.ln() / log_miss).floor();
                if skip >= (cols - c) as f64 {
                    break;
                }
                c += skip as usize;
                col_indices.push(c as u32);
                c += 1;
            }
        }
        assert!(col_indices.len() <= u32::MAX as usize, "random: more than u32::MAX entries");
        row_offsets.push(col_indices.len() as u32);
    }
    let values = (0..col_indices.len()).map(|_| rng.next_f32()).collect();
    CsrMatrix::from_parts_unchecked(rows, cols, row_offsets, col_indices, values)
}

/// `entries` uniformly random positions, with repetition and in no order, as an assembly loop
/// produces them: the input for COO conversions and the COO kernel (after
/// [`CooMatrix::sorted_by_row`]).
///
/// # Panics
/// If `entries > 0` with no rows or no columns, or a size does not fit u32.
pub fn random_coo(rows: usize, cols: usize, entries: usize, seed: u64) -> CooMatrix<f32> {
    assert_dims("random_coo", rows, cols);
    assert!(entries == 0 || (rows > 0 && cols > 0), "random_coo: {entries} entries in a {rows} x {cols} matrix");
    let mut rng = Rng::new(seed);
    let mut row_indices = Vec::with_capacity(entries);
    let mut col_indices = Vec::with_capacity(entries);
    let mut values = Vec::with_capacity(entries);
    for _ in 0..entries {
        row_indices.push(rng.below(rows as u64) as u32);
        col_indices.push(rng.below(cols as u64) as u32);
        values.push(rng.next_f32());
    }
    CooMatrix::try_new(rows, cols, row_indices, col_indices, values).unwrap_or_else(|e| panic!("random_coo: {e}"))
}

/// Element `index` of the vector that [`blas1::fill_hashed`](crate::ops::blas1::fill_hashed)
/// makes on the device with `seed` (α = 1): a value in [−½, ½) with 24 random bits, exact in
/// f32 and f64, so the host's copy equals the device's bit for bit.
pub fn hashed_value(index: u32, seed: u32) -> f64 {
    // Wellons' lowbias32, as `shaders/vector_scale.wgsl` computes it.
    fn mix32(mut x: u32) -> u32 {
        x ^= x >> 16;
        x = x.wrapping_mul(0x7feb_352d);
        x ^= x >> 15;
        x = x.wrapping_mul(0x846c_a68b);
        x ^ (x >> 16)
    }
    let h = mix32(index.wrapping_add(mix32(seed))) >> 8;
    h as f64 / 16_777_216.0 - 0.5
}

/// `n` values from [`Rng::next_f32`]: in (-1, 1), never zero.
pub fn random_vector(n: usize, seed: u64) -> Vec<f32> {
    let mut rng = Rng::new(seed);
    (0..n).map(|_| rng.next_f32()).collect()
}

/// Appends `k` distinct columns of `0..n`, sorted, to `out`; no allocation per call.
fn sample_columns(rng: &mut Rng, n: usize, k: usize, out: &mut Vec<u32>) {
    if k * 4 >= n {
        // Dense: selection sampling (Knuth's algorithm S) takes each column with probability
        // needed / remaining, in O(n) = O(k).
        let mut needed = k as u64;
        for c in 0..n {
            if needed == 0 {
                break;
            }
            if rng.below((n - c) as u64) < needed {
                out.push(c as u32);
                needed -= 1;
            }
        }
        return;
    }
    // Sparse: draw the missing count, sort, drop repeats; repeats are rare since k < n / 4.
    let start = out.len();
    while out.len() - start < k {
        for _ in out.len() - start..k {
            out.push(rng.below(n as u64) as u32);
        }
        out[start..].sort_unstable();
        let mut kept = start;
        for r in start..out.len() {
            if kept == start || out[r] != out[kept - 1] {
                out[kept] = out[r];
                kept += 1;
            }
        }
        out.truncate(kept);
    }
}

/// Checked before anything is allocated from the sizes.
fn assert_dims(generator: &str, rows: usize, cols: usize) {
    assert!(rows <= u32::MAX as usize && cols <= u32::MAX as usize, "{generator}: {rows} x {cols} does not fit u32");
}

/// The lower (or `upper`) triangle of square `a` made solvable: its strictly lower (upper)
/// entries, and on the diagonal `1 + Σ|a_ij|` over them (strictly diagonally dominant, so
/// substitution is well conditioned). The triangular-solve bench and tests use it to turn any
/// matrix into a triangle to solve; the peer script builds the same matrix.
///
/// # Panics
/// If `a` is not square.
pub fn solvable_triangle(a: &CsrMatrix<f32>, upper: bool) -> CsrMatrix<f32> {
    assert_eq!(a.rows(), a.cols(), "solvable_triangle: a is {} x {}", a.rows(), a.cols());
    let n = a.rows();
    let (mut offsets, mut cols, mut vals) = (Vec::with_capacity(n + 1), Vec::new(), Vec::new());
    offsets.push(0u32);
    for i in 0..n {
        let (row_cols, row_vals) = a.row(i);
        let kept: Vec<(u32, f32)> = row_cols
            .iter()
            .zip(row_vals)
            .filter(|(&j, _)| if upper { j as usize > i } else { (j as usize) < i })
            .map(|(&j, &v)| (j, v))
            .collect();
        let pivot = 1.0 + kept.iter().map(|(_, v)| v.abs() as f64).sum::<f64>();
        let diagonal = std::iter::once((i as u32, pivot as f32));
        let entries: Vec<(u32, f32)> =
            if upper { diagonal.chain(kept).collect() } else { kept.into_iter().chain(diagonal).collect() };
        for (j, v) in entries {
            cols.push(j);
            vals.push(v);
        }
        offsets.push(cols.len() as u32);
    }
    CsrMatrix::try_from_csr_data(n, n, offsets, cols, vals).expect("a triangle of a valid matrix is valid")
}
