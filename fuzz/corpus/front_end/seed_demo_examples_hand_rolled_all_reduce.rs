//! An all_reduce written by hand in a kernel from notify / wait / remote_load, run next to
//! `all_reduce!` at 2, 3 and 4 ranks: the outputs are identical, bit for bit.
//!
//! `cargo run -p pld-demo --example hand_rolled_all_reduce`

use pld::{Tensor, World};
use pld_demo::hand_rolled;

fn main() -> pld::Result<()> {
    for nranks in [2, 3, 4] {
        let world = World::local(nranks)?;
        let program = hand_rolled::load(&world)?;
        let rounds: Vec<Tensor<f32>> =
            (0..3).map(|k| Tensor::from_fn([nranks, 8], |[r, i]| ((k * 31 + r * 7 + i) as f32) * 0.37 + 0.1)).collect();
        let (by_hand, cells) = program.by_hand(&rounds)?;
        let builtin = program.builtin(&rounds)?;
        println!("{nranks} ranks, round 0, rank 0: by hand {:?}", by_hand[0][0]);
        println!("{nranks} ranks, round 0, rank 0: builtin {:?}", builtin[0][0]);
        assert_eq!(by_hand, builtin, "{nranks} ranks: the hand-rolled all_reduce differs from all_reduce!");
        assert!(cells.iter().all(|&c| c == 0), "the signal is left clear");
    }
    println!("ok");
    Ok(())
}
