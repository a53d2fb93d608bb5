//! fp8 all_reduce on 4 ranks, in both fp8 types and both modes: the ranks' inputs 16, 1, 1, 1
//! sum to 19 in f32, which rounds once to e4m3's 20 (rounding every step would stop at 16:
//! 16 + 1 is a tie that rounds to even, 16, every time); their e5m2 mean rounds once too.
//!
//! `cargo run --example fp8`

use pld::{f8e4m3, f8e5m2};

#[pld::program]
mod demo {
    #[pld::host]
    pub fn sums(e4m3: bool) -> Vec<f32> {
        let a = window!(pld::f8e4m3, [4]);
        let b = window!(pld::f8e5m2, [4]);
        for r in ranks() {
            let v = if r == 0 { 16.0 } else { 1.0 };
            stage_in!(a, r, [pld::f8e4m3::from_f32(v); 4]);
            stage_in!(b, r, [pld::f8e5m2::from_f32(v); 4]);
        }
        let mut out = Vec::new();
        if e4m3 {
            all_reduce!(a, mode = mesh);
            let mut mesh = vec![pld::f8e4m3::ZERO; 4];
            stage_out!(a, 2, mesh);
            for r in ranks() {
                stage_in!(a, r, [pld::f8e4m3::from_f32(if r == 0 { 16.0 } else { 1.0 }); 4]);
            }
            all_reduce!(a, mode = ring, nranks = 4);
            let mut ring = vec![pld::f8e4m3::ZERO; 4];
            stage_out!(a, 3, ring);
            out.extend(mesh.iter().chain(&ring).map(|x| x.to_f32()));
        } else {
            all_reduce!(b, op = avg);
            let mut avg = vec![pld::f8e5m2::ZERO; 4];
            stage_out!(b, 1, avg);
            out.extend(avg.iter().map(|x| x.to_f32()));
        }
        out
    }
}

fn main() -> pld::Result<()> {
    let world = pld::World::local(4)?;
    let program = demo::load(&world)?;
    let sums = program.sums(true)?;
    println!("e4m3 sum of 16, 1, 1, 1 (mesh, then ring): {sums:?}");
    assert!(sums.iter().all(|&s| s == f8e4m3::from_f32(19.0).to_f32()), "{sums:?}");
    // The mean of 16, 1, 1, 1 is 4.75: e5m2 rounds it once, to 5 (rounding the sum first
    // would give 16 / 4 = 4: 17 is not an e5m2 value, and rounds to 16).
    let means = program.sums(false)?;
    println!("e5m2 mean of 16, 1, 1, 1: {means:?}");
    assert!(means.iter().all(|&m| m == f8e5m2::from_f32(4.75).to_f32()), "{means:?}");
    println!("ok");
    Ok(())
}
