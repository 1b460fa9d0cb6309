// What the sync-free triangular solve (sptrsv.wgsl) and its steps (sptrsv_steps.wgsl) agree
// on: the status words, and how a solved value carries its ready state.
//
// WGSL atomics are relaxed and 32-bit, and there is no device-scope fence, so a reader must
// never see a "ready" flag before the value it guards. Every word a reader looks at therefore
// carries the ready state itself; NOT_READY is written into all of them before a solve.
// - f32: x[j] is the value's bits; NOT_READY (a NaN pattern) means unsolved. A result with
//   exactly those bits is published as the canonical NaN instead. With levels captured,
//   aux[j] is the item's level (< 2^31), NOT_READY before.
// - f64: the 64 bits and the level are spread over x's two words and aux[j], 31 bits each
//   with the top bit clear (encode_*): w0 = lo[0..31), w1 = lo[31] | hi[0..30) << 1,
//   w2 = hi[30..32) | level << 2. A reader takes the value once all three have the top bit
//   clear. FINISH then rewrites x as plain f64 and marks aux[j] DECODED (level kept), which a
//   later relaunch reads as solved. Unsolved items keep NOT_READY in both x words: a NaN.

const NOT_READY: u32 = 0xffffffffu;
const TOP_BIT: u32 = 0x80000000u;
const DECODED: u32 = 0x40000000u;
const LEVEL_MASK: u32 = 0x0fffffffu;
// The canonical quiet NaN, published in place of a result whose bits are NOT_READY.
const F32_NAN: u32 = 0x7fc00000u;

// The status words of a solve (the host reads them back).
const STATUS_TICKET: u32 = 0u;
const STATUS_LOWEST_UNSOLVED: u32 = 1u;
const STATUS_RELAUNCHES: u32 = 2u;
const STATUS_MAX_LEVEL: u32 = 3u;
// The first offending row r as 4·r + problem (atomicMin keeps the first).
const STATUS_PROBLEM: u32 = 4u;
const STATUS_WORDS: u32 = 5u;
const NONE: u32 = 0xffffffffu;

const PROBLEM_OUTSIDE_TRIANGLE: u32 = 1u;
const PROBLEM_MISSING_DIAGONAL: u32 = 2u;
const PROBLEM_ZERO_PIVOT: u32 = 3u;

// The f64 value bits (lo, hi) of encoded words w0, w1, w2.
fn decode_f64_bits(w0: u32, w1: u32, w2: u32) -> vec2<u32> {
    return vec2<u32>(w0 | ((w1 & 1u) << 31u), (w1 >> 1u) | ((w2 & 3u) << 30u));
}

// The level kept in an f64 item's aux word (encoded or DECODED).
fn f64_level(w2: u32) -> u32 {
    return (w2 >> 2u) & LEVEL_MASK;
}
