//! End-to-end tests of the seven collectives on the local launcher: every op and dtype, rank
//! counts {1, 2, 3, 4, 5, 8} (all_reduce, with `mode = auto`, 1 to 8; avg and premul_sum 1 to 8), element counts {1, 7, 255, 256, 257, 4097, 65537, 2^20}, roots
//! {0, middle, last}; three back-to-back rounds with distinct inputs on one signal, which must
//! be all zero after every call. The full cross product is sampled (cycling the axes against
//! each other) so every axis value is covered while the suite stays quick on 2 cores.

#[macro_use]
mod common;

use common::*;
use pld::{AllReduce, AllReduceMode, Broadcast, DType, Opts, ReduceOp, ReduceScatter, World};

const ROUNDS: usize = 3;

fn all_reduce_case<T: TestElem>(nranks: usize, count: usize, mode: AllReduceMode, op: ReduceOp) {
    all_reduce_rounds::<T>(&World::local(nranks).unwrap(), count, mode, op);
}

/// Three rounds of distinct inputs through one signal, checked after each.
fn all_reduce_rounds<T: TestElem>(world: &World, count: usize, mode: AllReduceMode, op: ReduceOp) {
    let nranks = world.nranks();
    let ctx = format!(
        "all_reduce {mode:?} {op} {} x{count} on {nranks} ranks (two-shot from {} B)",
        T::DTYPE,
        world.two_shot_bytes()
    );
    let host = world.host().unwrap();
    let data = host.window::<T>("data", [count]).unwrap();
    let signal = host.signal("sig").unwrap();
    for k in 0..ROUNDS {
        for r in 0..nranks {
            host.write(&data, r, &inputs::<T>(op, r, k, count)).unwrap();
        }
        host.all_reduce(&data, AllReduce::mesh().mode(mode).op(op).signal(&signal)).unwrap();
        let expected = reduced::<T>(op, nranks, k, count);
        for r in 0..nranks {
            assert_same(&host.read(&data, r).unwrap(), &expected, &format!("{ctx}, round {k}, rank {r}"));
        }
        assert_signal_clear(&host, &signal, &format!("{ctx}, round {k}"));
    }
}

#[test]
fn all_reduce_every_mode_op_and_dtype() {
    let mut j = 0;
    for mode in AllReduceMode::ALL {
        for op in ReduceOp::ALL {
            for dtype in DType::ALL {
                let (nranks, count) = (ALL_RANKS[j % ALL_RANKS.len()], COUNTS[j % (COUNTS.len() - 1)]);
                with_dtype!(dtype, all_reduce_case(nranks, count, mode, op));
                j += 1;
            }
        }
    }
}

/// Two-shot at every size (one-shot at none), over every op and dtype and the rank counts.
#[test]
fn two_shot_all_reduce_every_op_and_dtype() {
    let mut j = 0;
    for op in ReduceOp::ALL {
        for dtype in DType::ALL {
            let (nranks, count) = (RANKS[j % RANKS.len()], COUNTS[(j + 3) % (COUNTS.len() - 1)]);
            with_dtype!(dtype, two_shot_case(nranks, count, op));
            j += 1;
        }
    }
}

fn two_shot_case<T: TestElem>(nranks: usize, count: usize, op: ReduceOp) {
    let world = World::builder(nranks).two_shot_bytes(0).local().unwrap();
    all_reduce_rounds::<T>(&world, count, AllReduceMode::Mesh, op);
}

#[test]
fn all_reduce_a_million_elements() {
    all_reduce_case::<f32>(4, 1 << 20, AllReduceMode::Mesh, ReduceOp::Sum);
    all_reduce_case::<f32>(3, 1 << 20, AllReduceMode::Ring, ReduceOp::Sum);
    all_reduce_case::<pld::bf16>(8, 1 << 20, AllReduceMode::Ring, ReduceOp::Max);
    all_reduce_case::<i64>(5, 1 << 20, AllReduceMode::Mesh, ReduceOp::Prod);
}

/// Ring chunking: counts smaller than, equal to and not divisible by the rank count.
#[test]
fn ring_takes_any_element_count() {
    for nranks in 1..=8 {
        for count in [1, 2, 3, 5, 7, 8, 9, 15, 16, 17] {
            for op in [ReduceOp::Sum, ReduceOp::Min] {
                let world = World::local(nranks).unwrap();
                let host = world.host().unwrap();
                let data = host.window::<i32>("data", [count]).unwrap();
                for r in 0..nranks {
                    host.write(&data, r, &inputs::<i32>(op, r, 0, count)).unwrap();
                }
                host.all_reduce(&data, AllReduce::ring().op(op)).unwrap();
                let expected = reduced::<i32>(op, nranks, 0, count);
                for r in 0..nranks {
                    let ctx = format!("ring {op} x{count} on {nranks} ranks, rank {r}");
                    assert_same(&host.read(&data, r).unwrap(), &expected, &ctx);
                }
            }
        }
    }
}

fn reduce_scatter_case<T: TestElem>(nranks: usize, row: usize, op: ReduceOp) {
    let ctx = format!("reduce_scatter {op} {} [{nranks}, {row}]", T::DTYPE);
    let world = World::local(nranks).unwrap();
    let host = world.host().unwrap();
    let data = host.window::<T>("data", [nranks, row]).unwrap();
    let signal = host.signal("sig").unwrap();
    for k in 0..ROUNDS {
        for r in 0..nranks {
            host.write(&data, r, &inputs::<T>(op, r, k, nranks * row)).unwrap();
        }
        host.reduce_scatter(&data, ReduceScatter::new().op(op).signal(&signal)).unwrap();
        let expected = reduced::<T>(op, nranks, k, nranks * row);
        for r in 0..nranks {
            let found = host.read(&data, r).unwrap();
            let mine = r * row..(r + 1) * row;
            assert_same(&found[mine.clone()], &expected[mine.clone()], &format!("{ctx}, round {k}, rank {r}"));
            // Rows other than the rank's own are left as they were.
            let own = inputs::<T>(op, r, k, nranks * row);
            for p in (0..nranks).filter(|&p| p != r) {
                let other = p * row..(p + 1) * row;
                assert_same(&found[other.clone()], &own[other], &format!("{ctx}, round {k}, rank {r}, row {p}"));
            }
        }
        assert_signal_clear(&host, &signal, &format!("{ctx}, round {k}"));
    }
}

#[test]
fn reduce_scatter_every_op_and_dtype() {
    let mut j = 0;
    for op in ReduceOp::ALL {
        for dtype in DType::ALL {
            let (nranks, row) = (RANKS[j % RANKS.len()], COUNTS[j % (COUNTS.len() - 1)]);
            with_dtype!(dtype, reduce_scatter_case(nranks, row, op));
            j += 1;
        }
    }
    reduce_scatter_case::<f32>(2, 1 << 20, ReduceOp::Sum);
}

fn broadcast_case<T: TestElem>(nranks: usize, count: usize, root: usize) {
    let ctx = format!("broadcast {} x{count} root {root} on {nranks} ranks", T::DTYPE);
    let world = World::local(nranks).unwrap();
    let host = world.host().unwrap();
    let data = host.window::<T>("data", [count]).unwrap();
    let signal = host.signal("sig").unwrap();
    for k in 0..ROUNDS {
        for r in 0..nranks {
            host.write(&data, r, &inputs::<T>(ReduceOp::Sum, r, k, count)).unwrap();
        }
        host.broadcast(&data, Broadcast::root(root as i64).signal(&signal)).unwrap();
        let expected = inputs::<T>(ReduceOp::Sum, root, k, count);
        for r in 0..nranks {
            assert_same(&host.read(&data, r).unwrap(), &expected, &format!("{ctx}, round {k}, rank {r}"));
        }
        assert_signal_clear(&host, &signal, &format!("{ctx}, round {k}"));
    }
}

#[test]
fn broadcast_from_first_middle_and_last_root() {
    let mut j = 0;
    for nranks in RANKS {
        let mut roots = vec![0, nranks / 2, nranks - 1];
        roots.dedup();
        for root in roots {
            let (dtype, count) = (DType::ALL[j % DType::ALL.len()], COUNTS[j % (COUNTS.len() - 1)]);
            with_dtype!(dtype, broadcast_case(nranks, count, root));
            j += 1;
        }
    }
    broadcast_case::<f32>(4, 1 << 20, 2);
}

fn all_gather_case<T: TestElem>(nranks: usize, count: usize) {
    let ctx = format!("all_gather {} x{count} on {nranks} ranks", T::DTYPE);
    let world = World::local(nranks).unwrap();
    let host = world.host().unwrap();
    let local = host.window::<T>("local", [1, count]).unwrap();
    let target = host.window::<T>("target", [nranks, count]).unwrap();
    let signal = host.signal("sig").unwrap();
    for k in 0..ROUNDS {
        for r in 0..nranks {
            host.write(&local, r, &inputs::<T>(ReduceOp::Sum, r, k, count)).unwrap();
        }
        host.all_gather(&local, &target, Opts::new().signal(&signal)).unwrap();
        let expected: Vec<T> = (0..nranks).flat_map(|p| inputs::<T>(ReduceOp::Sum, p, k, count)).collect();
        for r in 0..nranks {
            // Every gathered row on every rank, not only row 0.
            assert_same(&host.read(&target, r).unwrap(), &expected, &format!("{ctx}, round {k}, rank {r}"));
        }
        assert_signal_clear(&host, &signal, &format!("{ctx}, round {k}"));
    }
}

#[test]
fn all_gather_checks_every_row_on_every_rank() {
    for (j, count) in COUNTS[..COUNTS.len() - 1].iter().enumerate() {
        for (i, nranks) in RANKS.into_iter().enumerate() {
            with_dtype!(DType::ALL[(i + j) % DType::ALL.len()], all_gather_case(nranks, *count));
        }
    }
    all_gather_case::<f32>(2, 1 << 20);
}

fn all_to_all_case<T: TestElem>(nranks: usize, row: usize) {
    let ctx = format!("all_to_all {} [{nranks}, {row}]", T::DTYPE);
    let world = World::local(nranks).unwrap();
    let host = world.host().unwrap();
    let input = host.window::<T>("input", [nranks, row]).unwrap();
    let target = host.window::<T>("target", [nranks, row]).unwrap();
    let signal = host.signal("sig").unwrap();
    for k in 0..ROUNDS {
        for r in 0..nranks {
            host.write(&input, r, &inputs::<T>(ReduceOp::Sum, r, k, nranks * row)).unwrap();
        }
        host.all_to_all(&input, &target, Opts::new().signal(&signal)).unwrap();
        for r in 0..nranks {
            let expected: Vec<T> = (0..nranks)
                .flat_map(|p| inputs::<T>(ReduceOp::Sum, p, k, nranks * row)[r * row..(r + 1) * row].to_vec())
                .collect();
            assert_same(&host.read(&target, r).unwrap(), &expected, &format!("{ctx}, round {k}, rank {r}"));
        }
        assert_signal_clear(&host, &signal, &format!("{ctx}, round {k}"));
    }
}

#[test]
fn all_to_all_every_rank_count() {
    for (j, row) in COUNTS[..COUNTS.len() - 2].iter().enumerate() {
        for (i, nranks) in RANKS.into_iter().enumerate() {
            with_dtype!(DType::ALL[(i + 3 * j) % DType::ALL.len()], all_to_all_case(nranks, *row));
        }
    }
    all_to_all_case::<u8>(2, 1 << 20);
    all_to_all_case::<f64>(8, 65537);
}

fn all_to_all_v_case<T: TestElem>(nranks: usize, max_rows: usize, row: usize) {
    let ctx = format!("all_to_all_v {} max_rows {max_rows} row {row} on {nranks} ranks", T::DTYPE);
    let world = World::local(nranks).unwrap();
    let host = world.host().unwrap();
    let shape = [nranks * max_rows, row];
    let input = host.window::<T>("input", shape).unwrap();
    let target = host.window::<T>("target", shape).unwrap();
    let send = host.window::<i32>("send_counts", [nranks]).unwrap();
    let recv = host.window::<i32>("recv_counts", [nranks]).unwrap();
    let signal = host.signal("sig").unwrap();
    // Rows this rank sends to d in round k: covers 0 and max_rows.
    let count = |r: usize, d: usize, k: usize| (r + 2 * d + k) % (max_rows + 1);
    let sentinel = T::from_i64(99);
    let block = max_rows * row;
    for k in 0..ROUNDS {
        for r in 0..nranks {
            host.write(&input, r, &inputs::<T>(ReduceOp::Sum, r, k, nranks * block)).unwrap();
            host.write(&target, r, &vec![sentinel; nranks * block]).unwrap();
            let counts: Vec<i32> = (0..nranks).map(|d| count(r, d, k) as i32).collect();
            host.write(&send, r, &counts).unwrap();
        }
        host.all_to_all_v(&input, &target, &send, &recv, Opts::new().signal(&signal)).unwrap();
        for r in 0..nranks {
            let found = host.read(&target, r).unwrap();
            let received = host.read(&recv, r).unwrap();
            for p in 0..nranks {
                let n = count(p, r, k);
                assert_eq!(received[p], n as i32, "{ctx}, round {k}: recv_counts[{p}] on rank {r}");
                let sent = &inputs::<T>(ReduceOp::Sum, p, k, nranks * block)[r * block..r * block + n * row];
                let got = &found[p * block..(p + 1) * block];
                assert_same(&got[..n * row], sent, &format!("{ctx}, round {k}, rank {r}, block {p}"));
                // Only the counted rows move: the rest of the block is untouched.
                assert!(got[n * row..].iter().all(|&x| x == sentinel), "{ctx}, round {k}: rows past the count moved");
            }
        }
        assert_signal_clear(&host, &signal, &format!("{ctx}, round {k}"));
    }
}

#[test]
fn all_to_all_v_moves_only_the_counted_rows() {
    for (i, nranks) in RANKS.into_iter().enumerate() {
        for (j, row) in [1, 7, 257].into_iter().enumerate() {
            with_dtype!(DType::ALL[(i + j) % DType::ALL.len()], all_to_all_v_case(nranks, 3, row));
        }
    }
    all_to_all_v_case::<f32>(4, 4, 4097);
}

#[test]
fn barrier_rounds_leave_the_signal_clear() {
    for nranks in RANKS {
        let world = World::local(nranks).unwrap();
        let host = world.host().unwrap();
        let signal = host.signal("sig").unwrap();
        for k in 0..ROUNDS {
            host.barrier(Opts::new().signal(&signal)).unwrap();
            assert_signal_clear(&host, &signal, &format!("barrier on {nranks} ranks, round {k}"));
        }
        // Many barriers queued back to back, synchronised once.
        for _ in 0..50 {
            host.barrier(Opts::new().signal(&signal)).unwrap();
        }
        host.sync().unwrap();
        assert_signal_clear(&host, &signal, &format!("50 barriers on {nranks} ranks"));
    }
}

/// One signal shared by different collectives back to back, queued without a sync between.
#[test]
fn one_signal_serves_every_collective_back_to_back() {
    let nranks = 4;
    let world = World::local(nranks).unwrap();
    let host = world.host().unwrap();
    let data = host.window::<f32>("data", [nranks, 33]).unwrap();
    let other = host.window::<f32>("other", [nranks, 33]).unwrap();
    let local = host.window::<f32>("local", [33]).unwrap();
    let signal = host.signal("sig").unwrap();
    for r in 0..nranks {
        host.write(&data, r, &vec![r as f32; nranks * 33]).unwrap();
        host.write(&local, r, &[10.0 * r as f32; 33]).unwrap();
    }
    for round in 0..ROUNDS {
        host.all_reduce(&data, AllReduce::ring().signal(&signal)).unwrap(); // every element 6 * 4^round
        host.barrier(Opts::new().signal(&signal)).unwrap();
        host.all_reduce(&data, AllReduce::mesh().op(ReduceOp::Max).signal(&signal)).unwrap();
        host.broadcast(&data, Broadcast::root(3).signal(&signal)).unwrap();
        host.all_to_all(&data, &other, Opts::new().signal(&signal)).unwrap();
        host.all_gather(&local, &data, Opts::new().signal(&signal)).unwrap();
        host.reduce_scatter(&other, ReduceScatter::new().signal(&signal)).unwrap();
        let expected_other = 4.0 * 6.0 * 4f32.powi(round as i32);
        for r in 0..nranks {
            let gathered = host.read(&data, r).unwrap();
            assert!((0..nranks).all(|p| { gathered[p * 33..(p + 1) * 33].iter().all(|&x| x == 10.0 * p as f32) }));
            assert_eq!(host.read(&other, r).unwrap()[r * 33], expected_other, "round {round}, rank {r}");
        }
        assert_signal_clear(&host, &signal, &format!("mixed round {round}"));
        for r in 0..nranks {
            host.write(&data, r, &vec![(r as f32) * 4f32.powi(round as i32 + 1); nranks * 33]).unwrap();
        }
    }
}

/// A collective in a 100-iteration loop, each call allocating its own signal: memory does not
/// grow, and the results stay right.
#[test]
fn a_loop_of_calls_does_not_grow_memory() {
    let nranks = 4;
    let world = World::local(nranks).unwrap();
    let host = world.host().unwrap();
    let data = host.window::<i64>("data", [1000]).unwrap();
    host.sync().unwrap();
    let before = world.live_window_bytes();
    for it in 0..100 {
        for r in 0..nranks {
            host.write(&data, r, &vec![(r + it) as i64; 1000]).unwrap();
        }
        host.all_reduce(&data, AllReduce::ring().op(ReduceOp::Max)).unwrap();
        host.barrier(Opts::new()).unwrap();
        if it % 25 == 0 {
            assert_eq!(host.read(&data, it % nranks).unwrap(), vec![(nranks - 1 + it) as i64; 1000]);
        }
    }
    host.sync().unwrap();
    assert_eq!(world.live_window_bytes(), before, "per-call signals must be freed");
}

/// Hosts of one rank each (`World::spmd`, as under MPI) run their calls themselves when the rank
/// is idle, or queue them: the same results either way, for LL messages (reused slots over many
/// calls), one-shot, two-shot and ring, with other collectives in between.
#[test]
fn per_rank_hosts_get_the_same_results_inline_or_queued() {
    for inline in [true, false] {
        for nranks in [2, 3, 4] {
            let world = World::builder(nranks).inline(inline).local().unwrap();
            let results = world
                .spmd(|host| {
                    let r = host.rank().expect("a host of one rank");
                    let ctx = format!("{nranks} ranks, inline {inline}, rank {r}");
                    let op = ReduceOp::Sum;
                    for (count, mode) in [
                        (5, AllReduceMode::Mesh),
                        (3000, AllReduceMode::Mesh),
                        (20_000, AllReduceMode::Mesh),
                        (7, AllReduceMode::Ring),
                    ] {
                        let data = host.window::<f32>("data", [count])?;
                        // More calls than LL slots, a barrier between some of them.
                        for k in 0..20 {
                            host.write(&data, r, &inputs::<f32>(op, r, k, count))?;
                            host.all_reduce(&data, AllReduce::mesh().mode(mode).op(op))?;
                            if k % 3 == 0 {
                                host.barrier(Opts::new())?;
                            }
                            let what = format!("{ctx}, {mode:?} x{count}, call {k}");
                            assert_same(&host.read(&data, r)?, &reduced::<f32>(op, nranks, k, count), &what);
                        }
                    }
                    host.sync()
                })
                .unwrap();
            for result in results {
                result.unwrap();
            }
        }
    }
}

/// Copies from 4 MiB up stream with non-temporal stores (`pld_copy`): odd sizes and offsets
/// that are not multiples of 16 or 64 must still land exactly.
#[test]
fn large_copies_land_exactly_at_odd_sizes() {
    let big = (4 << 20) + 13;
    all_gather_case::<u8>(2, big);
    all_to_all_case::<u8>(2, big);
    broadcast_case::<u8>(3, big + 2, 1);
    two_shot_case::<f32>(2, (3 << 20) + 5, ReduceOp::Sum);
}

/// Rank r's input for `op = avg` at element i in round k: its mean over the ranks is exact in
/// every dtype (n * m for signed types, n * m + n - 1 for unsigned ones, m turning with i and k;
/// m is 0 or 1 in i8, so every partial sum of 8 ranks fits; fp8 means are 1 or 2, so every
/// input, at most 7 away, is exact too).
fn avg_input<T: TestElem>(n: usize, r: usize, i: usize, k: usize) -> T {
    let base = avg_base::<T>(n, i, k);
    let v = if T::SIGNED { base + 2 * r as i64 - (n as i64 - 1) } else { base + 2 * r as i64 };
    T::from_i64(v)
}

fn avg_base<T: TestElem>(n: usize, i: usize, k: usize) -> i64 {
    let m = if T::DTYPE == DType::I8 { (i + k) % 2 } else { (i + k) % 3 };
    if T::DTYPE.is_fp8() { ((i + k) % 2 + 1) as i64 } else { (n * m) as i64 }
}

fn avg_mean<T: TestElem>(n: usize, i: usize, k: usize) -> T {
    let base = avg_base::<T>(n, i, k);
    T::from_i64(if T::SIGNED { base } else { base + n as i64 - 1 })
}

/// `op = avg` in every all_reduce mode, reduce_scatter and reduce (non-roots untouched), three
/// rounds of distinct inputs; then over a group of the world's ranks, which divides by its own
/// size.
fn avg_case<T: TestElem>(nranks: usize, count: usize) {
    let world = World::local(nranks).unwrap();
    let host = world.host().unwrap();
    let data = host.window::<T>("data", [count]).unwrap();
    let rows = host.window::<T>("rows", [nranks, count]).unwrap();
    let input = |r: usize, k: usize| (0..count).map(|i| avg_input::<T>(nranks, r, i, k)).collect::<Vec<_>>();
    for k in 0..ROUNDS {
        let ctx = format!("avg {} x{count} on {nranks} ranks, round {k}", T::DTYPE);
        let mean: Vec<T> = (0..count).map(|i| avg_mean::<T>(nranks, i, k)).collect();
        for mode in AllReduceMode::ALL {
            for r in 0..nranks {
                host.write(&data, r, &input(r, k)).unwrap();
            }
            host.all_reduce(&data, AllReduce::mesh().mode(mode).op(ReduceOp::Avg)).unwrap();
            for r in 0..nranks {
                assert_same(&host.read(&data, r).unwrap(), &mean, &format!("{ctx}: all_reduce {mode:?}, rank {r}"));
            }
        }
        for r in 0..nranks {
            let all: Vec<T> = (0..nranks * count).map(|i| avg_input::<T>(nranks, r, i % count, k)).collect();
            host.write(&rows, r, &all).unwrap();
        }
        host.reduce_scatter(&rows, ReduceScatter::new().op(ReduceOp::Avg)).unwrap();
        for r in 0..nranks {
            let found = host.read(&rows, r).unwrap();
            assert_same(&found[r * count..(r + 1) * count], &mean, &format!("{ctx}: reduce_scatter, rank {r}"));
        }
        let root = (k + 1) % nranks;
        for r in 0..nranks {
            host.write(&data, r, &input(r, k)).unwrap();
        }
        host.reduce(&data, pld::Reduce::root(root as i64).op(ReduceOp::Avg)).unwrap();
        for r in 0..nranks {
            let expected = if r == root { mean.clone() } else { input(r, k) };
            assert_same(&host.read(&data, r).unwrap(), &expected, &format!("{ctx}: reduce to {root}, rank {r}"));
        }
    }
    // The odd ranks, last first: their mean is exact for a group of their size too.
    let members: Vec<usize> = (0..nranks).rev().filter(|r| r % 2 == 1).collect();
    if members.is_empty() {
        return;
    }
    let g = members.len();
    let group = host.group(&members).unwrap();
    for r in 0..nranks {
        let value = match members.iter().position(|&m| m == r) {
            Some(i) => (0..count).map(|e| avg_input::<T>(g, i, e, 0)).collect(),
            None => vec![T::from_i64(3); count],
        };
        host.write(&data, r, &value).unwrap();
    }
    host.all_reduce(&data, AllReduce::mesh().op(ReduceOp::Avg).group(&group)).unwrap();
    let mean: Vec<T> = (0..count).map(|i| avg_mean::<T>(g, i, 0)).collect();
    for r in 0..nranks {
        let expected = if members.contains(&r) { mean.clone() } else { vec![T::from_i64(3); count] };
        assert_same(&host.read(&data, r).unwrap(), &expected, &format!("avg over group {members:?}, rank {r}"));
    }
}

#[test]
fn avg_is_the_sum_divided_once_by_the_rank_count() {
    for (j, dtype) in DType::ALL.into_iter().enumerate() {
        for nranks in ALL_RANKS {
            with_dtype!(dtype, avg_case(nranks, [5, 3000, 70_000][(j + nranks) % 3]));
        }
    }
}

#[test]
fn integer_avg_truncates_toward_zero_and_a_group_divides_by_its_size() {
    let world = World::local(4).unwrap();
    let host = world.host().unwrap();
    let data = host.window::<i32>("data", [2]).unwrap();
    for (r, v) in [[-3, 4], [-2, 1], [0, 0], [0, 0]].iter().enumerate() {
        host.write(&data, r, v).unwrap();
    }
    // Over {0, 1}: (-3 + -2) / 2 = -2.5 -> -2, (4 + 1) / 2 = 2.5 -> 2.
    let pair = host.group(&[0, 1]).unwrap();
    host.all_reduce(&data, AllReduce::mesh().op(ReduceOp::Avg).group(&pair)).unwrap();
    assert_eq!(host.read(&data, 0).unwrap(), vec![-2, 2]);
    assert_eq!(host.read(&data, 1).unwrap(), vec![-2, 2]);
    assert_eq!(host.read(&data, 2).unwrap(), vec![0, 0], "outside the group");
    // A float mean over a group of 3 divides by 3 once.
    let floats = host.window::<f64>("floats", [1]).unwrap();
    for r in 0..4 {
        host.write(&floats, r, &[r as f64]).unwrap();
    }
    let three = host.group(&[1, 2, 3]).unwrap();
    host.reduce(&floats, pld::Reduce::root(0).op(ReduceOp::Avg).group(&three)).unwrap();
    assert_eq!(host.read(&floats, 1).unwrap(), vec![(1.0 + 2.0 + 3.0) / 3.0], "the group's root");
    assert_eq!(host.read(&floats, 2).unwrap(), vec![2.0], "a non-root keeps its input");
    assert_eq!(host.read(&floats, 0).unwrap(), vec![0.0], "outside the group");
}

#[test]
fn avg_and_sum_on_different_ranks_are_a_mismatch() {
    let world = World::local(2).unwrap();
    let results = world.spmd(|host| {
        let data = host.window::<f32>("data", [4])?;
        let op = if host.rank() == Some(0) { ReduceOp::Avg } else { ReduceOp::Sum };
        host.all_reduce(&data, AllReduce::mesh().op(op))?;
        host.sync()
    });
    let message = match results {
        Ok(per_rank) => per_rank.into_iter().find_map(Result::err).expect("an error").to_string(),
        Err(e) => e.to_string(),
    };
    assert!(message.contains("op = avg") && message.contains("op = sum"), "{message}");
}

/// `premul_sum`: each rank's own scalar (per-rank hosts), exact values (powers of two times
/// small integers), every dtype, three rounds of distinct inputs and scalars; reduce_scatter's
/// other rows and reduce's non-roots come back exactly as they were.
fn premul_case<T: TestElem>(nranks: usize, count: usize) {
    let world = World::local(nranks).unwrap();
    for round in 0..ROUNDS {
        premul_round::<T>(&world, count, round);
    }
}

fn premul_round<T: TestElem>(world: &World, count: usize, round: usize) {
    let nranks = world.nranks();
    let scalar = |r: usize| [2.0, -1.0, 4.0, 1.0, 3.0, -2.0, 1.0, 2.0][(r + round) % 8];
    let input = |r: usize, i: usize| T::from_i64(((r + i + round) % 4) as i64);
    let expected: Vec<T> = (0..count)
        .map(|i| {
            let scaled: Vec<T> = (0..nranks).map(|r| T::premultiply(input(r, i), scalar(r))).collect();
            T::reduce_in_rank_order(ReduceOp::Sum, &scaled).expect("at least one rank")
        })
        .collect();
    let results = world
        .spmd(|host| {
            let r = host.rank().unwrap();
            let mine: Vec<T> = (0..count).map(|i| input(r, i)).collect();
            let data = host.window::<T>("data", [count])?;
            host.write(&data, r, &mine)?;
            host.all_reduce(&data, AllReduce::mesh().premul_sum(scalar(r)))?;
            let all_reduced = host.read(&data, r)?;
            host.write(&data, r, &mine)?;
            host.reduce(&data, pld::Reduce::root(((nranks - 1 + round) % nranks) as i64).premul_sum(scalar(r)))?;
            let reduced = host.read(&data, r)?;
            let rows = host.window::<T>("rows", [nranks, count])?;
            let all_rows: Vec<T> = (0..nranks).flat_map(|_| mine.clone()).collect();
            host.write(&rows, r, &all_rows)?;
            host.reduce_scatter(&rows, ReduceScatter::new().premul_sum(scalar(r)))?;
            Ok((mine, all_reduced, reduced, host.read(&rows, r)?))
        })
        .unwrap();
    for (r, result) in results.into_iter().enumerate() {
        let (mine, all_reduced, reduced, rows) = result.unwrap();
        let ctx = format!("premul_sum {} x{count} on {nranks} ranks, round {round}, rank {r}", T::DTYPE);
        assert_same(&all_reduced, &expected, &format!("{ctx}: all_reduce"));
        let root = (nranks - 1 + round) % nranks;
        assert_same(&reduced, if r == root { &expected } else { &mine }, &format!("{ctx}: reduce"));
        for p in 0..nranks {
            let row = &rows[p * count..(p + 1) * count];
            assert_same(row, if p == r { &expected } else { &mine }, &format!("{ctx}: reduce_scatter row {p}"));
        }
    }
}

#[test]
fn premul_sum_scales_each_rank_by_its_own_scalar() {
    for (j, dtype) in DType::ALL.into_iter().enumerate() {
        for nranks in ALL_RANKS {
            with_dtype!(dtype, premul_case(nranks, [3, 2000, 40_000][(j + nranks) % 3]));
        }
    }
}

#[test]
fn an_integer_target_takes_an_integer_scalar_only() {
    let world = World::local(2).unwrap();
    let host = world.host().unwrap();
    let data = host.window::<i32>("data", [4]).unwrap();
    let message = host.all_reduce(&data, AllReduce::mesh().premul_sum(0.5)).unwrap_err().to_string();
    assert!(message.contains("premul_sum") && message.contains("0.5") && message.contains("i32"), "{message}");
    host.all_reduce(&data, AllReduce::mesh().premul_sum(3.0)).unwrap();
    host.sync().unwrap();
}

/// fp8 reductions accumulate in f32 and round once, after avg's division: 16 + 1 + 1 in e4m3
/// is 18 (one rounding of the exact sum; rounding every step gives 16 + 1 -> 16 (ties to
/// even), 16 + 1 -> 16), and the mean of 6, 6, 6 in e5m2 is 6 (their sum, 18, is not an e5m2
/// value: rounding it first gives 16 / 3 or 20 / 3). Every mode, reduce, reduce_scatter.
#[test]
fn fp8_reductions_round_once_at_the_end() {
    fn case<T: TestElem>(inputs: [f32; 3], op: ReduceOp, expected: f32) {
        let from = |v: f32| T::from_i64(v as i64);
        let world = World::local(3).unwrap();
        let host = world.host().unwrap();
        let data = host.window::<T>("data", [5]).unwrap();
        let rows = host.window::<T>("rows", [3, 5]).unwrap();
        let want = vec![from(expected); 5];
        let column: Vec<T> = inputs.iter().map(|&v| from(v)).collect();
        assert_eq!(T::reduce_in_rank_order(op, &column), Some(from(expected)), "the host reference");
        let fill = |w: &pld::Window<'_, T>, len: usize| {
            for (r, &v) in inputs.iter().enumerate() {
                host.write(w, r, &vec![from(v); len]).unwrap();
            }
        };
        for mode in AllReduceMode::ALL {
            fill(&data, 5);
            host.all_reduce(&data, AllReduce::mesh().mode(mode).op(op)).unwrap();
            for r in 0..3 {
                assert_same(&host.read(&data, r).unwrap(), &want, &format!("{op} {mode:?} {}, rank {r}", T::DTYPE));
            }
        }
        fill(&data, 5);
        host.reduce(&data, pld::Reduce::root(1).op(op)).unwrap();
        assert_same(&host.read(&data, 1).unwrap(), &want, &format!("reduce {op} {}", T::DTYPE));
        fill(&rows, 15);
        host.reduce_scatter(&rows, ReduceScatter::new().op(op)).unwrap();
        for r in 0..3 {
            let found = host.read(&rows, r).unwrap();
            assert_same(&found[5 * r..5 * r + 5], &want, &format!("reduce_scatter {op} {}, rank {r}", T::DTYPE));
        }
    }
    case::<pld::f8e4m3>([16.0, 1.0, 1.0], ReduceOp::Sum, 18.0);
    case::<pld::f8e5m2>([6.0, 6.0, 6.0], ReduceOp::Avg, 6.0);
}
