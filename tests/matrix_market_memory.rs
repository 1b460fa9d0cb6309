//! The Matrix Market reader never allocates more than a bound derived from the size of its
//! input, whatever the header claims. A counting allocator measures the peak; this binary
//! holds a single test so no other test's allocations are counted.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use wgsparse::format::matrix_market;

struct Counting;

static CURRENT: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let now = CURRENT.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
        PEAK.fetch_max(now, Ordering::Relaxed);
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        CURRENT.fetch_sub(layout.size(), Ordering::Relaxed);
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// Bytes the reader may hold for an input of `len` bytes: a fixed start (its first batch of
/// entries and line buffer) plus a constant factor per input byte (an entry takes at least
/// four bytes of text and 12 bytes of storage, doubled by Vec growth and by symmetric
/// expansion).
fn bound(len: usize) -> usize {
    2 * 1024 * 1024 + 64 * len
}

/// Peak bytes allocated while reading `bytes` (the result is dropped inside).
fn peak_while_reading(bytes: &[u8]) -> usize {
    let base = CURRENT.load(Ordering::Relaxed);
    PEAK.store(base, Ordering::Relaxed);
    let _ = matrix_market::read::<f32, _>(bytes);
    PEAK.load(Ordering::Relaxed) - base
}

#[test]
fn reading_allocates_within_a_bound_derived_from_the_input_size() {
    let mut inputs: Vec<Vec<u8>> = vec![
        b"%%MatrixMarket matrix coordinate real general\n5 5 4294967295\n1 1 1\n".to_vec(),
        b"%%MatrixMarket matrix array real general\n65535 65535\n1\n".to_vec(),
        b"%%MatrixMarket matrix coordinate real symmetric\n4294967295 4294967295 4000000000\n1 1 1\n2 1 3\n".to_vec(),
        b"%%MatrixMarket matrix coordinate pattern general\n4294967295 1 4294967295\n".to_vec(),
    ];
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/matrices");
    for entry in std::fs::read_dir(dir).unwrap() {
        inputs.push(std::fs::read(entry.unwrap().path()).unwrap());
    }
    for input in &inputs {
        let peak = peak_while_reading(input);
        assert!(peak <= bound(input.len()), "{} bytes of input allocated {peak}", input.len());
    }

    // Arbitrary bytes after a valid banner, and valid files with lines duplicated and
    // headers rewritten to claim huge sizes.
    let header = prop_oneof![
        Just("%%MatrixMarket matrix coordinate real general\n"),
        Just("%%MatrixMarket matrix coordinate real symmetric\n"),
        Just("%%MatrixMarket matrix array real general\n"),
        Just("%%MatrixMarket matrix coordinate pattern skew-symmetric\n"),
    ];
    let size_line = (0u64..=u32::MAX as u64 + 2, 0u64..=u32::MAX as u64 + 2, 0u64..=u64::MAX)
        .prop_map(|(r, c, n)| format!("{r} {c} {n}\n"));
    let body = prop::collection::vec((1u32..100, 1u32..100, -9.0f32..9.0), 0..300)
        .prop_map(|e| e.iter().map(|(r, c, v)| format!("{r} {c} {v}\n")).collect::<String>());
    let noise = prop::collection::vec(any::<u8>(), 0..400);
    let mut runner = TestRunner::new(Config { cases: 300, ..Config::default() });
    runner
        .run(&(header, size_line, body, noise), |(header, size_line, body, noise)| {
            for input in [format!("{header}{size_line}{body}").into_bytes(), [header.as_bytes(), &noise].concat()] {
                let peak = peak_while_reading(&input);
                prop_assert!(peak <= bound(input.len()), "{} bytes of input allocated {}", input.len(), peak);
            }
            Ok(())
        })
        .unwrap();
}
