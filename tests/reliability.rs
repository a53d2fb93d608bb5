//! Reliability of collectives across ranks that take their own paths ([`World::spmd`], the
//! way every process runs the host function under MPI): mismatched calls are caught before data
//! moves and reported on every rank naming both sides; a rank that never arrives is named in a
//! hang report with every rank's last completed call; a panicking or failing rank ends every
//! rank's call with an error well before the deadline; the world is usable afterwards.

use std::time::{Duration, Instant};

use pld::{AllReduce, Broadcast, Error, Opts, ReduceOp, ReduceScatter, World};

/// A deadline far beyond what the failures below take to be reported: they must not wait for it.
const LONG: Duration = Duration::from_secs(60);

fn world(nranks: usize, timeout: Duration) -> World {
    World::builder(nranks).timeout(timeout).local().unwrap()
}

/// The world still runs a correct collective after a failed section.
fn assert_usable(world: &World) {
    let host = world.host().unwrap();
    let data = host.window::<f32>("after", [64]).unwrap();
    for r in host.ranks() {
        host.write(&data, r, &[r as f32; 64]).unwrap();
    }
    host.all_reduce(&data, AllReduce::mesh()).unwrap();
    let n = world.nranks() as f32;
    assert_eq!(host.read(&data, 0).unwrap(), vec![n * (n - 1.0) / 2.0; 64]);
}

#[test]
fn a_different_op_on_one_rank_is_an_error_on_every_rank_naming_both_sides() {
    let world = world(3, LONG);
    let started = Instant::now();
    let results = world
        .spmd(|host| {
            let data = host.window::<f32>("data", [1024])?;
            let op = if host.rank() == Some(2) { ReduceOp::Max } else { ReduceOp::Sum };
            host.all_reduce(&data, AllReduce::mesh().op(op))?;
            host.sync()
        })
        .unwrap();
    assert!(started.elapsed() < LONG / 4, "reported at once, not at the deadline");
    for (rank, result) in results.iter().enumerate() {
        let err = result.as_ref().unwrap_err();
        let message = err.to_string();
        assert!(matches!(err, Error::MismatchedCall { .. }), "rank {rank}: {message}");
        assert!(message.contains("op = max") && message.contains("op = sum"), "rank {rank}: {message}");
        assert!(message.contains("count = 1024") && message.contains("call #1"), "rank {rank}: {message}");
        if let Error::MismatchedCall { rank: finder, peer, ranks, .. } = err {
            assert!(*finder == 2 || *peer == 2, "rank 2 is one of the two sides: {message}");
            // Every rank's flight recorder; the two sides' hold the mismatched call, with the op
            // each gave it (the third may not have started it yet).
            assert_eq!(ranks.len(), 3, "{message}");
            for r in [*finder, *peer] {
                let report = &ranks[r];
                let op = if r == 2 { "max" } else { "sum" };
                let call = format!("its last calls: #1 all_reduce(mode = mesh, op = {op}, dtype = f32) at tests/");
                assert!(report.starts_with(&format!("rank {r} is in ")), "{message}");
                assert!(report.contains(&call), "rank {r}: {message}");
            }
        }
    }
    // Each message names both sides in full (a rank stopped by another's failure reports that
    // root cause, which does too).
    for result in &results {
        let message = result.as_ref().unwrap_err().to_string();
        assert!(message.contains("called all_reduce(mode = mesh, op = max, dtype = f32, count = 1024)"), "{message}");
        assert!(message.contains("called all_reduce(mode = mesh, op = sum, dtype = f32, count = 1024)"), "{message}");
    }
    assert_usable(&world);
}

#[test]
fn every_kind_of_disagreement_is_caught() {
    type Call = fn(&pld::Host<'_>, bool) -> pld::Result<()>;
    let cases: [(&str, Call); 11] = [
        // Views of one allocation, so the call (not the allocation) is what disagrees.
        ("count", |h, odd| h.all_reduce(&h.alloc("d", 36)?.view::<f32>([if odd { 8 } else { 9 }])?, AllReduce::mesh())),
        // One side small enough for LL messages, the other two-shot: different protocols, and
        // still a mismatch report rather than a timeout.
        ("count and algorithm", |h, odd| {
            h.all_reduce(&h.alloc("d", 4 << 16)?.view::<f32>([if odd { 8 } else { 1 << 16 }])?, AllReduce::mesh())
        }),
        ("dtype", |h, odd| {
            if odd {
                h.all_reduce(&h.window::<f32>("d", [8])?, AllReduce::mesh())
            } else {
                h.all_reduce(&h.window::<i32>("d", [8])?, AllReduce::mesh())
            }
        }),
        ("mode", |h, odd| {
            h.all_reduce(&h.window::<f32>("d", [8])?, if odd { AllReduce::ring() } else { AllReduce::mesh() })
        }),
        ("root", |h, odd| h.broadcast(&h.window::<u8>("d", [8])?, Broadcast::root(if odd { 1 } else { 0 }))),
        // Rows small enough for LL messages on one side, pulled between rounds on the others
        // (the same allocations everywhere, viewed with different row lengths).
        ("all_gather rows and protocol", |h, odd| {
            let (n, row) = (h.nranks(), if odd { 8 } else { 4096 });
            let (d, t) = (h.alloc("d", 4 * 4096)?, h.alloc("t", 4 * 4096 * n)?);
            h.all_gather(&d.view::<f32>([row])?, &t.view::<f32>([n, row])?, Opts::new())
        }),
        ("reduce_scatter rows and protocol", |h, odd| {
            let (n, row) = (h.nranks(), if odd { 8 } else { 4096 });
            h.reduce_scatter(&h.alloc("d", 4 * 4096 * n)?.view::<f32>([n, row])?, ReduceScatter::new())
        }),
        ("all_to_all_v blocks and protocol", |h, odd| {
            let (n, cap) = (h.nranks(), if odd { 2 } else { 1024 });
            let (d, t) = (h.alloc("d", 4 * 1024 * n)?, h.alloc("t", 4 * 1024 * n)?);
            let (send, recv) = (h.window::<i32>("send", [n])?, h.window::<i32>("recv", [n])?);
            let (d, t) = (d.view::<f32>([n * cap, 1])?, t.view::<f32>([n * cap, 1])?);
            h.all_to_all_v(&d, &t, &send, &recv, Opts::new())
        }),
        ("all_to_all rows and protocol", |h, odd| {
            let (n, row) = (h.nranks(), if odd { 8 } else { 4096 });
            let (d, t) = (h.alloc("d", 4 * 4096 * n)?, h.alloc("t", 4 * 4096 * n)?);
            h.all_to_all(&d.view::<f32>([n, row])?, &t.view::<f32>([n, row])?, Opts::new())
        }),
        ("collective", |h, odd| {
            let d = h.window::<f32>("d", [8])?;
            if odd { h.barrier(Opts::new()) } else { h.all_reduce(&d, AllReduce::mesh()) }
        }),
        ("call count", |h, odd| {
            let d = h.window::<f32>("d", [8])?;
            let signal = h.signal("s")?;
            if odd {
                h.barrier(Opts::new().signal(&signal))?;
            }
            h.all_reduce(&d, AllReduce::mesh().signal(&signal))
        }),
    ];
    let world = world(4, LONG);
    for (what, call) in cases {
        let results = world.spmd(|host| call(host, host.rank() == Some(1)).and_then(|()| host.sync())).unwrap();
        for (rank, result) in results.iter().enumerate() {
            let Err(err) = result else { panic!("{what}: rank {rank} succeeded") };
            // Every case allocates alike but "collective", whose calls allocate differently
            // named signals: that one may be caught when allocating, the others by the call.
            assert!(
                matches!(err, Error::MismatchedCall { .. })
                    || (what == "collective" && matches!(err, Error::MismatchedAllocation { .. })),
                "{what}: rank {rank}: {err}"
            );
        }
    }
    assert_usable(&world);
}

/// A small all_reduce waits for LL messages: when a peer never sends its message, the report
/// names that peer and pld's small-message inbox, in words, not an internal window's name.
#[test]
fn a_missing_small_message_is_named_in_words() {
    let world = world(2, Duration::from_millis(300));
    let results = world
        .spmd(|host| {
            if host.rank() == Some(0) {
                let data = host.window::<f32>("data", [4])?;
                host.all_reduce(&data, AllReduce::mesh())?;
            } else {
                let _ = host.window::<f32>("data", [4])?; // allocates, then never calls
            }
            host.sync()
        })
        .unwrap();
    let err = results[0].as_ref().unwrap_err();
    let message = err.to_string();
    assert!(matches!(err, Error::Timeout { missing, .. } if missing.as_ref() == [1]), "{message}");
    assert!(message.contains("small-message inbox"), "{message}");
    assert!(!message.contains("__ll"), "no internal names: {message}");
}

#[test]
fn a_rank_that_never_arrives_is_named_with_every_rank_s_last_call() {
    let timeout = Duration::from_millis(400);
    let world = world(3, timeout);
    let started = Instant::now();
    let results = world
        .spmd(|host| {
            let data = host.window::<f32>("data", [16])?;
            host.all_reduce(&data, AllReduce::mesh())?;
            if host.rank() != Some(1) {
                host.barrier(Opts::new())?; // rank 1 returns instead
            }
            host.sync()
        })
        .unwrap();
    // Rank 1 did everything it was asked, but the section fails as a whole.
    for (rank, result) in results.iter().enumerate() {
        let err = result.as_ref().unwrap_err();
        let message = err.to_string();
        let Error::Timeout { missing, ranks, rank: reporter, .. } = err else { panic!("rank {rank}: {message}") };
        assert!(missing.contains(&1), "rank {rank}: {message}");
        assert!(ranks[1].starts_with("rank 1 is in no collective or kernel, last completed all_reduce"), "{message}");
        assert!(ranks[1].contains("(call #1)"), "{message}");
        assert!(message.contains("barrier() at tests/reliability.rs"), "{message}");
        // The rank that timed out reports itself in the barrier, after the all_reduce.
        let own = &ranks[*reporter];
        assert!(own.starts_with(&format!("rank {reporter} is in barrier() at tests/reliability.rs")), "{message}");
        assert!(own.contains("(call #2), waiting on rank 1 for "), "{message}");
        assert!(own.contains(" ms, last completed all_reduce"), "{message}");
        // Every rank's flight recorder: rank 1's ends with its all_reduce done, the others' with
        // the barrier still waiting on rank 1.
        for (r, report) in ranks.iter().enumerate() {
            assert!(report.contains("; its last calls: #1 all_reduce(mode = mesh"), "rank {r}: {message}");
            let barrier = format!("#2 barrier() at {}:", file!());
            match r {
                1 => assert!(report.ends_with(": done") && !report.contains(&barrier), "{message}"),
                // The reporter still waits; the other may have timed out too by now.
                r if r == *reporter => assert!(report.contains(&barrier) && report.ends_with(" ms"), "{message}"),
                _ => assert!(report.contains(&barrier), "{message}"),
            }
        }
    }
    assert!(started.elapsed() < timeout * 10, "took {:?}", started.elapsed());
    assert_usable(&world);
}

#[test]
fn a_panicking_rank_ends_every_rank_s_call_long_before_the_deadline() {
    let world = world(4, LONG);
    let started = Instant::now();
    let results = world
        .spmd(|host| {
            let data = host.window::<f64>("data", [4096])?;
            host.all_reduce(&data, AllReduce::ring())?;
            if host.rank() == Some(3) {
                panic!("rank 3 lost its input");
            }
            host.all_reduce(&data, AllReduce::ring())?;
            host.sync()
        })
        .unwrap();
    assert!(started.elapsed() < LONG / 4, "took {:?}", started.elapsed());
    for (rank, result) in results.iter().enumerate() {
        let err = result.as_ref().unwrap_err();
        assert!(
            matches!(err, Error::RankPanicked { rank: 3, message, .. } if message == "rank 3 lost its input"),
            "rank {rank}: {err}"
        );
    }
    assert_usable(&world);
}

#[test]
fn an_error_returned_by_one_rank_stops_the_others() {
    let world = world(2, LONG);
    let started = Instant::now();
    let results = world
        .spmd(|host| {
            let data = host.window::<u32>("data", [8])?;
            let root = if host.rank() == Some(0) { 5 } else { 0 }; // out of range on rank 0 only
            host.broadcast(&data, Broadcast::root(root))?;
            host.sync()
        })
        .unwrap();
    assert!(started.elapsed() < LONG / 4, "took {:?}", started.elapsed());
    for result in &results {
        assert!(matches!(result, Err(Error::RootOutOfRange { root: 5, .. })), "{result:?}");
    }
    assert_usable(&world);
}

#[test]
fn spmd_hosts_share_their_windows_and_drive_only_their_rank() {
    let world = world(4, LONG);
    let sums = world
        .spmd(|host| {
            let rank = host.rank().unwrap();
            assert_eq!(host.ranks(), rank..rank + 1);
            let data = host.window::<i64>("data", [3])?;
            host.write(&data, rank, &[rank as i64, 1, -(rank as i64)])?;
            let other = (rank + 1) % 4;
            assert!(
                matches!(host.write(&data, other, &[0; 3]), Err(Error::RankNotOwned { rank, .. }) if rank == other)
            );
            host.all_reduce(&data, AllReduce::ring())?;
            host.read(&data, rank)
        })
        .unwrap();
    for sum in sums {
        assert_eq!(sum.unwrap(), vec![6, 4, -6]);
    }
    assert_eq!(world.live_window_bytes(), 0, "every window of the section is freed");
    assert!(matches!(world.spmd(|_| Ok(())).unwrap().as_slice(), [Ok(()), Ok(()), Ok(()), Ok(())]));
}

#[test]
fn all_to_all_v_over_one_allocation_viewed_with_other_rows_is_a_mismatch_on_both_ranks() {
    // 12 f32 on both ranks, but [4, 3] (blocks of 2 rows of 3) against [6, 2] (blocks of 3
    // rows of 2): the element counts agree, the rows do not, and an element never sent would
    // show up as 0.0 if data moved.
    let world = world(2, LONG);
    let results = world
        .spmd(|host| {
            let dims = if host.rank() == Some(0) { [4, 3] } else { [6, 2] };
            let (input, target) = (host.alloc("input", 48)?, host.alloc("target", 48)?);
            let (send, recv) = (host.window::<i32>("send", [2])?, host.window::<i32>("recv", [2])?);
            let me = host.rank().unwrap();
            host.write(&send, me, &[1, 1])?;
            let (input, target) = (input.view::<f32>(dims)?, target.view::<f32>(dims)?);
            host.write(&input, me, &[1.0; 12])?;
            host.all_to_all_v(&input, &target, &send, &recv, Opts::new())?;
            host.sync()
        })
        .unwrap();
    for (rank, result) in results.iter().enumerate() {
        let err = result.as_ref().expect_err("a disagreement on the rows must not return Ok");
        assert!(matches!(err, Error::MismatchedCall { .. }), "rank {rank}: {err}");
        let message = err.to_string();
        assert!(message.contains("row_len = 3") && message.contains("row_len = 2"), "rank {rank}: {message}");
    }
    assert_usable(&world);
}

#[test]
fn a_failed_section_with_ll_calls_in_flight_leaves_the_world_as_good_as_new() {
    // Rank 0 sends small (LL) calls while rank 1 fails or makes no call: the calls never meet,
    // and the next section must start from a clean slate, not wait for rank 1 to read the LL
    // slot rank 0 wrote (8 calls: the next section's first call uses that slot again).
    let world = world(2, Duration::from_secs(1));
    // (calls rank 0 makes, whether rank 1 fails after a while or makes no call at all)
    for (round, (calls, fails)) in [(8, true), (8, false), (16, true), (8, false)].into_iter().enumerate() {
        let results = world
            .spmd(|host| {
                if host.rank() == Some(1) {
                    if !fails {
                        return Ok(());
                    }
                    std::thread::sleep(Duration::from_millis(300));
                    return Err(Error::RankPanicked {
                        rank: 1,
                        call: "the test".into(),
                        message: format!("round {round}"),
                    });
                }
                let data = host.window::<f32>("small", [16])?;
                for _ in 0..calls {
                    host.all_reduce(&data, AllReduce::mesh())?;
                }
                host.sync()
            })
            .unwrap();
        assert!(results.iter().all(Result::is_err));
        let started = Instant::now();
        let results = world
            .spmd(|host| {
                let data = host.window::<f32>("small", [16])?;
                let me = host.rank().unwrap();
                host.write(&data, me, &[me as f32 + 1.0; 16])?;
                for _ in 0..20 {
                    host.all_reduce(&data, AllReduce::mesh().op(ReduceOp::Max))?;
                }
                host.read(&data, me)
            })
            .unwrap();
        for (rank, result) in results.into_iter().enumerate() {
            assert_eq!(result.unwrap(), vec![2.0; 16], "round {round}, rank {rank}");
        }
        assert!(started.elapsed() < Duration::from_millis(900), "round {round}: the healthy section waited");
    }
}

#[test]
fn once_a_host_s_work_failed_every_later_call_on_it_fails_until_it_is_dropped() {
    let world = world(2, LONG);
    // What rank 0 saw after its first failed sync, checked outside the section (a failed
    // assertion inside would only be another failed rank).
    let seen = std::sync::Mutex::new(Vec::new());
    let results = world
        .spmd(|host| {
            let data = host.window::<f32>("data", [1024])?;
            let me = host.rank().unwrap();
            host.write(&data, me, &[1.0; 1024])?;
            if me == 1 {
                return Err(Error::RankPanicked { rank: 1, call: "the test".into(), message: "gives up".into() });
            }
            host.all_reduce(&data, AllReduce::mesh())?;
            let first = host.sync().map_err(|e| e.to_string());
            let mut seen = seen.lock().unwrap();
            seen.push(("first sync", first.clone().err()));
            seen.push(("second sync", host.sync().err().map(|e| e.to_string())));
            seen.push(("read", host.read(&data, me).err().map(|e| e.to_string())));
            seen.push(("all_reduce", host.all_reduce(&data, AllReduce::mesh()).err().map(|e| e.to_string())));
            seen.push(("write", host.write(&data, me, &[2.0; 1024]).err().map(|e| e.to_string())));
            Ok(())
        })
        .unwrap();
    assert!(results.iter().all(Result::is_err));
    let seen = seen.into_inner().unwrap();
    let first = seen[0].1.clone().expect("the all_reduce met a failed peer");
    for (what, outcome) in &seen[1..] {
        // The failure sticks: no later call returns Ok or hands back data never reduced.
        assert_eq!(outcome.as_deref(), Some(first.as_str()), "{what} after the failure");
    }
    assert_usable(&world);
}

/// A broadcast's and a scatter's root post their data and leave; a rank that took itself for
/// the root too never waits for the real one, so neither side's message is ever taken. The
/// runtime finds that at the sync after the call (a program's last call is checked too), and
/// the root's kernel finds it when it next uses the slot (here, a later agreed broadcast):
/// either way an error on every rank naming both sides.
#[test]
fn two_ranks_that_both_take_themselves_for_the_root_are_a_mismatch() {
    type Call = fn(&pld::Host<'_>, i64) -> pld::Result<()>;
    let cases: [(&str, Call); 2] = [
        ("broadcast", |h, root| h.broadcast(&h.window::<u8>("d", [8])?, Broadcast::root(root))),
        ("scatter", |h, root| {
            let n = h.nranks();
            h.scatter(&h.window::<i32>("rows", [n, 4])?, &h.window::<i32>("mine", [4])?, pld::Rooted::root(root))
        }),
    ];
    let world = world(3, LONG);
    for (what, call) in cases {
        // More later calls than a sender has message slots per peer: the slot is used again.
        for later_calls in [0, 70] {
            let started = Instant::now();
            let results = world
                .spmd(|host| {
                    // Ranks 0 and 2 each take themselves for the root; rank 1 follows rank 0.
                    let me = host.rank().unwrap() as i64;
                    call(host, if me == 2 { 2 } else { 0 })?;
                    for _ in 0..later_calls {
                        call(host, 0)?;
                    }
                    host.sync()
                })
                .unwrap();
            assert!(started.elapsed() < LONG / 4, "{what}: reported at once, not at the deadline");
            for (rank, result) in results.iter().enumerate() {
                let Err(err) = result else { panic!("{what}, {later_calls} later calls: rank {rank} succeeded") };
                let message = err.to_string();
                assert!(matches!(err, Error::MismatchedCall { .. }), "{what}: rank {rank}: {message}");
                // Either root may be the one that finds it. Right after the call the other
                // side's board still shows its call; calls later it may no longer, and the
                // error says what is known.
                let both = message.contains("root = 0") && message.contains("root = 2");
                let one = (message.contains("root = 0") || message.contains("root = 2"))
                    && message.contains("that never took rank");
                assert!(both || (later_calls > 0 && one), "{what}, {later_calls} later calls: rank {rank}: {message}");
                assert!(message.contains("passed by without taking it"), "{what}: rank {rank}: {message}");
            }
        }
    }
    assert_usable(&world);
}
