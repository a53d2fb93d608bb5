//! End to end under MPI: every collective, checked against the host reference on this process's
//! rank, over dtypes, ops, modes, roots and sizes. Run by `.ci/run` as
//! `timeout 300 mpirun --allow-run-as-root --oversubscribe -np N <this test binary>` for N in
//! {2, 3, 4}, with shared windows and with `PLD_MPI_RMA=1` (one-sided Put/Get/Accumulate); run
//! without `mpirun` it takes the local launcher (`World::from_env`), so it also runs as a plain
//! test. `PLD_E2E_FAIL_RANK=r` makes rank r panic halfway: the job must end, naming the rank.

#[macro_use]
mod common;

use common::checks::*;
use pld::{AllReduceMode, DType, ReduceOp, World};

fn main() {
    // The modes return their exit code once their world is dropped (MPI finalized).
    let mode = match std::env::var("PLD_E2E_MODE").as_deref() {
        Ok("settings") => Some(settings_disagree()),
        Ok("alloc_fail") => Some(allocation_fails_on_one_rank()),
        Ok("pace") => Some(pace()),
        Ok("soak") => Some(soak()),
        Ok("groups") => Some(groups()),
        Ok("loop") => Some(collectives_until_ended()),
        _ => None,
    };
    if let Some(code) = mode {
        std::process::exit(code);
    }
    let world = World::from_env().expect("a world for this process");
    let host = world.host().expect("its host");
    let n = world.nranks();
    let fail_rank: Option<usize> = std::env::var("PLD_E2E_FAIL_RANK").ok().and_then(|r| r.parse().ok());
    let mut calls = 0;
    let mut seed = 1u64;
    let dtypes = [
        DType::F32,
        DType::I32,
        DType::BF16,
        DType::U8,
        DType::F64,
        DType::I64,
        DType::F16,
        DType::F8E4M3,
        DType::F8E5M2,
        DType::I8,
        DType::U32,
        DType::U64,
    ];
    assert_eq!(dtypes.len(), DType::ALL.len(), "every dtype crosses processes");
    for (i, dtype) in dtypes.into_iter().enumerate() {
        if i == 3
            && let Some(fail) = fail_rank
            && host.ranks().contains(&fail)
        {
            panic!("rank {fail} fails on purpose (PLD_E2E_FAIL_RANK)");
        }
        for count in [0, 1, 1000, 70_000] {
            let op = ReduceOp::ALL[(i + count) % ReduceOp::ALL.len()];
            seed += 1;
            for mode in AllReduceMode::ALL {
                with_dtype!(dtype, all_reduce(&host, count, op, mode, seed));
            }
            with_dtype!(dtype, reduce_scatter(&host, count / n, op, seed));
            with_dtype!(dtype, broadcast(&host, count, (count + i) % n, seed));
            with_dtype!(dtype, all_gather(&host, count / n, seed));
            with_dtype!(dtype, all_to_all(&host, count / (n * n), seed));
            let max_rows = 1 + count % 7;
            let counts: Vec<Vec<usize>> =
                (0..n).map(|s| (0..n).map(|d| (s + 2 * d + i) % (max_rows + 1)).collect()).collect();
            with_dtype!(dtype, all_to_all_v(&host, max_rows, 3, &counts, seed));
            with_dtype!(dtype, reduce(&host, count, op, (count + i + 1) % n, seed));
            with_dtype!(dtype, gather(&host, count / n, (count + i + 2) % n, seed));
            with_dtype!(dtype, scatter(&host, count / n, (count + i + 3) % n, seed));
            let rows: Vec<usize> = (0..n).map(|s| (s * 3 + i) % (max_rows + 1)).collect();
            with_dtype!(dtype, all_gather_v(&host, max_rows, 5, &rows, seed));
            with_dtype!(dtype, ring_exchange(&host, count, 2, seed));
            calls += 11 + AllReduceMode::ALL.len();
        }
    }
    host.barrier(pld::Opts::new()).expect("a final barrier");
    host.finish().expect("every call succeeded");
    let ranks = world.host().map(|h| h.ranks()).unwrap_or(0..0);
    println!("mpi_e2e: ranks {ranks:?} of {n}, {}: {calls} collectives checked, 0 wrong elements", world.launcher());
}

/// Run with a setting that shapes memory differing between the processes (`mpirun -np 1 -x
/// PLD_LL_BYTES=0 ... : -np 1 ...`): every rank's world creation fails, naming the setting and
/// each process's value.
fn settings_disagree() -> i32 {
    match World::from_env() {
        Ok(_) => {
            eprintln!("settings: the world started although the processes disagree");
            1
        }
        Err(e) => {
            let message = e.to_string();
            let named = matches!(e, pld::Error::MismatchedSettings { .. }) && message.contains("rank 0 has");
            println!("settings: {message}");
            i32::from(!named)
        }
    }
}

/// Rank 1 asks for a window far larger than its heap while the others ask for a small one:
/// every rank gets an error within the deadline, rank 1 its own (out of window memory), the
/// others one naming rank 1 and its free space.
fn allocation_fails_on_one_rank() -> i32 {
    let world = World::from_env().expect("a world for this process");
    let host = world.host().expect("its host");
    let me = host.ranks().start;
    let len = if me == 1 { 1usize << 40 } else { 1024 };
    match host.window::<u8>("huge_on_rank_1", [len]) {
        Ok(_) => {
            eprintln!("alloc_fail: rank {me} allocated although rank 1 could not");
            1
        }
        Err(e) => {
            let ok = match me {
                1 => matches!(e, pld::Error::OutOfWindowMemory { .. }),
                _ => matches!(e, pld::Error::AllocationFailed { failed_rank: 1, .. }),
            };
            println!("alloc_fail: rank {me}: {e}");
            i32::from(!ok)
        }
    }
}

/// Collectives in a loop for `PLD_E2E_LOOP_SECONDS` (default 600), each checked: for a job
/// that is ended from outside, e.g. one of its hosts killed (`.ci/run` kills every process of
/// one host): the processes left must end within their deadline, naming the ranks lost.
fn collectives_until_ended() -> i32 {
    let world = World::from_env().expect("a world for this process");
    let host = world.host().expect("its host");
    let seconds: u64 = std::env::var("PLD_E2E_LOOP_SECONDS").ok().and_then(|s| s.parse().ok()).unwrap_or(600);
    let me = host.ranks().start;
    let n = world.nranks();
    let data = host.window::<f32>("looped", [1024]).expect("a window");
    let started = std::time::Instant::now();
    let mut calls = 0u64;
    println!("loop: rank {me} of {n}, {}: started", world.launcher());
    while started.elapsed().as_secs() < seconds {
        let done = host
            .write(&data, me, &[1.0; 1024])
            .and_then(|()| host.all_reduce(&data, pld::AllReduce::mesh()))
            .and_then(|()| host.read(&data, me));
        match done {
            Ok(values) if values.iter().all(|&v| v == n as f32) => calls += 1,
            Ok(values) => {
                eprintln!("loop: rank {me}: wrong sum {} after {calls} calls", values[0]);
                return 1;
            }
            Err(e) => {
                println!("loop: rank {me}: ended after {calls} calls: {e}");
                return 2;
            }
        }
    }
    println!("loop: rank {me}: {calls} calls, not ended from outside");
    0
}

/// Small all_reduces in a loop (no sync per call), with the time per call: a missed wake shows
/// as a call per 4 ms sleep slice instead of microseconds. Fails past 1 ms per call
/// (`PLD_E2E_PACE_LIMIT_US` sets another limit; a hang fails at the deadline).
fn pace() -> i32 {
    let world = World::from_env().expect("a world for this process");
    let host = world.host().expect("its host");
    let data = host.window::<f32>("pace", [2]).expect("a window");
    let calls = 2000;
    let started = std::time::Instant::now();
    for _ in 0..calls {
        host.all_reduce(&data, pld::AllReduce::mesh()).expect("an all_reduce");
    }
    host.sync().expect("every call succeeded");
    let per_call = started.elapsed() / calls;
    println!("pace: rank {}: {per_call:?} per call", host.ranks().start);
    let limit_us = std::env::var("PLD_E2E_PACE_LIMIT_US").ok().and_then(|l| l.parse().ok()).unwrap_or(1000);
    i32::from(per_call >= std::time::Duration::from_micros(limit_us))
}

/// The pipelined soak on this process's rank: batches of calls with no sync between them, then
/// the process's resident memory and open descriptors as after the first batch (asserted).
fn soak() -> i32 {
    let world = World::from_env().expect("a world for this process");
    let what = format!("MPI rank {}", world.host().map(|h| h.ranks().start).unwrap_or(0));
    common::soak::stays_flat(&what, || {
        let host = world.host().expect("its host");
        common::soak::batch(&host, &host.ranks().collect::<Vec<_>>()).expect("a batch");
        host.finish().expect("every call succeeded");
    });
    0
}

/// The group suite on this process's rank: every collective over every kind of group, each
/// group made by every process alike (agreed like an allocation); then every dtype under every
/// op over a reordered group and a split, a host each (its windows are freed with it).
fn groups() -> i32 {
    let world = World::builder(0).window_bytes(256 << 20).mpi().expect("an MPI world");
    let host = world.host().expect("its host");
    common::groups::every_kind_of_group(&host);
    host.finish().expect("every call succeeded");
    let n = world.nranks();
    let host = world.host().expect("its host");
    // Odd ranks downwards, then 0 (at 4 processes: [3, 1, 0]).
    let reordered: Vec<usize> = (0..n).rev().filter(|r| r % 2 == 1 || *r == 0).collect();
    common::groups::every_dtype_and_op(
        &host,
        &host.group(&reordered).expect("a group"),
        &format!("group {reordered:?}"),
    );
    host.finish().expect("every call succeeded");
    let host = world.host().expect("its host");
    let parity = host.split(|r| Some(((r % 2) as u32, r as i64))).expect("a split");
    common::groups::every_dtype_and_op(&host, &parity, "split by parity");
    host.finish().expect("every call succeeded");
    println!(
        "groups: rank {} of {}: every collective over every kind of group, every dtype and op, 0 wrong",
        host_rank(&world),
        world.nranks()
    );
    0
}

fn host_rank(world: &World) -> usize {
    world.rank().unwrap_or(0)
}
