//! reduce_scatter on 4 ranks: rank r ends with the sum of everyone's row r.
//!
//! `cargo run --example reduce_scatter`

#[pld::program]
mod demo {
    #[pld::host]
    pub fn scatter() -> Vec<Vec<f32>> {
        let data = window!(f32, [world_size(), 2]);
        for r in ranks() {
            // Row p of rank r holds (p, r).
            let rows: Vec<f32> = (0..world_size()).flat_map(|p| [p as f32, r as f32]).collect();
            stage_in!(data, r, rows);
        }
        reduce_scatter!(data, op = sum);
        let mut mine = Vec::new();
        for r in ranks() {
            let mut all = vec![0.0; world_size() * 2];
            stage_out!(data, r, all);
            mine.push(all[2 * r..2 * r + 2].to_vec());
        }
        mine
    }
}

fn main() -> pld::Result<()> {
    let world = pld::World::local(4)?;
    for (r, row) in demo::load(&world)?.scatter()?.iter().enumerate() {
        println!("rank {r}: row {r} = {row:?}");
        assert_eq!(row, &[4.0 * r as f32, 6.0], "rank {r}"); // 4 ranks x p, and 0 + 1 + 2 + 3
    }
    println!("ok");
    Ok(())
}
