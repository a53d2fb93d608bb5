//! Property tests: every collective against a direct host reference, over random rank counts
//! (1-8), element counts (0-70000), ops, dtypes, modes, roots, all_to_all_v counts and input
//! values. Values are random small integers (powers of two for products), so every reduction
//! order gives identical bits and the reference is exact in every dtype; the signal must be all
//! zero after every call. Each case is a sequence of calls on one world (each in a host scope of
//! its own), at least `2 * LL_DEEP_SLOTS + 1` long and mostly small, so every LL message slot is
//! reused more than twice with different sizes, dtypes and ops. `PROPTEST_CASES` sets the cases
//! per property (default 12).

#[macro_use]
mod common;

use common::checks::*;
use pld::{AllReduceMode, DType, ReduceOp, World};
use proptest::prelude::*;

fn config() -> ProptestConfig {
    let cases = std::env::var("PROPTEST_CASES").ok().and_then(|c| c.parse().ok()).unwrap_or(12);
    ProptestConfig { cases, ..ProptestConfig::default() }
}

fn world(nranks: usize) -> World {
    World::builder(nranks).window_bytes(64 << 20).local().unwrap()
}

/// Calls per case: enough that each LL slot is used at least twice, also in the deepest layout
/// (`pld_model::LL_DEEP_SLOTS` slots per sender, where the ranks outnumber the cores: the cases
/// of 3-8 ranks on a 2-core machine; the 64 MiB windows above have room for it).
const CALLS: std::ops::RangeInclusive<usize> = {
    let slots = pld_model::LL_DEEP_SLOTS as usize;
    2 * slots + 1..=2 * slots + 8
};

/// An element count: mostly small (the LL and one-shot paths), sometimes up to 70 000.
fn count() -> impl Strategy<Value = usize> {
    prop_oneof![6 => 0usize..=600, 1 => 0usize..=70_000]
}

/// A sequence of calls of one collective on one world: (count, op, dtype, seed) each.
fn calls() -> impl Strategy<Value = Vec<(usize, ReduceOp, DType, u64)>> {
    proptest::collection::vec((count(), op(), dtype(), any::<u64>()), CALLS)
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
    fn all_reduce_matches_the_reference(n in 1usize..=8, calls in calls(), rings in any::<u32>()) {
        let world = world(n);
        for (i, (count, op, dtype, seed)) in calls.into_iter().enumerate() {
            let mode = if rings >> (i % 32) & 1 == 1 { AllReduceMode::Ring } else { AllReduceMode::Mesh };
            with_dtype!(dtype, all_reduce(&world.host().unwrap(), count, op, mode, seed));
        }
    }

    #[test]
    fn reduce_scatter_matches_the_reference(n in 1usize..=8, calls in calls()) {
        let world = world(n);
        for (count, op, dtype, seed) in calls {
            with_dtype!(dtype, reduce_scatter(&world.host().unwrap(), count / n, op, seed));
        }
    }

    #[test]
    fn broadcast_copies_the_root(n in 1usize..=8, calls in calls(), roots in any::<u64>()) {
        let world = world(n);
        for (i, (count, _, dtype, seed)) in calls.into_iter().enumerate() {
            let root = (roots.rotate_left(i as u32 * 3) % n as u64) as usize;
            with_dtype!(dtype, broadcast(&world.host().unwrap(), count, root, seed));
        }
    }

    #[test]
    fn reduce_leaves_the_result_at_the_root_only(n in 1usize..=8, calls in calls(), roots in any::<u64>()) {
        let world = world(n);
        for (i, (count, op, dtype, seed)) in calls.into_iter().enumerate() {
            let root = (roots.rotate_left(i as u32 * 3) % n as u64) as usize;
            with_dtype!(dtype, reduce(&world.host().unwrap(), count, op, root, seed));
        }
    }

    #[test]
    fn gather_and_scatter_move_the_rows_of_the_root(n in 1usize..=8, calls in calls(), roots in any::<u64>()) {
        let world = world(n);
        for (i, (count, _, dtype, seed)) in calls.into_iter().enumerate() {
            let root = (roots.rotate_left(i as u32 * 5) % n as u64) as usize;
            with_dtype!(dtype, gather(&world.host().unwrap(), count / n, root, seed));
            with_dtype!(dtype, scatter(&world.host().unwrap(), count / n, (root + 1) % n, seed));
        }
    }

    #[test]
    fn all_gather_v_moves_the_counted_rows(n in 1usize..=8, calls in calls(), shapes in any::<u64>()) {
        let world = world(n);
        for (i, (count, _, dtype, seed)) in calls.into_iter().enumerate() {
            let max_rows = 1 + count % 9;
            let counts: Vec<usize> =
                (0..n).map(|s| (shapes.rotate_left((i * 7 + s) as u32) % (max_rows as u64 + 1)) as usize).collect();
            with_dtype!(dtype, all_gather_v(&world.host().unwrap(), max_rows, 1 + count % 5, &counts, seed));
        }
    }

    #[test]
    fn all_gather_concatenates_in_rank_order(n in 1usize..=8, calls in calls()) {
        let world = world(n);
        for (count, _, dtype, seed) in calls {
            with_dtype!(dtype, all_gather(&world.host().unwrap(), count / n, seed));
        }
    }

    #[test]
    fn all_to_all_transposes_the_rows(n in 1usize..=8, calls in calls()) {
        let world = world(n);
        for (count, _, dtype, seed) in calls {
            with_dtype!(dtype, all_to_all(&world.host().unwrap(), count / (n * n).max(1), seed));
        }
    }

    #[test]
    fn all_to_all_v_moves_exactly_the_counted_rows(
        (n, max_rows, counts) in (1usize..=8, 0usize..=16).prop_flat_map(|(n, max_rows)| {
            let matrix = proptest::collection::vec(proptest::collection::vec(0..=max_rows, n), n);
            (Just(n), Just(max_rows), proptest::collection::vec(matrix, CALLS))
        }),
        width in 1usize..=64, dtype in dtype(), seed: u64,
    ) {
        let world = world(n);
        for (i, counts) in counts.iter().enumerate() {
            with_dtype!(dtype, all_to_all_v(&world.host().unwrap(), max_rows, width, counts, seed ^ i as u64));
        }
    }
}
