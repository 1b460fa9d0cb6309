// The values of C = A·B on bitmaps (C's pattern and rank directory built before), row-wise
// (Gustavson's order): a workgroup per (row i of C, chunk of CHUNK columns) adds a_ik·b_kj
// for each stored a_ik, in k order, into a dense accumulator of the chunk's columns in
// workgroup memory, then writes the chunk's stored values of C.
//
// The kernel is bound by chains of dependent loads, not by bytes: the accumulators hold ~10
// workgroups an SM (48 KiB of workgroup memory an SM, NOTES session 42), so each workgroup's
// chain is the time. The k's are therefore taken a batch of WG_SIZE at a time, a lane each
// (its a_ik and B's row k extent in the chunk loaded together), and B's entries of the
// batch's rows are cut into windows of WG_SIZE entries of one k, a lane an entry; eight
// windows are loaded into registers before any is added, then added window by window with a
// barrier between, so that every sum runs in k order (deterministic, no atomics; within one
// k the columns are distinct). No load sits behind a branch: in-order issue waits at a branch
// for the loads before it (NOTES session 45), so addresses are clamped and results selected.
// Last, the chunk's stored values are written in order, a lane a position (coalesced).
#import entry
#import real
#import lowest_bit

struct Params {
    rows: u32,
    a_words: u32,
    a_blocks: u32,
    // Flag words and rank blocks of C's rows.
    words: u32,
    blocks: u32,
    // Chunks of CHUNK columns a row of C.
    chunks: u32,
    // Rank blocks of B's rows.
    b_blocks: u32,
}

var<immediate> params: Params;
@group(0) @binding(0) var<storage, read> a_flags: array<u32>;
@group(0) @binding(1) var<storage, read> a_rank: array<u32>;
@group(0) @binding(2) var<storage, read> a_values: array<Real>;
@group(0) @binding(3) var<storage, read> b_offsets: array<u32>;
@group(0) @binding(4) var<storage, read> b_rank: array<u32>;
@group(0) @binding(5) var<storage, read> b_cols: array<u32>;
@group(0) @binding(6) var<storage, read> b_values: array<Real>;
@group(0) @binding(7) var<storage, read> flags: array<u32>;
@group(0) @binding(8) var<storage, read> rank: array<u32>;
@group(0) @binding(9) var<storage, read_write> c_values: array<Real>;

override WG_SIZE: u32 = 32u;
// Columns of C a workgroup accumulates: a multiple of 256 (whole rank blocks of 8 words) and
// at most 32·WG_SIZE (a lane per flag word when the chunk is written).
override CHUNK: u32 = 1024u;
// Windows of B's entries (an entry a lane) loaded before any is added: eight, written out as
// named values (load_window, add_window). Held in arrays filled by a loop, the same windows
// ran 1.9-3.4x slower on NVIDIA (local memory, or loads serialised; NOTES session 52).
const ROUND: u32 = 8u;
// Flag words of A's row a lane stages at a time.
const A_WORDS: u32 = 4u;
const NONE: u32 = 0xffffffffu;

var<workgroup> acc: array<Acc, CHUNK>;
// The batch's k's, a lane each; then the first entry of B's row k in the chunk, and later the
// chunk's flag words of C.
var<workgroup> batch_k: array<u32, WG_SIZE>;
// B's row k's entries in the chunk, for the batch's k's.
var<workgroup> batch_n: array<u32, WG_SIZE>;
// a_ik of the batch's k's.
var<workgroup> batch_a: array<Acc, WG_SIZE>;
// Exclusive prefix sums over the lanes (lane_scan): A's stored columns before each lane's
// staged words, the windows before each k of the batch, and the stored entries before each
// flag word of C's chunk.
var<workgroup> before: array<u32, WG_SIZE>;
var<workgroup> scan_total: u32;
// The k of each window of a round, found by a lane each.
var<workgroup> round_ks: array<u32, ROUND>;

// The exclusive prefix sum of `value` over the lanes, left in `before` (the total in
// `scan_total`, read by workgroupUniformLoad). Every lane calls it; `before` is free.
fn lane_scan(lane: u32, value: u32) -> u32 {
    before[lane] = value;
    workgroupBarrier();
    for (var d = 1u; d < WG_SIZE; d <<= 1u) {
        let add = select(0u, before[lane - min(d, lane)], lane >= d);
        workgroupBarrier();
        before[lane] += add;
        workgroupBarrier();
    }
    let inclusive = before[lane];
    if lane == WG_SIZE - 1u {
        scan_total = inclusive;
    }
    workgroupBarrier();
    before[lane] = inclusive - value;
    return inclusive - value;
}

// The last lane q whose prefix before[q] is at most t (before[0] = 0): the k of the batch (or
// the flag word) that holds item t, where lanes without items repeat their successor's prefix.
// Straight-line selects for up to 64 lanes (WG_SIZE is a subgroup size).
fn owner(t: u32) -> u32 {
    var q = 0u;
    for (var step = 32u; step > 0u; step >>= 1u) {
        let next = min(q + step, WG_SIZE - 1u);
        q = select(q, next, before[next] <= t);
    }
    return q;
}

// Writes the k's of one staged flag word of A (word `word` of the row, its stored columns
// numbered from `index`) that fall in the batch [batch, batch + WG_SIZE) into batch_k;
// returns the numbering's next index.
fn deal_word(flag_word: u32, word: u32, index: u32, batch: u32) -> u32 {
    var bits = flag_word;
    let n = countOneBits(bits);
    if index + n > batch && index < batch + WG_SIZE {
        var at = index;
        while bits != 0u {
            let b = lowest_bit(bits);
            bits &= bits - 1u;
            if at >= batch && at < batch + WG_SIZE {
                batch_k[at - batch] = word * 32u + b;
            }
            at++;
        }
    }
    return index + n;
}

// Word w of A's row (0 past its end), by a clamped load (no branch).
fn a_word(a_row: u32, w: u32) -> u32 {
    return select(0u, a_flags[a_row + min(w, params.a_words - 1u)], w < params.a_words);
}

// The position of the n-th (from 0) set bit of `bits`, which has more than n.
fn nth_bit(bits: u32, n: u32) -> u32 {
    var rest = n;
    var b = bits;
    var pos = 0u;
    for (var width = 16u; width > 0u; width >>= 1u) {
        let low = countOneBits(b & ((1u << width) - 1u));
        let skip = rest >= low;
        rest -= select(0u, low, skip);
        b >>= select(0u, width, skip);
        pos += select(0u, width, skip);
    }
    return pos;
}

// acc += a_ik · B's row k (in the chunk) for one batch of k's (NONE for a lane past the
// batch), in k order.
fn add_batch(lane: u32, c0: u32, k: u32, a: Acc) {
    let some = k != NONE;
    let kk = select(0u, k, some);
    let blocks = kk * params.b_blocks;
    let next = (c0 + CHUNK) / 256u;
    let row_end = b_offsets[kk + 1u];
    let end = select(row_end, b_rank[blocks + min(next, params.b_blocks - 1u)], next < params.b_blocks);
    let first = b_rank[blocks + c0 / 256u];
    let count = select(0u, end - first, some);
    // The windows before each k. Past the scan's barriers every lane has read its k, and
    // batch_k takes the extents' starts.
    lane_scan(lane, (count + WG_SIZE - 1u) / WG_SIZE);
    let windows = workgroupUniformLoad(&scan_total);
    batch_k[lane] = first;
    batch_n[lane] = count;
    batch_a[lane] = a;
    workgroupBarrier();
    for (var done = 0u; done < windows; done += ROUND) {
        // Each window's k first (a lane each, by a search in workgroup memory), then every
        // window's loads, issued before any is used; then the adds.
        if lane < ROUND {
            round_ks[lane] = owner(min(done + lane, windows - 1u));
        }
        workgroupBarrier();
        let q0 = round_ks[0];
        let q1 = round_ks[1];
        let q2 = round_ks[2];
        let q3 = round_ks[3];
        let q4 = round_ks[4];
        let q5 = round_ks[5];
        let q6 = round_ks[6];
        let q7 = round_ks[7];
        let w0 = load_window(done, q0, windows, lane);
        let w1 = load_window(done + 1u, q1, windows, lane);
        let w2 = load_window(done + 2u, q2, windows, lane);
        let w3 = load_window(done + 3u, q3, windows, lane);
        let w4 = load_window(done + 4u, q4, windows, lane);
        let w5 = load_window(done + 5u, q5, windows, lane);
        let w6 = load_window(done + 6u, q6, windows, lane);
        let w7 = load_window(done + 7u, q7, windows, lane);
        add_window(w0, c0);
        add_window(w1, c0);
        add_window(w2, c0);
        add_window(w3, c0);
        add_window(w4, c0);
        add_window(w5, c0);
        add_window(w6, c0);
        add_window(w7, c0);
    }
}

// A window: a lane's entry of B (its column, b_kj) and a_ik, or none.
struct Window {
    live: bool,
    j: u32,
    b: Acc,
    a: Acc,
}

// Window m of the batch (none past `windows`), of its k q: the lane's entry of B's row k.
fn load_window(m: u32, q: u32, windows: u32, lane: u32) -> Window {
    let n = batch_n[q];
    let at = (min(m, windows - 1u) - before[q]) * WG_SIZE + lane;
    let entry = batch_k[q] + min(at, n - 1u);
    return Window(m < windows && at < n, b_cols[entry], Acc(b_values[entry]), batch_a[q]);
}

// acc += a_ik·b_kj for the window's entry, then a barrier: the next window's k comes after.
fn add_window(w: Window, c0: u32) {
    if w.live {
        let j = w.j - c0;
        acc[j] = fma(w.a, w.b, acc[j]);
    }
    workgroupBarrier();
}

// Writes C's value at position p of the chunk (p0 its first position) from the accumulators;
// `before` holds the flag words' prefix counts, batch_k the words.
fn write_value(p0: u32, p: u32) {
    let w = owner(p);
    c_values[p0 + p] = Real(acc[w * 32u + nth_bit(batch_k[w], p - before[w])]);
}

fn run(workgroup: u32, lane: Lane) {
    let row = workgroup / params.chunks;
    if row >= params.rows || params.words == 0u {
        return;
    }
    let l = lane.index;
    let chunk = workgroup - row * params.chunks;
    let c0 = chunk * CHUNK;
    for (var j = l; j < CHUNK; j += WG_SIZE) {
        acc[j] = Acc(0.0);
    }
    // A's row's first entry: the batch's a_ik follow it in column order.
    var pa = 0u;
    if params.a_blocks > 0u {
        pa = a_rank[row * params.a_blocks];
    }
    let a_row = row * params.a_words;
    for (var seg = 0u; seg < params.a_words; seg += WG_SIZE * A_WORDS) {
        let word0 = seg + l * A_WORDS;
        let words = vec4<u32>(
            a_word(a_row, word0),
            a_word(a_row, word0 + 1u),
            a_word(a_row, word0 + 2u),
            a_word(a_row, word0 + 3u),
        );
        let stored = countOneBits(words.x) + countOneBits(words.y) + countOneBits(words.z) + countOneBits(words.w);
        // (Its barriers also order the accumulators' zeroing before the first sums, and the
        // last batch's reads of `before` before it is overwritten.)
        let first = lane_scan(l, stored);
        let entries = workgroupUniformLoad(&scan_total);
        for (var batch = 0u; batch < entries; batch += WG_SIZE) {
            var dealt = deal_word(words.x, word0, first, batch);
            dealt = deal_word(words.y, word0 + 1u, dealt, batch);
            dealt = deal_word(words.z, word0 + 2u, dealt, batch);
            deal_word(words.w, word0 + 3u, dealt, batch);
            workgroupBarrier();
            let some = batch + l < entries;
            let k = select(NONE, batch_k[l], some);
            let a = select(Acc(0.0), Acc(a_values[pa + min(batch + l, entries - 1u)]), some);
            add_batch(l, c0, k, a);
        }
        pa += entries;
    }
    // The chunk's stored values, in order: position p of the chunk from its flag word (by
    // the words' prefix counts) and its bit in the word; four positions a lane at a time so
    // that their chains overlap.
    let chunk_words = CHUNK / 32u;
    let cw = chunk * chunk_words + l;
    let has_word = l < chunk_words && cw < params.words;
    let word = select(0u, flags[row * params.words + select(0u, cw, has_word)], has_word);
    lane_scan(l, countOneBits(word));
    let stored = workgroupUniformLoad(&scan_total);
    batch_k[l] = word;
    workgroupBarrier();
    if stored == 0u {
        return;
    }
    let p0 = rank[row * params.blocks + c0 / 256u];
    var p = l;
    for (; p + 3u * WG_SIZE < stored; p += 4u * WG_SIZE) {
        write_value(p0, p);
        write_value(p0, p + WG_SIZE);
        write_value(p0, p + 2u * WG_SIZE);
        write_value(p0, p + 3u * WG_SIZE);
    }
    for (; p < stored; p += WG_SIZE) {
        write_value(p0, p);
    }
}
