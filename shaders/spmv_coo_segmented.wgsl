// COO SpMV by segmented reduction (seed 000). Nonzeros, sorted by row, are cut into
// intervals of equal length, one per group of lanes (a subgroup, or the workgroup without
// subgroups). A group walks its interval group-size entries at a time, reduces the products
// by row with a segmented scan, adds each row that ends inside the step into y, and carries
// the last row's partial sum into the next step. The interval's final carry goes to
// `carries`, which spmv_carry_fixup adds in. No atomics: a row is written directly by at
// most one interval, the one where it ends before the interval does. Sums are unscaled and
// added into `sums` (zeros, or HYB's ELL part); an axpby pass applies alpha and beta.
#import real
#import group
#import spmv_sums
#import carry

struct Params {
    nnz: u32,
    intervals: u32,
    // A multiple of the largest group size.
    interval_len: u32,
}

var<immediate> params: Params;
@group(0) @binding(0) var<storage, read> row_indices: array<u32>;
@group(0) @binding(1) var<storage, read> col_indices: array<u32>;
@group(0) @binding(2) var<storage, read> values: array<Real>;
@group(0) @binding(3) var<storage, read> x: array<Real>;
@group(0) @binding(4) var<storage, read_write> sums: array<Acc>;
@group(0) @binding(5) var<storage, read_write> carries: array<Carry>;

override WG_SIZE: u32 = 256u;

fn run(workgroup: u32, lane: Lane) {
    let g = group_of(lane);
    let tasks = group_tasks(workgroup, g, params.intervals);
    for (var interval = tasks.first; interval < tasks.end; interval += tasks.stride) {
        walk_interval(g, interval);
    }
}

struct Entry {
    row: u32,
    product: Acc,
}

fn load_entry(e: u32, stop: u32) -> Entry {
    if e < stop {
        return Entry(row_indices[e], Acc(values[e]) * Acc(x[col_indices[e]]));
    }
    return Entry(NO_KEY, Acc(0.0));
}

fn walk_interval(g: Group, interval: u32) {
    let start = interval * params.interval_len;
    let stop = min(start + params.interval_len, params.nnz);
    var carry_row = NO_KEY;
    var carry = Acc(0.0);
    var entry = load_entry(start + g.lane, stop);
    for (var base = start; base < stop; base += g.size) {
        // The next step's loads are in flight while this step reduces.
        let next = load_entry(base + g.size + g.lane, stop);
        var value = entry.product;
        if g.lane == 0u && carry_row != NO_KEY {
            if entry.row == carry_row {
                value += carry;
            } else {
                add_sum(carry_row, carry);
            }
        }
        let scan = group_scan(g, entry.row, value);
        // A lane whose right neighbour starts another row owns a finished row sum; the
        // last lane's row goes on as the carry.
        if entry.row != NO_KEY && scan.next_key != entry.row && g.lane + 1u < g.size {
            add_sum(entry.row, scan.sum);
        }
        carry_row = scan.last_key;
        carry = scan.last_sum;
        entry = next;
    }
    if g.lane == 0u {
        carries[interval] = Carry(carry_row, carry);
    }
}
