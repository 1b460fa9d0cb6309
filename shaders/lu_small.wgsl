// Batched LU with partial pivoting, P·A = L·U (LAPACK getrf): one workgroup per n × n matrix
// (seed 004's scheme), the matrix copied into workgroup memory, factored column by column with
// a barrier after each phase, and written back: unit-lower L and U packed in place,
// pivots[k] = the row swapped with row k at step k (0-based), info = 1 + the first column
// whose pivot is exactly zero (0 when none), as LAPACK reports it; such a column is not
// divided by and the factorization goes on. Ties in the pivot search go to the lowest row
// (LAPACK's i?amax). With NO_PIVOT rows are never swapped and updates whose l_ik or u_kj is
// zero are skipped (the bitmap LU of seed 004). With OUT_OF_PLACE the matrix is read from
// `source` and the factors written to `a`, which is then not read.
#import entry
#import real

#import lu_interface

override WG_SIZE: u32 = 256u;
// n·n, set by the host: the matrix in workgroup memory.
override TILE: u32 = 1024u;

var<workgroup> tile: array<Real, TILE>;
var<workgroup> pivot_row: u32;

// The row of the largest |a[i, k]| for i ≥ k, the first such row on ties; k where every
// candidate is NaN. With subgroups the first subgroup searches (max, then the least row that
// has it); without, lane 0 scans.
fn find_pivot(lane: Lane, k: u32) {
    let n = params.n;
#ifdef SUBGROUP
    if lane.index < lane.sg_size {
        var best = Real(-1.0);
        var row = k;
        for (var i = k + lane.sg_lane; i < n; i += lane.sg_size) {
            let v = abs(tile[i * n + k]);
            if v > best {
                best = v;
                row = i;
            }
        }
        let top = subgroupMax(best);
        var mine = 0xffffffffu;
        if best == top {
            mine = row;
        }
        let first = subgroupMin(mine);
        if lane.index == 0u {
            pivot_row = first;
        }
    }
#else
    if lane.index == 0u {
        var best = Real(-1.0);
        var row = k;
        for (var i = k; i < n; i++) {
            let v = abs(tile[i * n + k]);
            if v > best {
                best = v;
                row = i;
            }
        }
        pivot_row = row;
    }
#endif
}

fn run(workgroup: u32, lane: Lane) {
    if workgroup >= params.batch {
        return;
    }
    let n = params.n;
    let base = workgroup * n * n;
    for (var e = lane.index; e < n * n; e += WG_SIZE) {
#ifdef OUT_OF_PLACE
        tile[e] = source[base + e];
#else
        tile[e] = a[base + e];
#endif
    }
    workgroupBarrier();
    // Column lanes: n rounded up to a power of two, at most the workgroup.
    let col_lanes = min(1u << (32u - countLeadingZeros(max(n, 2u) - 1u)), WG_SIZE);
    let row_lanes = WG_SIZE / col_lanes;
    let col_lane = lane.index % col_lanes;
    let row_lane = lane.index / col_lanes;
    var first_zero = 0u;
    for (var k = 0u; k < n; k++) {
#ifdef NO_PIVOT
        let p = k;
#else
        find_pivot(lane, k);
        let p = workgroupUniformLoad(&pivot_row);
        if p != k {
            for (var j = lane.index; j < n; j += WG_SIZE) {
                let t = tile[k * n + j];
                tile[k * n + j] = tile[p * n + j];
                tile[p * n + j] = t;
            }
        }
        workgroupBarrier();
#endif
        if lane.index == 0u {
            pivots[workgroup * n + k] = p;
        }
        let pivot = tile[k * n + k];
        if pivot == 0.0 {
            // U(k, k) = 0: reported, not divided by; the column of L stays as it is.
            if first_zero == 0u {
                first_zero = k + 1u;
            }
            continue;
        }
        let inverse = 1.0 / pivot;
        for (var i = k + 1u + lane.index; i < n; i += WG_SIZE) {
            tile[i * n + k] *= inverse;
        }
        workgroupBarrier();
        // The trailing update on a grid of row lanes × column lanes (no index division).
        for (var i = k + 1u + row_lane; i < n; i += row_lanes) {
            let l = tile[i * n + k];
#ifdef NO_PIVOT
            if l == 0.0 {
                continue;
            }
#endif
            for (var j = k + 1u + col_lane; j < n; j += col_lanes) {
                let u = tile[k * n + j];
#ifdef NO_PIVOT
                if u == 0.0 {
                    continue;
                }
#endif
                tile[i * n + j] = fma(-l, u, tile[i * n + j]);
            }
        }
        workgroupBarrier();
    }
    for (var e = lane.index; e < n * n; e += WG_SIZE) {
        a[base + e] = tile[e];
    }
    if lane.index == 0u {
        info[workgroup] = first_zero;
    }
}
