//! [`World`]: the ranks of one program, each a device worker with an in-order task queue, over
//! one symmetric heap.

use std::ops::Range;
use std::panic::Location;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, Sender, channel};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use crate::collective::CallWhat;
use crate::device::abi::{CollArgs, Ctx, Diag, FingerprintWords, KernelFn, Ops};
use crate::device::{LOCAL_OPS, builtins};
use crate::fingerprint::describe_words;
use crate::heap::SymmetricHeap;
use crate::host::Section;
use crate::window::Allocation;
use crate::{Error, Host, Result};
use pld_model::{ABI_VERSION, DeviceStatus, TILE_BYTES, WaitCmp};

/// Default deadline of every wait, overridable with `PLD_TIMEOUT_MS`.
pub const DEFAULT_TIMEOUT_MS: u64 = 60_000;
/// Default symmetric heap size per rank (reserved, not committed), overridable with
/// `PLD_WINDOW_BYTES`.
pub const DEFAULT_WINDOW_BYTES: usize = 1 << 30;
/// Default size from which a mesh all_reduce runs two-shot instead of one-shot at 3 ranks or
/// more, overridable with `PLD_TWO_SHOT_BYTES`. Measured with pld-bench on 2 cores (see
/// docs/PERFORMANCE.md): at 4 and 8 ranks two-shot wins from 8 KiB, the first size above the LL
/// messages; at 2 ranks from 4 KiB, so 2 ranks use [`DEFAULT_TWO_SHOT_BYTES_2_RANKS`].
pub const DEFAULT_TWO_SHOT_BYTES: usize = 8 << 10;
/// The two-shot threshold of a 2-rank world.
pub const DEFAULT_TWO_SHOT_BYTES_2_RANKS: usize = 4 << 10;
/// Default largest payload per rank that travels as LL messages (data and flag together, no
/// round trips; see `pld_device.h`), overridable with `PLD_LL_BYTES` (0: never).
pub const DEFAULT_LL_BYTES: usize = 4 << 10;

/// Slots per sender in every inbox (`PLD_LL_SLOTS`) and the header before each payload.
const LL_SLOTS: usize = 8;
const LL_HEADER: usize = 32;
/// Inbox bytes per window at most: the slot payload shrinks at high rank counts.
const LL_INBOX_BUDGET: usize = 1 << 20;

/// Where the LL message area lies in every window; `stride` 0: no LL messages.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct LlArea {
    pub(crate) offset: usize,
    pub(crate) stride: usize,
    bytes: usize,
}

impl LlArea {
    /// The area for `payload` bytes per slot at `nranks` (the header's layout: `past`, the
    /// private tables, the inbox).
    fn layout(nranks: usize, payload: usize) -> Option<(usize, usize)> {
        let mut stride = (LL_HEADER + payload).next_multiple_of(64);
        while nranks * LL_SLOTS * stride > LL_INBOX_BUDGET {
            stride = (stride / 2).next_multiple_of(64);
        }
        let tables = (8 * nranks * (LL_SLOTS + 1)).next_multiple_of(64);
        (payload > 0 && stride >= LL_HEADER + 64).then(|| (stride, 64 + tables + nranks * LL_SLOTS * stride))
    }

    fn contains(&self, off: u64) -> bool {
        self.stride != 0 && (self.offset as u64..(self.offset + self.bytes) as u64).contains(&off)
    }
}

/// Configures a [`World`] before starting it.
#[derive(Clone, Debug)]
pub struct WorldBuilder {
    nranks: usize,
    timeout: Option<Duration>,
    window_bytes: Option<usize>,
    two_shot_bytes: Option<usize>,
    ll_bytes: Option<usize>,
    inline: Option<bool>,
    check_calls: bool,
}

impl WorldBuilder {
    /// A world of `nranks` ranks.
    pub fn new(nranks: usize) -> WorldBuilder {
        WorldBuilder {
            nranks,
            timeout: None,
            window_bytes: None,
            two_shot_bytes: None,
            ll_bytes: None,
            inline: None,
            check_calls: true,
        }
    }

    /// Whether collectives compare their fingerprints across ranks before moving data (default
    /// on). Off only to measure what the check costs (`pld-bench --baseline unchecked`): a
    /// world without it cannot tell mismatched calls from matching ones.
    pub fn check_calls(mut self, check: bool) -> WorldBuilder {
        self.check_calls = check;
        self
    }

    /// The deadline of every wait (default `PLD_TIMEOUT_MS`, else 60 s).
    pub fn timeout(mut self, timeout: Duration) -> WorldBuilder {
        self.timeout = Some(timeout);
        self
    }

    /// Size of each rank's symmetric heap (default `PLD_WINDOW_BYTES`, else 1 GiB reserved).
    pub fn window_bytes(mut self, bytes: usize) -> WorldBuilder {
        self.window_bytes = Some(bytes);
        self
    }

    /// Size from which a mesh all_reduce runs two-shot (default `PLD_TWO_SHOT_BYTES`, else
    /// 4 KiB at 2 ranks and 8 KiB above); 0 makes every mesh all_reduce two-shot, `usize::MAX`
    /// none.
    pub fn two_shot_bytes(mut self, bytes: usize) -> WorldBuilder {
        self.two_shot_bytes = Some(bytes);
        self
    }

    /// Whether a host that drives one rank ([`World::spmd`], each process under MPI) runs a
    /// call itself when its rank has nothing queued, instead of handing it to the rank's worker
    /// (default on, or `PLD_INLINE=0`): a hand-off between threads costs more than a small
    /// collective. Calls still return as soon as they are queued otherwise.
    pub fn inline(mut self, inline: bool) -> WorldBuilder {
        self.inline = Some(inline);
        self
    }

    /// Largest payload per rank a collective sends as LL messages (default
    /// [`DEFAULT_LL_BYTES`], or `PLD_LL_BYTES`); 0 turns them off.
    pub fn ll_bytes(mut self, bytes: usize) -> WorldBuilder {
        self.ll_bytes = Some(bytes);
        self
    }

    /// Starts the ranks as threads of this process (the embedded default launcher).
    pub fn local(self) -> Result<World> {
        if self.nranks == 0 {
            return Err(Error::NoRanks { requested: 0 });
        }
        builtins()?; // load and check the device binary before any rank starts
        let heap = SymmetricHeap::new(self.nranks, self.window_bytes_or(DEFAULT_WINDOW_BYTES))?;
        let fabric = Fabric::local(self.nranks, heap);
        self.start(fabric)
    }

    /// Starts this process's rank of an MPI job (one rank per process, started by `mpirun` or
    /// `srun`): windows from MPI-3 RMA, shared memory when every rank is on this node
    /// (`PLD_MPI_RMA=1` forces one-sided Put/Get/Accumulate even then). The rank count is the
    /// job's; a builder's count other than 0 must equal it.
    #[cfg(feature = "mpi")]
    pub fn mpi(self) -> Result<World> {
        builtins()?;
        let fabric = crate::mpi::fabric(self.window_bytes_or(crate::mpi::DEFAULT_WINDOW_BYTES))?;
        if self.nranks != 0 && self.nranks != fabric.nranks {
            return Err(Error::NranksMismatch {
                call: "World::builder(n).mpi()".into(),
                declared: self.nranks,
                world: fabric.nranks,
            });
        }
        self.start(fabric)
    }

    fn window_bytes_or(&self, default: usize) -> usize {
        self.window_bytes.or_else(|| env_number("PLD_WINDOW_BYTES").map(|b| b as usize)).unwrap_or(default)
    }

    /// Starts a device worker for each rank of this process over `fabric`.
    fn start(self, fabric: Fabric) -> Result<World> {
        let nranks = fabric.nranks;
        let timeout = self
            .timeout
            .unwrap_or_else(|| Duration::from_millis(env_number("PLD_TIMEOUT_MS").unwrap_or(DEFAULT_TIMEOUT_MS)));
        let two_shot_bytes = self
            .two_shot_bytes
            .or_else(|| env_number("PLD_TWO_SHOT_BYTES").map(|b| b as usize))
            .unwrap_or(if nranks <= 2 { DEFAULT_TWO_SHOT_BYTES_2_RANKS } else { DEFAULT_TWO_SHOT_BYTES });
        // The call board (two fingerprint slots per rank) lives in the window, where peers and
        // remote transports reach it like any signal.
        let board_off = fabric.heap.alloc("__call_board", 2 * std::mem::size_of::<FingerprintWords>())?;
        // The LL message area, on transports where peers are addressable.
        let ll_bytes =
            self.ll_bytes.or_else(|| env_number("PLD_LL_BYTES").map(|b| b as usize)).unwrap_or(DEFAULT_LL_BYTES);
        let ll = match LlArea::layout(nranks, ll_bytes) {
            Some((stride, bytes)) if !fabric.transport_only => {
                LlArea { offset: fabric.heap.alloc("__ll_messages", bytes)?, stride, bytes }
            }
            _ => LlArea::default(),
        };
        let board_bytes = fabric.heap.live_bytes();
        let inline = self.inline.unwrap_or_else(|| env_number("PLD_INLINE") != Some(0));
        // Threads of one process's ranks are pinned one per core when each can have its own
        // (under mpirun the launcher binds processes already).
        let allowed = allowed_cpus();
        let pin_cpus = if fabric.launcher == "local" && nranks <= allowed.len() && env_number("PLD_PIN") != Some(0) {
            allowed
        } else {
            Vec::new()
        };
        let cpus = node_cpus();
        // Ranks that outnumber cores must hand their core over quickly: a pure spin collapses
        // by orders of magnitude there. Otherwise spinning a while beats a futex round trip.
        // (Under MPI every rank of this node counts, whichever process runs it.)
        let (spin_limit, yield_limit) = if fabric.node_ranks > cpus { (64, 16) } else { (20_000, 64) };
        let local = fabric.local.clone();
        let shared = Arc::new(Shared {
            nranks,
            // A rank whose window only MPI may update atomically reaches even itself through
            // the transport: a CPU atomic and an MPI_Accumulate on one cell are not atomic
            // with each other.
            peer_bases: (0..nranks)
                .map(|r| if fabric.transport_only { std::ptr::null_mut() } else { fabric.heap.base(r) })
                .collect(),
            fabric,
            timeout,
            two_shot_bytes,
            spin_limit,
            yield_limit,
            queued: (0..nranks).map(|_| Padded::default()).collect(),
            finished: (0..nranks).map(|_| Padded::default()).collect(),
            past_seq: (0..nranks).map(|_| Padded::default()).collect(),
            completed_seq: (0..nranks).map(|_| Padded::default()).collect(),
            started: (0..nranks).map(|_| Padded::default()).collect(),
            idle_waiters: AtomicUsize::new(0),
            idle_lock: Mutex::new(()),
            idle: Condvar::new(),
            failure: Mutex::new(Failure { ranks: vec![None; nranks], ..Failure::default() }),
            host_active: AtomicBool::new(false),
            board_off,
            board_bytes,
            ll,
            inline,
            pin_cpus,
            check_calls: self.check_calls,
            call_seq: (0..nranks).map(|_| Padded::default()).collect(),
            progress: (0..nranks).map(|_| Padded(Mutex::new(Progress::default()))).collect(),
        });
        let mut queues: Vec<Option<Sender<Task>>> = (0..nranks).map(|_| None).collect();
        let mut workers = Vec::with_capacity(local.len());
        for rank in local {
            let (tx, rx) = channel();
            let state = RankState::new(rank, &shared);
            let worker = std::thread::Builder::new()
                .name(format!("pld-rank-{rank}"))
                .spawn(move || state.serve(rx))
                .map_err(|e| Error::system(format!("starting rank {rank}'s device worker"), e))?;
            queues[rank] = Some(tx);
            workers.push(worker);
        }
        Ok(World { shared, queues, workers })
    }
}

/// What a launcher provides: every rank's window, the ranks this process runs, the cells every
/// waiting process shares (abort flag, sleepers), and the services behind `pld_ops`.
pub(crate) struct Fabric {
    /// How the ranks run, for reports (`local`, `mpi (shared windows)`, `mpi (RMA)`).
    pub(crate) launcher: &'static str,
    pub(crate) nranks: usize,
    /// Ranks whose device workers run in this process.
    pub(crate) local: Range<usize>,
    /// Ranks that share this machine's cores (for the spin budget).
    pub(crate) node_ranks: usize,
    pub(crate) heap: SymmetricHeap,
    /// `[abort, sleepers[nranks]]`: in memory every process of the node maps, so the abort flag
    /// and the futex sleepers work across processes.
    pub(crate) control: *mut i32,
    pub(crate) ops: *const Ops,
    /// What `control` and `ops` point into; dropped after the workers stop.
    pub(crate) _keep: Box<dyn std::any::Any + Send + Sync>,
    /// Called with every root-cause failure (MPI: report it and end the job).
    pub(crate) on_failure: Option<fn(usize, &Error)>,
    /// Whether every window, this rank's included, is updated through the transport only (MPI
    /// RMA); the own window is still read directly (`local_base`).
    pub(crate) transport_only: bool,
    /// Called after each allocation of a host with (rank, index, name, bytes) when ranks live in
    /// several processes: a barrier that also checks every rank allocated the same window.
    pub(crate) agree_on_allocation: Option<AgreeOnAllocation>,
}

/// `(rank, index, name, bytes)` of a host's allocation, checked against every rank's.
pub(crate) type AgreeOnAllocation = fn(usize, u64, &str, usize) -> Result<()>;

impl Fabric {
    fn local(nranks: usize, heap: SymmetricHeap) -> Fabric {
        let control: Box<[AtomicI32]> = (0..=nranks).map(|_| AtomicI32::new(0)).collect();
        Fabric {
            launcher: "local",
            nranks,
            local: 0..nranks,
            node_ranks: nranks,
            heap,
            control: control.as_ptr().cast::<i32>().cast_mut(),
            ops: &LOCAL_OPS,
            _keep: Box::new(control),
            on_failure: None,
            transport_only: false,
            agree_on_allocation: None,
        }
    }
}

/// Cores of this machine the ranks share: the online CPUs (an MPI process bound to one core
/// sees only that core, yet the node's ranks share all of them), at least this process's own.
fn node_cpus() -> usize {
    let own = std::thread::available_parallelism().map_or(1, |n| n.get());
    let online = std::fs::read_to_string("/sys/devices/system/cpu/online").ok().map(|list| {
        list.trim()
            .split(',')
            .map(|range| match range.split_once('-') {
                Some((a, b)) => b.parse::<usize>().unwrap_or(0).saturating_sub(a.parse().unwrap_or(0)) + 1,
                None => 1,
            })
            .sum::<usize>()
    });
    online.unwrap_or(own).max(own)
}

/// The CPUs this process may run on.
fn allowed_cpus() -> Vec<usize> {
    use rustix::thread::{CpuSet, sched_getaffinity};
    sched_getaffinity(None).map_or_else(|_| Vec::new(), |set| (0..CpuSet::MAX_CPU).filter(|&c| set.is_set(c)).collect())
}

/// Pins the calling thread to the CPU of `rank` among `cpus`, as mpirun binds one process per
/// core: two ranks' threads never share a core while another stands idle, and a rank's caches
/// stay warm. Best effort (a failure leaves the thread where it was).
fn pin_thread(rank: usize, cpus: &[usize]) {
    if cpus.is_empty() {
        return;
    }
    let mut set = rustix::thread::CpuSet::new();
    set.set(cpus[rank % cpus.len()]);
    let _ = rustix::thread::sched_setaffinity(None, &set);
}

fn env_number(name: &str) -> Option<u64> {
    std::env::var(name).ok()?.trim().parse().ok()
}

/// A set of ranks that run device tasks, and the symmetric heap their windows live in.
///
/// Dropping the world waits for queued work and stops the ranks.
pub struct World {
    shared: Arc<Shared>,
    /// One queue per rank this process runs.
    queues: Vec<Option<Sender<Task>>>,
    workers: Vec<JoinHandle<()>>,
}

impl std::fmt::Debug for World {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("World").field("nranks", &self.shared.nranks).finish_non_exhaustive()
    }
}

impl World {
    /// `nranks` ranks as threads of this process, with default settings.
    pub fn local(nranks: usize) -> Result<World> {
        WorldBuilder::new(nranks).local()
    }

    /// The world this process was started for: the MPI world when it runs under `mpirun` or
    /// `srun` (with the `mpi` feature; an error without it), otherwise `PLD_NRANKS` ranks (default
    /// 4) as threads of this process. One executable runs either way.
    pub fn from_env() -> Result<World> {
        if World::launched_by_mpi() {
            #[cfg(feature = "mpi")]
            return WorldBuilder::new(0).mpi();
            #[cfg(not(feature = "mpi"))]
            return Err(Error::system(
                "starting the world of an MPI job",
                "this executable was built without pld's `mpi` feature (build with `--features mpi`)",
            ));
        }
        World::local(env_number("PLD_NRANKS").map_or(4, |n| n as usize))
    }

    /// Whether this process was started by an MPI launcher (`mpirun`, `srun`): its environment
    /// names a rank of a job (Open MPI, MPICH and PMIx variables).
    pub fn launched_by_mpi() -> bool {
        ["OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK"].iter().any(|v| std::env::var_os(v).is_some())
    }

    /// Configure a world before starting it.
    pub fn builder(nranks: usize) -> WorldBuilder {
        WorldBuilder::new(nranks)
    }

    /// Number of ranks.
    pub fn nranks(&self) -> usize {
        self.shared.nranks
    }

    /// How the ranks run: `local` (threads of this process), `mpi (shared windows)` or
    /// `mpi (RMA)`.
    pub fn launcher(&self) -> &'static str {
        self.shared.fabric.launcher
    }

    /// The deadline every wait runs under.
    pub fn timeout(&self) -> Duration {
        self.shared.timeout
    }

    /// Size from which a mesh all_reduce runs two-shot.
    pub fn two_shot_bytes(&self) -> usize {
        self.shared.two_shot_bytes
    }

    /// Bytes of the symmetric heap currently allocated (per rank) by windows and signals.
    pub fn live_window_bytes(&self) -> usize {
        self.shared.fabric.heap.live_bytes() - self.shared.board_bytes
    }

    /// Opens the host scope: the single controller that allocates windows, stages data and
    /// calls collectives. One at a time per world ([`Error::WorldBusy`] otherwise).
    pub fn host(&self) -> Result<Host<'_>> {
        if self.shared.host_active.swap(true, Ordering::AcqRel) {
            return Err(Error::WorldBusy);
        }
        Ok(Host::new(self, self.shared.fabric.local.clone(), None))
    }

    /// Runs `f` once per rank, each on a thread of its own with a host that drives that rank
    /// alone: the way every process runs the host function under MPI, so ranks may take
    /// different paths and can disagree. Windows are allocated collectively (the k-th
    /// allocation of every rank is one window; a rank allocating another size is an error on
    /// both sides); every collective call is checked against the peers' before data moves.
    ///
    /// Returns each rank's result, by rank. A failure on any rank (an error returned by `f`, a
    /// failed call, a panic) ends every rank's calls in flight and later in the section with an
    /// error naming the root cause, and the section fails as a whole: a rank that finished its
    /// part gets the root cause as its result. When the section ends, the world is reset and
    /// usable again.
    pub fn spmd<R: Send>(&self, f: impl Fn(&Host<'_>) -> Result<R> + Sync) -> Result<Vec<Result<R>>> {
        if self.shared.fabric.local != (0..self.nranks()) {
            return Err(Error::system(
                "World::spmd",
                "this process runs only some ranks of the world (MPI): every process already runs the host \
                 function for its own rank, through `World::host`",
            ));
        }
        if self.shared.host_active.swap(true, Ordering::AcqRel) {
            return Err(Error::WorldBusy);
        }
        let section = Arc::new(Section::new(self.nranks()));
        let f = &f;
        let results = std::thread::scope(|scope| {
            let threads: Vec<_> = (0..self.nranks())
                .map(|rank| {
                    let section = Arc::clone(&section);
                    std::thread::Builder::new()
                        .name(format!("pld-host-{rank}"))
                        .spawn_scoped(scope, move || self.run_rank_host(rank, section, f))
                })
                .collect();
            threads
                .into_iter()
                .enumerate()
                .map(|(rank, thread)| match thread {
                    Ok(thread) => thread.join().unwrap_or_else(|panic| Err(host_panicked(rank, panic.as_ref()))),
                    Err(e) => Err(Error::system(format!("starting rank {rank}'s host thread"), e)),
                })
                .collect()
        });
        drop(section);
        // Every host is done: clear what a failure left behind (the abort flag, the credits of
        // the calls it cut short) and line the call numbers up again (ranks that diverged made
        // different numbers of calls), so the world is usable again.
        let outcome = self.sync();
        let calls = self.shared.call_seq.iter().map(|c| c.0.load(Ordering::Relaxed)).max().unwrap_or(0);
        self.shared.call_seq.iter().for_each(|c| c.0.store(calls, Ordering::Relaxed));
        self.shared.host_active.store(false, Ordering::Release);
        // A section fails as a whole, as an MPI job does: a rank that finished its part before
        // (or without meeting) the failure gets the root cause too.
        Ok(match outcome {
            Ok(()) => results,
            Err(root) => results.into_iter().map(|r| r.and_then(|_| Err(root.clone()))).collect(),
        })
    }

    /// One rank's host function under [`World::spmd`]: its failures (an error it returns, a
    /// panic) are the world's, so peers waiting for this rank stop instead of timing out.
    fn run_rank_host<R>(&self, rank: usize, section: Arc<Section>, f: &impl Fn(&Host<'_>) -> Result<R>) -> Result<R> {
        pin_thread(rank, &self.shared.pin_cpus);
        let host = Host::new(self, rank..rank + 1, Some(section));
        let result = match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(&host))) {
            Ok(result) => result,
            Err(panic) => Err(host_panicked(rank, panic.as_ref())),
        };
        if let Err(error) = &result {
            self.shared.record_failure(rank, error.clone(), None);
        }
        let finished = host.finish();
        result.and_then(|value| finished.map(|()| value))
    }

    pub(crate) fn shared(&self) -> &Arc<Shared> {
        &self.shared
    }

    pub(crate) fn enqueue(&self, rank: usize, task: Task) {
        self.shared.queued[rank].0.fetch_add(1, Ordering::Relaxed);
        let Some(queue) = &self.queues[rank] else {
            unreachable!("rank {rank} runs in another process; hosts dispatch to their own ranks only")
        };
        if queue.send(task).is_err() {
            // The worker is gone (it cannot exit while the world lives); account for the task.
            self.shared.finish_task(rank);
        }
    }

    /// Waits until the queues of `ranks` are drained.
    fn wait_idle(&self, ranks: Range<usize>) {
        let shared = &self.shared;
        if shared.drained(ranks.clone()) {
            return;
        }
        shared.idle_waiters.fetch_add(1, Ordering::SeqCst);
        let mut guard = shared.idle_lock.lock().unwrap_or_else(|p| p.into_inner());
        while !shared.drained(ranks.clone()) {
            guard = shared.idle.wait(guard).unwrap_or_else(|p| p.into_inner());
        }
        drop(guard);
        shared.idle_waiters.fetch_sub(1, Ordering::SeqCst);
    }

    /// Waits until every queue is drained; returns the root cause of the failures since the
    /// last sync and clears the state a failed call leaves behind (abort flag, credits in its
    /// signals).
    pub(crate) fn sync(&self) -> Result<()> {
        self.wait_idle(0..self.nranks());
        let shared = &self.shared;
        let mut failure = shared.failure.lock().unwrap_or_else(|p| p.into_inner());
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
                    shared.fabric.heap.zero(signal.offset, signal.bytes);
                }
                shared.abort_flag().store(0, Ordering::SeqCst);
                Err(error)
            }
        };
        drop(kept); // the windows of those signals may be freed now
        outcome
    }

    /// Waits until `rank`'s queue is drained; returns its first failure since its last sync,
    /// or the world's root cause when the rank only stopped because of another's. Resets
    /// nothing: other ranks may still be running ([`World::spmd`] resets at its end).
    pub(crate) fn sync_rank(&self, rank: usize) -> Result<()> {
        self.wait_idle(rank..rank + 1);
        let mut failure = self.shared.failure.lock().unwrap_or_else(|p| p.into_inner());
        match failure.ranks[rank].take() {
            None => Ok(()),
            Some(Error::Aborted { rank, call }) => Err(failure.root.clone().unwrap_or(Error::Aborted { rank, call })),
            Some(error) => Err(error),
        }
    }
}

impl Drop for World {
    fn drop(&mut self) {
        self.queues.clear();
        for worker in self.workers.drain(..) {
            let _ = worker.join();
        }
    }
}

/// What rank workers and allocations share.
pub(crate) struct Shared {
    pub(crate) nranks: usize,
    pub(crate) fabric: Fabric,
    peer_bases: Box<[*mut u8]>,
    timeout: Duration,
    two_shot_bytes: usize,
    spin_limit: i32,
    yield_limit: i32,
    /// Tasks queued per rank, counted by the rank's host, and tasks finished, counted by its
    /// worker: each on a line of its own, so queueing and finishing a task share no cache line.
    queued: Box<[Padded<AtomicU64>]>,
    finished: Box<[Padded<AtomicU64>]>,
    /// The number of the last collective call each rank is past (finished or gave up).
    pub(crate) past_seq: Box<[Padded<AtomicU64>]>,
    /// The last call each rank completed without error (a call past `past_seq` but not here
    /// failed or was skipped).
    completed_seq: Box<[Padded<AtomicU64>]>,
    /// The last call each rank started, and how often its call site changed.
    started: Box<[Padded<Started>]>,
    /// Hosts asleep in a sync: a worker wakes `idle` only when there is one.
    idle_waiters: AtomicUsize,
    /// Held only to sleep on `idle` and to wake it.
    idle_lock: Mutex<()>,
    idle: Condvar,
    failure: Mutex<Failure>,
    pub(crate) host_active: AtomicBool,
    /// Offset of the call board in every window.
    pub(crate) board_off: usize,
    /// Heap bytes the board and the LL area take (not windows of the user's).
    board_bytes: usize,
    /// The LL message area of every window.
    pub(crate) ll: LlArea,
    /// Whether a host of one rank runs calls itself when the rank is idle.
    pub(crate) inline: bool,
    /// The CPUs rank threads are pinned to, by rank; empty: not pinned.
    pin_cpus: Vec<usize>,
    /// Whether calls publish and compare fingerprints.
    pub(crate) check_calls: bool,
    /// Collective calls issued per rank: the `seq` of the next call's fingerprint.
    pub(crate) call_seq: Box<[Padded<AtomicU64>]>,
    /// The last call each rank started and the last it completed before that, for hang reports.
    progress: Box<[Padded<Mutex<Progress>>]>,
}

// SAFETY: `peer_bases` points into the heap's regions, which live as long as `Shared`; they are
// shared by design and accessed only by kernels under the signal protocol.
unsafe impl Send for Shared {}
// SAFETY: as above.
unsafe impl Sync for Shared {}

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

/// A rank's last started call number, and the number of times its call site changed (bumped
/// under the progress lock): a rank that calls from the same site as before stores a number and
/// takes no lock, which a lock per call would cost a tenth of a small collective.
#[derive(Default)]
struct Started {
    seq: AtomicU64,
    label_changes: AtomicU64,
}

/// The call sites of a rank's calls, as runs of consecutive call numbers (a rank's collective
/// calls are numbered 1, 2, ... and run in order): the current run and the one before it, for
/// hang reports. Whether the latest call still runs, completed or failed is read from the rank's
/// `started`, `past_seq` and `completed_seq`.
#[derive(Default)]
struct Progress {
    /// The label of calls from `.1` on.
    current: Option<(Label, u64)>,
    /// The label of calls `.1..=.2`.
    previous: Option<(Label, u64, u64)>,
}

impl Progress {
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

impl Shared {
    fn finish_task(&self, rank: usize) {
        let finished = self.finished[rank].0.fetch_add(1, Ordering::SeqCst) + 1;
        // Dekker pairing with `wait_idle`: both sides are sequentially consistent, so either
        // the waiter sees this task finished or this worker sees the waiter. Only a drained
        // queue is worth a wake (a waiter waits for drained queues).
        if self.idle_waiters.load(Ordering::SeqCst) > 0 && finished >= self.queued[rank].0.load(Ordering::SeqCst) {
            // Taking the lock orders this wake after a sync's check-then-wait.
            let _guard = self.idle_lock.lock().unwrap_or_else(|p| p.into_inner());
            self.idle.notify_all();
        }
    }

    /// Whether every task queued on `ranks` has finished (called by their host).
    pub(crate) fn drained(&self, ranks: Range<usize>) -> bool {
        ranks.into_iter().all(|r| self.finished[r].0.load(Ordering::SeqCst) >= self.queued[r].0.load(Ordering::Relaxed))
    }

    /// The flag that stops every rank's waits when one failed.
    fn abort_flag(&self) -> &AtomicI32 {
        // SAFETY: `control` points at 1 + nranks live i32 cells (see `Fabric`), only ever
        // accessed atomically.
        unsafe { &*self.fabric.control.cast::<AtomicI32>() }
    }

    /// Records `rank`'s failure; a root cause also stops every rank's waits.
    pub(crate) fn record_failure(&self, rank: usize, error: Error, signal: Option<SignalCells>) {
        let secondary = matches!(error, Error::Aborted { .. });
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

    /// Every rank's state for a hang report: the call it is in, the last it completed.
    fn progress_report(&self) -> Box<[String]> {
        (0..self.nranks)
            .map(|rank| {
                if !self.fabric.local.contains(&rank) {
                    return format!("rank {rank} runs in another process (its own report says where it is)");
                }
                let progress = self.progress[rank].0.lock().unwrap_or_else(|p| p.into_inner());
                let started = self.started[rank].0.seq.load(Ordering::Acquire);
                let past = self.past_seq[rank].0.load(Ordering::Acquire);
                let completed = self.completed_seq[rank].0.load(Ordering::Acquire);
                let done = if completed == 0 { "none".to_owned() } else { progress.describe(completed) };
                if started > past {
                    format!("rank {rank} is in {}, last completed {done}", progress.describe(started))
                } else {
                    format!("rank {rank} is in no collective, last completed {done}")
                }
            })
            .collect()
    }

    /// Records that `rank` is past call `seq` (finished or gave it up): its host may release
    /// the windows of calls up to it, and its LL writers may rewrite the inbox slots it used.
    fn mark_past(&self, rank: usize, seq: u64) {
        self.past_seq[rank].0.store(seq, Ordering::Release);
        if self.ll.stride != 0 {
            // SAFETY: the LL area is allocated in every window for the world's life; its first
            // 8 bytes are this rank's `past` cell, only ever accessed atomically.
            let past = unsafe { &*self.fabric.heap.base(rank).add(self.ll.offset).cast::<AtomicU64>() };
            past.store(seq, Ordering::Release);
        }
    }

    /// Keeps windows alive until the next world-wide sync has reset the failure's signals.
    pub(crate) fn keep_until_reset(&self, windows: impl IntoIterator<Item = Arc<Allocation>>) {
        self.failure.lock().unwrap_or_else(|p| p.into_inner()).kept.extend(windows);
    }

    pub(crate) fn aborted(&self) -> bool {
        self.abort_flag().load(Ordering::SeqCst) != 0
    }
}

/// Describes a call for messages; formatted only on the error path, never per call. A
/// collective's label is plain data (cloning it touches no shared counter).
#[derive(Clone)]
pub(crate) enum Label {
    /// A fixed text (staging, kernel launches).
    Text(Arc<str>),
    /// A collective call and where the host code made it.
    Call(CallWhat, &'static Location<'static>),
}

impl Label {
    /// Whether both label the same call from the same place (by identity: no string compare).
    fn same_site(&self, other: &Label) -> bool {
        match (self, other) {
            (Label::Call(a, at_a), Label::Call(b, at_b)) => a == b && std::ptr::eq(*at_a, *at_b),
            (Label::Text(a), Label::Text(b)) => Arc::ptr_eq(a, b),
            _ => false,
        }
    }

    pub(crate) fn describe(&self) -> String {
        match self {
            Label::Text(text) => text.to_string(),
            Label::Call(what, at) => format!("{what} at {}:{}:{}", at.file(), at.line(), at.column()),
        }
    }
}

/// A label from a fixed text.
pub(crate) fn label(text: String) -> Label {
    Label::Text(text.into())
}

/// What a task does on its rank's worker.
pub(crate) type Work = Box<dyn FnOnce(&mut RankState) -> Result<()> + Send>;

/// A task's job: a builtin collective kernel with its arguments (plain data: queueing one
/// allocates nothing and releases nothing on the worker), or any other work.
pub(crate) enum Job {
    Kernel { kernel: KernelFn, args: CollArgs, scratch_bytes: usize },
    Work(Work),
}

/// The cells of a call's signal, zeroed at the next sync if the call fails or is skipped. The
/// host keeps the signal's window alive until then (see `Host`'s calls in flight).
#[derive(Clone, Copy, Debug)]
pub(crate) struct SignalCells {
    pub(crate) offset: usize,
    pub(crate) bytes: usize,
}

/// One unit of work on one rank's queue.
pub(crate) struct Task {
    /// The call this task belongs to, described only when a message needs it.
    pub(crate) call: Label,
    /// The collective call's number on this rank (its fingerprint's), 0 for other work.
    pub(crate) seq: u64,
    /// The signal the task waits on, reset if the task fails or is skipped.
    pub(crate) signal: Option<SignalCells>,
    pub(crate) job: Job,
}

/// A counter on a cache line of its own: one thread writes it, others read it now and then.
#[repr(align(128))]
#[derive(Default)]
pub(crate) struct Padded<T>(pub(crate) T);

/// The device worker of one rank.
pub(crate) struct RankState {
    pub(crate) rank: usize,
    shared: Arc<Shared>,
    /// Private scratch memory lent to kernels (u64 for 8-byte alignment).
    scratch: Vec<u64>,
    /// The call site this state last recorded in the rank's progress, with the rank's count
    /// of changes after it.
    recorded: Option<(u64, Label)>,
}

impl RankState {
    /// A rank's device state for a host that runs its rank's calls itself.
    pub(crate) fn new(rank: usize, shared: &Arc<Shared>) -> RankState {
        RankState { rank, shared: Arc::clone(shared), scratch: Vec::new(), recorded: None }
    }

    fn serve(mut self, queue: Receiver<Task>) {
        let shared = Arc::clone(&self.shared);
        pin_thread(self.rank, &shared.pin_cpus);
        while let Some(task) = self.next_task(&queue) {
            self.run(task, &shared);
            // Everything the task held (its windows, its signal) is released by now, so a
            // sync that sees the queue drained also sees the memory freed.
            shared.finish_task(self.rank);
        }
    }

    /// The next task: polled for a while first (a pipelined host queues the next call within
    /// microseconds, and a futex wake per task would cost more than the task), then blocking.
    fn next_task(&self, queue: &Receiver<Task>) -> Option<Task> {
        let polls = if self.shared.spin_limit > 1000 { 4000 } else { 16 };
        for i in 0..polls {
            match queue.try_recv() {
                Ok(task) => return Some(task),
                Err(std::sync::mpsc::TryRecvError::Disconnected) => return None,
                Err(std::sync::mpsc::TryRecvError::Empty) if i % 64 == 63 => std::thread::yield_now(),
                Err(std::sync::mpsc::TryRecvError::Empty) => std::hint::spin_loop(),
            }
        }
        queue.recv().ok()
    }

    /// Runs a task on the calling thread: the worker's, or a host's that runs its rank's calls
    /// itself (then the rank's queue is drained, so the worker is idle and the calls stay in
    /// order).
    pub(crate) fn run(&mut self, task: Task, shared: &Shared) {
        let Task { call, seq, signal, job } = task;
        self.run_with(&call, seq, signal, shared, |state| match job {
            Job::Kernel { kernel, args, scratch_bytes } => {
                state.run_kernel(kernel, (&raw const args).cast(), scratch_bytes, &call, args.call)
            }
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
        (kernel, args, scratch_bytes): (KernelFn, &CollArgs, usize),
        shared: &Shared,
    ) {
        self.run_with(call, seq, signal, shared, |state| {
            state.run_kernel(kernel, std::ptr::from_ref(args).cast(), scratch_bytes, call, args.call)
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
        shared: &Shared,
        work: impl FnOnce(&mut RankState) -> Result<()>,
    ) {
        if seq != 0 {
            let started = &shared.started[self.rank].0;
            // Another RankState of this rank (its worker, or its inline host) may have recorded
            // a call since this one did: the count of changes says so. Relaxed: the two never
            // run at once, and hand over through the queue.
            let changes = started.label_changes.load(Ordering::Relaxed);
            if !matches!(&self.recorded, Some((c, label)) if *c == changes && label.same_site(call)) {
                let mut progress = shared.progress[self.rank].0.lock().unwrap_or_else(|p| p.into_inner());
                // The other state of this rank may have recorded this very site: the run goes on.
                if !progress.current.as_ref().is_some_and(|(label, _)| label.same_site(call)) {
                    progress.previous = progress.current.take().map(|(label, first)| (label, first, seq - 1));
                    progress.current = Some((call.clone(), seq));
                }
                started.label_changes.store(changes + 1, Ordering::Relaxed);
                self.recorded = Some((changes + 1, call.clone()));
            }
            started.seq.store(seq, Ordering::Release);
        }
        let error = if shared.aborted() {
            // A call already failed: this task would wait on a rank that stopped.
            Some(Error::Aborted { rank: self.rank, call: call.describe() })
        } else {
            match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| work(self))) {
                Ok(Ok(())) => None,
                Ok(Err(error)) => Some(error),
                Err(panic) => {
                    let message = panic_message(panic.as_ref());
                    Some(Error::RankPanicked { rank: self.rank, call: call.describe(), message })
                }
            }
        };
        if seq != 0 {
            if error.is_none() {
                shared.completed_seq[self.rank].0.store(seq, Ordering::Release);
            }
            shared.mark_past(self.rank, seq);
        }
        if let Some(error) = error {
            shared.record_failure(self.rank, error, signal);
        }
    }

    /// Base of this rank's window.
    pub(crate) fn local_base(&self) -> *mut u8 {
        self.shared.fabric.heap.base(self.rank)
    }

    /// Runs a kernel on this rank and turns its status into a result with context (`own_call`:
    /// the collective's fingerprint, for a mismatch report).
    pub(crate) fn run_kernel(
        &mut self,
        kernel: KernelFn,
        args: *const std::ffi::c_void,
        scratch_bytes: usize,
        call: &Label,
        own_call: FingerprintWords,
    ) -> Result<()> {
        let scratch_bytes = scratch_bytes.max(TILE_BYTES);
        let words = scratch_bytes.div_ceil(8);
        if self.scratch.len() < words {
            self.scratch.resize(words, 0);
        }
        let shared = &*self.shared;
        let mut diag = Diag::default();
        let mut ctx = Ctx {
            abi_version: ABI_VERSION,
            rank: self.rank as i32,
            nranks: shared.nranks as i32,
            spin_limit: shared.spin_limit,
            yield_limit: shared.yield_limit,
            _pad: 0,
            peer_bases: shared.peer_bases.as_ptr(),
            local_base: shared.fabric.heap.base(self.rank),
            window_bytes: shared.fabric.heap.capacity() as u64,
            // SAFETY: `control` holds 1 + nranks cells (see `Fabric::control`).
            sleepers: unsafe { shared.fabric.control.add(1) },
            abort_flag: shared.fabric.control,
            deadline_ns: 0, // set by the first wait that leaves its spin phases
            timeout_ns: u64::try_from(shared.timeout.as_nanos()).unwrap_or(u64::MAX),
            scratch: self.scratch.as_mut_ptr().cast(),
            scratch_bytes: (self.scratch.len() * 8) as u64,
            ops: shared.fabric.ops,
            diag: &mut diag,
        };
        // SAFETY: `ctx` describes this rank's live windows and scratch; `args` points to the
        // argument struct the kernel expects (built by the caller from the same contract).
        let status = unsafe { kernel(&mut ctx, args) };
        if status == DeviceStatus::Ok as i32 {
            return Ok(());
        }
        Err(self.failure(status, &diag, call, own_call))
    }

    /// The error a failed kernel's status and diagnosis describe (the call is formatted here
    /// only, never on success).
    fn failure(&self, status: i32, diag: &Diag, call: &Label, own_call: FingerprintWords) -> Error {
        let rank = self.rank;
        let call = call.describe();
        let owner = |off: u64| self.shared.fabric.heap.owner_of(off as usize);
        match DeviceStatus::from_code(status) {
            Some(DeviceStatus::Aborted) => Error::Aborted { rank, call },
            Some(DeviceStatus::Timeout) if self.shared.ll.contains(diag.cell_off) => {
                // An LL wait: for a peer's message of this call (the inbox) or for a peer to be
                // past the call that last used a slot (its `past` cell).
                let peer = diag.index.max(0) as usize;
                let inbox = diag.cell_off != self.shared.ll.offset as u64;
                Error::Timeout {
                    rank,
                    call,
                    signal: if inbox { "__ll_inbox" } else { "__ll_past" }.into(),
                    cell: peer,
                    cmp: if inbox { WaitCmp::Eq } else { WaitCmp::Ge },
                    expected: diag.expected,
                    observed: diag.observed,
                    missing: Box::new([peer]),
                    timeout_ms: self.shared.timeout.as_millis() as u64,
                    ranks: self.shared.progress_report(),
                }
            }
            Some(DeviceStatus::Timeout) => {
                let (start, signal) = owner(diag.cell_off).unwrap_or((0, "<freed window>".into()));
                let cmp = if diag.cmp == WaitCmp::Eq as i32 { WaitCmp::Eq } else { WaitCmp::Ge };
                let capacity = self.shared.fabric.heap.capacity() as u64;
                let row_len = diag.row_len.max(0) as u64;
                let row_fits = diag.row_off.is_multiple_of(4)
                    && diag.row_off >= start as u64
                    && diag.row_off.checked_add(4 * row_len).is_some_and(|end| end <= capacity);
                // Cells of the row still short of the expected value, by index in the signal
                // (for a credit signal the index is the peer), this rank's own cell excepted.
                let missing = (0..if row_fits { row_len } else { 0 })
                    .map(|i| diag.row_off + 4 * i)
                    .filter(|&cell| {
                        // SAFETY: the row lies inside this rank's window (checked above) and
                        // signal cells are only accessed atomically.
                        let v = unsafe {
                            (*self.local_base().add(cell as usize).cast::<AtomicI32>()).load(Ordering::SeqCst)
                        };
                        match cmp {
                            WaitCmp::Eq => v != diag.expected,
                            WaitCmp::Ge => v < diag.expected,
                        }
                    })
                    .map(|cell| (cell as usize - start) / 4)
                    .filter(|&index| index != rank)
                    .collect();
                Error::Timeout {
                    rank,
                    call,
                    signal,
                    cell: (diag.cell_off as usize - start) / 4,
                    cmp,
                    expected: diag.expected,
                    observed: diag.observed,
                    missing,
                    timeout_ms: self.shared.timeout.as_millis() as u64,
                    ranks: self.shared.progress_report(),
                }
            }
            Some(DeviceStatus::Mismatch) => Error::MismatchedCall {
                rank,
                call,
                peer: diag.index.max(0) as usize,
                peer_call: describe_words(diag.peer_call),
                own_call: describe_words(own_call),
            },
            Some(DeviceStatus::BadCount) => Error::InvalidCount {
                rank,
                call,
                buffer: owner(diag.cell_off).map_or_else(|| "<counts>".into(), |(_, n)| n),
                peer: diag.index.max(0) as usize,
                value: diag.value,
                capacity: diag.limit,
            },
            Some(other) => Error::KernelFailed { rank, call, reason: describe(other) },
            None => Error::KernelFailed { rank, call, reason: format!("unknown status {status}") },
        }
    }
}

fn describe(status: DeviceStatus) -> String {
    match status {
        DeviceStatus::OutOfBounds => "an access fell outside the window (PLD_OUT_OF_BOUNDS)".into(),
        DeviceStatus::Transport => "a remote transfer failed (PLD_TRANSPORT)".into(),
        DeviceStatus::Unsupported => "an operation this transport does not support (PLD_UNSUPPORTED)".into(),
        DeviceStatus::KernelFailed => "the kernel reported failure (PLD_KERNEL_FAILED)".into(),
        other => format!("{other:?}"),
    }
}

/// A rank's host function panicked.
fn host_panicked(rank: usize, panic: &(dyn std::any::Any + Send)) -> Error {
    Error::RankPanicked { rank, call: "the host function".into(), message: panic_message(panic) }
}

fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "<non-string panic payload>".into())
}
