//! The clocks of the flight recorder and traces: a cheap tick counter read per call (the
//! time-stamp counter on x86, which kernels read too: `pld_ticks`), turned into
//! `CLOCK_MONOTONIC` nanoseconds once, when a trace is written. Every process of one host
//! shares `CLOCK_MONOTONIC`, so their traces line up without adjustment.

use rustix::time::{ClockId, clock_gettime};

/// Where this process's clock stands in its job, for traces written by several processes.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ClockSync {
    /// `CLOCK_MONOTONIC` ns when this process left the launcher's last start-up exchange (every
    /// process leaves it together: traces of one host are aligned on it).
    pub(crate) sync_ns: u64,
    /// Where the job spans hosts: this process's clock against rank 0's when the world started.
    pub(crate) offset: Option<ClockOffset>,
}

/// This process's clock against rank 0's, measured at one moment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct ClockOffset {
    /// This process's `CLOCK_MONOTONIC` ns when it was measured.
    pub(crate) at_ns: u64,
    /// The nanoseconds to add to this process's clock to read rank 0's (0 on rank 0's host,
    /// whose processes share its clock).
    pub(crate) offset_ns: i64,
    /// The bound on that offset's error: half the round trip it was measured over.
    pub(crate) error_ns: u64,
}

/// Measures this process's clock against rank 0's again (a collective step of every process
/// of a job spanning hosts, made when the world ends, so that a trace can follow the clocks'
/// drift); `None` where it failed.
pub(crate) type MeasureClock = fn() -> Option<ClockOffset>;

impl ClockSync {
    /// One host's (or one process's) clock, read now.
    pub(crate) fn now() -> ClockSync {
        ClockSync { sync_ns: monotonic_ns(), offset: None }
    }
}

/// `CLOCK_MONOTONIC` in nanoseconds.
pub(crate) fn monotonic_ns() -> u64 {
    let ts = clock_gettime(ClockId::Monotonic);
    (ts.tv_sec as u64).saturating_mul(1_000_000_000).saturating_add(ts.tv_nsec as u64)
}

/// The tick counter (as `pld_ticks` in `pld_device.h`).
#[inline(always)]
pub(crate) fn ticks() -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: RDTSC is in every x86-64 CPU; it reads a counter and touches no memory.
        #[allow(unused_unsafe)]
        unsafe {
            core::arch::x86_64::_rdtsc()
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        monotonic_ns()
    }
}

/// What 256 polls of a wait's spin phase take, in ticks (`pld_watch.spin_ticks_256`): a load of
/// a cell and a pause each, timed over many (the least of a few tries, as another thread may
/// take the core for a moment).
pub(crate) fn spin_ticks_256() -> u64 {
    let cell = std::sync::atomic::AtomicI32::new(0);
    let polls = 1u64 << 14;
    (0..5)
        .map(|_| {
            let start = ticks();
            for _ in 0..polls {
                if cell.load(std::sync::atomic::Ordering::Acquire) != 0 {
                    break;
                }
                std::hint::spin_loop();
            }
            (ticks() - start) * 256 / polls
        })
        .min()
        .unwrap_or(0)
}

/// Ticks to `CLOCK_MONOTONIC` nanoseconds, from two readings of both clocks: one when the
/// world started, one now (a constant-rate counter: every x86-64 CPU since 2008).
#[derive(Clone, Copy, Debug)]
pub(crate) struct TickScale {
    ticks: u64,
    ns: u64,
    ns_per_tick: f64,
}

/// Both clocks read together.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Anchor {
    ticks: u64,
    ns: u64,
}

impl Anchor {
    pub(crate) fn now() -> Anchor {
        Anchor { ticks: ticks(), ns: monotonic_ns() }
    }
}

impl TickScale {
    /// The scale between `start` and now (at least a millisecond apart, so the rate is exact
    /// to a part in a million or better).
    pub(crate) fn since(start: Anchor) -> TickScale {
        let mut end = Anchor::now();
        while end.ns.saturating_sub(start.ns) < 1_000_000 {
            std::thread::sleep(std::time::Duration::from_millis(1));
            end = Anchor::now();
        }
        let ns_per_tick = match end.ticks.checked_sub(start.ticks) {
            Some(t) if t > 0 => (end.ns - start.ns) as f64 / t as f64,
            _ => 1.0,
        };
        TickScale { ticks: start.ticks, ns: start.ns, ns_per_tick }
    }

    /// A tick reading as monotonic nanoseconds.
    pub(crate) fn ns(&self, ticks: u64) -> f64 {
        self.ns as f64 + (ticks as f64 - self.ticks as f64) * self.ns_per_tick
    }

    /// A tick count as nanoseconds.
    pub(crate) fn span_ns(&self, ticks: u64) -> f64 {
        ticks as f64 * self.ns_per_tick
    }
}
