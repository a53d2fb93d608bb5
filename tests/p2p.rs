//! End-to-end tests of send!/recv! (`Host::send`, `Host::recv`): a ring exchange where every
//! rank sends before it receives, at 1 to 8 ranks over every dtype, three rounds back to back;
//! a host per rank; pairs inside groups; more messages in one batch than a channel holds at
//! once; and the failures: a mismatched pair (count or dtype) is an error on both ranks naming
//! both sides, a send or a receive without its partner ends at the deadline naming the peer,
//! and the world is usable again afterwards.

#[macro_use]
mod common;

use std::time::Duration;

use common::checks::ring_exchange;
use common::*;
use pld::{DType, Error, RecvFrom, SendTo, World};

#[test]
fn ring_exchange_every_dtype_at_1_to_8_ranks() {
    let mut j = 0u64;
    for nranks in 1..=8 {
        let world = World::local(nranks).unwrap();
        let host = world.host().unwrap();
        for dtype in DType::ALL {
            // Sizes around the slot and tile boundaries, and one that takes many tiles.
            let count = [1, 7, 1000, 4097, 65537, 300_000][(j % 6) as usize];
            with_dtype!(dtype, ring_exchange(&host, count, 3, j));
            j += 1;
        }
        host.finish().unwrap();
    }
}

#[test]
fn every_rank_sends_first_with_a_host_per_rank() {
    for nranks in [2, 3, 5, 8] {
        let world = World::local(nranks).unwrap();
        let results = world
            .spmd(|host| {
                let me = host.rank().expect("a host of World::spmd drives one rank");
                let n = host.nranks();
                let out = host.window::<i64>("out", [5])?;
                let inbox = host.window::<i64>("inbox", [5])?;
                let mut got = Vec::new();
                for round in 0..3i64 {
                    host.write(&out, me, &[me as i64, round, -1, 7, 100 * me as i64 + round])?;
                    // No `from`/`to`: the host's own rank.
                    host.send(&out, SendTo::rank(((me + 1) % n) as i64))?;
                    host.recv(&inbox, RecvFrom::rank(((me + n - 1) % n) as i64))?;
                    got.push(host.read(&inbox, me)?);
                }
                Ok(got)
            })
            .unwrap();
        for (r, got) in results.into_iter().enumerate() {
            let prev = ((r + nranks - 1) % nranks) as i64;
            let want: Vec<Vec<i64>> = (0..3).map(|k| vec![prev, k, -1, 7, 100 * prev + k]).collect();
            assert_eq!(got.unwrap(), want, "rank {r} of {nranks}");
        }
    }
}

#[test]
fn pairs_swap_inside_groups_in_group_ranks() {
    let world = World::local(6).unwrap();
    let host = world.host().unwrap();
    // Pairs {0, 3}, {1, 4}, {2, 5}: group rank 0 and 1 of each swap rows.
    let pairs = host.split(|r| Some(((r % 3) as u32, r as i64))).unwrap();
    let out = host.window::<u32>("out", [3]).unwrap();
    let inbox = host.window::<u32>("inbox", [3]).unwrap();
    for r in 0..6 {
        host.write(&out, r, &[r as u32, 50, 1000 + r as u32]).unwrap();
    }
    host.send(&out, SendTo::rank(1).from(0).group(&pairs)).unwrap();
    host.send(&out, SendTo::rank(0).from(1).group(&pairs)).unwrap();
    host.recv(&inbox, RecvFrom::rank(1).to(0).group(&pairs)).unwrap();
    host.recv(&inbox, RecvFrom::rank(0).to(1).group(&pairs)).unwrap();
    for r in 0..6 {
        let partner = (r + 3) % 6;
        assert_eq!(host.read(&inbox, r).unwrap(), vec![partner as u32, 50, 1000 + partner as u32], "rank {r}");
    }
    // A group rank past the group's size is an error naming the call and the size.
    let err = host.send(&out, SendTo::rank(2).from(0).group(&pairs)).unwrap_err();
    assert!(matches!(err, Error::RankOutOfRange { rank: 2, nranks: 2, .. }), "{err}");
}

#[test]
fn more_messages_in_one_batch_than_a_channel_holds() {
    // 20 messages each way between two ranks, all sends first: a channel holds 8 in flight
    // (1 on windows of 7 KiB, where the area may take 448 bytes), so later sends post as the
    // receiver takes the earlier ones, within the one batch.
    let deep = World::local(2).unwrap();
    let shallow = World::builder(2).window_bytes(7 << 10).ll_bytes(0).local().unwrap();
    for world in [deep, shallow] {
        let host = world.host().unwrap();
        let windows: Vec<_> = (0..20).map(|k| host.window::<u32>(&format!("w{k}"), [k + 1]).unwrap()).collect();
        let inboxes: Vec<_> = (0..20).map(|k| host.window::<u32>(&format!("in{k}"), [k + 1]).unwrap()).collect();
        for (k, w) in windows.iter().enumerate() {
            for r in 0..2 {
                host.write(w, r, &vec![(1000 * r + k) as u32; k + 1]).unwrap();
            }
        }
        for round in 0..5 {
            for w in &windows {
                host.send(w, SendTo::rank(1).from(0)).unwrap();
                host.send(w, SendTo::rank(0).from(1)).unwrap();
            }
            for w in &inboxes {
                host.recv(w, RecvFrom::rank(0).to(1)).unwrap();
                host.recv(w, RecvFrom::rank(1).to(0)).unwrap();
            }
            for (k, w) in inboxes.iter().enumerate() {
                let (window, got) = (world.window_bytes(), host.read(w, 1).unwrap());
                assert_eq!(got, vec![k as u32; k + 1], "{window} B windows, round {round}: rank 1, message {k}");
                let got = host.read(w, 0).unwrap();
                assert_eq!(
                    got,
                    vec![(1000 + k) as u32; k + 1],
                    "{window} B windows, round {round}: rank 0, message {k}"
                );
                host.write(w, 0, &vec![0; k + 1]).unwrap();
                host.write(w, 1, &vec![0; k + 1]).unwrap();
            }
        }
        host.finish().unwrap();
    }
}

#[test]
fn windows_too_small_for_a_point_to_point_area_make_send_an_error_naming_the_setting() {
    // 4 KiB windows at 4 ranks: the area (576 bytes at depth 1) is more than a sixteenth.
    let world = World::builder(4).window_bytes(4096).ll_bytes(0).local().unwrap();
    let host = world.host().unwrap();
    let w = host.window::<i32>("w", [2]).unwrap();
    for err in
        [host.send(&w, SendTo::rank(1).from(0)).unwrap_err(), host.recv(&w, RecvFrom::rank(0).to(1)).unwrap_err()]
    {
        let message = err.to_string();
        assert!(
            matches!(&err, Error::InvalidSetting { setting, .. } if setting.contains("PLD_WINDOW_BYTES")),
            "{message}"
        );
        assert!(message.contains("of `w`") && message.contains("at least 9216 bytes"), "{message}");
        assert!(message.contains("may use 1/16 of a window"), "{message}");
    }
    // Collectives do not need the area.
    host.all_reduce(&w, pld::AllReduce::mesh()).unwrap();
    host.finish().unwrap();
}

#[test]
fn a_send_and_a_receive_between_collectives_keep_program_order() {
    let world = World::local(3).unwrap();
    let host = world.host().unwrap();
    let data = host.window::<f32>("data", [4]).unwrap();
    let copy = host.window::<f32>("copy", [4]).unwrap();
    for r in 0..3 {
        host.write(&data, r, &[r as f32; 4]).unwrap();
    }
    host.all_reduce(&data, pld::AllReduce::mesh()).unwrap();
    host.send(&data, SendTo::rank(2).from(0)).unwrap();
    host.recv(&copy, RecvFrom::rank(0).to(2)).unwrap();
    host.broadcast(&copy, pld::Broadcast::root(2)).unwrap();
    for r in 0..3 {
        assert_eq!(host.read(&copy, r).unwrap(), vec![3.0; 4], "rank {r}");
    }
}

fn two_ranks(timeout_ms: u64) -> World {
    World::builder(2).timeout(Duration::from_millis(timeout_ms)).local().unwrap()
}

/// Rank 0 sends `send` elements of f32, rank 1 receives `recv` elements of `T`: both fail.
fn mismatch<T: TestElem>(send: usize, recv: usize) -> Vec<Error> {
    let world = two_ranks(5_000);
    let results = world
        .spmd(|host| {
            // Windows are allocated collectively: both ranks allocate both.
            let out = host.window::<f32>("out", [send])?;
            let inbox = host.window::<T>("inbox", [recv])?;
            if host.rank() == Some(0) {
                host.send(&out, SendTo::rank(1))?;
            } else {
                host.recv(&inbox, RecvFrom::rank(0))?;
            }
            host.sync()
        })
        .unwrap();
    results.into_iter().map(|r| r.unwrap_err()).collect()
}

#[test]
fn a_mismatched_count_or_dtype_fails_on_both_ranks_naming_both_sides() {
    for (errors, what) in [(mismatch::<f32>(8, 4), "count"), (mismatch::<i32>(8, 8), "dtype")] {
        for (rank, err) in errors.iter().enumerate() {
            let message = err.to_string();
            let Error::MismatchedCall { peer, .. } = err else { panic!("{what}, rank {rank}: {message}") };
            assert_eq!(*peer, 1 - rank, "{message}");
            assert!(message.contains("8 x f32 from rank 0 to rank 1"), "{what}, rank {rank}: {message}");
            let other = if what == "count" { "4 x f32 from rank 0 to rank 1" } else { "8 x i32 from rank 0 to rank 1" };
            assert!(message.contains(other), "{what}, rank {rank}: {message}");
            assert!(message.contains("send!") && message.contains("recv!"), "{message}");
        }
    }
}

#[test]
fn a_send_without_its_receive_ends_at_the_deadline_naming_the_receiver() {
    let world = two_ranks(300);
    let host = world.host().unwrap();
    let out = host.window::<u8>("out", [16]).unwrap();
    host.send(&out, SendTo::rank(1).from(0)).unwrap();
    let err = host.sync().unwrap_err();
    let message = err.to_string();
    assert!(matches!(err, Error::Unmatched { rank: 0, peer: 1, .. }), "{message}");
    assert!(message.contains("rank 1 never received message #1 from rank 0"), "{message}");
    assert!(message.contains("send! of `out` (u8 x 16) to rank 1"), "{message}");
    drop(host);
    // The world is usable again, numbering messages from 1.
    let host = world.host().unwrap();
    common::checks::ring_exchange::<u8>(&host, 16, 2, 5);
}

/// With a host per rank (as every MPI process runs), the rank whose partner never takes its
/// message fails naming both sides, and so does the partner: a section fails as a whole, with
/// that root cause.
#[test]
fn a_send_without_its_receive_fails_on_both_ranks_naming_both_sides() {
    let world = two_ranks(300);
    let results = world
        .spmd(|host| {
            let out = host.window::<i32>("out", [4])?;
            if host.rank() == Some(0) {
                host.send(&out, SendTo::rank(1))?;
            }
            host.sync()
        })
        .unwrap();
    for (rank, result) in results.iter().enumerate() {
        let err = result.as_ref().unwrap_err();
        let message = err.to_string();
        assert!(matches!(err, Error::Unmatched { rank: 0, peer: 1, .. }), "rank {rank}: {message}");
        assert!(message.contains("rank 1 never received message #1 from rank 0"), "rank {rank}: {message}");
    }
    let host = world.host().unwrap();
    common::checks::ring_exchange::<i32>(&host, 4, 2, 9);
}

#[test]
fn a_receive_without_its_send_ends_at_the_deadline_naming_the_sender() {
    let world = two_ranks(300);
    let host = world.host().unwrap();
    let inbox = host.window::<f64>("inbox", [2]).unwrap();
    host.recv(&inbox, RecvFrom::rank(0).to(1)).unwrap();
    let err = host.sync().unwrap_err();
    let message = err.to_string();
    assert!(matches!(err, Error::Unmatched { rank: 1, peer: 0, .. }), "{message}");
    assert!(message.contains("rank 0 never sent message #1 to rank 1"), "{message}");
}

#[test]
fn misuse_is_an_error_naming_the_call() {
    let world = World::local(3).unwrap();
    let host = world.host().unwrap();
    let w = host.window::<i32>("w", [2]).unwrap();
    let err = host.send(&w, SendTo::rank(3).from(0)).unwrap_err();
    assert!(matches!(err, Error::RankOutOfRange { rank: 3, nranks: 3, .. }), "{err}");
    assert!(err.to_string().contains("send! of `w`"), "{err}");
    let err = host.recv(&w, RecvFrom::rank(-1).to(0)).unwrap_err();
    assert!(matches!(err, Error::RankOutOfRange { .. }), "{err}");
    // A host that drives every rank must say which rank sends.
    let err = host.send(&w, SendTo::rank(1)).unwrap_err();
    assert!(err.to_string().contains("say `from = r`"), "{err}");
    let err = host.send(&w, SendTo::rank(1).from(0).nranks(4)).unwrap_err();
    assert!(matches!(err, Error::NranksMismatch { declared: 4, world: 3, .. }), "{err}");
    host.finish().unwrap();
}
