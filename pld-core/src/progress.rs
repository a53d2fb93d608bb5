//! Where each rank is: its call numbers (issued, started, past, completed), its queue's
//! counters, its flight recorder (its last calls, for hang reports) and the wait its call is in.
//! Every counter sits on a cache line of its own (one thread writes it, others read it now and
//! then).

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use crate::device::abi::Watch;
use crate::trace::recorder::Recorder;

/// A counter on a cache line of its own.
#[repr(align(128))]
#[derive(Default)]
pub(crate) struct Padded<T>(pub(crate) T);

/// One rank's counters.
pub(crate) struct RankProgress {
    /// Collective calls issued by the rank's host: the `seq` of the next call's fingerprint.
    pub(crate) issued: Padded<AtomicU64>,
    /// Tasks queued, counted by the rank's host, and tasks finished, counted by its worker.
    pub(crate) queued: Padded<AtomicU64>,
    pub(crate) finished: Padded<AtomicU64>,
    /// Tasks queued and not finished (both sides count it: its 0 -> 1 and 1 -> 0 steps count
    /// the rank in and out of [`Shared::busy`](crate::shared::Shared)).
    pub(crate) outstanding: Padded<AtomicU32>,
    /// The number of the last collective call the rank is past (finished or gave up).
    pub(crate) past: Padded<AtomicU64>,
    /// The last call the rank completed without error (a call past `past` but not here failed
    /// or was skipped).
    pub(crate) completed: Padded<AtomicU64>,
    /// The last collective call the rank started.
    pub(crate) started: Padded<AtomicU64>,
    /// The rank's last calls.
    pub(crate) recorder: Recorder,
    /// What the rank's kernel shows while it runs (`pld_watch`).
    pub(crate) watch: Padded<Watch>,
    /// Messages this rank sent to each peer, and received from each (send! and recv! number
    /// them per direction; the rank's host alone writes them).
    pub(crate) sent: PeerCounters,
    pub(crate) received: PeerCounters,
}

/// A counter per peer, on cache lines of their own rank's: every rank's host counts its
/// messages at once, and counters of two ranks on one line would bounce it between their cores
/// at every send! and recv!.
pub(crate) struct PeerCounters(Box<[Padded<[AtomicU64; 16]>]>);

impl PeerCounters {
    fn new(nranks: usize) -> PeerCounters {
        PeerCounters((0..nranks.div_ceil(16)).map(|_| Padded::default()).collect())
    }

    /// The counter of `peer`.
    pub(crate) fn of(&self, peer: usize) -> &AtomicU64 {
        &self.0[peer / 16].0[peer % 16]
    }
}

impl RankProgress {
    /// A rank's counters in a world of `nranks`, with a flight recorder of `calls` entries
    /// (`timed`: with times).
    pub(crate) fn new(nranks: usize, calls: usize, timed: bool) -> RankProgress {
        RankProgress {
            issued: Padded::default(),
            queued: Padded::default(),
            finished: Padded::default(),
            outstanding: Padded::default(),
            past: Padded::default(),
            completed: Padded::default(),
            started: Padded::default(),
            recorder: Recorder::new(calls, timed),
            watch: Padded::default(),
            sent: PeerCounters::new(nranks),
            received: PeerCounters::new(nranks),
        }
    }

    /// Whether every task queued on the rank has finished.
    pub(crate) fn drained(&self) -> bool {
        self.finished.0.load(Ordering::SeqCst) >= self.queued.0.load(Ordering::Relaxed)
    }
}
