//! [`World`]: the ranks of one program, each a device worker with an in-order task queue, over
//! one symmetric heap. Starting one ([`WorldBuilder::local`], [`WorldBuilder::mpi`]) resolves
//! its settings, lays out the runtime's areas in every window and starts the workers.

use std::ops::Range;
use std::sync::Arc;
use std::sync::mpsc::{Sender, channel};
use std::thread::JoinHandle;
use std::time::Duration;

use pld_model::LlLayout;

use crate::config::{Settings, WorldBuilder};
use crate::cpus::allowed_cpus;
use crate::device::abi::FingerprintWords;
use crate::device::builtins;
use crate::error::{Error, Result};
use crate::memory::{LlArea, SymmetricHeap};
use crate::rank::{RankState, Task};
use crate::shared::{Shared, Tuning, WaitLimits};
use crate::trace::Tracer;
use crate::transport::{Fabric, local};

impl WorldBuilder {
    /// Starts the ranks as threads of this process (the embedded default launcher).
    pub fn local(self) -> Result<World> {
        if self.nranks == 0 {
            return Err(Error::NoRanks { requested: 0 });
        }
        let settings = self.settings(crate::config::DEFAULT_WINDOW_BYTES)?;
        builtins()?; // load and check the device binary before any rank starts
        let heap = SymmetricHeap::new(self.nranks, settings.window_bytes)?;
        start(local::fabric(self.nranks, heap), settings)
    }

    /// Starts this process's rank of an MPI job (one rank per process, started by `mpirun` or
    /// `srun`): windows from MPI-3 RMA, shared memory when every rank is on this node
    /// (`PLD_MPI_RMA=1` forces one-sided Put/Get/Accumulate even then). The rank count is the
    /// job's; a builder's count other than 0 must equal it. Every process must run with the
    /// same settings that shape memory or the protocol (`PLD_WINDOW_BYTES`, `PLD_LL_BYTES`,
    /// `PLD_MPI_RMA`, [`WorldBuilder::check_calls`]): a difference is an error on every rank
    /// naming the setting and each process's value.
    #[cfg(feature = "mpi")]
    #[cfg_attr(docsrs, doc(cfg(feature = "mpi")))]
    pub fn mpi(self) -> Result<World> {
        builtins()?;
        let fabric = crate::transport::mpi::fabric(&self)?;
        if self.nranks != 0 && self.nranks != fabric.0.nranks {
            return Err(Error::NranksMismatch {
                call: "World::builder(n).mpi()".into(),
                declared: self.nranks,
                world: fabric.0.nranks,
            });
        }
        start(fabric.0, fabric.1)
    }
}

/// Lays out the runtime's areas in every window and starts a device worker for each rank of
/// this process over `fabric`.
fn start(fabric: Fabric, settings: Settings) -> Result<World> {
    let nranks = fabric.nranks;
    // The call board (two fingerprint slots per rank) lives in the window, where peers and
    // remote transports reach it like any signal.
    let board_bytes = 2 * std::mem::size_of::<FingerprintWords>();
    // The LL message area, on transports where peers are addressable (so on one node, where
    // every process counts the same cores and ranks, and so makes the same layout).
    let cores = fabric.cores;
    let crowded = fabric.node_ranks > cores;
    let ll_layout =
        settings.ll_layout(nranks, fabric.heap.capacity(), crowded).filter(|_| fabric.addressable(0..nranks));
    // The point-to-point area (send!/recv!): a doorbell and a slot per peer and depth, the
    // depth fitted to the window (none at all in a world too big for its windows).
    let p2p_depth = pld_model::p2p_depth(nranks, fabric.heap.capacity());
    let p2p_bytes = pld_model::p2p_area_bytes(nranks, p2p_depth);
    let reserve = reservation_error(&fabric.heap, board_bytes + p2p_bytes, ll_layout);
    let board_off = fabric.heap.alloc("the call board", board_bytes).map_err(|_| reserve())?;
    let p2p_off = match p2p_bytes {
        0 => 0,
        bytes => fabric.heap.alloc("the point-to-point area", bytes).map_err(|_| reserve())?,
    };
    let ll = match ll_layout {
        Some(layout) => {
            let bytes = usize::try_from(layout.bytes()).map_err(|_| reserve())?;
            LlArea {
                offset: fabric.heap.alloc("the small-message area", bytes).map_err(|_| reserve())?,
                layout: Some(layout),
            }
        }
        None => LlArea::default(),
    };
    fabric.heap.mark_reserved();
    // Threads of one process's ranks are pinned one per core when each can have its own
    // (under mpirun the launcher binds processes already).
    let allowed = allowed_cpus();
    let (pin_cpus, follow_cpus) = match fabric.launcher == "local" && settings.pin {
        true if nranks <= allowed.len() => (allowed, Vec::new()),
        true => (Vec::new(), allowed),
        false => (Vec::new(), Vec::new()),
    };
    // Under MPI every rank of this node counts, whichever process runs it.
    let tuning = Tuning {
        cores,
        // Counting busy ranks pays only where they can outnumber the cores: the count is one
        // cache line every host and worker writes, and at 2 ranks on 2 cores its two atomic
        // updates a call cost more than the rest of the host's work for a small collective.
        adaptive: fabric.node_ranks == fabric.local.len() && fabric.local.len() > cores,
        crowded,
        crowded_wait: WaitLimits::crowded_for(&fabric.node_of),
        pin_cpus,
        follow_cpus,
    };
    let local = fabric.local.clone();
    let tracer = Tracer::new(
        (settings.trace.as_deref(), settings.trace_events),
        settings.trace_on_error.as_deref(),
        &fabric.launcher,
        nranks,
        local.clone(),
        fabric.clock,
    )?;
    let shared = Arc::new(Shared::new(fabric, settings, tuning, board_off, ll, (p2p_off, p2p_depth), tracer)?);
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

/// The error for a heap too small for what pld reserves in it (the call board and the LL
/// message area): a setting to change, not a window the user never made.
fn reservation_error(heap: &SymmetricHeap, board_bytes: usize, ll: Option<LlLayout>) -> impl Fn() -> Error + use<> {
    let align = |b: u64| b.div_ceil(64) * 64;
    let ll_bytes = ll.map_or(0, |l| l.bytes());
    let needed = align(board_bytes as u64).saturating_add(align(ll_bytes));
    let capacity = heap.capacity();
    move || Error::InvalidSetting {
        setting: "PLD_WINDOW_BYTES (or WorldBuilder::window_bytes)".into(),
        value: capacity.to_string(),
        expected: format!(
            "at least {needed} bytes: pld reserves {ll_bytes} bytes of each rank's heap for small messages \
             and {board_bytes} for the call board and point-to-point area (set PLD_LL_BYTES=0 to reserve none for small messages), \
             and windows need room besides"
        ),
    }
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
        World::local(crate::config::env_nranks()?)
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

    /// The ranks this process runs, and so the ranks its hosts can stage data into and out of
    /// (`ranks()` in host code): every rank on the local launcher, its own under MPI.
    pub fn local_ranks(&self) -> Range<usize> {
        self.shared.fabric.local.clone()
    }

    /// This process's rank when it runs exactly one (a process of an MPI job); `None` on the
    /// local launcher, where one process runs every rank.
    pub fn rank(&self) -> Option<usize> {
        let local = &self.shared.fabric.local;
        (self.shared.fabric.launcher != "local" && local.len() == 1).then_some(local.start)
    }

    /// Number of ranks.
    pub fn nranks(&self) -> usize {
        self.shared.nranks
    }

    /// How the ranks run: `local` (threads of this process), `mpi (shared windows)` (one node),
    /// `mpi (RMA)` (one node, one-sided calls forced), or, across nodes, how many and how many
    /// ranks each runs: `mpi (2 nodes, 2 ranks per node)`.
    pub fn launcher(&self) -> &str {
        &self.shared.fabric.launcher
    }

    /// The deadline every wait for a peer runs under.
    pub fn timeout(&self) -> Duration {
        self.shared.settings.timeout
    }

    /// Size from which a mesh all_reduce runs two-shot.
    pub fn two_shot_bytes(&self) -> usize {
        self.shared.settings.two_shot_bytes_for(self.shared.nranks)
    }

    /// Size of each rank's symmetric heap.
    pub fn window_bytes(&self) -> usize {
        self.shared.heap().capacity()
    }

    /// The largest payload per rank that travels as LL messages here: the setting, or less
    /// where the slots had to shrink to fit the inbox at this rank count; 0 when this world
    /// sends none (the setting is 0, the transport cannot address peers, or no slot fits).
    pub fn ll_bytes(&self) -> usize {
        match self.shared.world.ll.layout {
            Some(layout) => self.shared.settings.ll_bytes.min(layout.payload() as usize),
            None => 0,
        }
    }

    /// Bytes of the symmetric heap currently allocated (per rank) by windows and signals.
    pub fn live_window_bytes(&self) -> usize {
        self.shared.heap().live_bytes() - self.shared.heap().reserved_bytes()
    }

    /// The largest window one more allocation may take (per rank): the largest free block.
    pub fn free_window_bytes(&self) -> usize {
        self.shared.heap().largest_free()
    }

    pub(crate) fn shared(&self) -> &Arc<Shared> {
        &self.shared
    }

    /// Queues `task` on `rank`'s worker.
    pub(crate) fn enqueue(&self, rank: usize, task: Task) {
        self.shared.queue_task(rank);
        let Some(queue) = &self.queues[rank] else {
            unreachable!("rank {rank} runs in another process; hosts dispatch to their own ranks only")
        };
        if queue.send(task).is_err() {
            // The worker is gone (it cannot exit while the world lives); account for the task.
            self.shared.finish_task(rank);
        }
    }

    /// Waits until every queue is drained; returns the root cause of the failures since the
    /// last sync and clears the state a failed call leaves behind (abort flag, credits in its
    /// signals).
    pub(crate) fn sync(&self) -> Result<()> {
        self.shared.wait_drained(0..self.nranks());
        self.shared.check_untaken(0..self.nranks());
        self.shared.reset_failures()
    }

    /// Waits until `rank`'s queue is drained; returns its first failure since its last sync,
    /// or the world's root cause when the rank only stopped because of another's. Resets
    /// nothing: other ranks may still be running ([`World::spmd`] resets at its end).
    pub(crate) fn sync_rank(&self, rank: usize) -> Result<()> {
        self.shared.wait_drained(rank..rank + 1);
        self.shared.check_untaken(rank..rank + 1);
        self.shared.take_rank_failure(rank)
    }
}

impl Drop for World {
    fn drop(&mut self) {
        self.queues.clear();
        for worker in self.workers.drain(..) {
            let _ = worker.join();
        }
        // Across hosts the clocks are measured again (every process, traced or not: a step of
        // the whole job), so that a trace follows their drift.
        if let Some(measure) = self.shared.fabric.measure_clock
            && let Some(offset) = measure()
        {
            self.shared.tracer.clock_at_end(offset);
        }
        // Every rank's events are handed over by now (a host hands its own over when it ends).
        if let Err(error) = self.shared.tracer.write() {
            eprintln!("pld: {error}");
        }
    }
}
