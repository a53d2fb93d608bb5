//! gather on 4 ranks to every root in turn: row p of the root's target is rank p's local row;
//! the others' targets stay as they were.
//!
//! `cargo run --example gather`

#[pld::program]
mod demo {
    #[pld::host]
    pub fn to(root: usize) -> Vec<Vec<i32>> {
        let local = window!(i32, [2]);
        let rows = window!(i32, [4, 2]);
        for r in ranks() {
            stage_in!(local, r, [r as i32, 10 * r as i32]);
            stage_in!(rows, r, [-1; 8]);
        }
        gather!(local, rows, root = root);
        let mut out = Vec::new();
        for r in ranks() {
            let mut row = vec![0; 8];
            stage_out!(rows, r, row);
            out.push(row);
        }
        out
    }
}

fn main() -> pld::Result<()> {
    let world = pld::World::local(4)?;
    let program = demo::load(&world)?;
    for root in 0..4 {
        let rows = program.to(root)?;
        println!("root {root}: {:?}", rows[root]);
        for (r, row) in rows.iter().enumerate() {
            let expected = if r == root { vec![0, 0, 1, 10, 2, 20, 3, 30] } else { vec![-1; 8] };
            assert_eq!(row, &expected, "root {root}, rank {r}");
        }
    }
    println!("ok");
    Ok(())
}
