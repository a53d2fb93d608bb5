//! all_gather on 3 ranks: every rank ends with every rank's row.
//!
//! `cargo run --example all_gather`

#[pld::program]
mod demo {
    #[pld::host]
    pub fn gather() -> Vec<Vec<u8>> {
        let local = window!(u8, [4]);
        let target = window!(u8, [world_size(), 4]);
        for r in ranks() {
            stage_in!(local, r, [r as u8 * 10; 4]);
        }
        all_gather!(local, target);
        let mut rows = Vec::new();
        for r in ranks() {
            let mut row = vec![0; world_size() * 4];
            stage_out!(target, r, row);
            rows.push(row);
        }
        rows
    }
}

fn main() -> pld::Result<()> {
    let world = pld::World::local(3)?;
    let rows = demo::load(&world)?.gather()?;
    let expected: Vec<u8> = (0..3).flat_map(|p| [p * 10; 4]).collect();
    for (r, row) in rows.iter().enumerate() {
        println!("rank {r}: {row:?}");
        assert_eq!(row, &expected, "rank {r}");
    }
    println!("ok");
    Ok(())
}
