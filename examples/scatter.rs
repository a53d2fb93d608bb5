//! scatter on 4 ranks from every root in turn: rank r gets row r of the root's input.
//!
//! `cargo run --example scatter`

#[pld::program]
mod demo {
    #[pld::host]
    pub fn from(root: usize) -> Vec<Vec<i32>> {
        let rows = window!(i32, [4, 2]);
        let mine = window!(i32, [2]);
        let deck: Vec<i32> = (0..8).map(|k| 100 * root as i32 + k).collect();
        stage_in!(rows, root, deck);
        scatter!(rows, mine, root = root);
        let mut out = Vec::new();
        for r in ranks() {
            let mut row = vec![0; 2];
            stage_out!(mine, r, row);
            out.push(row);
        }
        out
    }
}

fn main() -> pld::Result<()> {
    let world = pld::World::local(4)?;
    let program = demo::load(&world)?;
    for root in 0..4 {
        let rows = program.from(root)?;
        println!("root {root}: {rows:?}");
        for (r, row) in rows.iter().enumerate() {
            let base = 100 * root as i32 + 2 * r as i32;
            assert_eq!(row, &[base, base + 1], "root {root}, rank {r}");
        }
    }
    println!("ok");
    Ok(())
}
