use wgsparse::generate;
use wgsparse::reference::{self, TwinPreconditioner};
#[test]
fn probe() {
    for (side, wind) in [(1024usize, 0.5f32), (1024, 1.0)] {
        let a = generate::convection_diffusion_2d(side, wind).map_values(|v| v as f64);
        let n = a.rows();
        let b = vec![1.0f64; n];
        let x0 = vec![0.0f64; n];
        let t = std::time::Instant::now();
        let s = reference::bicgstab(&a, TwinPreconditioner::Identity, &b, &x0, 1e-6, 0.0, 8000);
        eprintln!("side {side} wind {wind}: bicgstab {} ({}) {:?}", s.iterations, s.converged, t.elapsed());
    }
}
