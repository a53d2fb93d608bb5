//! Transports: what a launcher provides the ranks of this process (every rank's window, the
//! shared control cells, the services behind `pld_ops`): threads of one process
//! ([`local`]), or MPI processes (`mpi`).

use std::ops::Range;
use std::sync::Arc;

use crate::comm::CommParts;
use crate::device::abi::Ops;
use crate::error::Result;
use crate::memory::SymmetricHeap;

pub(crate) mod local;
#[cfg(feature = "mpi")]
pub(crate) mod mpi;

/// What a launcher provides: every rank's window, the ranks this process runs, the cells every
/// waiting process shares (abort flag, sleepers), and the services behind `pld_ops`.
pub(crate) struct Fabric {
    /// How the ranks run, for reports (`local`, `mpi (shared windows)`, `mpi (RMA)`,
    /// `mpi (2 nodes, 2 ranks per node)`).
    pub(crate) launcher: String,
    pub(crate) nranks: usize,
    /// Ranks whose device workers run in this process.
    pub(crate) local: Range<usize>,
    /// Ranks that share this machine's cores (for the spin budget): the node's, and those of
    /// other nodes on the same machine (containers, namespaces).
    pub(crate) node_ranks: usize,
    /// The cores those ranks share, one count for every process on the machine (the least any
    /// of them sees): the LL layout depends on it, and every process must make the same.
    pub(crate) cores: usize,
    pub(crate) heap: Arc<SymmetricHeap>,
    /// `[abort, sleepers[nranks]]`: in memory every process of the node maps, so the abort flag
    /// and the futex sleepers work across processes.
    pub(crate) control: *mut i32,
    pub(crate) ops: *const Ops,
    /// What `control` and `ops` point into; dropped after the workers stop.
    pub(crate) _keep: Box<dyn std::any::Any + Send + Sync>,
    /// Called with every root-cause failure (MPI: report it and end the job).
    pub(crate) on_failure: Option<fn(usize, &crate::error::Error)>,
    /// Whether every window, this rank's included, is updated through the transport only (MPI
    /// RMA); the own window is still read directly (`local_base`).
    pub(crate) transport_only: bool,
    /// By world rank: the index of its node. Ranks of one node address each other's windows
    /// directly (unless `transport_only`); ranks of different nodes only through the transport.
    pub(crate) node_of: Vec<usize>,
    /// Collectives between nodes (MPI's own), where every node runs the same number of ranks:
    /// the world's collectives then cross the network once per call (see
    /// `collective::across_nodes`).
    pub(crate) network: Option<Box<dyn Network>>,
    /// Called after each allocation of a host when ranks live in several processes: a barrier
    /// that also checks every rank allocated the same window, or names the rank that could not.
    pub(crate) agree_on_allocation: Option<AgreeOnAllocation>,
    /// The peer the first failed remote transfer could not reach, when the transport knows it;
    /// with none yet, the peers given (those a wait timed out on) are probed first.
    pub(crate) lost_peer: Option<FindLostPeer>,
    /// This process's clock in the job: when it left the launcher's last start-up exchange,
    /// and across hosts its offset to rank 0's (traces of several processes are aligned on it).
    pub(crate) clock: crate::trace::clock::ClockSync,
    /// Measures the clock's offset again when the world ends, where the job spans hosts.
    pub(crate) measure_clock: Option<crate::trace::clock::MeasureClock>,
}

impl Fabric {
    /// Whether every rank of `members` addresses every other's window directly (the same node,
    /// not forced through the transport): what the LL message protocol needs. The same answer
    /// in every process.
    pub(crate) fn addressable(&self, mut members: impl Iterator<Item = usize>) -> bool {
        let first = members.next().map(|r| self.node_of[r]);
        !self.transport_only && members.all(|r| Some(self.node_of[r]) == first)
    }

    /// What a communicator's kernels need of this fabric.
    pub(crate) fn comm_parts(&self) -> CommParts<'_> {
        CommParts {
            heap: &self.heap,
            transport_only: self.transport_only,
            node_of: &self.node_of,
            // SAFETY: `control` holds the abort flag and then one sleeper cell per rank.
            sleepers: unsafe { self.control.add(1) },
            ops: self.ops,
        }
    }
}

/// Who takes part in a call of the [`Network`]: the ranks of this one's index on every node (a
/// column: node `j`'s member is column rank `j`), or every rank of the job.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Among {
    Column,
    World,
}

/// MPI's own collectives, among a column or the whole job ([`Among`]). Each call blocks this
/// thread until done, and ends the job past `timeout` (a process that never arrives).
pub(crate) trait Network: Send + Sync {
    /// Whether the network reduces `dtype` with `op`.
    fn reduces(&self, dtype: pld_model::DType, op: pld_model::ReduceOp) -> bool;
    /// `count` elements at `data` become their reduction over `among`, in place.
    fn all_reduce(
        &self,
        among: Among,
        data: *mut u8,
        count: usize,
        dtype: pld_model::DType,
        op: pld_model::ReduceOp,
        timeout: std::time::Duration,
    ) -> Result<()>;
    /// `bytes` at `data` become those of member `root` of `among`.
    fn broadcast(
        &self,
        among: Among,
        data: *mut u8,
        bytes: usize,
        root: usize,
        timeout: std::time::Duration,
    ) -> Result<()>;
    /// `bytes` at `mine` of every member of `among` land in `all`, in member order.
    fn all_gather(
        &self,
        among: Among,
        mine: *const u8,
        all: *mut u8,
        bytes: usize,
        timeout: std::time::Duration,
    ) -> Result<()>;
    /// Every rank of this node has arrived.
    fn node_barrier(&self, timeout: std::time::Duration) -> Result<()>;
    /// The index of world rank `rank` within its node: its column.
    fn local_index(&self, rank: usize) -> usize;
}

/// A peer a remote transfer could not reach (or a probe found gone), with the ranks of its node
/// lost with it.
#[cfg_attr(not(feature = "mpi"), allow(dead_code))]
pub(crate) struct LostPeer {
    pub(crate) peer: usize,
    pub(crate) node: String,
    pub(crate) ranks: Box<[usize]>,
    pub(crate) cause: String,
}

/// Finds the peer a remote transfer could not reach (see [`Fabric::lost_peer`]).
pub(crate) type FindLostPeer = fn(&[usize]) -> Option<LostPeer>;

impl LostPeer {
    /// The error of `rank`'s `call` that found the peer lost (after waiting `waited_ms` for it,
    /// where a wait timed out first).
    #[cfg_attr(not(feature = "mpi"), allow(dead_code))]
    pub(crate) fn into_error(self, rank: usize, call: String, waited_ms: Option<u64>) -> crate::error::Error {
        let cause = match waited_ms {
            Some(ms) => format!("{}, after waiting {ms} ms for it", self.cause),
            None => self.cause,
        };
        crate::error::Error::PeerLost { rank, call, peer: self.peer, node: self.node, lost: self.ranks, cause }
    }
}

/// One rank's side of an allocation, checked against every rank's.
#[cfg_attr(not(feature = "mpi"), allow(dead_code))]
pub(crate) struct AllocationClaim<'a> {
    pub(crate) rank: usize,
    /// The host's allocation number (its k-th).
    pub(crate) index: u64,
    pub(crate) name: &'a str,
    pub(crate) bytes: usize,
    /// `None` when this rank allocated it; else the largest free block it had.
    pub(crate) failed: Option<usize>,
}

/// Checks `claim` against every rank's, bounded by the deadline.
pub(crate) type AgreeOnAllocation = fn(&AllocationClaim<'_>, std::time::Duration) -> Result<()>;
