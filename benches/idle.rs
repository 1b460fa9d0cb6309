//! Idle probe: the device copy bandwidth on a fresh device, after the device has idled, and
//! under sustained load, to show the driver's slow start after idle (benches/NOTES.md,
//! "idle devices"). Each figure is the wall clock of 30 back-to-back copies after 3 untimed
//! ones; meaningful on GPUs only.
//!
//! `cargo bench --bench idle [-- SECONDS...]` idles for each given number of seconds
//! (default 0.5 1 2 3 4 6).

use std::time::{Duration, Instant};

use wgsparse::ops::blas1;
use wgsparse::{Context, ContextOptions, GpuVec, Result};

/// A source and a destination of up to 512 MiB each.
struct Copy {
    src: GpuVec<u32>,
    dst: GpuVec<u32>,
}

impl Copy {
    fn new(ctx: &Context) -> Result<Self> {
        let limits = ctx.limits();
        let bytes = (512u64 << 20).min(limits.max_storage_buffer_binding_size).min(limits.max_buffer_size / 2);
        let len = (bytes / 4) as usize;
        Ok(Copy { src: ctx.zeros(len)?, dst: ctx.zeros(len)? })
    }

    /// Submits `n` copies back to back and waits.
    fn run(&mut self, ctx: &Context, n: usize) -> Result<()> {
        let mut batch = ctx.batch();
        for _ in 0..n {
            blas1::copy(&mut batch.recorder(), &self.src, &mut self.dst)?;
        }
        batch.submit()?;
        ctx.synchronize()
    }

    /// GB/s (read + write) of 30 copies after 3 untimed ones.
    fn bandwidth(&mut self, ctx: &Context) -> Result<f64> {
        self.run(ctx, 3)?;
        let start = Instant::now();
        self.run(ctx, 30)?;
        let seconds = start.elapsed().as_secs_f64() / 30.0;
        Ok(2.0 * self.src.byte_len() as f64 / seconds / 1e9)
    }
}

fn main() -> Result<()> {
    let idles: Vec<f64> = std::env::args().skip(1).filter_map(|a| a.parse().ok()).collect();
    let idles = if idles.is_empty() { vec![0.5, 1.0, 2.0, 3.0, 4.0, 6.0] } else { idles };
    let open = || ContextOptions::from_env().and_then(Context::new_blocking);
    println!("{}", open()?.report());
    for idle in idles {
        let ctx = open()?;
        let mut copy = Copy::new(&ctx)?;
        let fresh = copy.bandwidth(&ctx)?;
        std::thread::sleep(Duration::from_secs_f64(idle));
        let after = copy.bandwidth(&ctx)?;
        println!("idle {idle:4.1} s: fresh {fresh:6.0} GB/s, after the idle {after:6.0} GB/s");
    }
    // After a long idle, how long sustained work takes to bring the bandwidth back.
    let ctx = open()?;
    let mut copy = Copy::new(&ctx)?;
    std::thread::sleep(Duration::from_secs(6));
    let start = Instant::now();
    for _ in 0..8 {
        let gbps = copy.bandwidth(&ctx)?;
        println!(
            "after 6 s idle, {:5.0} ms into sustained copies: {gbps:6.0} GB/s",
            start.elapsed().as_secs_f64() * 1e3
        );
        let busy = Instant::now();
        while busy.elapsed() < Duration::from_millis(100) {
            copy.run(&ctx, 8)?;
        }
    }
    Ok(())
}
