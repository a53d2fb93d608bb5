//! A collective called again at one line of host code reuses what its last call there checked
//! and built only when it is the same call (pld-core's `collective::site`). Each test changes
//! one thing at a time at one call site (the window, the view of one allocation, the dtype, the
//! root, the declared rank count, the host's health) and checks every call's result or error,
//! on a host driving every rank and on the hosts of `World::spmd`.

mod common;

use common::sites::broadcast_here;
use pld::{AllReduce, Broadcast, Error, Host, Opts, ReduceOp, Result, Rooted, Window, World};

/// Rank `r`'s data before a broadcast of round `k`.
fn data<T: pld::Element + From<u8>>(r: usize, k: usize, n: usize) -> Vec<T> {
    (0..n).map(|i| T::from((r * 31 + k * 7 + i) as u8 % 100)).collect()
}

/// Writes every rank's data, broadcasts from `root` at the one site, and checks every rank.
fn broadcast_round<T: pld::Element + From<u8> + PartialEq + std::fmt::Debug>(
    host: &Host<'_>,
    target: &Window<'_, T>,
    root: usize,
    k: usize,
    signal: &Window<'_, i32>,
) {
    let n = target.len();
    for r in 0..host.nranks() {
        host.write(target, r, &data::<T>(r, k, n)).unwrap();
    }
    broadcast_here(host, target, root as i64, signal).unwrap();
    for r in 0..host.nranks() {
        let found = host.read(target, r).unwrap();
        assert_eq!(found, data::<T>(root, k, n), "round {k}: `{}` on rank {r} from root {root}", target.name());
    }
}

#[test]
fn one_site_alternating_windows_dtypes_and_roots_gives_each_call_its_own_result() {
    let nranks = 3;
    let world = World::local(nranks).unwrap();
    let host = world.host().unwrap();
    let signal = host.signal("sig").unwrap();
    // Double buffering: two windows of one size, then one of another size and another dtype.
    let (a, b) = (host.window::<f32>("a", [5]).unwrap(), host.window::<f32>("b", [5]).unwrap());
    let wide = host.window::<i64>("wide", [9]).unwrap();
    for k in 0..12 {
        let root = k % nranks;
        match k % 3 {
            0 => broadcast_round(&host, &a, root, k, &signal),
            1 => broadcast_round(&host, &b, root, k, &signal),
            _ => broadcast_round(&host, &wide, root, k, &signal),
        }
    }
}

/// More windows at one site than the cache has slots: some share a slot, and each call still
/// moves its own window.
#[test]
fn many_windows_at_one_site_each_move_their_own_data() {
    let world = World::local(2).unwrap();
    let host = world.host().unwrap();
    let signal = host.signal("sig").unwrap();
    let windows: Vec<_> = (0..100).map(|i| host.window::<u8>(&format!("w{i}"), [1 + i % 7]).unwrap()).collect();
    for k in 0..2 {
        for (i, window) in windows.iter().enumerate() {
            broadcast_round(&host, window, (i + k) % 2, k, &signal);
        }
    }
}

#[test]
fn a_window_freed_and_allocated_again_at_one_site_is_a_new_call() {
    let world = World::local(2).unwrap();
    let host = world.host().unwrap();
    let signal = host.signal("sig").unwrap();
    // Each window is freed before the next is made: the next one takes the same offset.
    for (k, len) in [4, 4, 8, 8, 1].into_iter().enumerate() {
        let target = host.window::<u32>("fresh", [len]).unwrap();
        broadcast_round(&host, &target, k % 2, k, &signal);
        host.sync().unwrap();
    }
}

#[test]
fn another_view_of_one_allocation_at_one_site_is_checked_again() {
    let nranks = 2;
    let world = World::local(nranks).unwrap();
    let host = world.host().unwrap();
    let signal = host.signal("sig").unwrap();
    let rows = host.alloc("rows", 4 * 8).unwrap();
    let mine = host.window::<f32>("mine", [3]).unwrap();
    let good = rows.view::<f32>([nranks, 3]).unwrap();
    let bad = rows.view::<f32>([7]).unwrap();
    let scatter = |input: &Window<'_, f32>| host.scatter(input, &mine, Rooted::root(0).signal(&signal));
    for round in 0..3 {
        host.write(&good, 0, &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]).unwrap();
        scatter(&good).unwrap();
        assert_eq!(host.read(&mine, 1).unwrap(), [4.0, 5.0, 6.0], "round {round}");
        let err = scatter(&bad).unwrap_err();
        assert!(matches!(&err, Error::BadOperand { role: "input", .. }), "round {round}: {err}");
    }
}

/// all_to_all_v reads its views' rows, not only their lengths: [n * 2, 3] and [n * 3, 2] of
/// one allocation are different calls at one site.
#[test]
fn views_of_one_length_and_other_rows_at_one_site_move_their_own_rows() {
    let n = 2;
    let world = World::local(n).unwrap();
    let host = world.host().unwrap();
    let signal = host.signal("sig").unwrap();
    let (input, target) = (host.alloc("input", 4 * 12).unwrap(), host.alloc("target", 4 * 12).unwrap());
    let (sends, receives) = (host.window::<i32>("sends", [n]).unwrap(), host.window::<i32>("receives", [n]).unwrap());
    for round in 0..4 {
        let (max_rows, row) = if round % 2 == 0 { (2, 3) } else { (3, 2) };
        let input = input.view::<i32>([n * max_rows, row]).unwrap();
        let target = target.view::<i32>([n * max_rows, row]).unwrap();
        for r in 0..n {
            let values: Vec<i32> = (0..12).map(|i| (100 * r + i) as i32).collect();
            host.write(&input, r, &values).unwrap();
            host.write(&target, r, &[-1; 12]).unwrap();
            host.write(&sends, r, &vec![max_rows as i32; n]).unwrap();
        }
        host.all_to_all_v(&input, &target, &sends, &receives, Opts::new().signal(&signal)).unwrap();
        for r in 0..n {
            let found = host.read(&target, r).unwrap();
            let block = max_rows * row;
            // Block p of rank r's target is block r of rank p's input.
            let expected: Vec<i32> =
                (0..n).flat_map(|p| (0..block).map(move |i| (100 * p + r * block + i) as i32)).collect();
            assert_eq!(found, expected, "round {round}: rank {r}, rows of {row}");
            assert_eq!(host.read(&receives, r).unwrap(), vec![max_rows as i32; n], "round {round}: rank {r}'s counts");
        }
    }
}

/// A group's call at a site planned for the world runs in the group (and the other way round).
#[test]
fn a_site_called_over_the_world_and_over_a_group_runs_each_where_it_is_called() {
    let world = World::local(4).unwrap();
    let host = world.host().unwrap();
    let signal = host.signal("sig").unwrap();
    let target = host.window::<i32>("target", [2]).unwrap();
    let upper = host.group(&[2, 3]).unwrap();
    let broadcast = |options: Broadcast<'_>| host.broadcast(&target, options);
    for k in 0..6 {
        for r in 0..4 {
            host.write(&target, r, &[r as i32, k]).unwrap();
        }
        let grouped = k % 2 == 1;
        let options = Broadcast::root(1).signal(&signal);
        broadcast(if grouped { options.group(&upper) } else { options }).unwrap();
        // Over the world every rank gets rank 1's; over [2, 3] (root 1 is rank 3) ranks 2 and
        // 3 get rank 3's, and ranks 0 and 1 keep their own.
        let expected = |r: usize| match (grouped, r) {
            (false, _) => [1, k],
            (true, 0 | 1) => [r as i32, k],
            (true, _) => [3, k],
        };
        for r in 0..4 {
            assert_eq!(host.read(&target, r).unwrap(), expected(r), "call {k} (grouped: {grouped}), rank {r}");
        }
    }
}

#[test]
fn a_declared_rank_count_that_changes_at_one_site_is_checked_each_time() {
    let world = World::local(2).unwrap();
    let host = world.host().unwrap();
    let signal = host.signal("sig").unwrap();
    for declared in [2, 2, 3, 2] {
        let outcome = host.barrier(Opts::new().nranks(declared).signal(&signal));
        match declared {
            2 => outcome.unwrap(),
            _ => assert!(matches!(outcome, Err(Error::NranksMismatch { declared: 3, world: 2, .. })), "{outcome:?}"),
        }
    }
}

#[test]
fn the_hosts_of_spmd_reuse_a_site_with_their_own_windows_and_roots() {
    let nranks = 4;
    let world = World::local(nranks).unwrap();
    let results = world
        .spmd(|host| {
            let me = host.rank().unwrap();
            let signal = host.signal("sig")?;
            let (a, b) = (host.window::<f64>("a", [6])?, host.window::<f64>("b", [6])?);
            let mut seen = Vec::new();
            for k in 0..10 {
                let (target, root) = (if k % 2 == 0 { &a } else { &b }, k % nranks);
                host.write(target, me, &[(me * 10 + k) as f64; 6])?;
                broadcast_here(host, target, root as i64, &signal)?;
                seen.push(host.read(target, me)?[5]);
            }
            Ok(seen)
        })
        .unwrap();
    for (rank, seen) in results.into_iter().enumerate() {
        let expected: Vec<f64> = (0..10).map(|k| ((k % nranks) * 10 + k) as f64).collect();
        assert_eq!(seen.unwrap(), expected, "rank {rank}");
    }
}

#[test]
fn a_site_planned_before_a_failure_fails_like_every_later_call() {
    let world = World::builder(2).timeout(std::time::Duration::from_secs(20)).local().unwrap();
    let seen = std::sync::Mutex::new(Vec::new());
    let results = world
        .spmd(|host| {
            let me = host.rank().unwrap();
            let signal = host.signal("sig")?;
            let data = host.window::<f32>("data", [16])?;
            let all_reduce = || host.all_reduce(&data, AllReduce::mesh().signal(&signal));
            all_reduce()?;
            host.sync()?;
            if me == 1 {
                return Err(Error::RankPanicked { rank: 1, call: "the test".into(), message: "gives up".into() });
            }
            // The site's call is planned: this one is issued from the plan, and meets the failure.
            let _ = all_reduce();
            let first = host.sync().map_err(|e| e.to_string());
            let again = all_reduce().map_err(|e| e.to_string());
            seen.lock().unwrap().push((first, again));
            Ok(())
        })
        .unwrap();
    assert!(results.iter().all(Result::is_err));
    let seen = seen.into_inner().unwrap();
    let (first, again) = &seen[0];
    let first = first.as_ref().expect_err("the all_reduce met a failed peer");
    assert_eq!(again.as_ref().err(), Some(first), "the planned site after the failure");
}

/// One all_reduce site for the tests below: `options` as each call gives them.
fn all_reduce_here(host: &Host<'_>, target: &Window<'_, f32>, options: AllReduce<'_>) -> Result<()> {
    host.all_reduce(target, options)
}

/// Ops with host steps at one site (premul_sum's scaling, avg's division) are planned every
/// call, and another op or mode at the site is another call: each call's own result.
#[test]
fn ops_scalars_and_modes_that_change_at_one_site_each_give_their_own_result() {
    let world = World::local(2).unwrap();
    let host = world.host().unwrap();
    let signal = host.signal("sig").unwrap();
    let target = host.window::<f32>("target", [5]).unwrap();
    for k in 0..20 {
        // Rank r holds r + 1 + k everywhere: 1 + k and 2 + k.
        for r in 0..2 {
            host.write(&target, r, &[(r + 1 + k) as f32; 5]).unwrap();
        }
        let (low, high) = ((1 + k) as f32, (2 + k) as f32);
        // Each op twice in a row (the site's slot keeps its last call only), premul_sum with
        // another scalar the second time.
        let scalar = (k % 2 + 2) as f64;
        let (options, expected) = match k / 2 % 5 {
            0 => (AllReduce::mesh().premul_sum(scalar), (low + high) * scalar as f32),
            1 => (AllReduce::mesh().op(ReduceOp::Avg), (low + high) / 2.0),
            2 => (AllReduce::mesh().op(ReduceOp::Max), high),
            3 => (AllReduce::ring(), low + high),
            _ => (AllReduce::mesh(), low + high),
        };
        all_reduce_here(&host, &target, options.signal(&signal)).unwrap();
        for r in 0..2 {
            assert_eq!(host.read(&target, r).unwrap(), [expected; 5], "call {k}, rank {r}");
        }
    }
}

/// Two signals taken in turn at one site: each call credits its own, and both end clear.
#[test]
fn signals_taken_in_turn_at_one_site_each_stay_clear() {
    let world = World::local(3).unwrap();
    let host = world.host().unwrap();
    let signals = [host.signal("first").unwrap(), host.signal("second").unwrap()];
    // Past the LL message sizes.
    let n = 1 << 15;
    let target = host.window::<f32>("target", [n]).unwrap();
    for k in 0..6 {
        for r in 0..3 {
            host.write(&target, r, &vec![(r * k) as f32; n]).unwrap();
        }
        all_reduce_here(&host, &target, AllReduce::mesh().signal(&signals[k % 2])).unwrap();
        for r in 0..3 {
            assert_eq!(host.read(&target, r).unwrap(), vec![(3 * k) as f32; n], "call {k}, rank {r}");
        }
        for signal in &signals {
            common::assert_signal_clear(&host, signal, &format!("call {k}: `{}`", signal.name()));
        }
    }
}
