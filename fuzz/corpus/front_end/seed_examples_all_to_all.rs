//! all_to_all on 3 ranks: row p of rank r's target is row r of rank p's input.
//!
//! `cargo run --example all_to_all`

#[pld::program]
mod demo {
    #[pld::host]
    pub fn transpose() -> Vec<Vec<u32>> {
        let input = window!(u32, [world_size(), 1]);
        let target = window!(u32, [world_size(), 1]);
        for r in ranks() {
            let row: Vec<u32> = (0..world_size()).map(|p| (10 * r + p) as u32).collect();
            stage_in!(input, r, row);
        }
        all_to_all!(input, target);
        let mut rows = Vec::new();
        for r in ranks() {
            let mut row = vec![0; world_size()];
            stage_out!(target, r, row);
            rows.push(row);
        }
        rows
    }
}

fn main() -> pld::Result<()> {
    let world = pld::World::local(3)?;
    for (r, row) in demo::load(&world)?.transpose()?.iter().enumerate() {
        println!("rank {r}: {row:?}");
        let expected: Vec<u32> = (0..3).map(|p| (10 * p + r) as u32).collect();
        assert_eq!(row, &expected, "rank {r}");
    }
    println!("ok");
    Ok(())
}
