//! Soak: 100 000 random collectives on one World, shapes rotating (rank-count-compatible sizes
//! from empty to 64 Ki elements, every dtype, op, mode and root), each checked against the host
//! reference; windows are allocated per call and freed per host scope of 500 calls. At the end:
//! zero wrong elements (every check asserts), the window heap and the open file descriptors as
//! at the start, every signal zero (checked after each call).
//!
//! Not in the default test run: `cargo test --release --test soak -- --ignored --nocapture`;
//! `PLD_SOAK_CALLS` sets the number of calls (`.ci/run` runs a short setting).

#[macro_use]
mod common;

use common::checks::*;
use common::soak::{open_fds, rss_kib};
use pld::{AllReduceMode, DType, ReduceOp, World};

/// One random collective call on `host`, checked.
fn random_call(host: &pld::Host<'_>, values: &mut Values) -> &'static str {
    let n = host.nranks();
    let pick = |values: &mut Values, k: usize| (values.next() % k as u64) as usize;
    let dtype = DType::ALL[pick(values, DType::ALL.len())];
    let op = ReduceOp::ALL[pick(values, ReduceOp::ALL.len())];
    // Mostly small calls, some up to 64 Ki elements.
    let count = if pick(values, 8) == 0 { pick(values, 1 << 16) } else { pick(values, 512) };
    let seed = values.next();
    match pick(values, 10) {
        0 => {
            let mode = if pick(values, 2) == 0 { AllReduceMode::Mesh } else { AllReduceMode::Ring };
            with_dtype!(dtype, all_reduce(host, count, op, mode, seed));
            "all_reduce"
        }
        1 => {
            with_dtype!(dtype, reduce_scatter(host, count / n, op, seed));
            "reduce_scatter"
        }
        2 => {
            let root = pick(values, n);
            with_dtype!(dtype, broadcast(host, count, root, seed));
            "broadcast"
        }
        3 => {
            with_dtype!(dtype, all_gather(host, count / n, seed));
            "all_gather"
        }
        4 => {
            with_dtype!(dtype, all_to_all(host, count / (n * n), seed));
            "all_to_all"
        }
        5 => {
            with_dtype!(dtype, reduce(host, count, op, pick(values, n), seed));
            "reduce"
        }
        6 => {
            with_dtype!(dtype, gather(host, count / n, pick(values, n), seed));
            "gather"
        }
        7 => {
            with_dtype!(dtype, scatter(host, count / n, pick(values, n), seed));
            "scatter"
        }
        8 => {
            let max_rows = 1 + pick(values, 8);
            let counts: Vec<usize> = (0..n).map(|_| pick(values, max_rows + 1)).collect();
            with_dtype!(dtype, all_gather_v(host, max_rows, 1 + pick(values, 16), &counts, seed));
            "all_gather_v"
        }
        _ => {
            let max_rows = pick(values, 9);
            let counts: Vec<Vec<usize>> =
                (0..n).map(|_| (0..n).map(|_| pick(values, max_rows + 1)).collect()).collect();
            let width = 1 + pick(values, 16);
            with_dtype!(dtype, all_to_all_v(host, max_rows, width, &counts, seed));
            "all_to_all_v"
        }
    }
}

#[test]
#[ignore = "soak: cargo test --release --test soak -- --ignored (PLD_SOAK_CALLS calls, default 100000)"]
fn one_hundred_thousand_random_collectives_on_one_world() {
    let calls: usize = std::env::var("PLD_SOAK_CALLS").ok().and_then(|c| c.parse().ok()).unwrap_or(100_000);
    let world = World::local(4).unwrap();
    // Warm up once, so lazily created process state (the builtin library) is not counted.
    world.host().unwrap().barrier(pld::Opts::new()).unwrap();
    let (fds, live, rss) = (open_fds(), world.live_window_bytes(), rss_kib());
    let started = std::time::Instant::now();
    let mut values = Values(0x5eed);
    let mut per_collective = std::collections::BTreeMap::new();
    let mut done = 0;
    let mut rss_after_first_batch = None;
    while done < calls {
        let host = world.host().unwrap();
        for _ in 0..500.min(calls - done) {
            *per_collective.entry(random_call(&host, &mut values)).or_insert(0usize) += 1;
            done += 1;
        }
        host.finish().unwrap();
        assert_eq!(world.live_window_bytes(), live, "after {done} calls, every window is freed");
        rss_after_first_batch.get_or_insert_with(rss_kib);
    }
    let elapsed = started.elapsed();
    println!(
        "soak: {done} calls in {elapsed:.1?} ({per_collective:?}), 0 wrong elements; window heap {live} -> {} B, \
         open fds {fds} -> {}, RSS {rss} KiB at the start, {} KiB after the first 500 calls, {} KiB at the end",
        world.live_window_bytes(),
        open_fds(),
        rss_after_first_batch.unwrap_or(0),
        rss_kib()
    );
    assert_eq!(open_fds(), fds, "no file descriptor is left open");
}
