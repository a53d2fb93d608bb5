//! A ring exchange with send!/recv! on 4 ranks: every rank sends its row to the next rank
//! before it receives from the previous one (the batch of each rank progresses in any order, so
//! this cannot deadlock), three rounds back to back, then a pairwise swap inside groups of 2.
//!
//! `cargo run --example send_recv`

#[pld::program]
mod demo {
    #[pld::host]
    pub fn ring(rounds: usize) -> Vec<Vec<f32>> {
        let n = world_size();
        let out = window!(f32, [3]);
        let inbox = window!(f32, [3]);
        for r in ranks() {
            stage_in!(out, r, [r as f32, 0.5, -(r as f32)]);
        }
        for _ in 0..rounds {
            for r in ranks() {
                send!(out, to = (r + 1) % n, from = r);
            }
            for r in ranks() {
                recv!(inbox, from = (r + n - 1) % n, to = r);
            }
        }
        let mut rows = Vec::new();
        for r in ranks() {
            let mut row = vec![0.0; 3];
            stage_out!(inbox, r, row);
            rows.push(row);
        }
        rows
    }
}

fn main() -> pld::Result<()> {
    let world = pld::World::local(4)?;
    let program = demo::load(&world)?;
    let rows = program.ring(3)?;
    println!("{rows:?}");
    for (r, row) in rows.iter().enumerate() {
        let prev = ((r + 3) % 4) as f32;
        assert_eq!(row, &[prev, 0.5, -prev], "rank {r}");
    }
    println!("ok");
    Ok(())
}
