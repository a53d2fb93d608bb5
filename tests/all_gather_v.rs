//! End-to-end tests of all_gather_v over the whole world: every dtype, 1 to 8 ranks, ragged
//! counts (empty and full blocks included) that change every round, three rounds through one
//! signal, the rows past each count checked untouched and every count learned by every rank;
//! a bad count is an error naming the rank that set it. Groups: `tests/common/groups.rs`.

#[macro_use]
mod common;

use common::*;
use pld::{DType, Error, Opts, ReduceOp, World};

const ROUNDS: usize = 3;

fn case<T: TestElem>(nranks: usize, max_rows: usize, width: usize) {
    let ctx = format!("all_gather_v {} [{max_rows}, {width}] on {nranks} ranks", T::DTYPE);
    let world = World::local(nranks).unwrap();
    let host = world.host().unwrap();
    let local = host.window::<T>("local", [max_rows, width]).unwrap();
    let target = host.window::<T>("target", [nranks * max_rows, width]).unwrap();
    let counts = host.window::<i32>("counts", [nranks]).unwrap();
    let signal = host.signal("sig").unwrap();
    let block = max_rows * width;
    let untouched = |r: usize| inputs::<T>(ReduceOp::Sum, r + 100, 0, nranks * block);
    for k in 0..ROUNDS {
        let sent = |p: usize| (p * 5 + k * 3) % (max_rows + 1);
        for r in 0..nranks {
            host.write(&local, r, &inputs::<T>(ReduceOp::Sum, r, k, block)).unwrap();
            host.write(&target, r, &untouched(r)).unwrap();
            host.write(&counts, r, &(0..nranks).map(|p| if p == r { sent(r) as i32 } else { -1 }).collect::<Vec<_>>())
                .unwrap();
        }
        host.all_gather_v(&local, &target, &counts, Opts::new().signal(&signal)).unwrap();
        for r in 0..nranks {
            let mut expected = untouched(r);
            for p in 0..nranks {
                let rows = sent(p) * width;
                expected[p * block..p * block + rows].copy_from_slice(&inputs::<T>(ReduceOp::Sum, p, k, block)[..rows]);
            }
            assert_same(&host.read(&target, r).unwrap(), &expected, &format!("{ctx}, round {k}, rank {r}"));
            let learned: Vec<i32> = (0..nranks).map(|p| sent(p) as i32).collect();
            assert_eq!(host.read(&counts, r).unwrap(), learned, "{ctx}, round {k}: rank {r}'s counts");
        }
        assert_signal_clear(&host, &signal, &format!("{ctx}, round {k}"));
    }
}

#[test]
fn all_gather_v_every_dtype_and_rank_count() {
    let mut j = 0;
    for dtype in DType::ALL {
        for nranks in 1..=8 {
            // Blocks that travel as messages, and blocks past the message size (pulled).
            let (max_rows, width) = [(1, 1), (3, 7), (4, 300), (9, 2000)][j % 4];
            with_dtype!(dtype, case(nranks, max_rows, width));
            j += 1;
        }
    }
}

#[test]
fn a_count_past_the_block_is_an_error_naming_the_rank_and_the_value() {
    let world = World::local(3).unwrap();
    let host = world.host().unwrap();
    let local = host.window::<f32>("local", [2, 4]).unwrap();
    let target = host.window::<f32>("target", [6, 4]).unwrap();
    let counts = host.window::<i32>("counts", [3]).unwrap();
    for r in 0..3 {
        host.write(&counts, r, &[1, 1, if r == 2 { 3 } else { 1 }]).unwrap();
    }
    host.all_gather_v(&local, &target, &counts, Opts::new()).unwrap();
    let error = host.sync().unwrap_err();
    let Error::InvalidCount { rank, buffer, peer, value, capacity, .. } = &error else {
        panic!("expected InvalidCount, got {error}");
    };
    assert_eq!((*rank, buffer.as_str(), *peer, *value, *capacity), (2, "counts", 2, 3, 2), "{error}");
    let message = error.to_string();
    assert!(message.contains("all_gather_v") && message.contains("`counts`[2] = 3"), "{message}");
}

#[test]
fn wrong_shapes_are_errors_naming_the_window() {
    let world = World::local(2).unwrap();
    let host = world.host().unwrap();
    let local = host.window::<f32>("local", [2, 4]).unwrap();
    let target = host.window::<f32>("target", [3, 4]).unwrap();
    let counts = host.window::<i32>("counts", [2]).unwrap();
    let message = host.all_gather_v(&local, &target, &counts, Opts::new()).unwrap_err().to_string();
    assert!(message.contains("`target`") && message.contains("[4, 4]"), "{message}");
    let target = host.window::<f32>("target2", [4, 4]).unwrap();
    let few = host.window::<i32>("few", [1]).unwrap();
    let message = host.all_gather_v(&local, &target, &few, Opts::new()).unwrap_err().to_string();
    assert!(message.contains("`few`") && message.contains("i32 [2]"), "{message}");
}
