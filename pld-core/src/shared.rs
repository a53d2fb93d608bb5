//! What the ranks, hosts and windows of one world share: the transport, the settings, the
//! runtime's areas in every window, each rank's progress, and the failure record.

use std::ops::Range;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};

use pld_model::WaitCmp;

use crate::call::{Label, SignalCells};
use crate::comm::Comm;
use crate::config::Settings;
use crate::device::abi::EndCallFn;
use crate::error::Error;
use crate::fingerprint::describe_words;
use crate::memory::{Allocation, LlArea, SymmetricHeap};
use crate::progress::{Padded, RankProgress};
use crate::trace::Tracer;
use crate::trace::recorder::{Entry, State, describe_entries};
use crate::transport::Fabric;

/// The world's shared state.
pub(crate) struct Shared {
    pub(crate) nranks: usize,
    pub(crate) fabric: Fabric,
    /// The world as a communicator: every rank, the world's call board and LL area.
    pub(crate) world: Arc<Comm>,
    pub(crate) settings: Settings,
    pub(crate) tuning: Tuning,
    /// Each rank's counters and flight recorder.
    pub(crate) ranks: Box<[RankProgress]>,
    /// The trace being recorded, and the flight recorders' dump on error.
    pub(crate) tracer: Tracer,
    idle: Padded<Idle>,
    failure: Mutex<Failure>,
    /// The groups' communicators (the world's is `world`).
    comms: Mutex<Vec<std::sync::Weak<Comm>>>,
    /// Whether a host scope is open on the world.
    pub(crate) host_active: AtomicBool,
    /// This process's ranks with work now (a task queued or running, or a host's call running
    /// inline) and not asleep in a wait: read at every kernel's start and by long spins (see
    /// [`Tuning`]). A heuristic: the steps of its parts may interleave, so it can be off by
    /// one for a moment. Counted only where ranks can outnumber the cores
    /// ([`Tuning::adaptive`]); zero otherwise.
    /// On a cache line of its own, as the waiters' count: both change while every call reads
    /// the fields around them.
    pub(crate) busy: Padded<AtomicI32>,
    /// The point-to-point area (send!/recv!) in every window, and its depth (slots per
    /// direction, [`pld_model::p2p_depth`]; 0: the windows are too small for one).
    pub(crate) p2p_off: usize,
    pub(crate) p2p_depth: usize,
    /// Across nodes: the world's nodes as groups, and a signal for their calls (made by the
    /// first world collective that crosses nodes).
    pub(crate) across_nodes: std::sync::OnceLock<crate::collective::AcrossNodes>,
    /// The builtin library's `pld_end_call`, run after every kernel that left LL wakes due.
    pub(crate) end_call: EndCallFn,
}

// SAFETY: the fabric's pointers (control cells, the transport's services) point into memory
// that lives as long as `Shared`; they are shared by design and accessed only by kernels under
// the signal protocol, and atomically.
unsafe impl Send for Shared {}
// SAFETY: as above.
unsafe impl Sync for Shared {}

/// How the ranks of this process wait, measured against the machine.
pub(crate) struct Tuning {
    /// The cores this node's ranks share.
    pub(crate) cores: usize,
    /// Whether every rank of this node runs in this process, so that `Shared::busy` counts
    /// all of them: then each call picks its wait from the ranks inside a kernel at that moment
    /// (a group of 2 in a 4-rank world on 2 cores has the cores to itself while the others
    /// idle). Otherwise the node's rank count decides once.
    pub(crate) adaptive: bool,
    /// Ranks that outnumber the cores at start (the wait when not adaptive).
    pub(crate) crowded: bool,
    /// The wait of crowded ranks ([`WaitLimits::crowded_for`]: longer yields where the world
    /// spans nodes).
    pub(crate) crowded_wait: WaitLimits,
    /// The CPUs rank threads are pinned to, by rank; empty: not pinned.
    pub(crate) pin_cpus: Vec<usize>,
    /// The CPUs a call's threads are pinned to, by member, when the call has the cores to
    /// itself in a world whose ranks outnumber them (so are not pinned at start); empty: never.
    /// Two members on one core cost a small call up to 3x, and the scheduler does not know
    /// which threads talk; a thread is moved only when its call asks for another CPU than it
    /// has, so a loop over one group pins once.
    pub(crate) follow_cpus: Vec<usize>,
}

/// Polls before yielding, and yields before sleeping, in a wait.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct WaitLimits {
    pub(crate) spins: i32,
    pub(crate) yields: i32,
}

impl WaitLimits {
    /// Ranks that have a core each: spinning a while beats a futex round trip.
    pub(crate) const ROOMY: WaitLimits = WaitLimits { spins: 20_000, yields: 64 };

    /// Ranks that outnumber the cores must hand their core over quickly: a pure spin collapses
    /// by orders of magnitude there, and a long one holds the core the awaited rank needs. So
    /// the spin phase lasts about [`CROWDED_SPIN_NS`] whatever a poll costs on this machine (a
    /// pause is 25 ns on an AMD EPYC, a few on older cores): measured at 4 and 8 ranks on 2
    /// cores, 64 polls (1.6 us) made small calls 1.2-1.5x slower than 8 (0.2 us).
    pub(crate) fn crowded() -> WaitLimits {
        static SPINS: std::sync::OnceLock<i32> = std::sync::OnceLock::new();
        let spins = *SPINS.get_or_init(|| (CROWDED_SPIN_NS / poll_ns()).clamp(2, 64) as i32);
        WaitLimits { spins, yields: 16 }
    }

    /// The wait of crowded ranks in a world whose ranks sit on the nodes `node_of` (by rank):
    /// [`WaitLimits::crowded`] on one node. Across nodes their waits yield
    /// [`ACROSS_NODES_YIELDS`] times before they sleep, letting MPI progress every few yields
    /// (`pld_backoff_step`), as MPI's own waits do when they yield (`mpi_yield_when_idle`): a
    /// node's ranks there often wait for a peer that waits on the network, tens of
    /// microseconds, and asleep by then each would need a futex wake from that peer on its way
    /// back from the network.
    pub(crate) fn crowded_for(node_of: &[usize]) -> WaitLimits {
        let crowded = WaitLimits::crowded();
        match node_of.windows(2).any(|pair| pair[0] != pair[1]) {
            true => WaitLimits { yields: ACROSS_NODES_YIELDS, ..crowded },
            false => crowded,
        }
    }
}

/// Yields before a crowded wait sleeps where the world spans nodes (see
/// [`WaitLimits::crowded_for`]): measured on `.ci/two-hosts` (2 x 2 processes on 2
/// cores), a broadcast of 8 B took 5.5 us a call with 16 yields, 3.1 with 1000 and 2.9 with
/// 100000 (best of 5 runs each, alternating, one comparison; most runs took about 6 us with any count: the
/// longer phase makes the faster mode reachable, docs/PERFORMANCE.md); all_reduce and
/// all_gather did not move.
const ACROSS_NODES_YIELDS: i32 = 1024;

/// How long a crowded wait spins before it yields, in nanoseconds.
const CROWDED_SPIN_NS: u64 = 200;

/// What one poll of a wait's spin phase takes here (a load and a pause), in nanoseconds: the
/// least of a few short runs (another thread may take the core for a moment), about 20 us once
/// per process.
fn poll_ns() -> u64 {
    let cell = std::sync::atomic::AtomicI32::new(0);
    let polls = 256;
    let run = || {
        let start = std::time::Instant::now();
        for _ in 0..polls {
            if cell.load(Ordering::Acquire) != 0 {
                break;
            }
            std::hint::spin_loop();
        }
        start.elapsed().as_nanos() as u64 / polls
    };
    (0..3).map(|_| run()).min().unwrap_or(1).max(1)
}

impl Tuning {
    /// The wait of a call not counted among the busy: crowded where the node's ranks outnumber
    /// its cores.
    pub(crate) fn fixed_limits(&self) -> WaitLimits {
        if self.crowded { self.crowded_wait } else { WaitLimits::ROOMY }
    }

    /// The wait of a call while `busy` ranks of this node have work (the caller included).
    pub(crate) fn limits(&self, busy: i32) -> WaitLimits {
        if !self.adaptive {
            return self.fixed_limits();
        }
        if usize::try_from(busy).unwrap_or(0) > self.cores { self.crowded_wait } else { WaitLimits::ROOMY }
    }
}

/// Hosts asleep until queues drain: a worker wakes `cond` only when there is one.
#[derive(Default)]
struct Idle {
    waiters: AtomicUsize,
    /// Held only to sleep on `cond` and to wake it.
    lock: Mutex<()>,
    cond: Condvar,
}

#[derive(Default)]
struct Failure {
    /// The first error that is not the consequence of another's (not `Aborted`).
    root: Option<Error>,
    /// Each rank's first error since it was last synchronised.
    ranks: Vec<Option<Error>>,
    /// Signals of calls that failed or were skipped: their credits are reset at the next sync.
    dirty_signals: Vec<SignalCells>,
    /// Windows of hosts that ended while a failure was pending, kept until that sync: a dirty
    /// signal may lie in one.
    kept: Vec<Arc<Allocation>>,
}

impl Shared {
    /// `board_off` and `ll`: the world's call board and LL area, allocated in every window. Fails
    /// only where the builtin device library does not load.
    pub(crate) fn new(
        fabric: Fabric,
        settings: Settings,
        tuning: Tuning,
        board_off: usize,
        ll: LlArea,
        (p2p_off, p2p_depth): (usize, usize),
        tracer: Tracer,
    ) -> crate::error::Result<Shared> {
        let nranks = fabric.nranks;
        let recorded = settings.flight_recorder;
        let spin_ticks_256 = if tracer.timed { crate::trace::clock::spin_ticks_256() } else { 0 };
        let world = Arc::new(Comm::new((0..nranks).collect(), &fabric.comm_parts(), board_off, ll, Vec::new()));
        let end_call = crate::device::builtins()?.end_call();
        Ok(Shared {
            nranks,
            world,
            fabric,
            settings,
            tuning,
            ranks: (0..nranks)
                .map(|_| {
                    let progress = RankProgress::new(nranks, recorded, tracer.on_error.is_some());
                    progress.watch.0.timed.store(i32::from(tracer.timed), Ordering::Relaxed);
                    progress.watch.0.spin_ticks_256.store(spin_ticks_256, Ordering::Relaxed);
                    progress
                })
                .collect(),
            tracer,
            idle: Padded::default(),
            comms: Mutex::new(Vec::new()),
            failure: Mutex::new(Failure { ranks: vec![None; nranks], ..Failure::default() }),
            host_active: AtomicBool::new(false),
            busy: Padded(AtomicI32::new(0)),
            p2p_off,
            p2p_depth,
            across_nodes: std::sync::OnceLock::new(),
            end_call,
        })
    }

    pub(crate) fn heap(&self) -> &Arc<SymmetricHeap> {
        &self.fabric.heap
    }

    /// Counts a task queued on `rank` (by its host).
    pub(crate) fn queue_task(&self, rank: usize) {
        let progress = &self.ranks[rank];
        progress.queued.0.fetch_add(1, Ordering::Relaxed);
        if self.tuning.adaptive && progress.outstanding.0.fetch_add(1, Ordering::Relaxed) == 0 {
            self.busy.0.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Counts a task of `rank` finished (by its worker) and wakes a host waiting for drained
    /// queues.
    pub(crate) fn finish_task(&self, rank: usize) {
        let progress = &self.ranks[rank];
        if self.tuning.adaptive && progress.outstanding.0.fetch_sub(1, Ordering::Relaxed) == 1 {
            self.busy.0.fetch_sub(1, Ordering::Relaxed);
        }
        let finished = progress.finished.0.fetch_add(1, Ordering::SeqCst) + 1;
        // Dekker pairing with `wait_drained`: both sides are sequentially consistent, so either
        // the waiter sees this task finished or this worker sees the waiter. Only a drained
        // queue is worth a wake (a waiter waits for drained queues).
        if self.idle.0.waiters.load(Ordering::SeqCst) > 0 && finished >= progress.queued.0.load(Ordering::SeqCst) {
            // Taking the lock orders this wake after a waiter's check-then-wait.
            let _guard = self.idle.0.lock.lock().unwrap_or_else(|p| p.into_inner());
            self.idle.0.cond.notify_all();
        }
    }

    /// Whether every task queued on `ranks` has finished (called by their host).
    pub(crate) fn drained(&self, ranks: Range<usize>) -> bool {
        ranks.into_iter().all(|r| self.ranks[r].drained())
    }

    /// Waits until the queues of `ranks` are drained.
    pub(crate) fn wait_drained(&self, ranks: Range<usize>) {
        // Yield a few times before sleeping: a call about to finish is cheaper to wait out
        // than a wake through the condition variable. No spinning: the worker this host waits
        // for may need this very core (measured: spinning here cost 0.5 ms a call at 2 MPI
        // processes on 2 cores).
        for _ in 0..16 {
            if self.drained(ranks.clone()) {
                return;
            }
            std::thread::yield_now();
        }
        if self.drained(ranks.clone()) {
            return;
        }
        self.idle.0.waiters.fetch_add(1, Ordering::SeqCst);
        let mut guard = self.idle.0.lock.lock().unwrap_or_else(|p| p.into_inner());
        while !self.drained(ranks.clone()) {
            guard = self.idle.0.cond.wait(guard).unwrap_or_else(|p| p.into_inner());
        }
        drop(guard);
        self.idle.0.waiters.fetch_sub(1, Ordering::SeqCst);
    }

    /// The flag that stops every rank's waits when one failed.
    fn abort_flag(&self) -> &AtomicI32 {
        // SAFETY: `control` points at 1 + nranks live i32 cells (see `Fabric`), only ever
        // accessed atomically.
        unsafe { &*self.fabric.control.cast::<AtomicI32>() }
    }

    pub(crate) fn aborted(&self) -> bool {
        self.abort_flag().load(Ordering::SeqCst) != 0
    }

    /// Records `rank`'s failure; a root cause also stops every rank's waits.
    pub(crate) fn record_failure(&self, rank: usize, error: Error, signal: Option<SignalCells>) {
        let secondary = matches!(error, Error::Aborted { .. });
        if !secondary {
            // Before `on_failure`, which may end the process (MPI).
            self.dump_flight_recorders();
        }
        if !secondary && let Some(on_failure) = self.fabric.on_failure {
            on_failure(rank, &error);
        }
        let mut failure = self.failure.lock().unwrap_or_else(|p| p.into_inner());
        if !secondary {
            self.abort_flag().store(1, Ordering::SeqCst);
            if failure.root.is_none() {
                failure.root = Some(error.clone());
            }
        }
        match &failure.ranks[rank] {
            None => failure.ranks[rank] = Some(error),
            Some(Error::Aborted { .. }) if !secondary => failure.ranks[rank] = Some(error),
            Some(_) => {}
        }
        failure.dirty_signals.extend(signal);
    }

    /// After every queue drained: the root cause of the failures since the last reset, with the
    /// state a failed call leaves behind cleared (abort flag, credits in its signals).
    pub(crate) fn reset_failures(&self) -> Result<(), Error> {
        let mut failure = self.failure.lock().unwrap_or_else(|p| p.into_inner());
        let first_of_rank = failure.ranks.iter_mut().find_map(Option::take);
        let error = failure.root.take().or(first_of_rank);
        failure.ranks.iter_mut().for_each(|e| *e = None);
        let dirty = std::mem::take(&mut failure.dirty_signals);
        let kept = std::mem::take(&mut failure.kept);
        drop(failure);
        let outcome = match error {
            None => Ok(()),
            Some(error) => {
                for signal in &dirty {
                    self.heap().zero(signal.offset, signal.bytes);
                }
                self.reset_point_to_point();
                self.forget_unanswered();
                self.abort_flag().store(0, Ordering::SeqCst);
                Err(error)
            }
        };
        drop(kept); // the windows of those signals may be freed now
        outcome
    }

    /// `rank`'s first failure since it was last asked, or the world's root cause when the rank
    /// only stopped because of another's. Resets nothing: other ranks may still be running.
    pub(crate) fn take_rank_failure(&self, rank: usize) -> Result<(), Error> {
        let mut failure = self.failure.lock().unwrap_or_else(|p| p.into_inner());
        match failure.ranks[rank].take() {
            None => Ok(()),
            Some(Error::Aborted { rank, call }) => Err(failure.root.clone().unwrap_or(Error::Aborted { rank, call })),
            Some(error) => Err(error),
        }
    }

    /// Every rank's state for a hang report or a mismatch: the call it is in (and the wait, when
    /// it is in one), the last it completed, its last calls from its flight recorder.
    pub(crate) fn progress_report(&self) -> Box<[String]> {
        (0..self.nranks)
            .map(|rank| {
                if !self.fabric.local.contains(&rank) {
                    return format!("rank {rank} runs in another process (its own report says where it is)");
                }
                self.rank_report(rank)
            })
            .collect()
    }

    /// One rank's part of [`Shared::progress_report`].
    fn rank_report(&self, rank: usize) -> String {
        let progress = &self.ranks[rank];
        let entries = progress.recorder.entries();
        let started = progress.started.0.load(Ordering::Acquire);
        let past = progress.past.0.load(Ordering::Acquire);
        let completed = progress.completed.0.load(Ordering::Acquire);
        let issued = progress.issued.0.load(Ordering::Relaxed);
        let label_of = |seq: u64| entries.iter().rev().find(|e| e.seq == seq).and_then(|e| e.label.as_ref());
        let named = |seq: u64| {
            let what = label_of(seq).map_or_else(|| "a collective".to_owned(), Label::describe);
            format!("{what} (call #{seq})")
        };
        let done = if completed == 0 { "none".to_owned() } else { named(completed) };
        let running = entries.last().filter(|e| e.state == State::Running);
        let mut report = if started > past {
            let waiting = self.waiting(rank, label_of(started)).map(|w| format!(", {w}")).unwrap_or_default();
            format!("rank {rank} is in {}{waiting}, last completed {done}", named(started))
        } else if let Some(task) = running.filter(|e| e.seq == 0).and_then(|e| e.label.as_ref()) {
            format!("rank {rank} is in {}, last completed collective {done}", task.describe())
        } else {
            format!("rank {rank} is in no collective or kernel, last completed {done}")
        };
        let queued = issued.saturating_sub(started.max(past));
        if queued > 0 {
            report.push_str(&format!(", {queued} more call{} queued", if queued == 1 { "" } else { "s" }));
        }
        if !entries.is_empty() {
            let calls = describe_entries(&entries, |e| self.running_state(rank, e));
            report.push_str(&format!("; its last calls: {}", calls.join(", ")));
        }
        report
    }

    /// How a call still in flight on `rank` stands: running, or waiting on whom.
    pub(crate) fn running_state(&self, rank: usize, entry: &Entry) -> String {
        let waiting = if entry.seq != 0 { self.waiting(rank, entry.label.as_ref()) } else { None };
        waiting.unwrap_or_else(|| "running".into())
    }

    /// The wait `rank`'s call (labelled `label`) is in, once it left its spin phase: "waiting
    /// on rank 2 for 12 ms". Peers are named by world rank.
    fn waiting(&self, rank: usize, label: Option<&Label>) -> Option<String> {
        let watch = &self.ranks[rank].watch.0;
        let since = watch.since_ns.load(Ordering::Acquire);
        if since == 0 {
            return None;
        }
        let group = label.and_then(Label::parts).and_then(|(_, _, group)| group.cloned());
        let world = |member: usize| group.as_ref().and_then(|g| g.get(member).copied()).unwrap_or(member);
        let own = group.as_ref().map_or(Some(rank), |g| g.iter().position(|&r| r == rank));
        let elapsed = crate::trace::clock::monotonic_ns().saturating_sub(since) / 1_000_000;
        let peer = watch.peer.load(Ordering::Relaxed);
        let whom = if peer >= 0 {
            format!("rank {}", world(peer as usize))
        } else {
            let row_off = watch.row_off.load(Ordering::Relaxed) as usize;
            let row_len = watch.row_len.load(Ordering::Relaxed).max(0) as usize;
            let expected = watch.expected.load(Ordering::Relaxed);
            let cmp = if watch.cmp.load(Ordering::Relaxed) == WaitCmp::Eq as i32 { WaitCmp::Eq } else { WaitCmp::Ge };
            let missing: Vec<usize> = crate::rank::short_cells(self.heap(), rank, row_off, row_len, expected, cmp)
                .map(|cell| (cell - row_off) / 4)
                .filter(|&i| Some(i) != own)
                .map(world)
                .collect();
            match missing.as_slice() {
                [] => "a peer".to_owned(),
                [one] => format!("rank {one}"),
                more => format!("ranks {more:?}"),
            }
        };
        Some(format!("waiting on {whom} for {elapsed} ms"))
    }

    /// Writes the flight recorders of this process's ranks where `PLD_TRACE_ON_ERROR` says,
    /// once (at the first root-cause failure).
    fn dump_flight_recorders(&self) {
        if self.tracer.on_error.is_none() {
            return;
        }
        let ranks: Vec<(usize, Vec<Entry>)> =
            self.fabric.local.clone().map(|rank| (rank, self.ranks[rank].recorder.entries())).collect();
        self.tracer.dump_on_error(&ranks, |rank, entry| self.running_state(rank, entry));
    }

    /// Records that `rank` is past its collective call `seq` (its task number, over every
    /// communicator): its host may release the windows of calls up to it.
    pub(crate) fn mark_past(&self, rank: usize, seq: u64) {
        self.ranks[rank].past.0.store(seq, Ordering::Release);
    }

    /// Lines every rank's call numbers up at the highest and marks every rank past it, after
    /// ranks that diverged (a failed [`World::spmd`](crate::World::spmd) section) made different
    /// numbers of calls: the next call has one number everywhere, and no LL writer waits for a
    /// reader to get past a call it never made.
    pub(crate) fn align_call_numbers(&self) {
        self.reset_point_to_point();
        self.forget_unanswered();
        let calls = self.ranks.iter().map(|r| r.issued.0.load(Ordering::Relaxed)).max().unwrap_or(0);
        for rank in self.fabric.local.clone() {
            self.ranks[rank].issued.0.store(calls, Ordering::Relaxed);
            self.mark_past(rank, calls);
        }
        // The same within every communicator, on its own numbers.
        let mut comms = self.comms.lock().unwrap_or_else(|p| p.into_inner());
        comms.retain(|c| c.strong_count() > 0);
        for comm in comms.iter().filter_map(std::sync::Weak::upgrade).chain([Arc::clone(&self.world)]) {
            let calls = comm.issued.iter().map(|i| i.0.load(Ordering::Relaxed)).max().unwrap_or(0);
            for (member, &rank) in comm.members.iter().enumerate() {
                if self.fabric.local.contains(&rank) {
                    comm.issued[member].0.store(calls, Ordering::Relaxed);
                    comm.mark_past(self.heap(), member, calls);
                }
            }
        }
    }

    /// Runs `f` on the world's communicator and every live group's.
    fn each_comm(&self, mut f: impl FnMut(&Comm)) {
        let comms: Vec<Arc<Comm>> = {
            let mut comms = self.comms.lock().unwrap_or_else(|p| p.into_inner());
            comms.retain(|c| c.strong_count() > 0);
            comms.iter().filter_map(std::sync::Weak::upgrade).collect()
        };
        f(&self.world);
        comms.iter().for_each(|c| f(c));
    }

    /// Records as failures the unanswered messages (a broadcast's, a scatter's) that `ranks`
    /// sent and whose readers passed them by without taking them (see [`crate::untaken`]).
    /// Only while `ranks` run no kernel; readers not past the call yet are left for later.
    pub(crate) fn check_untaken(&self, ranks: std::ops::Range<usize>) {
        if self.aborted() {
            return; // a failure is being reported: calls it cut short leave messages untaken
        }
        let mut found = Vec::new();
        self.each_comm(|comm| {
            for rank in ranks.clone().filter(|r| self.fabric.local.contains(r)) {
                if let Some(member) = comm.member(rank) {
                    found.extend(comm.untaken(self.heap(), member));
                }
            }
        });
        for untaken in found {
            let call = describe_words(untaken.own);
            self.record_failure(untaken.sender, untaken.error(call, self.progress_report()), None);
        }
    }

    /// Forgets every unanswered message of this process's ranks (after a failure: the calls it
    /// cut short may never be taken).
    fn forget_unanswered(&self) {
        self.each_comm(|comm| {
            for rank in self.fabric.local.clone() {
                if let Some(member) = comm.member(rank) {
                    comm.forget_unanswered(self.heap(), member);
                }
            }
        });
    }

    /// Clears every point-to-point channel of this process's ranks after a failure: a failed
    /// batch leaves messages posted and never taken, and its peers numbered messages the other
    /// side never saw. Both sides start again from message 1 on empty slots.
    pub(crate) fn reset_point_to_point(&self) {
        self.heap().zero(self.p2p_off, pld_model::p2p_area_bytes(self.nranks, self.p2p_depth));
        let n = self.nranks;
        for rank in self.fabric.local.clone() {
            for peer in 0..n {
                self.ranks[rank].sent.of(peer).store(0, Ordering::Relaxed);
                self.ranks[rank].received.of(peer).store(0, Ordering::Relaxed);
            }
        }
    }

    /// Registers a group's communicator, so a failed section lines its call numbers up too and
    /// a diagnosis finds its LL area.
    pub(crate) fn register(&self, comm: &Arc<Comm>) {
        let mut comms = self.comms.lock().unwrap_or_else(|p| p.into_inner());
        comms.retain(|c| c.strong_count() > 0);
        comms.push(Arc::downgrade(comm));
    }

    /// Keeps windows alive until the next world-wide reset has cleared the failure's signals.
    pub(crate) fn keep_until_reset(&self, windows: impl IntoIterator<Item = Arc<Allocation>>) {
        self.failure.lock().unwrap_or_else(|p| p.into_inner()).kept.extend(windows);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_crowded_wait_spins_a_short_while_and_always_yields_in_the_end() {
        let crowded = WaitLimits::crowded();
        assert!((2..=64).contains(&crowded.spins), "{crowded:?}");
        assert!(crowded.spins < WaitLimits::ROOMY.spins && crowded.yields > 0, "{crowded:?}");
        // Calibrated once per process: every world of it waits alike.
        assert_eq!(WaitLimits::crowded(), crowded);
    }

    #[test]
    fn across_nodes_a_crowded_wait_spins_as_long_and_yields_longer_before_it_sleeps() {
        let (crowded, across) = (WaitLimits::crowded(), WaitLimits::crowded_for(&[0, 0, 1, 1]));
        assert_eq!(across.spins, crowded.spins);
        assert!(across.yields > crowded.yields, "{across:?} {crowded:?}");
        // Chosen by where the ranks sit: one node (one rank, or any number) or several.
        assert_eq!(WaitLimits::crowded_for(&[0]), crowded);
        assert_eq!(WaitLimits::crowded_for(&[0, 0, 0, 0]), crowded);
        assert_eq!(WaitLimits::crowded_for(&[1, 0]), across);
    }
}
