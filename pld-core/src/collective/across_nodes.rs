//! The world's collectives when it spans nodes (MPI across hosts): inside each node the
//! shared-memory kernels, between nodes MPI's own collectives over the ranks of one index on
//! every node (a column), so a call crosses the network once instead of making a one-sided
//! round trip per access. Taken where the fabric has a network (every node runs as many ranks)
//! and the call is the world's with what MPI can do (its dtypes and ops); anything else runs
//! the world's kernels over the transport as before.
//!
//! - all_reduce: the node's all_reduce (kernels), then the column's `MPI_Allreduce` of the
//!   node's result: every rank ends with the world's.
//! - broadcast: the root's column broadcasts over the network (`MPI_Bcast`), then each node
//!   broadcasts from its member of that column (kernels).
//! - all_gather: the column gathers its rows (`MPI_Allgather`), then every rank copies the other
//!   columns' rows from its node's peers' windows (shared memory), between two node barriers.
//!
//! The order of a float reduction is the node's (rank order within it), then MPI's between the
//! nodes' results: the same bits on every rank, though not the flat rank order.

use pld_model::{Collective, DType, Element};

use super::{AllReduce, Broadcast, Common, Opts};
use crate::error::{Error, Result};
use crate::group::{GroupSet, Groups};
use crate::host::{Host, foreign_window};
use crate::memory::{Allocation, Operand, Shape, Window};
use crate::transport::Network;

/// What the collectives across nodes keep for the world: its nodes as groups, and a signal for
/// their calls (signals clear themselves, so one serves every call).
pub(crate) struct AcrossNodes {
    nodes: Groups,
    signal: std::sync::Arc<Allocation>,
    signal_shape: Shape,
}

impl AcrossNodes {
    fn signal(&self) -> Operand<'_> {
        Operand { alloc: &self.signal, dtype: DType::I32, shape: &self.signal_shape }
    }
}

impl Host<'_> {
    /// The network and this host's rank, when a call with `common` crosses nodes: the world's
    /// call (no group) on a fabric with a network, one rank per host (MPI's processes).
    fn network_for(&self, common: &Common<'_>) -> Option<(&dyn Network, usize)> {
        let network = self.world().shared().fabric.network.as_deref()?;
        let declared_ok = common.nranks.is_none_or(|n| n == self.nranks());
        (common.groups.is_none() && self.ranks().len() == 1 && declared_ok).then_some((network, self.ranks().start))
    }

    /// The world's nodes as groups and their signal: made once, by the first call that needs
    /// them (collectively, as every group is made: every rank's first world call is the same).
    fn across_nodes(&self) -> Result<&AcrossNodes> {
        let shared = self.world().shared();
        if let Some(across) = shared.across_nodes.get() {
            return Ok(across);
        }
        let node_of = shared.fabric.node_of.clone();
        let nodes = self.split(|r| Some((node_of[r] as u32, r as i64)))?;
        let cells = Collective::signal_cells(self.nranks());
        let signal = self.allocate("__pld_across_nodes_signal", 4 * cells)?;
        let made = AcrossNodes { nodes, signal, signal_shape: Shape::from([cells]) };
        Ok(shared.across_nodes.get_or_init(|| made))
    }

    /// The call's signal checked as the world's call would check it (one i32 cell per rank).
    fn checked_signal(&self, call: &str, common: &Common<'_>) -> Result<()> {
        let Some(signal) = common.signal else { return Ok(()) };
        let cells = Collective::signal_cells(self.nranks());
        if !signal.alloc.is_in(self.world().shared().heap()) {
            return Err(foreign_window(call.to_owned(), "signal", signal.name()));
        }
        if signal.dtype != Collective::SIGNAL_DTYPE || signal.len() != cells {
            return Err(Error::BadOperand {
                call: call.to_owned(),
                role: "signal",
                buffer: signal.name().to_owned(),
                expected: format!("{} [{cells}] (one cell per rank)", DType::I32),
                found: signal.describe(),
            });
        }
        Ok(())
    }

    /// The node groups' options for a step of a call: its signal (or the shared one), no
    /// declared rank count (the node's is not the world's).
    fn node_step<'a>(across: &'a AcrossNodes, common: &Common<'a>) -> Common<'a> {
        Common {
            nranks: None,
            signal: Some(common.signal.unwrap_or_else(|| across.signal())),
            groups: Some(across.nodes.group_list()),
        }
    }

    /// This rank's copy of `window` in its own window (a plain pointer: the host drives its one
    /// rank, and no kernel of it runs while the host holds this).
    fn own_bytes<T: Element>(&self, rank: usize, window: &Window<'_, T>) -> *mut u8 {
        // SAFETY: `window` lies inside every rank's window (a checked allocation of this world).
        unsafe { self.world().shared().heap().base(rank).add(window.offset()) }
    }

    /// all_reduce across nodes; `Ok(false)` where it does not apply (the caller runs the
    /// world's kernels).
    #[track_caller]
    pub(super) fn all_reduce_across_nodes<T: Element>(
        &self,
        target: &Window<'_, T>,
        opts: &AllReduce<'_>,
    ) -> Result<bool> {
        let Some((network, rank)) = self.network_for(&opts.common) else { return Ok(false) };
        if !network.reduces(T::DTYPE, opts.op) || target.is_empty() || opts.scale.is_some() {
            return Ok(false);
        }
        self.check_world(target)?;
        self.checked_signal("all_reduce", &opts.common)?;
        let across = self.across_nodes()?;
        let node =
            AllReduce { mode: opts.mode, op: opts.op, scale: None, common: Self::node_step(across, &opts.common) };
        self.all_reduce(target, node)?;
        self.sync()?;
        let timeout = self.world().shared().settings.timeout;
        network.all_reduce(self.own_bytes(rank, target), target.len(), T::DTYPE, opts.op, timeout)?;
        Ok(true)
    }

    /// broadcast across nodes; `Ok(false)` where it does not apply.
    #[track_caller]
    pub(super) fn broadcast_across_nodes<T: Element>(
        &self,
        target: &Window<'_, T>,
        opts: &Broadcast<'_>,
    ) -> Result<bool> {
        let Some((network, rank)) = self.network_for(&opts.common) else { return Ok(false) };
        let Some(root) = usize::try_from(opts.root).ok().filter(|&r| r < self.nranks()) else { return Ok(false) };
        if target.is_empty() {
            return Ok(false);
        }
        self.check_world(target)?;
        self.checked_signal("broadcast", &opts.common)?;
        let across = self.across_nodes()?;
        let column = network.local_index(root);
        self.sync()?;
        if network.local_index(rank) == column {
            let timeout = self.world().shared().settings.timeout;
            let root_node = self.world().shared().fabric.node_of[root];
            network.broadcast(self.own_bytes(rank, target), target.bytes(), root_node, timeout)?;
        }
        let node = Broadcast { root: column as i64, common: Self::node_step(across, &opts.common) };
        self.broadcast(target, node)?;
        Ok(true)
    }

    /// all_gather across nodes; `Ok(false)` where it does not apply.
    #[track_caller]
    pub(super) fn all_gather_across_nodes<T: Element>(
        &self,
        local: &Window<'_, T>,
        target: &Window<'_, T>,
        opts: &Opts<'_>,
    ) -> Result<bool> {
        let Some((network, rank)) = self.network_for(&opts.common) else { return Ok(false) };
        let n = self.nranks();
        let same = std::sync::Arc::ptr_eq(local.operand().alloc, target.operand().alloc);
        if local.is_empty() || target.len() != n * local.len() || same {
            return Ok(false);
        }
        self.check_world(local)?;
        self.check_world(target)?;
        self.checked_signal("all_gather", &opts.common)?;
        let shared = self.world().shared();
        let (row, timeout, node_of) = (local.bytes(), shared.settings.timeout, &shared.fabric.node_of);
        self.sync()?;
        let (mine, rows) = (self.own_bytes(rank, local), self.own_bytes(rank, target));
        // The column's rows, each to its rank's row.
        let nodes = node_of.iter().max().map_or(1, |m| m + 1);
        let mut gathered = vec![0u8; nodes * row];
        network.all_gather(mine, gathered.as_mut_ptr(), row, timeout)?;
        let column = network.local_index(rank);
        for peer in (0..n).filter(|&p| network.local_index(p) == column) {
            let from = &gathered[node_of[peer] * row..][..row];
            // SAFETY: row `peer` lies inside `target` (`n` rows of `row` bytes), in this rank's
            // window, which nothing else writes now.
            unsafe { std::ptr::copy_nonoverlapping(from.as_ptr(), rows.add(peer * row), row) };
        }
        // The other columns' rows from the node's peers that gathered them.
        network.node_barrier(timeout)?;
        let heap = shared.heap();
        for peer in (0..n).filter(|&p| p != rank && node_of[p] == node_of[rank]) {
            let theirs = network.local_index(peer);
            // SAFETY: a peer of this node: its window is shared memory, `target` lies inside it,
            // and its column's rows are final (it passed the barrier after writing them).
            let source = unsafe { heap.base(peer).add(target.offset()) };
            for q in (0..n).filter(|&q| network.local_index(q) == theirs) {
                // SAFETY: row `q` of both targets, in two different ranks' windows.
                unsafe { std::ptr::copy_nonoverlapping(source.add(q * row), rows.add(q * row), row) };
            }
        }
        // No peer reads this rank's rows once the call returns (they are the caller's again).
        network.node_barrier(timeout)?;
        Ok(true)
    }
}
