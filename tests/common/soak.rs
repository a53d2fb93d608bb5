//! The pipelined soak, shared by `tests/soak_pipelined.rs` (local threads, `World::host` and
//! `World::spmd`) and `tests/mpi_e2e.rs` (`PLD_E2E_MODE=soak`, one rank per process).

use pld::{AllReduce, AllReduceMode, Broadcast, Host, Opts, ReduceOp};

/// Calls per batch.
pub const CALLS: usize = 400;
/// What the resident memory may grow by from the end of the first batch to the end of the last
/// (measured: within +-0.5 MiB over 60 batches): over the default 11 measured batches, a leak
/// of 512 bytes a call shows.
pub const RSS_SLACK_KIB: usize = 2 << 10;

pub fn batches() -> usize {
    std::env::var("PLD_SOAK_BATCHES").ok().and_then(|b| b.parse().ok()).unwrap_or(12)
}

pub fn open_fds() -> usize {
    std::fs::read_dir("/proc/self/fd").map(|d| d.count()).unwrap_or(0)
}

/// Resident memory of the process, in KiB.
pub fn rss_kib() -> usize {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

/// The sizes of the batch's all_reduces: an LL message, one-shot, two-shot, and one for ring.
pub const SIZES: [usize; 3] = [16, 3000, 40_000];

/// One batch on `host`, which drives every rank (`World::host`) or one (`World::spmd`): each
/// window starts as `rank + 1` everywhere, one sum makes it `n(n+1)/2`, and every later call
/// (max, broadcast, ring max) keeps that value, so the batch's end state is known exactly.
pub fn batch(host: &Host<'_>, ranks: &[usize]) -> pld::Result<()> {
    let n = host.nranks();
    let windows = SIZES.map(|count| host.window::<f32>("data", [count]));
    let windows: Vec<_> = windows.into_iter().collect::<pld::Result<_>>()?;
    let local = host.window::<i32>("local", [8])?;
    let gathered = host.window::<i32>("gathered", [n, 8])?;
    for &r in ranks {
        for (w, count) in windows.iter().zip(SIZES) {
            host.write(w, r, &vec![(r + 1) as f32; count])?;
        }
        host.write(&local, r, &[r as i32; 8])?;
    }
    for w in &windows {
        host.all_reduce(w, AllReduce::mesh())?;
    }
    for call in 0..CALLS {
        let w = &windows[call % SIZES.len()];
        match call % 5 {
            0 | 1 => host.all_reduce(w, AllReduce::mesh().op(ReduceOp::Max))?,
            2 => host.broadcast(w, Broadcast::root((call % n) as i64))?,
            3 => host.all_reduce(w, AllReduce::mesh().mode(AllReduceMode::Ring).op(ReduceOp::Max))?,
            _ => {
                host.all_gather(&local, &gathered, Opts::new())?;
                host.barrier(Opts::new())?;
            }
        }
    }
    let expected = (n * (n + 1) / 2) as f32;
    let gathered_expected: Vec<i32> = (0..n as i32).flat_map(|r| [r; 8]).collect();
    for &r in ranks {
        for (w, count) in windows.iter().zip(SIZES) {
            let found = host.read(w, r)?;
            assert!(found.iter().all(|&v| v == expected), "rank {r}, {count} elements: expected {expected} throughout");
        }
        assert_eq!(host.read(&gathered, r)?, gathered_expected, "rank {r}: all_gather");
    }
    Ok(())
}

/// Runs `batches` batches through `run`, then checks the process stayed flat.
pub fn stays_flat(what: &str, mut run: impl FnMut()) {
    run(); // warm-up batch: allocator arenas, window pages, the builtin library
    let (rss, fds) = (rss_kib(), open_fds());
    for _ in 1..batches() {
        run();
    }
    let (rss_end, fds_end) = (rss_kib(), open_fds());
    println!(
        "{what}: {} batches of {CALLS} pipelined calls: RSS {rss} -> {rss_end} KiB, fds {fds} -> {fds_end}",
        batches()
    );
    assert_eq!(fds_end, fds, "{what}: no file descriptor is left open");
    assert!(rss_end <= rss + RSS_SLACK_KIB, "{what}: resident memory grew from {rss} to {rss_end} KiB");
}
