// Keeps `ordered` (A's values in the order of its transpose's entries, what SpMM with Aᵀ
// reads) equal to A's values as they are now, reading A's values in their own order:
// `seen` holds the values the last run copied, and a word of `values` that differs from
// its `seen` word is copied into `seen` and written to its place in `ordered` (A's entry i
// is the transpose's entry inverse[i]). Values that did not change cost two reads in
// order and no scattered access; changed ones a scattered write each. Words, not elements:
// params.words_per_value words a value (1 in f32, 2 in f64), compared bit for bit, so a NaN or a
// −0 is a change like any other. Starting from `seen` and `ordered` both zero keeps
// ordered[inverse[i]] == seen[i] for every i.
#import invocation

struct Params {
    words: u32,
    words_per_value: u32,
}

var<immediate> params: Params;
@group(0) @binding(0) var<storage, read> values: array<u32>;
@group(0) @binding(1) var<storage, read> inverse: array<u32>;
@group(0) @binding(2) var<storage, read_write> seen: array<u32>;
@group(0) @binding(3) var<storage, read_write> ordered: array<u32>;

override WG_SIZE: u32 = 256u;

fn run(w: u32) {
    if w >= params.words {
        return;
    }
    let v = values[w];
    if v != seen[w] {
        seen[w] = v;
        let entry = w / params.words_per_value;
        ordered[inverse[entry] * params.words_per_value + w % params.words_per_value] = v;
    }
}
