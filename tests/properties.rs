//! Property tests: every collective against a direct host reference, over random rank counts
//! (1-8), element counts (0-70000), ops, dtypes, modes, roots, all_to_all_v counts and input
//! values. Values are random small integers (powers of two for products), so every reduction
//! order gives identical bits and the reference is exact in every dtype; the signal must be all
//! zero after every call. `PROPTEST_CASES` sets the cases per property (default 24).

#[macro_use]
mod common;

use common::checks::*;
use pld::{AllReduceMode, DType, ReduceOp, World};
use proptest::prelude::*;

fn config() -> ProptestConfig {
    let cases = std::env::var("PROPTEST_CASES").ok().and_then(|c| c.parse().ok()).unwrap_or(24);
    ProptestConfig { cases, ..ProptestConfig::default() }
}

fn world(nranks: usize) -> World {
    World::builder(nranks).window_bytes(64 << 20).local().unwrap()
}

fn dtype() -> impl Strategy<Value = DType> {
    proptest::sample::select(DType::ALL.to_vec())
}

fn op() -> impl Strategy<Value = ReduceOp> {
    proptest::sample::select(ReduceOp::ALL.to_vec())
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn all_reduce_matches_the_reference(
        n in 1usize..=8, count in 0usize..=70_000, op in op(), dtype in dtype(), ring: bool, seed: u64,
    ) {
        let mode = if ring { AllReduceMode::Ring } else { AllReduceMode::Mesh };
        with_dtype!(dtype, all_reduce(&world(n).host().unwrap(), count, op, mode, seed));
    }

    #[test]
    fn reduce_scatter_matches_the_reference(
        n in 1usize..=8, count in 0usize..=70_000, op in op(), dtype in dtype(), seed: u64,
    ) {
        with_dtype!(dtype, reduce_scatter(&world(n).host().unwrap(), count / n, op, seed));
    }

    #[test]
    fn broadcast_copies_the_root(
        (n, root) in (1usize..=8).prop_flat_map(|n| (Just(n), 0..n)), count in 0usize..=70_000, dtype in dtype(),
        seed: u64,
    ) {
        with_dtype!(dtype, broadcast(&world(n).host().unwrap(), count, root, seed));
    }

    #[test]
    fn all_gather_concatenates_in_rank_order(
        n in 1usize..=8, count in 0usize..=70_000, dtype in dtype(), seed: u64,
    ) {
        with_dtype!(dtype, all_gather(&world(n).host().unwrap(), count / n, seed));
    }

    #[test]
    fn all_to_all_transposes_the_rows(n in 1usize..=8, count in 0usize..=70_000, dtype in dtype(), seed: u64) {
        with_dtype!(dtype, all_to_all(&world(n).host().unwrap(), count / (n * n).max(1), seed));
    }

    #[test]
    fn all_to_all_v_moves_exactly_the_counted_rows(
        (n, max_rows, counts) in (1usize..=8, 0usize..=16).prop_flat_map(|(n, max_rows)| {
            let counts = proptest::collection::vec(proptest::collection::vec(0..=max_rows, n), n);
            (Just(n), Just(max_rows), counts)
        }),
        width in 1usize..=64, dtype in dtype(), seed: u64,
    ) {
        with_dtype!(dtype, all_to_all_v(&world(n).host().unwrap(), max_rows, width, &counts, seed));
    }
}
