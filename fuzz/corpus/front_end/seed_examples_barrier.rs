//! barrier on 8 ranks (more ranks than this machine has cores): every signal cell is zero after.
//!
//! `cargo run --example barrier`

#[pld::program]
mod demo {
    #[pld::host]
    pub fn barriers(rounds: usize) -> Vec<i32> {
        let s = signal!();
        for _ in 0..rounds {
            barrier!(s);
        }
        barrier!();
        let mut cells = Vec::new();
        for r in ranks() {
            let mut row = vec![0; world_size()];
            stage_out!(s, r, row);
            cells.extend(row);
        }
        cells
    }
}

fn main() -> pld::Result<()> {
    let world = pld::World::local(8)?;
    let cells = demo::load(&world)?.barriers(100)?;
    println!("100 barriers on 8 ranks; signal cells afterwards: {cells:?}");
    assert!(cells.iter().all(|&c| c == 0));
    println!("ok");
    Ok(())
}
