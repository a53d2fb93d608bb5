//! A 4-rank ring all_reduce on the embedded default launcher (ranks are threads).
//!
//! `cargo run --release --example quickstart`

use pld::prelude::*;

const NRANKS: usize = 4;
const SIZE: usize = 256;

fn main() -> pld::Result<()> {
    let inputs = Tensor::<f32>::from_fn([NRANKS, 1, SIZE], |[r, _, i]| (r * 100 + i) as f32);
    let mut outputs = Tensor::<f32>::zeros([NRANKS, 1, SIZE]);

    let world = World::local(NRANKS)?;
    let host = world.host()?;
    let data = host.window::<f32>("data", [1, SIZE])?;
    for r in 0..NRANKS {
        host.write(&data, r, inputs.row(r))?;
    }
    host.all_reduce(&data, AllReduce::ring().nranks(NRANKS))?;
    for r in 0..NRANKS {
        outputs.row_mut(r).copy_from_slice(&host.read(&data, r)?);
    }

    // sum over r of (r * 100 + i) = 100 * (0 + 1 + 2 + 3) + 4 * i
    let expected: Vec<f32> = (0..SIZE).map(|i| (600 + NRANKS * i) as f32).collect();
    for r in 0..NRANKS {
        let row = outputs.row(r);
        println!("rank {r}: [{}, {}, {}, ..., {}]", row[0], row[1], row[2], row[SIZE - 1]);
        if row != expected.as_slice() {
            eprintln!("rank {r}: wrong result");
            std::process::exit(1);
        }
    }
    println!("ok");
    Ok(())
}
