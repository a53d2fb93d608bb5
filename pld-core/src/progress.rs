//! Where each rank is: its call numbers (issued, started, past, completed), its queue's
//! counters, and the call sites of its recent calls, for hang reports. Every counter sits on a
//! cache line of its own (one thread writes it, others read it now and then).

use std::sync::Mutex;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use crate::call::Label;

/// A counter on a cache line of its own.
#[repr(align(128))]
#[derive(Default)]
pub(crate) struct Padded<T>(pub(crate) T);

/// One rank's counters.
#[derive(Default)]
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
    /// The last call the rank started, and how often its call site changed.
    pub(crate) started: Padded<Started>,
    /// The call sites of the rank's calls, for hang reports.
    pub(crate) sites: Padded<Mutex<CallSites>>,
    /// The task that is not a collective (a user kernel, a staging copy) the rank runs now.
    pub(crate) task: Padded<Mutex<Option<Label>>>,
}

/// A rank's last started call number, and the number of times its call site changed (bumped
/// under the `sites` lock): a rank that calls from the same site as before stores a number and
/// takes no lock, which a lock per call would cost a tenth of a small collective.
#[derive(Default)]
pub(crate) struct Started {
    pub(crate) seq: AtomicU64,
    pub(crate) label_changes: AtomicU64,
}

/// The call sites of a rank's calls, as runs of consecutive call numbers (a rank's collective
/// calls are numbered 1, 2, ... and run in order): the current run and the one before it.
/// Whether the latest call still runs, completed or failed is read from the rank's counters.
#[derive(Default)]
pub(crate) struct CallSites {
    /// The label of calls from `.1` on.
    pub(crate) current: Option<(Label, u64)>,
    /// The label of calls `.1..=.2`.
    pub(crate) previous: Option<(Label, u64, u64)>,
}

impl CallSites {
    /// Records that call `seq` was made at `call`'s site.
    pub(crate) fn record(&mut self, call: &Label, seq: u64) {
        // Another state of this rank (worker or inline host) may have recorded this very site.
        if !self.current.as_ref().is_some_and(|(label, _)| label.same_site(call)) {
            self.previous = self.current.take().map(|(label, first)| (label, first, seq - 1));
            self.current = Some((call.clone(), seq));
        }
    }

    /// "<call> (call #seq)", where the runs still say which call `seq` was.
    fn describe(&self, seq: u64) -> String {
        let label = match (&self.current, &self.previous) {
            (Some((label, first)), _) if seq >= *first => label.describe(),
            (_, Some((label, first, last))) if (*first..=*last).contains(&seq) => label.describe(),
            _ => "a collective".to_owned(),
        };
        format!("{label} (call #{seq})")
    }
}

impl RankProgress {
    /// The rank's state for a hang report: the call it is in, the last it completed.
    pub(crate) fn report(&self, rank: usize) -> String {
        let sites = self.sites.0.lock().unwrap_or_else(|p| p.into_inner());
        let started = self.started.0.seq.load(Ordering::Acquire);
        let past = self.past.0.load(Ordering::Acquire);
        let completed = self.completed.0.load(Ordering::Acquire);
        let done = if completed == 0 { "none".to_owned() } else { sites.describe(completed) };
        if started > past {
            return format!("rank {rank} is in {}, last completed {done}", sites.describe(started));
        }
        match &*self.task.0.lock().unwrap_or_else(|p| p.into_inner()) {
            Some(task) => format!("rank {rank} is in {}, last completed collective {done}", task.describe()),
            None => format!("rank {rank} is in no collective or kernel, last completed {done}"),
        }
    }

    /// Whether every task queued on the rank has finished.
    pub(crate) fn drained(&self) -> bool {
        self.finished.0.load(Ordering::SeqCst) >= self.queued.0.load(Ordering::Relaxed)
    }
}
