//! all_reduce in both modes and with every op, on 4 ranks.
//!
//! `cargo run --example all_reduce`

#[pld::program]
mod demo {
    /// Rank r contributes `[r + 1, 2 (r + 1)]`; returns rank 0's result.
    #[pld::host]
    pub fn reduce(op: &str) -> Vec<i64> {
        let data = window!(i64, [2]);
        for r in ranks() {
            stage_in!(data, r, [r as i64 + 1, 2 * (r as i64 + 1)]);
        }
        match op {
            "sum" => all_reduce!(data, op = sum),
            "max" => all_reduce!(data, op = max, mode = ring),
            "min" => all_reduce!(data, op = min, mode = ring, nranks = 4),
            _ => all_reduce!(data, op = prod),
        }
        let mut out = vec![0; 2];
        stage_out!(data, 0, out);
        out
    }
}

fn main() -> pld::Result<()> {
    let world = pld::World::local(4)?;
    let program = demo::load(&world)?;
    for (op, expected) in [("sum", [10, 20]), ("max", [4, 8]), ("min", [1, 2]), ("prod", [24, 384])] {
        let got = program.reduce(op)?;
        println!("all_reduce op = {op}: {got:?}");
        assert_eq!(got, expected, "all_reduce op = {op}");
    }
    println!("ok");
    Ok(())
}
