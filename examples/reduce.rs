//! reduce on 4 ranks to every root in turn: the root gets the sum, the others keep their input.
//!
//! `cargo run --example reduce`

#[pld::program]
mod demo {
    #[pld::host]
    pub fn to(root: usize) -> Vec<Vec<i32>> {
        let data = window!(i32, [3]);
        for r in ranks() {
            stage_in!(data, r, [r as i32 + 1; 3]);
        }
        reduce!(data, root = root);
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
        let rows = program.to(root)?;
        println!("root {root}: {rows:?}");
        for (r, row) in rows.iter().enumerate() {
            let expected = if r == root { 1 + 2 + 3 + 4 } else { r as i32 + 1 };
            assert_eq!(row, &[expected; 3], "root {root}, rank {r}");
        }
    }
    println!("ok");
    Ok(())
}
