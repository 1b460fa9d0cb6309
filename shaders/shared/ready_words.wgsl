// A value and its ready state in the same atomic words, for a reader in another workgroup:
// WGSL atomics are relaxed and 32-bit and there is no device-scope fence, so a reader must
// never see a "ready" flag before the value it guards. NOT_READY is written into every word
// first; a reader takes the value only once all of its words say ready.
// - f32: one word, the value's bits; a result with exactly NOT_READY's bits (a NaN pattern) is
//   published as the canonical NaN instead (f32_word).
// - f64: the 64 bits spread over three words of 31 bits with the top bit clear
//   (encode_f64_bits): w0 = lo[0..31), w1 = lo[31] | hi[0..30) << 1, w2 = hi[30..32), whose
//   bits 2..30 are free for the caller. Ready once the three top bits are clear.

const NOT_READY: u32 = 0xffffffffu;
const TOP_BIT: u32 = 0x80000000u;
// The canonical quiet NaN, published in place of a result whose bits are NOT_READY.
const F32_NAN: u32 = 0x7fc00000u;

// The word published for an f32 value's bits.
fn f32_word(bits: u32) -> u32 {
    return select(bits, F32_NAN, bits == NOT_READY);
}

// The three words of f64 value bits (lo, hi).
fn encode_f64_bits(bits: vec2<u32>) -> vec3<u32> {
    return vec3<u32>(bits.x & 0x7fffffffu, (bits.x >> 31u) | ((bits.y & 0x3fffffffu) << 1u), bits.y >> 30u);
}

// The f64 value bits (lo, hi) of words w0, w1, w2.
fn decode_f64_bits(w0: u32, w1: u32, w2: u32) -> vec2<u32> {
    return vec2<u32>(w0 | ((w1 & 1u) << 31u), (w1 >> 1u) | ((w2 & 3u) << 30u));
}
