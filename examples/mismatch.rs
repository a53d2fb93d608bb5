//! Ranks that take their own paths (`World::spmd`, the way every process runs the host function
//! under MPI) and disagree: rank 2 reduces with `max` where the others use `sum`. The call is
//! caught before any data moves and every rank gets an error naming both sides.
//!
//! `cargo run --example mismatch`

use pld::{AllReduce, ReduceOp, World};

fn main() -> Result<(), pld::Error> {
    let world = World::local(3)?;
    let results = world.spmd(|host| {
        let data = host.window::<f32>("data", [1024])?;
        let op = if host.rank() == Some(2) { ReduceOp::Max } else { ReduceOp::Sum };
        host.all_reduce(&data, AllReduce::mesh().op(op))?;
        host.sync()
    })?;
    for (rank, result) in results.iter().enumerate() {
        match result {
            Ok(()) => println!("rank {rank}: ok"),
            Err(e) => println!("{e}"),
        }
    }
    Ok(())
}
