//! all_to_all_v on 3 ranks: rank r sends r + 1 rows (of up to 3) to everyone.
//!
//! `cargo run --example all_to_all_v`

const MAX_ROWS: usize = 3;

#[pld::program]
mod demo {
    use super::MAX_ROWS;

    /// Returns every rank's (recv_counts, first value of each received row).
    #[pld::host]
    pub fn exchange() -> Vec<(Vec<i32>, Vec<f64>)> {
        let n = world_size();
        let input = window!(f64, [n * MAX_ROWS, 2]);
        let target = window!(f64, [n * MAX_ROWS, 2]);
        let send = window!(i32, [n]);
        let recv = window!(i32, [n]);
        for r in ranks() {
            let rows: Vec<f64> = (0..n * MAX_ROWS * 2).map(|i| (100 * r + i / 2) as f64).collect();
            stage_in!(input, r, rows);
            stage_in!(send, r, vec![r as i32 + 1; n]);
        }
        all_to_all_v!(input, target, send, recv, nranks = 3);
        let mut results = Vec::new();
        for r in ranks() {
            let (mut counts, mut rows) = (vec![0; n], vec![0.0; n * MAX_ROWS * 2]);
            stage_out!(recv, r, counts);
            stage_out!(target, r, rows);
            let firsts = rows.chunks(2).map(|row| row[0]).collect();
            results.push((counts, firsts));
        }
        results
    }
}

fn main() -> pld::Result<()> {
    let world = pld::World::local(3)?;
    for (r, (counts, firsts)) in demo::load(&world)?.exchange()?.iter().enumerate() {
        println!("rank {r}: recv_counts {counts:?}, rows {firsts:?}");
        assert_eq!(counts, &[1, 2, 3], "rank {r}");
        for p in 0..3 {
            for row in 0..MAX_ROWS {
                // Rank p's rows for r start at its row r * MAX_ROWS; rows past the count stay 0.
                let expected = if row < p + 1 { (100 * p + r * MAX_ROWS + row) as f64 } else { 0.0 };
                assert_eq!(firsts[p * MAX_ROWS + row], expected, "rank {r}, block {p}, row {row}");
            }
        }
    }
    println!("ok");
    Ok(())
}
