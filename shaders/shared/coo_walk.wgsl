// The segmented reduction of a COO matrix (seed 000), in one dispatch, for spmv_coo_segmented
// and HYB's tail (spmv_hyb). Entries, sorted by row, are cut into intervals of equal length,
// one per group of lanes (a subgroup, or the workgroup without subgroups). A group walks its
// interval group-size entries at a time, reduces the products by row with a segmented scan,
// and carries the last row's partial sum into the next step. A row that lies within one
// interval is stored there (y = α·row_total + β·y).
//
// A row that crosses interval boundaries:
// - short (ends in interval p, began in the last params.window entries of interval p-1, as
//   a stencil's rows do): interval p walks that window first, as one more step that stores
//   none of the window's other rows, so the row is whole in its scan; interval p-1 drops
//   its carry. Nothing is published, nobody waits on anything.
// - otherwise it spans intervals first..end (the coo_intervals analysis): intervals
//   first..end-1 publish their partial sum of it (their carry), interval `end` its head,
//   and each counts an arrival at interval end's counter (ready_sums.wgsl). The group whose
//   arrival completes the row adds the pieces in a fixed order and stores y, recomputing any
//   piece it cannot see yet by walking that interval again.
// No float atomics: deterministic. Seed 000's fix-up of the carries is that completion.
//
// The including shader provides the params fields coo_nnz, intervals, interval_len, window
// (a multiple of the largest group size, at most interval_len) and recompute (1: completing
// groups recompute every piece), the read-only bindings coo_rows, coo_cols, coo_values, x
// and bounds (the analysis), scratch (counter per interval, then two sets of 2 × intervals
// sums: interval p's carry in slot p, its head in slot intervals + p), what spmv_store
// needs, and `fn row_total(row: u32, sum: Acc) -> Acc`: what α multiplies.
#import group
#import ready_sums
#import spmv_store


// Interval p's rows at its ends.
struct IntervalShape {
    // The first interval of the first entry's row, and the last interval of the last one's.
    first: u32,
    end: u32,
    first_row: u32,
    last_row: u32,
    // The first row began in an earlier interval and ends in this one.
    has_head: bool,
    // ... and began in the previous interval's window: this interval walks the window too.
    short_head: bool,
    // The last row goes on into a later interval; it began in interval carry_first.
    has_carry: bool,
    // ... ends in the next interval and began in this one's window: the next one adds it.
    short_carry: bool,
    carry_first: u32,
}

// Whether `row`, which has entries on both sides of boundary entry b, began in the window.
fn starts_in_window(b: u32, row: u32) -> bool {
    return b == params.window || coo_rows[b - params.window - 1u] != row;
}

fn interval_shape(p: u32) -> IntervalShape {
    let b = bounds[p];
    let start = p * params.interval_len;
    let stop = min(start + params.interval_len, params.coo_nnz);
    let first_row = coo_rows[start];
    let last_row = coo_rows[stop - 1u];
    let has_head = b.x < p && (first_row != last_row || b.y == p);
    let short_head = has_head && starts_in_window(start, first_row);
    let has_carry = b.y > p;
    let short_carry = has_carry && b.y == p + 1u && starts_in_window(stop, last_row);
    let carry_first = select(p, b.x, first_row == last_row);
    return IntervalShape(b.x, b.y, first_row, last_row, has_head, short_head, has_carry, short_carry, carry_first);
}

// The intervals of workgroup `workgroup` (one of the first interval_workgroups), a group's
// at a time.
fn interval_tasks(workgroup: u32, lane: Lane) {
    let g = group_of(lane);
    let tasks = group_tasks(workgroup, g, params.intervals);
    for (var p = tasks.first; p < tasks.end; p += tasks.stride) {
        interval_task(g, p);
    }
}

// Walks interval p, publishes its pieces, and completes the rows its arrivals complete: at
// most two (its head's, then its carry's), each by adding the row's pieces in a fixed order
// (lane-strided, then the group's reduction) and storing y, recomputing a piece it cannot
// see yet by walking that interval again. Every walk, the interval's own and the
// recomputations, goes through the one call of walk_interval below: a second call site is a
// second inlined copy of the walk, whose registers doubled the kernel's time on the H100.
fn interval_task(g: Group, p: u32) {
    let own = interval_shape(p);
    let publishes_head = own.has_head && !own.short_head;
    let publishes_carry = own.has_carry && !own.short_carry;
    let parities = piece_parities(g.lane == 0u, p, publishes_head, own.end, publishes_carry);
    var walking = p;
    var shape = own;
    var storing = true;
    // The row being completed, the one after it, and how many are left.
    var row = RowToComplete(0u, 0u, 0u, 0u);
    var after = RowToComplete(0u, 0u, 0u, 0u);
    var rows_left = 0u;
    var base = 0u;
    var piece = Piece(0u, Acc(0.0), NO_PIECE);
    var sum = Acc(0.0);
    loop {
        let ends = walk_interval(g, walking, shape, storing);
        if storing {
            storing = false;
            var head_completes = 0u;
            var carry_completes = 0u;
            if g.lane == 0u {
                if publishes_head {
                    let expected = p - own.first + 1u;
                    head_completes = publish_and_arrive(p, parities.x, params.intervals + p, ends.head, expected);
                }
                if publishes_carry {
                    let expected = own.end - own.carry_first + 1u;
                    carry_completes = publish_and_arrive(own.end, parities.y, p, ends.carry, expected);
                }
            }
            head_completes = group_first(g, head_completes);
            carry_completes = group_first(g, carry_completes);
            let head_row = RowToComplete(own.first_row, own.first, p, head_completes);
            let carry_row = RowToComplete(own.last_row, own.carry_first, own.end, carry_completes);
            if head_completes != 0u {
                row = head_row;
                after = carry_row;
                rows_left = select(1u, 2u, carry_completes != 0u);
            } else if carry_completes != 0u {
                row = carry_row;
                rows_left = 1u;
            } else {
                return;
            }
            base = row.first;
            piece = read_piece(g.lane, row, base, params.intervals, params.recompute != 0u);
        } else if piece.q == walking {
            piece.value = select(ends.carry, ends.head, piece.q == row.end);
            piece.missing = NO_PIECE;
        }
        // Next: a piece to recompute (back to the walk), else the next pieces, the next row,
        // or the end.
        loop {
            let next = group_min(g, piece.missing);
            if next != NO_PIECE {
                walking = next;
                shape = interval_shape(next);
                break;
            }
            if piece.q <= row.end {
                sum += piece.value;
            }
            base += g.size;
            if base <= row.end {
                piece = read_piece(g.lane, row, base, params.intervals, params.recompute != 0u);
                continue;
            }
            let total = group_sum(g, sum);
            if g.lane == 0u {
                store_y(row.row, row_total(row.row, total));
                reset_counter(row.end, row.completes);
            }
            rows_left -= 1u;
            if rows_left == 0u {
                return;
            }
            row = after;
            base = row.first;
            sum = Acc(0.0);
            piece = read_piece(g.lane, row, base, params.intervals, params.recompute != 0u);
        }
    }
}

struct Entry {
    row: u32,
    product: Acc,
}

fn load_entry(e: u32, stop: u32) -> Entry {
    if e < stop {
        return Entry(coo_rows[e], Acc(coo_values[e]) * Acc(x[coo_cols[e]]));
    }
    return Entry(NO_KEY, Acc(0.0));
}

struct IntervalEnds {
    // The sum of the head row's entries here (when the interval has a head).
    head: Acc,
    // The sum of the last row's entries here (when the interval has a carry).
    carry: Acc,
}

// A row the walk finished: a published head is kept, any other row of the interval (a short
// head included, whole) stored with `store`; a row of the window before the head belongs to
// the previous interval. Returns whether it was the kept head.
fn finish_row(row: u32, sum: Acc, shape: IntervalShape, store: bool) -> bool {
    if shape.has_head && !shape.short_head && row == shape.first_row {
        return true;
    }
    if store && row >= shape.first_row {
        store_y(row, row_total(row, sum));
    }
    return false;
}

// Sums interval p's rows, from the window before it when its head is short; with `store`,
// stores y for the rows that lie within it (the short head too). The same arithmetic
// whether it stores or not. Each lane finishes at most one row a step, at one call of
// finish_row (store_y and row_total inlined once): the last lane's row is finished in its
// step when the next step starts another row.
fn walk_interval(g: Group, p: u32, shape: IntervalShape, store: bool) -> IntervalEnds {
    let start = p * params.interval_len;
    let stop = min(start + params.interval_len, params.coo_nnz);
    // The first step's entries, the window's loaded on the guess that the head is short (a
    // stencil's always is), so that neither waits for the shape.
    let window_entry = load_entry(start - params.window + g.lane, select(0u, stop, p > 0u));
    var entry = load_entry(start + g.lane, stop);
    var begin = start;
    if shape.short_head {
        begin = start - params.window;
        entry = window_entry;
    }
    var carry_row = NO_KEY;
    var carry = Acc(0.0);
    var head = Acc(0.0);
    var holds_head = false;
    for (var base = begin; base < stop; base += g.size) {
        // The next step's loads are in flight while this step reduces.
        let next = load_entry(base + g.size + g.lane, stop);
        var value = entry.product;
        if g.lane == 0u && entry.row == carry_row {
            value += carry;
        }
        let scan = group_scan(g, entry.row, value);
        // The row after this lane's: the next lane's, or for the last lane the next step's
        // first; past the interval, none, unless this row goes on as the carry.
        let following = group_first(g, next.row);
        var after = scan.next_key;
        if g.lane + 1u == g.size {
            after = select(following, entry.row, base + g.size >= stop && shape.has_carry);
        }
        if entry.row != NO_KEY && after != entry.row {
            if finish_row(entry.row, scan.sum, shape, store) {
                head = scan.sum;
                holds_head = true;
            }
        }
        carry_row = scan.last_key;
        carry = scan.last_sum;
        entry = next;
    }
    let owner = group_min(g, select(NO_KEY, g.lane, holds_head));
    if owner != NO_KEY {
        head = group_broadcast(g, head, owner);
    }
    return IntervalEnds(head, carry);
}

// The first of slot's words in the set of `parity`.
fn sum_word(parity: u32, slot: u32) -> u32 {
    return params.intervals + (parity * 2u * params.intervals + slot) * VALUE_WORDS;
}
