//! The world's collectives when it spans nodes (MPI across hosts): inside each node the
//! shared-memory kernels, between nodes MPI's own collectives over the ranks of one index on
//! every node (a column), so a call crosses the network once instead of making a one-sided
//! round trip per access. Taken where the fabric has a network (every node runs as many ranks)
//! and the call is the world's with what MPI can do (its dtypes and ops); anything else runs
//! the world's kernels over the transport as before.
//!
//! - all_reduce: the node's all_reduce (kernels), then the column's `MPI_Allreduce` of the
//!   node's result (for a column of two, one exchange: `Columns::exchange_and_reduce`): every
//!   rank ends with the world's. From [`SLICED_BYTES`] (where the bytes
//!   on the network cost more than the node's extra steps), sliced: the node's reduce_scatter
//!   (kernels), each rank's slice reduced over its column (each node sends its data once, not
//!   once per rank), then every rank copies the other slices from its node's peers.
//! - broadcast: the root's column broadcasts over the network (`MPI_Bcast`), then each node
//!   broadcasts from its member of that column (kernels).
//! - all_gather: the column gathers its rows (`MPI_Allgather`), then every rank copies the other
//!   columns' rows from its node's peers' windows (shared memory), between two node barriers.
//!
//! Below [`FLAT_BELOW`] all_gather is MPI's own over the whole job (measured: its node steps cost
//! more than they save where the network's latency is the call's time).
//!
//! The order of a float reduction is the node's (rank order within it), then MPI's between the
//! nodes' results: the same bits on every rank, though not the flat rank order.

use std::panic::Location;

use pld_model::{Collective, DType, Element};

use super::{AllReduce, Broadcast, Common, Opts, ReduceScatter};
use crate::call::CallWhat;
use crate::error::Result;
use crate::group::{GroupSet, Groups};
use crate::host::Host;
use crate::memory::{Allocation, Operand, Shape, Window};
use crate::transport::{Among, Network};

/// From this size an all_reduce across nodes is sliced (see the module's text): measured on
/// `.ci/two-hosts` (docs/PERFORMANCE.md, "Across two hosts").
const SLICED_BYTES: usize = 256 << 10;

/// Below this size (its whole target) an all_gather across nodes is MPI's own over the whole
/// job: the network's latency is the call's time, and MPI's gather crosses it as often as the
/// column's would, without the node's two barriers. (For all_reduce and broadcast the node
/// steps measured no slower than MPI's own called from pld, so they stay at every size.)
const FLAT_BELOW: usize = 32 << 10;

/// What the collectives across nodes keep for the world: its nodes as groups, and a signal for
/// their calls (signals clear themselves, so one serves every call).
pub(crate) struct AcrossNodes {
    nodes: Groups,
    signal: std::sync::Arc<Allocation>,
    signal_shape: Shape,
    /// The signal's view identity (see `Window`'s `id`).
    signal_id: u64,
    /// all_gather's rows from the network, kept between calls (a fresh buffer faults its pages).
    gathered: std::sync::Mutex<Vec<u8>>,
}

impl AcrossNodes {
    fn signal(&self) -> Operand<'_> {
        let (shape, len, id) = (&self.signal_shape, self.signal_shape.len(), self.signal_id);
        Operand { alloc: &self.signal, dtype: DType::I32, shape, len, id }
    }
}

impl Host<'_> {
    /// The network and this host's rank, when a call with `common` crosses nodes: the world's
    /// call (no group) on a fabric with a network, one rank per host (MPI's processes). Inlined:
    /// every all_reduce, broadcast and all_gather asks first.
    #[inline(always)]
    fn network_for(&self, common: &Common<'_>) -> Option<(&dyn Network, usize)> {
        let network = self.world().shared().fabric.network.as_deref()?;
        (common.groups.is_none() && self.ranks().len() == 1).then_some((network, self.ranks().start))
    }

    /// The checks the world's call makes (`Host::check_call`: its options, its windows and
    /// signal), and the deadline of the network's steps.
    #[track_caller]
    fn checked(
        &self,
        call: CallWhat,
        common: &Common<'_>,
        operands: &[(&'static str, Operand<'_>)],
    ) -> Result<std::time::Duration> {
        self.check_call(call, Location::caller(), common, operands)?;
        Ok(self.world().shared().settings.timeout)
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
        let made = AcrossNodes {
            nodes,
            signal,
            signal_shape: Shape::from([cells]),
            signal_id: crate::memory::new_view_id(),
            gathered: Default::default(),
        };
        Ok(shared.across_nodes.get_or_init(|| made))
    }

    /// The node groups' options for a step of a call: their own signal (a caller's signal is
    /// indexed by world rank in the world's calls and by node rank here: the two would share
    /// cells), no declared rank count (the node's is not the world's).
    fn node_step(across: &AcrossNodes) -> Common<'_> {
        Common { nranks: None, signal: Some(across.signal()), groups: Some(across.nodes.group_list()) }
    }

    /// Whether `bytes` in one MPI call fits MPI's counts (C ints): checked before any step, so
    /// every rank takes the same path.
    fn fits_mpi(bytes: usize) -> bool {
        bytes <= i32::MAX as usize
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
        call: CallWhat,
        operands: &[(&'static str, Operand<'_>)],
        target: &Window<'_, T>,
        opts: &AllReduce<'_>,
    ) -> Result<bool> {
        let Some((network, rank)) = self.network_for(&opts.common) else { return Ok(false) };
        if !network.reduces(T::DTYPE, opts.op)
            || target.is_empty()
            || opts.scale.is_some()
            || !Self::fits_mpi(target.bytes())
        {
            return Ok(false);
        }
        let timeout = self.checked(call, &opts.common, operands)?;
        let across = self.across_nodes()?;
        let common = Self::node_step(across);
        let per_node = across.nodes.group_of(rank).map_or(1, |g| g.size());
        if per_node == 1 || target.bytes() < SLICED_BYTES || !target.len().is_multiple_of(per_node) {
            self.all_reduce(target, AllReduce { mode: opts.mode, op: opts.op, scale: None, common })?;
            self.sync()?;
            network.all_reduce(
                Among::Column,
                self.own_bytes(rank, target),
                target.len(),
                T::DTYPE,
                opts.op,
                timeout,
            )?;
            return Ok(true);
        }
        // Sliced: slice i of the node's reduction lands on its rank of index i.
        self.reduce_scatter(target, ReduceScatter { op: opts.op, scale: None, common })?;
        self.sync()?;
        let (row, slice) = (target.len() / per_node, target.bytes() / per_node);
        let own = self.own_bytes(rank, target);
        // SAFETY: slice `local_index` of `target` lies inside it (`per_node` slices).
        let mine = unsafe { own.add(network.local_index(rank) * slice) };
        network.all_reduce(Among::Column, mine, row, T::DTYPE, opts.op, timeout)?;
        self.copy_from_node_peers(network, rank, target, slice, |index| index..index + 1)?;
        Ok(true)
    }

    /// Between two node barriers (every peer's part is final; no peer still reads this rank's
    /// once it returns): for every peer of this rank's node, the `bytes`-sized blocks of
    /// `target` that `blocks(its index in the node)` names, copied from its window to this
    /// rank's (shared memory).
    fn copy_from_node_peers<T: Element, B: Iterator<Item = usize>>(
        &self,
        network: &dyn Network,
        rank: usize,
        target: &Window<'_, T>,
        bytes: usize,
        blocks: impl Fn(usize) -> B,
    ) -> Result<()> {
        let shared = self.world().shared();
        let (node_of, timeout) = (&shared.fabric.node_of, shared.settings.timeout);
        network.node_barrier(timeout)?;
        let own = self.own_bytes(rank, target);
        for peer in (0..self.nranks()).filter(|&p| p != rank && node_of[p] == node_of[rank]) {
            // SAFETY: a peer of this node: its window is shared memory and `target` lies inside
            // it; its blocks are final (it passed the barrier after writing them).
            let source = unsafe { shared.heap().base(peer).add(target.offset()) };
            for block in blocks(network.local_index(peer)) {
                // SAFETY: block `block` of both targets (inside them by the caller's layout),
                // in two different ranks' windows.
                unsafe { std::ptr::copy_nonoverlapping(source.add(block * bytes), own.add(block * bytes), bytes) };
            }
        }
        network.node_barrier(timeout)
    }

    /// broadcast across nodes; `Ok(false)` where it does not apply.
    #[track_caller]
    pub(super) fn broadcast_across_nodes<T: Element>(
        &self,
        call: CallWhat,
        operands: &[(&'static str, Operand<'_>)],
        target: &Window<'_, T>,
        opts: &Broadcast<'_>,
    ) -> Result<bool> {
        let Some((network, rank)) = self.network_for(&opts.common) else { return Ok(false) };
        let Some(root) = usize::try_from(opts.root).ok().filter(|&r| r < self.nranks()) else { return Ok(false) };
        if target.is_empty() || !Self::fits_mpi(target.bytes()) {
            return Ok(false);
        }
        let timeout = self.checked(call, &opts.common, operands)?;
        let across = self.across_nodes()?;
        let column = network.local_index(root);
        // Only the root's column touches the window from here (the others queue the node's
        // broadcast behind their earlier calls, as any call).
        if network.local_index(rank) == column {
            self.sync()?;
            let root_node = self.world().shared().fabric.node_of[root];
            network.broadcast(Among::Column, self.own_bytes(rank, target), target.bytes(), root_node, timeout)?;
        }
        let node = Broadcast { root: column as i64, common: Self::node_step(across) };
        self.broadcast(target, node)?;
        Ok(true)
    }

    /// all_gather across nodes; `Ok(false)` where it does not apply.
    #[track_caller]
    pub(super) fn all_gather_across_nodes<T: Element>(
        &self,
        call: CallWhat,
        operands: &[(&'static str, Operand<'_>)],
        local: &Window<'_, T>,
        target: &Window<'_, T>,
        opts: &Opts<'_>,
    ) -> Result<bool> {
        let Some((network, rank)) = self.network_for(&opts.common) else { return Ok(false) };
        let n = self.nranks();
        if local.is_empty() || target.len() != n * local.len() || !Self::fits_mpi(local.bytes()) {
            return Ok(false);
        }
        let timeout = self.checked(call, &opts.common, operands)?;
        let shared = self.world().shared();
        let (row, node_of) = (local.bytes(), &shared.fabric.node_of);
        self.sync()?;
        let (mine, rows) = (self.own_bytes(rank, local), self.own_bytes(rank, target));
        if target.bytes() < FLAT_BELOW {
            // Straight into `target`, whose rows are in world-rank order, as MPI's.
            network.all_gather(Among::World, mine, rows, row, timeout)?;
            return Ok(true);
        }
        // The column's rows, each to its rank's row.
        let nodes = node_of.iter().max().map_or(1, |m| m + 1);
        let across = self.across_nodes()?;
        let mut gathered = across.gathered.lock().unwrap_or_else(|p| p.into_inner());
        if gathered.len() < nodes * row {
            gathered.resize(nodes * row, 0);
        }
        network.all_gather(Among::Column, mine, gathered.as_mut_ptr(), row, timeout)?;
        let column = network.local_index(rank);
        for peer in (0..n).filter(|&p| network.local_index(p) == column) {
            let from = &gathered[node_of[peer] * row..][..row];
            // SAFETY: row `peer` lies inside `target` (`n` rows of `row` bytes), in this rank's
            // window, which nothing else writes now.
            unsafe { std::ptr::copy_nonoverlapping(from.as_ptr(), rows.add(peer * row), row) };
        }
        // The other columns' rows from the node's peers that gathered them.
        self.copy_from_node_peers(network, rank, target, row, |index| {
            (0..n).filter(move |&q| network.local_index(q) == index)
        })?;
        Ok(true)
    }
}
