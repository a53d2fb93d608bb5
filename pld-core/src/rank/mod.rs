//! A rank's device state: it runs its queue's tasks (or a host's calls run inline) and keeps
//! the rank's progress for hang reports; a kernel's failing status becomes an error with
//! context ([`diagnosis`]).

use std::sync::Arc;
use std::sync::atomic::Ordering;

use pld_model::{ABI_VERSION, DeviceStatus, TILE_BYTES};

use crate::call::{Label, SignalCells};
use crate::comm::Comm;
use crate::cpus::pin_thread_to;
use crate::device::KernelSource;
use crate::device::abi::{Ctx, Diag, FingerprintWords, KernelFn};
use crate::error::{Error, Result};
use crate::shared::{Shared, WaitLimits};
use crate::trace::clock::ticks;
use crate::trace::events::EventLog;
use crate::trace::recorder::{SiteCache, State};
use crate::trace::{Event, LabelIds};

mod diagnosis;
mod task;
mod worker;

pub(crate) use diagnosis::short_cells;
pub(crate) use task::{CommCall, Job, KernelCall, KernelRef, Task, Work};

/// What a kernel run is: a collective in its communicator, or a user kernel (in the world),
/// with its source file and parameter names when it has them.
pub(crate) enum KernelOf<'a> {
    Collective(&'a Comm),
    User(Option<KernelSource>),
}

/// The device worker of one rank.
pub(crate) struct RankState {
    pub(crate) rank: usize,
    shared: Arc<Shared>,
    /// Private scratch memory lent to kernels (u64 for 8-byte alignment).
    scratch: Vec<u64>,
    /// The call sites this thread recorded in the rank's flight recorder.
    sites: SiteCache,
    /// With a trace: the events this thread recorded and has not handed over yet, and the
    /// index of each label it met in its rank's table.
    events: EventLog,
    label_ids: LabelIds,
    /// Whether the call running now is counted in `Shared::busy` (only where the count is kept,
    /// `Tuning::adaptive`: a worker's calls always, a host's inline call unless it is of the
    /// whole world): only a counted call follows the count and lets its kernel take itself out
    /// of it while asleep.
    pub(crate) counted: bool,
    /// What a failed kernel wrote of its failure: zero between calls (read and reset only
    /// after a failure, so a call that succeeds neither clears nor copies it).
    diag: Diag,
    /// The context of this rank's calls in the world, but for each call's own fields.
    world_ctx: WorldCtx,
}

/// The kernel context of the world's communicator: made once, with its fixed fields, and each
/// call sets the rest in place ([`RankState::invoke`]; built field by field, the context was
/// some 40 instructions of a small call, with two conversions from 64 and 128 bits).
struct WorldCtx(Ctx);

// SAFETY: its pointers point into the world (`Shared`: the windows, the world's communicator,
// the rank's watch), which the rank's state holds as long as it lives and which is itself Send
// and Sync; the fields that would point into the state (its scratch and diagnosis) are null
// here until a call sets them, and point into the state itself then.
unsafe impl Send for WorldCtx {}

impl Drop for RankState {
    fn drop(&mut self) {
        if let Some(events) = self.events.finish() {
            self.shared.tracer.hand_over(self.rank, events);
        }
    }
}

impl RankState {
    /// A rank's device state for a host that runs its rank's calls itself.
    pub(crate) fn new(rank: usize, shared: &Arc<Shared>) -> RankState {
        let mut events = EventLog::default();
        if shared.tracer.tracing() {
            events.fill(shared.tracer.next_chunk(rank));
        }
        RankState {
            rank,
            shared: Arc::clone(shared),
            scratch: Vec::new(),
            sites: SiteCache::default(),
            events,
            label_ids: LabelIds::default(),
            counted: shared.tuning.adaptive,
            diag: Diag::default(),
            world_ctx: WorldCtx(fixed_ctx(shared, rank, &shared.world, rank)),
        }
    }

    /// Runs a task on the calling thread: the worker's, or a host's that runs its rank's calls
    /// itself (then the rank's queue is drained, so the worker is idle and the calls stay in
    /// order).
    pub(crate) fn run(&mut self, task: Task, shared: &Shared) {
        let Task { call, seq, signal, job } = task;
        let comm = match &job {
            Job::Kernel(k) => Some(k.comm),
            Job::Work(_) => None,
        };
        self.run_with(&call, seq, signal, comm, shared, |state| match job {
            Job::Kernel(KernelCall { kernel, args, scratch_bytes, comm }) => state.run_kernel(
                kernel,
                (&raw const args).cast(),
                scratch_bytes,
                &call,
                args.call,
                KernelOf::Collective(comm.comm()),
            ),
            Job::Work(work) => work(state),
        });
    }

    /// Runs a collective's kernel on the calling thread, as [`RankState::run`] runs a task of
    /// one, with its arguments borrowed: a host that runs its rank's calls itself builds no task
    /// (copying the arguments into one cost more than a small collective's transfer).
    pub(crate) fn run_kernel_now(
        &mut self,
        call: &Label,
        seq: u64,
        signal: Option<SignalCells>,
        &KernelRef { kernel, args, scratch_bytes, comm }: &KernelRef<'_>,
        shared: &Shared,
    ) {
        self.run_with(call, seq, signal, Some(comm), shared, |state| {
            state.run_kernel(
                kernel,
                std::ptr::from_ref(args).cast(),
                scratch_bytes,
                call,
                args.call,
                KernelOf::Collective(comm.comm()),
            )
        });
    }

    /// The bookkeeping around every task: the rank's progress for hang reports, a task skipped
    /// after a failure, a panic caught, the rank marked past a collective call, a failure recorded.
    #[inline(always)]
    fn run_with(
        &mut self,
        call: &Label,
        seq: u64,
        signal: Option<SignalCells>,
        comm: Option<CommCall>,
        shared: &Shared,
        work: impl FnOnce(&mut RankState) -> Result<()>,
    ) {
        let progress = &shared.ranks[self.rank];
        let timed = shared.tracer.timed;
        let start = if timed { ticks() } else { 0 };
        let entry = progress.recorder.enabled().then(|| progress.recorder.begin(call, seq, start, &mut self.sites));
        if seq != 0 {
            progress.started.0.store(seq, Ordering::Release);
        }
        if timed {
            progress.watch.0.wait_ticks.store(0, Ordering::Relaxed);
            progress.watch.0.ll.store(0, Ordering::Relaxed);
        }
        let error = if shared.aborted() {
            // A call already failed: this task would wait on a rank that stopped.
            Some(Error::Aborted { rank: self.rank, call: call.describe() })
        } else {
            match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| work(self))) {
                Ok(Ok(())) => None,
                Ok(Err(error)) => Some(error),
                Err(panic) => {
                    let message = crate::call::panic_message(panic.as_ref());
                    Some(Error::RankPanicked { rank: self.rank, call: call.describe(), message })
                }
            }
        };
        let (end, wait, ll) = match timed {
            true => {
                let watch = &progress.watch.0;
                (ticks(), watch.wait_ticks.load(Ordering::Relaxed), watch.ll.load(Ordering::Relaxed) != 0)
            }
            false => (0, 0, false),
        };
        if let Some((entry, site)) = entry {
            let state = if error.is_none() { State::Done } else { State::Failed };
            progress.recorder.end(entry, site, state, (end, wait, ll));
        }
        if shared.tracer.tracing() {
            let rank = self.rank;
            let id = shared.tracer.label_id(rank, call, &mut self.label_ids);
            let flags = if error.is_none() { Event::OK } else { 0 } | if ll { Event::LL } else { 0 };
            if let Some(full) = self.events.push(Event { start, end, wait, seq: seq as u32, label: id | flags }) {
                shared.tracer.hand_over(rank, full);
                self.events.fill(shared.tracer.next_chunk(rank));
            }
        }
        if seq != 0 {
            if error.is_none() {
                progress.completed.0.store(seq, Ordering::Release);
            }
            shared.mark_past(self.rank, seq);
            if let Some(call) = comm {
                call.comm().mark_past(shared.heap(), call.member, call.seq);
            }
        }
        if let Some(error) = error {
            // A wait the failed call left on record (it ends a wait's record only when the wait
            // succeeds) must not be taken for the next call's.
            progress.watch.0.since_ns.store(0, Ordering::Relaxed);
            shared.record_failure(self.rank, error, signal);
        }
    }

    /// Base of this rank's window.
    pub(crate) fn local_base(&self) -> *mut u8 {
        self.shared.heap().base(self.rank)
    }

    /// Runs a kernel on this rank and turns its status into a result with context (`own_call`:
    /// the collective's fingerprint, for a mismatch report).
    #[inline(always)]
    pub(crate) fn run_kernel(
        &mut self,
        kernel: KernelFn,
        args: *const std::ffi::c_void,
        scratch_bytes: usize,
        call: &Label,
        own_call: FingerprintWords,
        of: KernelOf<'_>,
    ) -> Result<()> {
        // A user kernel runs in the world (its reference counted once here; a collective's
        // communicator is borrowed, so a small collective touches no shared count).
        let world;
        let comm = match of {
            KernelOf::Collective(comm) => comm,
            KernelOf::User(_) => {
                world = Arc::clone(&self.shared.world);
                &*world
            }
        };
        let status = self.invoke(kernel, args, scratch_bytes, comm);
        if status == DeviceStatus::Ok as i32 {
            return Ok(());
        }
        let diag = self.take_diag();
        let source = match of {
            KernelOf::User(source) => source,
            KernelOf::Collective(_) => None,
        };
        Err(self.failure(status, &diag, call, own_call, comm, source))
    }

    /// The diagnosis the last failed kernel wrote, leaving it zero for the next call.
    pub(crate) fn take_diag(&mut self) -> Diag {
        std::mem::take(&mut self.diag)
    }

    /// Runs a kernel in `comm` on this rank: its context built (the wait from the ranks busy
    /// now, the pin of a call that has the cores to itself), its status returned (a failure's
    /// diagnosis is in [`RankState::take_diag`]; not returned by value, since copying it out of
    /// every call cost a tenth of a small collective's host path).
    #[inline(always)]
    pub(crate) fn invoke(
        &mut self,
        kernel: KernelFn,
        args: *const std::ffi::c_void,
        scratch_bytes: usize,
        comm: &Comm,
    ) -> i32 {
        let scratch_bytes = scratch_bytes.max(TILE_BYTES);
        let words = scratch_bytes.div_ceil(8);
        if self.scratch.len() < words {
            self.scratch.resize(words, 0);
        }
        let shared = &*self.shared;
        // The wait of every counted call follows the ranks busy now; an uncounted one is
        // crowded where the node's ranks outnumber its cores.
        let limits = match self.counted {
            true => shared.tuning.limits(shared.busy.0.load(Ordering::Relaxed)),
            false => shared.tuning.fixed_limits(),
        };
        let member = || comm.member(self.rank).expect("a rank runs only its communicators' calls");
        let follow = &shared.tuning.follow_cpus;
        if !follow.is_empty() && comm.size() > 1 && limits == WaitLimits::ROOMY {
            pin_thread_to(follow[member() % follow.len()]);
        }
        // The world's context is the state's own, rewritten in place: a copy of it was a call
        // to `memcpy` per call (136 bytes, over what the compiler copies inline).
        let mut group_ctx;
        let ctx = match std::ptr::eq(comm, &*shared.world) {
            true => &mut self.world_ctx.0,
            false => {
                group_ctx = fixed_ctx(shared, self.rank, comm, member());
                &mut group_ctx
            }
        };
        ctx.spin_limit = limits.spins;
        ctx.yield_limit = limits.yields;
        ctx.running = if self.counted { shared.busy.0.as_ptr() } else { std::ptr::null_mut() };
        ctx.scratch = self.scratch.as_mut_ptr().cast();
        ctx.scratch_bytes = (self.scratch.len() * 8) as u64;
        ctx.diag = &mut self.diag;
        ctx.wakes_due = 0;
        ctx.wakes_off = 0;
        // SAFETY: `ctx` describes this rank's live windows and scratch; `args` points to the
        // argument struct the kernel expects (built by the caller from the same contract).
        let status = unsafe { kernel(ctx, args) };
        // The look for readers asleep on this call's LL messages, deferred from each post
        // (`pld_wakes_flush`), whichever way the kernel returned: a peer must not sleep on a
        // message because this rank failed after sending it. Out of the kernels, so a call that
        // posted nothing (one rank) pays one branch.
        if ctx.wakes_due != 0 {
            // SAFETY: `end_call` is the builtin library's `pld_end_call`, alive as the world is;
            // `ctx` is the context the kernel just ran with.
            unsafe { (shared.end_call)(ctx) };
        }
        status
    }

    /// The world this rank belongs to.
    pub(crate) fn shared(&self) -> &Shared {
        &self.shared
    }
}

/// The context of `rank`'s calls in `comm` (as its `member`), but for the fields each call
/// sets ([`RankState::invoke`]: its wait, the busy count, its scratch and diagnosis).
fn fixed_ctx(shared: &Shared, rank: usize, comm: &Comm, member: usize) -> Ctx {
    Ctx {
        abi_version: ABI_VERSION,
        rank: member as i32,
        nranks: comm.size() as i32,
        spin_limit: 0,
        yield_limit: 0,
        max_running: i32::try_from(shared.tuning.cores).unwrap_or(i32::MAX),
        peer_bases: comm.peer_bases.as_ptr(),
        local_base: shared.heap().base(rank),
        window_bytes: shared.heap().capacity() as u64,
        sleepers: comm.sleepers.as_ptr(),
        abort_flag: shared.fabric.control,
        running: std::ptr::null_mut(),
        timeout_ns: u64::try_from(shared.settings.timeout.as_nanos()).unwrap_or(u64::MAX),
        scratch: std::ptr::null_mut(),
        scratch_bytes: 0,
        ops: comm.ops(),
        diag: std::ptr::null_mut(),
        watch: &shared.ranks[rank].watch.0,
        wakes_due: 0,
        wakes_off: 0,
    }
}
