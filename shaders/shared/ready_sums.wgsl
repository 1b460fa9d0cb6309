// Sums one workgroup publishes for another to add up, and the arrival counters that say who
// adds them (csr-split's chunks of long rows; csr-merge's tiles and the COO intervals' rows
// that cross a boundary). Nothing waits: the group whose arrival completes a row adds its
// pieces, and a piece it cannot see yet it recomputes (WGSL atomics are relaxed, there is no
// device-scope fence, so a counter does not say that a sum is visible).
// - A sum travels with its ready state (ready_words.wgsl): VALUE_WORDS atomic words.
// - Two sets of sum words alternate between runs, chosen by the parity in the counter's top
//   bit, which the completing group flips as it resets the count. A publisher clears its
//   slot in the other set: a store of one run that lands late is cleared by the next run
//   (dispatches are ordered), so a run never takes an earlier run's sum as ready.
// The including shader binds `scratch: array<atomic<u32>>` (counters zero, sum words
// NOT_READY at first) and defines `fn sum_word(parity: u32, slot: u32) -> u32`, the first
// word of a slot's sum in the set of `parity`.
#import ready_words

#ifdef F64
const VALUE_WORDS: u32 = 3u;
#else
const VALUE_WORDS: u32 = 1u;
#endif
const SET_BIT: u32 = 0x80000000u;
const NO_PIECE: u32 = 0xffffffffu;

// A row whose pieces a group adds up: pieces first..end-1 published their carries (slot q),
// piece end its head (slot heads + q); `completes` is publish_and_arrive's 1 + parity.
struct RowToComplete {
    row: u32,
    first: u32,
    end: u32,
    completes: u32,
}

// A lane's piece of a row: piece q's published sum, and q when it must be recomputed (not
// visible yet, or `recompute`), else NO_PIECE.
struct Piece {
    q: u32,
    value: Acc,
    missing: u32,
}

// Piece base + lane of row r (past r.end: zero, not missing).
fn read_piece(lane: u32, r: RowToComplete, base: u32, heads: u32, recompute: bool) -> Piece {
    let q = base + lane;
    if q > r.end {
        return Piece(q, Acc(0.0), NO_PIECE);
    }
    let published = published_sum(r.completes - 1u, select(q, heads + q, q == r.end));
    return Piece(q, published.value, select(NO_PIECE, q, !published.ready || recompute));
}

// The parity of the run at counter word `counter`: which set its pieces go to. It changes only
// when the row completes, so a piece may read it early, before it has its sum.
fn counter_parity(counter: u32) -> u32 {
    return atomicLoad(&scratch[counter]) >> 31u;
}

// The parities of a piece's head and carry counters (0 for a piece that publishes none),
// read by one lane before the piece is summed.
fn piece_parities(first_lane: bool, head_counter: u32, publishes_head: bool, carry_counter: u32,
                  publishes_carry: bool) -> vec2<u32> {
    var parities = vec2<u32>(0u, 0u);
    if first_lane {
        if publishes_head {
            parities.x = counter_parity(head_counter);
        }
        if publishes_carry {
            parities.y = counter_parity(carry_counter);
        }
    }
    return parities;
}

// Publishes `value` in `slot` of the set of `parity` (counter_parity) and counts an arrival
// at counter word `counter`. Returns 1 + the parity when this is the `expected`-th arrival
// (the caller completes the row, then calls reset_counter), else 0.
fn publish_and_arrive(counter: u32, parity: u32, slot: u32, value: Acc, expected: u32) -> u32 {
    publish_sum(parity, slot, value);
    clear_sum(1u - parity, slot);
    let done = (atomicAdd(&scratch[counter], 1u) & ~SET_BIT) + 1u;
    return select(0u, 1u + parity, done == expected);
}

// After a completion (`completes` from publish_and_arrive): count zero, the other set next.
fn reset_counter(counter: u32, completes: u32) {
    atomicStore(&scratch[counter], select(SET_BIT, 0u, completes == 2u));
}

fn clear_sum(parity: u32, slot: u32) {
    let w = sum_word(parity, slot);
    for (var k = 0u; k < VALUE_WORDS; k++) {
        atomicStore(&scratch[w + k], NOT_READY);
    }
}

struct Published {
    ready: bool,
    value: Acc,
}

#ifdef F64
fn publish_sum(parity: u32, slot: u32, value: Acc) {
    let bits = bitcast<u64>(value);
    let words = encode_f64_bits(vec2<u32>(u32(bits & 0xfffffffflu), u32(bits >> 32u)));
    let w = sum_word(parity, slot);
    atomicStore(&scratch[w], words.x);
    atomicStore(&scratch[w + 1u], words.y);
    atomicStore(&scratch[w + 2u], words.z);
}

fn published_sum(parity: u32, slot: u32) -> Published {
    let w = sum_word(parity, slot);
    let w0 = atomicLoad(&scratch[w]);
    let w1 = atomicLoad(&scratch[w + 1u]);
    let w2 = atomicLoad(&scratch[w + 2u]);
    let bits = decode_f64_bits(w0, w1, w2);
    let value = bitcast<f64>((u64(bits.y) << 32u) | u64(bits.x));
    return Published(((w0 | w1 | w2) & TOP_BIT) == 0u, value);
}
#else
fn publish_sum(parity: u32, slot: u32, value: Acc) {
    atomicStore(&scratch[sum_word(parity, slot)], f32_word(bitcast<u32>(value)));
}

fn published_sum(parity: u32, slot: u32) -> Published {
    let w = atomicLoad(&scratch[sum_word(parity, slot)]);
    return Published(w != NOT_READY, bitcast<f32>(w));
}
#endif
