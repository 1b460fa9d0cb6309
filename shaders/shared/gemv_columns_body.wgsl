// y = α·Sᵀ·x + β·y for a row-major block S of `rows` rows of `units` units (a unit is a
// vec4 or one element: the including file aliases `Unit` and `Units`, the accumulator, and
// defines `unit_get`). Seed 001's mapping turned to row-major data: a lane owns a unit of
// columns and walks down them, so the lanes of a row read it coalesced and x[i] is one value
// for all of them (a broadcast from cache). A workgroup holds COLS columns × (WG_SIZE / COLS)
// row lanes and takes one strip of `strip` rows; its row lanes' sums meet in workgroup
// memory, added in row-lane order. With no rows, strip 0 still writes β·y. With PARTIAL a strip's sums go to
// partials[strip_index * columns + column] unscaled; with SUM x is all ones, which turns
// this kernel into the fixed-order adder of those partials (and of the rows kernel's).
#import entry
#import real
#import spmv_store

struct Params {
    rows: u32,
    units: u32,
    col_blocks: u32,
    strip: u32,
    strips: u32,
    scaling: Scaling,
}

var<immediate> params: Params;
@group(0) @binding(0) var<storage, read> a: array<Unit>;
@group(0) @binding(1) var<storage, read> x: array<Real>;
@group(0) @binding(2) var<storage, read> alpha_dev: array<Real>;
@group(0) @binding(3) var<storage, read> beta_dev: array<Real>;
@group(0) @binding(4) var<storage, read_write> y: array<Real>;
@group(0) @binding(5) var<storage, read_write> partials: array<Real>;

override WG_SIZE: u32 = 256u;
// Unit columns per workgroup: a power of two dividing WG_SIZE.
override COLS: u32 = 256u;

var<workgroup> column_sums: array<Units, WG_SIZE>;

fn x_at(i: u32) -> Acc {
#ifdef SUM
    return Acc(1.0);
#else
    return Acc(x[i]);
#endif
}

fn run(workgroup: u32, lane: Lane) {
    let row_lanes = WG_SIZE / COLS;
    let col = (workgroup % params.col_blocks) * COLS + lane.index % COLS;
    let strip = workgroup / params.col_blocks;
    let row_lane = lane.index / COLS;
    let start = min(strip * params.strip, params.rows);
    let end = min(start + params.strip, params.rows);
    var even = Units(0.0);
    var odd = Units(0.0);
    if col < params.units {
        var i = start + row_lane;
        for (; i + row_lanes < end; i += 2u * row_lanes) {
            even += Units(a[i * params.units + col]) * x_at(i);
            odd += Units(a[(i + row_lanes) * params.units + col]) * x_at(i + row_lanes);
        }
        if i < end {
            even += Units(a[i * params.units + col]) * x_at(i);
        }
    }
    column_sums[lane.index] = even + odd;
    workgroupBarrier();
    // Past the strips: workgroups a folded grid adds.
    if row_lane != 0u || col >= params.units || strip >= params.strips {
        return;
    }
    var total = column_sums[lane.index];
    for (var r = 1u; r < row_lanes; r++) {
        total += column_sums[r * COLS + lane.index];
    }
    for (var k = 0u; k < UNIT_LEN; k++) {
        let column = col * UNIT_LEN + k;
        let sum = unit_get(total, k);
#ifdef PARTIAL
        partials[strip * params.units * UNIT_LEN + column] = Real(sum);
#else
        store_y(column, sum);
#endif
    }
}
