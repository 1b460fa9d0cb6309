// What the sync-free triangular solve (sptrsv.wgsl) and its steps (sptrsv_steps.wgsl) agree
// on: the status words, and how a solved value carries its ready state.
//
// Every word a reader looks at carries the ready state itself (shared/ready_words.wgsl);
// NOT_READY is written into all of them before a solve.
// - f32: x[j] is the value's word. With levels captured, aux[j] is the item's level (< 2^31),
//   NOT_READY before.
// - f64: the value's three words are x's two words and aux[j], whose free bits hold the
//   level (w2 | level << 2). FINISH then rewrites x as plain f64 and marks aux[j] DECODED
//   (level kept), which a later relaunch reads as solved. Unsolved items keep NOT_READY in
//   both x words: a NaN.
#import ready_words

const DECODED: u32 = 0x40000000u;
const LEVEL_MASK: u32 = 0x0fffffffu;

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

// The level kept in an f64 item's aux word (encoded or DECODED).
fn f64_level(w2: u32) -> u32 {
    return (w2 >> 2u) & LEVEL_MASK;
}
