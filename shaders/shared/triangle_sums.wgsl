// The sums over a row's strict lower and upper entries of the diagonal form of ILU(0)/IC(0)
// (diagonal_sweep, cg_ic0_lower, cg_ic0_upper): Σ a_rk·neighbour(k), read from A's own
// storage (shared/split_rows.wgsl), in predicated batches of BATCH slots (all of a batch's
// loads in flight together). The includer defines `neighbour(col) -> Acc` and
// params.lower_width, params.upper_width (the most strict lower and upper entries of any
// row; 0 reads none).
#import split_rows

// ELL slots per load batch (at most MAX_BATCH): the host picks it from the triangles' widths.
override BATCH: u32 = 8u;
const MAX_BATCH: u32 = 8u;

#ifdef CSR
// Σ over the row's strict lower (upper) entries of a_rk·neighbour(k), in predicated batches
// walking in from the row's first (last) entry until one on the diagonal's side is met.
fn lower_sum(row: u32) -> Acc {
    let size = clamp(BATCH, 1u, MAX_BATCH);
    let end = select(row_offsets[row], row_offsets[row + 1u], params.lower_width != 0u);
    var sum = Acc(0.0);
    for (var base = row_offsets[row]; base < end; base += size) {
        var terms: array<Acc, MAX_BATCH>;
        var used: array<bool, MAX_BATCH>;
        var done = false;
        for (var k = 0u; k < size; k++) {
            let p = min(base + k, end - 1u);
            let col = col_indices[p];
            used[k] = base + k < end && col < row;
            done = done || col >= row;
            terms[k] = Acc(values[p]) * neighbour(select(row, col, used[k]));
        }
        for (var k = 0u; k < size; k++) {
            sum = select(sum, sum + terms[k], used[k]);
        }
        if done {
            break;
        }
    }
    return sum;
}

fn upper_sum(row: u32) -> Acc {
    let size = clamp(BATCH, 1u, MAX_BATCH);
    let start = row_offsets[row];
    var sum = Acc(0.0);
    for (var top = select(start, row_offsets[row + 1u], params.upper_width != 0u); top > start; top -= min(size, top - start)) {
        var terms: array<Acc, MAX_BATCH>;
        var used: array<bool, MAX_BATCH>;
        var done = false;
        for (var k = 0u; k < size; k++) {
            let p = top - 1u - min(k, top - 1u - start);
            let col = col_indices[p];
            used[k] = k < top - start && col > row;
            done = done || col <= row;
            terms[k] = Acc(values[p]) * neighbour(select(row, col, used[k]));
        }
        for (var k = 0u; k < size; k++) {
            sum = select(sum, sum + terms[k], used[k]);
        }
        if done {
            break;
        }
    }
    return sum;
}
#else
// The lower entries are a row's first and no row has more than lower_width of them: slots
// 0 … lower_width − 1 in predicated batches (all of a batch's loads in flight together), those
// left of the diagonal added.
fn lower_sum(row: u32) -> Acc {
    let size = clamp(BATCH, 1u, MAX_BATCH);
    let width = min(params.lower_width, params.width);
    var sum = Acc(0.0);
    for (var base = 0u; base < width; base += size) {
        var terms: array<Acc, MAX_BATCH>;
        var used: array<bool, MAX_BATCH>;
        for (var k = 0u; k < size; k++) {
            let slot = slot_column(min(base + k, width - 1u), row);
            used[k] = base + k < width && slot.real && slot.col < row;
            terms[k] = Acc(values[slot.value]) * neighbour(select(row, slot.col, used[k]));
        }
        for (var k = 0u; k < size; k++) {
            sum = select(sum, sum + terms[k], used[k]);
        }
    }
    return sum;
}

// The upper entries are a row's last before its padding: batches from the last slot down
// until upper_width of them are found (every row of a full-width row's kind: one batch) or a
// slot on or left of the diagonal is met.
fn upper_sum(row: u32) -> Acc {
    let size = clamp(BATCH, 1u, MAX_BATCH);
    var sum = Acc(0.0);
    var found = 0u;
    var top = params.width;
    loop {
        if top == 0u || found >= params.upper_width {
            break;
        }
        var terms: array<Acc, MAX_BATCH>;
        var used: array<bool, MAX_BATCH>;
        var done = false;
        for (var k = 0u; k < size; k++) {
            let valid = k < top;
            let slot = slot_column(top - 1u - min(k, top - 1u), row);
            used[k] = valid && slot.real && slot.col > row;
            done = done || (valid && slot.real && slot.col <= row);
            terms[k] = Acc(values[slot.value]) * neighbour(select(row, slot.col, used[k]));
        }
        for (var k = 0u; k < size; k++) {
            sum = select(sum, sum + terms[k], used[k]);
            found += u32(used[k]);
        }
        top -= min(size, top);
        if done {
            break;
        }
    }
    return sum;
}
#endif
