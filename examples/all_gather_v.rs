//! all_gather_v on 4 ranks: rank r sends r + 1 rows (of up to 4); every rank gets every rank's
//! rows in its block and learns every count; rows past a count stay as they were.
//!
//! `cargo run --example all_gather_v`

#[pld::program]
mod demo {
    #[pld::host]
    pub fn ragged() -> Vec<(Vec<i32>, Vec<i32>)> {
        let local = window!(i32, [4, 2]);
        let target = window!(i32, [16, 2]);
        let counts = window!(i32, [4]);
        for r in ranks() {
            let rows: Vec<i32> = (0..8).map(|k| 100 * r as i32 + k).collect();
            stage_in!(local, r, rows);
            stage_in!(target, r, [-1; 32]);
            let mut mine = vec![0; 4];
            mine[r] = r as i32 + 1; // only the own entry is read
            stage_in!(counts, r, mine);
        }
        all_gather_v!(local, target, counts);
        let mut out = Vec::new();
        for r in ranks() {
            let (mut rows, mut seen) = (vec![0; 32], vec![0; 4]);
            stage_out!(target, r, rows);
            stage_out!(counts, r, seen);
            out.push((rows, seen));
        }
        out
    }
}

fn main() -> pld::Result<()> {
    let world = pld::World::local(4)?;
    for (r, (rows, counts)) in demo::load(&world)?.ragged()?.into_iter().enumerate() {
        assert_eq!(counts, vec![1, 2, 3, 4], "rank {r}");
        for p in 0..4 {
            let block = &rows[p * 8..(p + 1) * 8];
            let sent = 2 * (p + 1);
            let expected: Vec<i32> = (0..8).map(|k| if k < sent { 100 * p as i32 + k as i32 } else { -1 }).collect();
            assert_eq!(block, expected.as_slice(), "rank {r}, block {p}");
        }
        if r == 0 {
            println!("rank 0: counts {counts:?}, block 1 {:?}", &rows[8..16]);
        }
    }
    println!("ok");
    Ok(())
}
