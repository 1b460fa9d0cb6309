// sums[i] += v on an f32 stored as bits in `sums: array<atomic<u32>>` (declared by the
// including shader): WGSL has no float atomics, so this is a compare-exchange loop. It
// compares bit patterns, not floats, so it terminates when the value is NaN.
fn atomic_add_f32(i: u32, v: f32) {
    var old = atomicLoad(&sums[i]);
    loop {
        let swapped = atomicCompareExchangeWeak(&sums[i], old, bitcast<u32>(bitcast<f32>(old) + v));
        if swapped.exchanged {
            break;
        }
        old = swapped.old_value;
    }
}
