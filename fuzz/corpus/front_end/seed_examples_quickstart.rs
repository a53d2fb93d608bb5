//! A 4-rank ring all_reduce on the embedded default launcher (ranks are threads).
//!
//! `cargo run --release --example quickstart`

use pld::{Tensor, World};

#[pld::program]
mod ring_demo {
    use pld::Tensor;

    pub const SIZE: usize = 256;

    /// Stage each rank's row into a window, sum the rows around the ring, copy the result out.
    #[pld::host]
    pub fn run(inputs: &Tensor<f32>, outputs: &mut Tensor<f32>) {
        let data = window!(f32, [1, SIZE]);
        for r in ranks() {
            stage_in!(data, r, inputs.row(r));
        }
        all_reduce!(data, op = sum, mode = ring, nranks = 4); // signal allocated for you
        for r in ranks() {
            stage_out!(data, r, outputs.row_mut(r));
        }
    }
}

fn main() -> pld::Result<()> {
    const NRANKS: usize = 4;
    let inputs = Tensor::<f32>::from_fn([NRANKS, 1, ring_demo::SIZE], |[r, _, i]| (r * 100 + i) as f32);
    let mut outputs = Tensor::<f32>::zeros([NRANKS, 1, ring_demo::SIZE]);
    let world = World::local(NRANKS)?; // embedded default: 4 ranks in this process
    let program = ring_demo::load(&world)?;
    program.run(&inputs, &mut outputs)?; // returns once every rank is done, or an Error

    // sum over r of (r * 100 + i) = 100 * (0 + 1 + 2 + 3) + 4 * i
    let expected: Vec<f32> = (0..ring_demo::SIZE).map(|i| (600 + NRANKS * i) as f32).collect();
    for r in 0..NRANKS {
        let row = outputs.row(r);
        println!("rank {r}: [{}, {}, {}, ..., {}]", row[0], row[1], row[2], row[ring_demo::SIZE - 1]);
        if row != expected.as_slice() {
            eprintln!("rank {r}: wrong result");
            std::process::exit(1);
        }
    }
    println!("ok");
    Ok(())
}
