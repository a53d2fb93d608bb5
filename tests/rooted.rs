//! End-to-end tests of the rooted collectives (reduce, gather, scatter) over the whole world:
//! every dtype, every op, 1 to 8 ranks, roots first, middle and last, three rounds through one
//! signal, exact patterns, and every buffer the contract leaves alone checked unchanged (the
//! non-roots' targets, the non-roots' scatter input). Groups: `tests/common/groups.rs`.

#[macro_use]
mod common;

use common::*;
use pld::{DType, Reduce, ReduceOp, Rooted, World};

const ROUNDS: usize = 3;

/// First, middle and last rank.
fn roots(nranks: usize) -> Vec<usize> {
    let mut roots = vec![0, nranks / 2, nranks - 1];
    roots.dedup();
    roots
}

fn reduce_case<T: TestElem>(nranks: usize, count: usize, op: ReduceOp, root: usize) {
    let ctx = format!("reduce {op} {} x{count} to root {root} of {nranks} ranks", T::DTYPE);
    let world = World::local(nranks).unwrap();
    let host = world.host().unwrap();
    let data = host.window::<T>("data", [count]).unwrap();
    let signal = host.signal("sig").unwrap();
    for k in 0..ROUNDS {
        for r in 0..nranks {
            host.write(&data, r, &inputs::<T>(op, r, k, count)).unwrap();
        }
        host.reduce(&data, Reduce::root(root as i64).op(op).signal(&signal)).unwrap();
        let expected = reduced::<T>(op, nranks, k, count);
        for r in 0..nranks {
            let found = host.read(&data, r).unwrap();
            if r == root {
                assert_same(&found, &expected, &format!("{ctx}, round {k}, the root"));
            } else {
                assert_same(&found, &inputs::<T>(op, r, k, count), &format!("{ctx}, round {k}, rank {r} (untouched)"));
            }
        }
        assert_signal_clear(&host, &signal, &format!("{ctx}, round {k}"));
    }
}

#[test]
fn reduce_every_op_dtype_rank_count_and_root() {
    let mut j = 0;
    for op in ReduceOp::ALL {
        for dtype in DType::ALL {
            for nranks in ALL_RANKS {
                // Sizes through the message path, the tile boundary and the pulled path.
                let count = [1, 7, 255, 4097, 65537][j % 5];
                let root = roots(nranks)[j % roots(nranks).len()];
                with_dtype!(dtype, reduce_case(nranks, count, op, root));
                j += 1;
            }
        }
    }
}

#[test]
fn reduce_large_buffers_from_every_root() {
    for root in roots(4) {
        reduce_case::<f32>(4, (1 << 20) + 3, ReduceOp::Sum, root);
    }
    reduce_case::<pld::bf16>(3, 300_001, ReduceOp::Max, 1);
}

/// What a non-root's gather target holds throughout.
fn untouched<T: TestElem>(len: usize) -> Vec<T> {
    (0..len).map(|i| T::from_i64((i % 5) as i64 + 1)).collect()
}

fn gather_case<T: TestElem>(nranks: usize, count: usize, root: usize) {
    let ctx = format!("gather {} x{count} to root {root} of {nranks} ranks", T::DTYPE);
    let world = World::local(nranks).unwrap();
    let host = world.host().unwrap();
    let local = host.window::<T>("local", [count]).unwrap();
    let target = host.window::<T>("target", [nranks, count]).unwrap();
    let signal = host.signal("sig").unwrap();
    for k in 0..ROUNDS {
        for r in 0..nranks {
            host.write(&local, r, &inputs::<T>(ReduceOp::Sum, r, k, count)).unwrap();
            host.write(&target, r, &untouched::<T>(nranks * count)).unwrap();
        }
        host.gather(&local, &target, Rooted::root(root as i64).signal(&signal)).unwrap();
        let expected: Vec<T> = (0..nranks).flat_map(|p| inputs::<T>(ReduceOp::Sum, p, k, count)).collect();
        for r in 0..nranks {
            let found = host.read(&target, r).unwrap();
            if r == root {
                assert_same(&found, &expected, &format!("{ctx}, round {k}, the root"));
            } else {
                assert_same(&found, &untouched::<T>(nranks * count), &format!("{ctx}, round {k}, rank {r}"));
            }
            let local_now = host.read(&local, r).unwrap();
            assert_same(&local_now, &inputs::<T>(ReduceOp::Sum, r, k, count), &format!("{ctx}: rank {r}'s local"));
        }
        assert_signal_clear(&host, &signal, &format!("{ctx}, round {k}"));
    }
}

#[test]
fn gather_every_dtype_rank_count_and_root() {
    let mut j = 0;
    for dtype in DType::ALL {
        for nranks in ALL_RANKS {
            for root in roots(nranks) {
                let count = [1, 3, 1000, 5000, 70_000][j % 5];
                with_dtype!(dtype, gather_case(nranks, count, root));
                j += 1;
            }
        }
    }
}

fn scatter_case<T: TestElem>(nranks: usize, count: usize, root: usize) {
    let ctx = format!("scatter {} x{count} from root {root} of {nranks} ranks", T::DTYPE);
    let world = World::local(nranks).unwrap();
    let host = world.host().unwrap();
    let input = host.window::<T>("input", [nranks, count]).unwrap();
    let target = host.window::<T>("target", [count]).unwrap();
    let signal = host.signal("sig").unwrap();
    for k in 0..ROUNDS {
        let rows: Vec<T> = (0..nranks).flat_map(|p| inputs::<T>(ReduceOp::Sum, p, k, count)).collect();
        for r in 0..nranks {
            // Only the root's input is read: the others hold something else.
            let input_of_r = if r == root { rows.clone() } else { untouched::<T>(nranks * count) };
            host.write(&input, r, &input_of_r).unwrap();
            host.write(&target, r, &untouched::<T>(count)).unwrap();
        }
        host.scatter(&input, &target, Rooted::root(root as i64).signal(&signal)).unwrap();
        for r in 0..nranks {
            let found = host.read(&target, r).unwrap();
            assert_same(&found, &inputs::<T>(ReduceOp::Sum, r, k, count), &format!("{ctx}, round {k}, rank {r}"));
            let input_now = host.read(&input, r).unwrap();
            let expected_input = if r == root { rows.clone() } else { untouched::<T>(nranks * count) };
            assert_same(&input_now, &expected_input, &format!("{ctx}, round {k}: rank {r}'s input"));
        }
        assert_signal_clear(&host, &signal, &format!("{ctx}, round {k}"));
    }
}

#[test]
fn scatter_every_dtype_rank_count_and_root() {
    let mut j = 0;
    for dtype in DType::ALL {
        for nranks in ALL_RANKS {
            for root in roots(nranks) {
                let count = [1, 3, 1000, 5000, 70_000][j % 5];
                with_dtype!(dtype, scatter_case(nranks, count, root));
                j += 1;
            }
        }
    }
}

/// Per-rank hosts (`World::spmd`): each host runs its rank's calls itself; the results are the
/// same as under one host.
#[test]
fn per_rank_hosts_run_the_rooted_collectives() {
    let world = World::local(4).unwrap();
    for count in [5, 20_000] {
        let results = world
            .spmd(|host| {
                let r = host.rank().unwrap();
                let data = host.window::<i64>("data", [count])?;
                let local = host.window::<i64>("local", [count])?;
                let rows = host.window::<i64>("rows", [4, count])?;
                host.write(&data, r, &vec![r as i64 + 1; count])?;
                host.reduce(&data, Reduce::root(2))?;
                host.write(&local, r, &vec![r as i64 * 10; count])?;
                host.gather(&local, &rows, Rooted::root(1))?;
                let gathered = host.read(&rows, r)?;
                host.scatter(&rows, &local, Rooted::root(1))?;
                host.sync()?;
                Ok((host.read(&data, r)?, gathered, host.read(&local, r)?))
            })
            .unwrap();
        for (r, result) in results.into_iter().enumerate() {
            let (reduced, gathered, scattered) = result.unwrap();
            assert_eq!(reduced, vec![if r == 2 { 10 } else { r as i64 + 1 }; count], "rank {r}");
            if r == 1 {
                let expected: Vec<i64> = (0..4).flat_map(|p| vec![p * 10; count]).collect();
                assert_eq!(gathered, expected, "the gather's root");
            }
            assert_eq!(scattered, vec![r as i64 * 10; count], "rank {r}'s scattered row");
        }
    }
}

#[test]
fn a_root_out_of_range_or_a_wrong_shape_is_an_error_naming_the_call() {
    let world = World::local(3).unwrap();
    let host = world.host().unwrap();
    let data = host.window::<f32>("data", [4]).unwrap();
    let rows = host.window::<f32>("rows", [2, 4]).unwrap();
    let message = host.reduce(&data, Reduce::root(3)).unwrap_err().to_string();
    assert!(message.contains("reduce") && message.contains("root 3"), "{message}");
    let message = host.gather(&data, &rows, Rooted::root(0)).unwrap_err().to_string();
    assert!(message.contains("gather") && message.contains("`rows`") && message.contains("3 x 4"), "{message}");
    let message = host.scatter(&rows, &data, Rooted::root(-1)).unwrap_err().to_string();
    assert!(message.contains("scatter") && message.contains("root -1"), "{message}");
    let message = host.scatter(&rows, &data, Rooted::root(0)).unwrap_err().to_string();
    assert!(message.contains("scatter") && message.contains("`rows`"), "{message}");
    // Nothing ran: the world is still good.
    host.reduce(&data, Reduce::root(2)).unwrap();
    host.sync().unwrap();
}
