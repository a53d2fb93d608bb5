//! The machine's cross-core round trip, measured beside a run: two threads passing a flag back
//! and forth, as `bench/baselines/pingpong.c` does. A small call at 2 ranks is about one such
//! crossing plus each side's host path, and on a VM the crossing changes by the minute (this
//! repository's moved between 16, 55-64 and 145-220 ns a round): printed with every table, so
//! two runs are compared in the same mode or not at all (docs/PERFORMANCE.md, "Run to run").

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// One thread's flag, on a cache line (and its neighbour, for the adjacent-line prefetcher) of
/// its own.
#[repr(align(128))]
#[derive(Default)]
struct Flag(AtomicU64);

/// How long one probe runs.
const PROBE: Duration = Duration::from_millis(10);

/// Probes a measure takes, keeping the fastest: a thread just started may share a CPU with the
/// other until the scheduler moves it (a first probe measured 0.6-10 us a round, the next 0.15).
const PROBES: usize = 4;

/// Rounds between looks at the clock.
const ROUNDS_PER_LOOK: u64 = 1024;

/// Nanoseconds per round of two threads passing a flag each way, the fastest of [`PROBES`];
/// `None` on a machine with one CPU (there the round trip is the scheduler's, not the cores').
pub fn round_trip_ns() -> Option<f64> {
    if std::thread::available_parallelism().map_or(1, |n| n.get()) < 2 {
        return None;
    }
    (0..PROBES).map(|_| probe()).min_by(f64::total_cmp)
}

/// One probe's nanoseconds per round.
fn probe() -> f64 {
    let (mine, theirs, stop) = (Flag::default(), Flag::default(), AtomicU64::new(u64::MAX));
    // Each side stores its round and waits for the other's, as pingpong.c's two threads do: a
    // round is one crossing each way, at once.
    let play = |own: &Flag, other: &Flag, round: u64| -> bool {
        own.0.store(round, Ordering::Release);
        while other.0.load(Ordering::Acquire) < round {
            if round > stop.load(Ordering::Relaxed) {
                return false;
            }
            std::hint::spin_loop();
        }
        true
    };
    std::thread::scope(|scope| {
        // The other side plays until told the last round (and leaves a round it waits in past it).
        scope.spawn(|| (1..).take_while(|&round| play(&theirs, &mine, round)).for_each(drop));
        let start = Instant::now();
        let mut round = 0;
        loop {
            round += 1;
            play(&mine, &theirs, round);
            if round % ROUNDS_PER_LOOK == 0 && start.elapsed() >= PROBE {
                break;
            }
        }
        let elapsed = start.elapsed();
        stop.store(round, Ordering::Relaxed);
        elapsed.as_secs_f64() * 1e9 / round as f64
    })
}

/// The table's line for a run's two probes, at its start and its end.
pub fn report(start: f64, end: f64) -> String {
    format!(
        "# cross-core round trip: {start:.0} ns at the start, {end:.0} ns at the end (two threads passing a \
         flag, as bench/baselines/pingpong.c: the machine's mode, which small calls at 2 ranks follow)"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_line_names_both_probes() {
        let line = report(150.4, 160.6);
        assert!(line.contains("150 ns at the start, 161 ns at the end"), "{line}");
    }

    #[test]
    fn a_probe_ends_with_a_round_trip() {
        // Not a timing check: the probe's two threads stop together and give a figure.
        match std::thread::available_parallelism().map_or(1, |n| n.get()) {
            1 => assert_eq!(round_trip_ns(), None),
            _ => assert!(round_trip_ns().is_some_and(|ns| ns.is_finite() && ns > 0.0)),
        }
    }
}
