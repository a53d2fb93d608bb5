//! broadcast on 4 ranks from every root in turn.
//!
//! `cargo run --example broadcast`

#[pld::program]
mod demo {
    #[pld::host]
    pub fn from(root: usize) -> Vec<Vec<i32>> {
        let data = window!(i32, [3]);
        for r in ranks() {
            stage_in!(data, r, [r as i32; 3]);
        }
        broadcast!(data, root = root);
        let mut rows = Vec::new();
        for r in ranks() {
            let mut row = vec![0; 3];
            stage_out!(data, r, row);
            rows.push(row);
        }
        rows
    }
}

fn main() -> pld::Result<()> {
    let world = pld::World::local(4)?;
    let program = demo::load(&world)?;
    for root in 0..4 {
        let rows = program.from(root)?;
        println!("root {root}: {rows:?}");
        assert!(rows.iter().all(|row| row == &[root as i32; 3]), "root {root}");
    }
    println!("ok");
    Ok(())
}
