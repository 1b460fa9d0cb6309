// The index of the lowest set bit of `bits` (32 for none). firstTrailingBit takes two
// quarter-rate instructions on NVIDIA (a bit reverse, then a find-leading-one); the popcount
// of the trailing zeros takes one (bitmap SpMV at a density of 1/16: 7% faster, NOTES
// session 49).
fn lowest_bit(bits: u32) -> u32 {
    return countOneBits(~bits & (bits - 1u));
}
