//! The MPI launcher: this process runs one rank of an MPI job (`mpirun`, `srun`).
//!
//! Windows are MPI-3 windows, one of three ways:
//! - **One node**: `MPI_Win_allocate_shared` on the node: peers are plain pointers into shared
//!   memory, the abort flag and the futex sleepers live in a small shared control window, and
//!   kernels run exactly as on the local launcher.
//! - **Several nodes**: each node's windows are one shared segment as above, and the same
//!   memory is an RMA window of the whole job (`MPI_Win_create`): peers of the node are
//!   pointers, peers of other nodes are null in the device context, so accesses to them go
//!   through the `pld_ops` callbacks below (Put / Get / Accumulate, flushed, in one
//!   passive-target epoch), and waits poll with `MPI_Win_sync` while keeping MPI progressing.
//!   Where every node runs as many ranks, [`Columns`] gives the world's collectives MPI's own
//!   between the nodes (`collective::across_nodes`).
//! - **`PLD_MPI_RMA=1`**: `MPI_Win_allocate`, every access through the callbacks.
//!
//! A transfer that fails (a peer's host gone) names the peer, its node and the ranks lost with
//! it (`Error::PeerLost`); a wait or an agreement that times out probes the peers first, through
//! each process's liveness beacon (a TCP port, [`beacon`]) or, where beacons cannot reach, MPI.
//!
//! The safe API of the `mpi` crate has no one-sided calls, so this module is the small wrapper
//! over `mpi::ffi` they need. Failures end the job: a device failure is reported with its rank
//! and `MPI_Abort` follows, and so does a panic anywhere in the process (a panic hook), so a
//! failed rank never leaves the others waiting.

use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::{Mutex, Once};

use mpi::environment::{Threading, Universe};
use mpi::ffi;
use pld_model::{DeviceStatus, NotifyOp};

use std::time::{Duration, Instant};

use super::{AllocationClaim, Among, Fabric, LostPeer, Network};
use crate::config::{Settings, WorldBuilder, env_mpi_rma};
use crate::device::abi::Ops;
use crate::device::services::{futex_sleep, futex_wake};
use crate::error::{Error, Result};
use crate::memory::SymmetricHeap;

mod beacon;

/// Default window per rank under MPI (`PLD_WINDOW_BYTES` overrides it): shared windows are
/// backed by one file in `/dev/shm` for the whole node, so the local default (1 GiB reserved per
/// rank) would be a lot to ask of a container.
pub(crate) const DEFAULT_WINDOW_BYTES: usize = 256 << 20;

/// The MPI state behind one world; freed (windows, then MPI itself) when the world is dropped.
struct MpiState {
    /// The window one-sided calls use (of the whole job), or the node's shared window on one
    /// node.
    win: ffi::MPI_Win,
    /// Across nodes: the node's shared window whose memory `win` exposes to the job.
    shared_win: Option<ffi::MPI_Win>,
    /// The ranks of this node (`MPI_COMM_TYPE_SHARED`).
    node_comm: ffi::MPI_Comm,
    /// Across nodes: the ranks of this one's index on every node ([`Columns`]).
    column_comm: Option<ffi::MPI_Comm>,
    /// Shared mode: `[abort, sleepers[nranks]]` on rank 0, mapped by every rank.
    control_win: Option<ffi::MPI_Win>,
    /// RMA mode: the same cells, private to this process.
    _control_local: Box<[AtomicI32]>,
    /// Whether `win` is in a passive-target epoch for one-sided calls (RMA or across nodes).
    remote: bool,
    ops: Ops,
    /// Finalizes MPI when dropped, after the windows are freed.
    universe: Mutex<Option<Universe>>,
}

// SAFETY: MPI is initialised with MPI_THREAD_MULTIPLE; the handles are plain values MPI
// allows any thread to use.
unsafe impl Send for MpiState {}
// SAFETY: as above.
unsafe impl Sync for MpiState {}

fn check(what: &str, code: c_int) -> Result<()> {
    if code == 0 { Ok(()) } else { Err(Error::system(what, format!("MPI error code {code}"))) }
}

/// The job's world communicator.
fn world() -> ffi::MPI_Comm {
    // SAFETY: a constant handle initialised by MPI_Init.
    unsafe { ffi::RSMPI_COMM_WORLD }
}

/// Starts MPI, agrees with every process on the settings that shape memory and the protocol,
/// and allocates this rank's window and the control cells.
pub(crate) fn fabric(builder: &WorldBuilder) -> Result<(Fabric, Settings)> {
    let (universe, threading) = mpi::initialize_with_threading(Threading::Multiple).ok_or_else(|| {
        Error::system("starting MPI", "MPI is already initialised in this process (one MPI world per process)")
    })?;
    if threading != Threading::Multiple {
        return Err(Error::system(
            "starting MPI",
            format!("the MPI library offers {threading:?} threading; pld's rank worker needs MPI_THREAD_MULTIPLE"),
        ));
    }
    let (mut rank, mut size, mut node_size, mut node_rank, mut leader) = (0, 0, 0, 0, 0i32);
    let mut node: ffi::MPI_Comm = world();
    // SAFETY: plain MPI queries with out-pointers to locals; MPI is initialised.
    unsafe {
        check("MPI_Comm_rank", ffi::MPI_Comm_rank(world(), &mut rank))?;
        check("MPI_Comm_size", ffi::MPI_Comm_size(world(), &mut size))?;
        check(
            "MPI_Comm_split_type",
            ffi::MPI_Comm_split_type(world(), ffi::RSMPI_COMM_TYPE_SHARED, rank, ffi::RSMPI_INFO_NULL, &mut node),
        )?;
        check("MPI_Comm_size", ffi::MPI_Comm_size(node, &mut node_size))?;
        check("MPI_Comm_rank", ffi::MPI_Comm_rank(node, &mut node_rank))?;
        // The node's lowest world rank names the node in every rank's view.
        check(
            "MPI_Allreduce",
            ffi::MPI_Allreduce(
                (&raw const rank).cast(),
                (&raw mut leader).cast(),
                1,
                ffi::RSMPI_INT32_T,
                ffi::RSMPI_MIN,
                node,
            ),
        )?;
    }
    let nranks = size as usize;
    let (settings, forced) = agree_on_settings(rank as usize, nranks, builder)?;
    let capacity = settings.window_bytes;
    let nodes = Nodes::agree(rank as usize, node_rank as usize, node_size as usize, leader as usize, settings.timeout)?;
    // One-sided calls for every window (forced), shared windows inside each node with the
    // network between nodes (hybrid), or shared windows only (one node).
    let rma = forced;
    let hybrid = !forced && nodes.count > 1;
    let control_cells = 1 + nranks;
    let mut state = Box::new(MpiState {
        // SAFETY: a constant handle.
        win: unsafe { ffi::RSMPI_WIN_NULL },
        shared_win: None,
        control_win: None,
        node_comm: node,
        column_comm: None,
        _control_local: (0..control_cells).map(|_| AtomicI32::new(0)).collect(),
        remote: rma || hybrid,
        // Updates from the network land only while MPI progresses: waits poll it.
        ops: match (rma, hybrid) {
            (true, _) => RMA_OPS,
            (false, true) => HYBRID_OPS,
            (false, false) => SHARED_OPS,
        },
        universe: Mutex::new(Some(universe)),
    });
    let mut bases = vec![std::ptr::null_mut::<u8>(); nranks];
    let control: *mut i32;
    let capacity_aint = capacity as ffi::MPI_Aint;
    // SAFETY: collective window allocations on the world communicator, every rank making the
    // same calls in the same order; out-pointers are locals or fields of `state`.
    unsafe {
        let mut base: *mut u8 = std::ptr::null_mut();
        if rma {
            check(
                "MPI_Win_allocate",
                ffi::MPI_Win_allocate(
                    capacity_aint,
                    1,
                    ffi::RSMPI_INFO_NULL,
                    world(),
                    (&raw mut base).cast(),
                    &mut state.win,
                ),
            )?;
            // A failed transfer (a peer's host gone) comes back as a code the kernel reports,
            // naming the peer, rather than MPI's own abort without one.
            check("MPI_Win_set_errhandler", ffi::MPI_Win_set_errhandler(state.win, ffi::RSMPI_ERRORS_RETURN))?;
            check("MPI_Win_lock_all", ffi::MPI_Win_lock_all(ffi::MPI_MODE_NOCHECK as c_int, state.win))?;
            *PROBE_WINDOW.lock().unwrap_or_else(|p| p.into_inner()) = Some(Handle(state.win));
            bases[rank as usize] = base;
            control = state._control_local.as_ptr().cast::<i32>().cast_mut();
        } else {
            // The node's ranks share their windows; `node` orders them by world rank.
            let mut shared: ffi::MPI_Win = ffi::RSMPI_WIN_NULL;
            check(
                "MPI_Win_allocate_shared",
                ffi::MPI_Win_allocate_shared(
                    capacity_aint,
                    1,
                    ffi::RSMPI_INFO_NULL,
                    node,
                    (&raw mut base).cast(),
                    &mut shared,
                ),
            )?;
            for (node_rank, peer) in nodes.ranks_on(leader as usize).enumerate() {
                let (mut bytes, mut unit) = (0, 0);
                check(
                    "MPI_Win_shared_query",
                    ffi::MPI_Win_shared_query(
                        shared,
                        node_rank as c_int,
                        &mut bytes,
                        &mut unit,
                        (&raw mut bases[peer]).cast(),
                    ),
                )?;
            }
            if hybrid {
                // The same memory as an RMA window of the whole job, for peers on other nodes.
                state.shared_win = Some(shared);
                check(
                    "MPI_Win_create",
                    ffi::MPI_Win_create(base.cast(), capacity_aint, 1, ffi::RSMPI_INFO_NULL, world(), &mut state.win),
                )?;
                check("MPI_Win_set_errhandler", ffi::MPI_Win_set_errhandler(state.win, ffi::RSMPI_ERRORS_RETURN))?;
                check("MPI_Win_lock_all", ffi::MPI_Win_lock_all(ffi::MPI_MODE_NOCHECK as c_int, state.win))?;
                *PROBE_WINDOW.lock().unwrap_or_else(|p| p.into_inner()) = Some(Handle(state.win));
            } else {
                state.win = shared;
            }
            let mut control_win: ffi::MPI_Win = ffi::RSMPI_WIN_NULL;
            let mut own: *mut u8 = std::ptr::null_mut();
            let bytes = if node_rank == 0 { (4 * control_cells) as ffi::MPI_Aint } else { 0 };
            check(
                "MPI_Win_allocate_shared",
                ffi::MPI_Win_allocate_shared(
                    bytes,
                    4,
                    ffi::RSMPI_INFO_NULL,
                    node,
                    (&raw mut own).cast(),
                    &mut control_win,
                ),
            )?;
            let (mut qbytes, mut unit) = (0, 0);
            let mut cells: *mut i32 = std::ptr::null_mut();
            check(
                "MPI_Win_shared_query",
                ffi::MPI_Win_shared_query(control_win, 0, &mut qbytes, &mut unit, (&raw mut cells).cast()),
            )?;
            if node_rank == 0 {
                std::ptr::write_bytes(cells, 0, control_cells);
            }
            state.control_win = Some(control_win);
            control = cells;
        }
        // Every window exists (and the control cells are zero) before any rank uses them.
        check("MPI_Barrier", ffi::MPI_Barrier(world()))?;
    }
    let sync_ns = crate::trace::clock::monotonic_ns();
    // Across hosts each has a clock of its own: traces are put on rank 0's.
    let offset = if nodes.count > 1 {
        let _ = CLOCK_NODE_COMM.set(Handle(node));
        Some(clock_offset_to_rank_0(rank as usize, &nodes, node, Some(settings.timeout))?)
    } else {
        None
    };
    let clock = crate::trace::clock::ClockSync { sync_ns, offset };
    let launcher = nodes.launcher(rma);
    let node_ranks = nodes.on_machine.max(node_size as usize);
    let cores = nodes.cpus;
    let node_of = nodes.node_indices();
    // Between nodes MPI's own collectives, where every node runs as many ranks (one column
    // per index within a node).
    let network: Option<Box<dyn Network>> = if hybrid && nodes.ranks.0 == nodes.ranks.1 {
        let mut column: ffi::MPI_Comm = world();
        // SAFETY: a collective split of the world communicator, every rank making it here.
        unsafe {
            check(
                "MPI_Comm_split",
                ffi::MPI_Comm_split(world(), node_rank, node_of[rank as usize] as c_int, &mut column),
            )?;
        }
        state.column_comm = Some(column);
        let (mut column_size, mut column_rank) = (0, 0);
        // SAFETY: plain queries on the communicator just made.
        unsafe {
            check("MPI_Comm_size", ffi::MPI_Comm_size(column, &mut column_size))?;
            check("MPI_Comm_rank", ffi::MPI_Comm_rank(column, &mut column_rank))?;
        }
        let local_index =
            (0..nranks).map(|r| nodes.ranks_on(nodes.node_of[r].0).position(|q| q == r).unwrap_or(0)).collect();
        Some(Box::new(Columns {
            rank: rank as usize,
            scratch: Mutex::new(Vec::new()),
            column,
            pair: (column_size == 2).then_some(column_rank),
            node,
            local_index,
        }))
    } else {
        None
    };
    let _ = NODES.set(nodes);
    state.ops.data = (&raw const *state).cast_mut().cast();
    let local: Vec<bool> = (0..nranks).map(|r| r == rank as usize).collect();
    let heap = SymmetricHeap::external(&bases, &local, capacity);
    install_panic_hook(rank);
    report_when_ended(rank as usize);
    let ops = &raw const state.ops;
    let fabric = Fabric {
        launcher,
        nranks,
        local: rank as usize..rank as usize + 1,
        node_ranks,
        cores,
        heap: std::sync::Arc::new(heap),
        control,
        ops,
        _keep: state,
        on_failure: Some(abort_job),
        transport_only: rma,
        node_of,
        agree_on_allocation: Some(agree_on_allocation),
        lost_peer: Some(lost_peer),
        network,
        clock,
        measure_clock: offset.is_some().then_some(measure_clock_again as crate::trace::clock::MeasureClock),
    };
    Ok((fabric, settings))
}

/// Round trips each node's first rank makes to rank 0 to measure its clock.
const CLOCK_ROUND_TRIPS: usize = 32;

/// The node communicator the clock is measured over, for the measurement when the world ends
/// (set where the job spans hosts).
static CLOCK_NODE_COMM: std::sync::OnceLock<Handle<ffi::MPI_Comm>> = std::sync::OnceLock::new();

/// [`clock_offset_to_rank_0`] again when the world ends, for a job spanning hosts (every
/// process drops its world, and waits there as at the barrier that follows: no deadline, a
/// process may end long after the others); `None` where it fails.
fn measure_clock_again() -> Option<crate::trace::clock::ClockOffset> {
    let (nodes, node) = (NODES.get()?, CLOCK_NODE_COMM.get()?);
    clock_offset_to_rank_0(nodes.rank, nodes, node.0, None).ok()
}

/// This process's clock against rank 0's, where the job spans hosts: each node's first rank
/// sends rank 0 its time [`CLOCK_ROUND_TRIPS`] times and rank 0 answers each with its own; the
/// fastest round trip gives the offset (rank 0's time against the round trip's midpoint, as NTP
/// estimates it), right to within half that round trip, which is the error bound given. The
/// node's first rank then tells the node's other ranks, which share its clock. Rank 0's node
/// gets 0 and 0. Bounded by `timeout` where given, like every start-up exchange.
fn clock_offset_to_rank_0(
    rank: usize,
    nodes: &Nodes,
    node: ffi::MPI_Comm,
    timeout: Option<Duration>,
) -> Result<crate::trace::clock::ClockOffset> {
    /// A tag of its own (under 32767, the least upper bound MPI promises), so that no other
    /// message on the world communicator is taken for one of these.
    const TAG: c_int = 7411;
    let now = crate::trace::clock::monotonic_ns;
    let leader_of = |r: usize| nodes.node_of[r].0;
    let mut leaders: Vec<usize> = nodes.node_of.iter().map(|(leader, _)| *leader).collect();
    leaders.sort_unstable();
    leaders.dedup();
    let _armed = timeout.map(|timeout| Watchdog::arm(rank, timeout, "measuring each host's clock against rank 0's"));
    // The offset, its error bound, and when (the fastest round trip's midpoint, the leader's clock).
    let mut measured = [0u64, 0, now()];
    let word = |value: &mut u64| (value as *mut u64).cast::<c_void>();
    // SAFETY: point-to-point calls of one u64 each on the world communicator, every send
    // matched by the peer's receive of the same tag in the same order; buffers are locals.
    unsafe {
        if rank == 0 {
            for &leader in leaders.iter().filter(|&&l| l != leader_of(0)) {
                for _ in 0..CLOCK_ROUND_TRIPS {
                    let mut theirs = 0u64;
                    check(
                        "MPI_Recv",
                        ffi::MPI_Recv(
                            word(&mut theirs),
                            1,
                            ffi::RSMPI_UINT64_T,
                            leader as c_int,
                            TAG,
                            world(),
                            ffi::RSMPI_STATUS_IGNORE,
                        ),
                    )?;
                    let mut mine = now();
                    check(
                        "MPI_Send",
                        ffi::MPI_Send(word(&mut mine), 1, ffi::RSMPI_UINT64_T, leader as c_int, TAG, world()),
                    )?;
                }
            }
        } else if rank == leader_of(rank) {
            let mut best = (u64::MAX, 0i64, 0u64);
            for _ in 0..CLOCK_ROUND_TRIPS {
                let mut sent = now();
                check("MPI_Send", ffi::MPI_Send(word(&mut sent), 1, ffi::RSMPI_UINT64_T, 0, TAG, world()))?;
                let mut theirs = 0u64;
                check(
                    "MPI_Recv",
                    ffi::MPI_Recv(word(&mut theirs), 1, ffi::RSMPI_UINT64_T, 0, TAG, world(), ffi::RSMPI_STATUS_IGNORE),
                )?;
                let back = now();
                let round_trip = back.saturating_sub(sent);
                if round_trip < best.0 {
                    let midpoint = sent + round_trip / 2;
                    best = (round_trip, theirs as i64 - midpoint as i64, midpoint);
                }
            }
            measured = [best.1 as u64, best.0 / 2, best.2];
        }
        // The node's first rank is rank 0 of `node` (ordered by world rank). The others wait
        // for it asleep between tests: a wait inside MPI polls without a pause, and where the
        // hosts' ranks outnumber their cores (CI's two hosts: 4 processes, 2 cores) polling
        // ranks took the cores from the two measuring ones, whose fastest of 16 round trips
        // then took 5.8 ms instead of 14 us.
        let mut request = ffi::RSMPI_REQUEST_NULL;
        check(
            "MPI_Ibcast",
            ffi::MPI_Ibcast(measured.as_mut_ptr().cast(), 3, ffi::RSMPI_UINT64_T, 0, node, &mut request),
        )?;
        loop {
            let mut done = 0;
            check("MPI_Test", ffi::MPI_Test(&mut request, &mut done, ffi::RSMPI_STATUS_IGNORE))?;
            if done != 0 {
                break;
            }
            std::thread::sleep(Duration::from_micros(50));
        }
    }
    Ok(crate::trace::clock::ClockOffset { offset_ns: measured[0] as i64, error_ns: measured[1], at_ns: measured[2] })
}

/// MPI's collectives between nodes: over `column` (this rank's index on every node) and `node`
/// (the node's ranks). The communicators are the world state's (freed with it).
struct Columns {
    rank: usize,
    /// The input of an all_reduce (a copy of the data it reduces in place), kept between calls.
    scratch: Mutex<Vec<u8>>,
    column: ffi::MPI_Comm,
    /// Where the column is two ranks (two nodes): this rank's place in it (0 or 1).
    pair: Option<c_int>,
    node: ffi::MPI_Comm,
    local_index: Vec<usize>,
}

// SAFETY: MPI is initialised with MPI_THREAD_MULTIPLE; communicator handles are plain values
// any thread may pass to MPI.
unsafe impl Send for Columns {}
// SAFETY: as above.
unsafe impl Sync for Columns {}

/// MPI's type for a dtype it can reduce.
fn mpi_type(dtype: pld_model::DType) -> Option<ffi::MPI_Datatype> {
    use pld_model::DType;
    // SAFETY: constant handles initialised by MPI_Init.
    unsafe {
        Some(match dtype {
            DType::F32 => ffi::RSMPI_FLOAT,
            DType::F64 => ffi::RSMPI_DOUBLE,
            DType::I8 => ffi::RSMPI_INT8_T,
            DType::U8 => ffi::RSMPI_UINT8_T,
            DType::I32 => ffi::RSMPI_INT32_T,
            DType::U32 => ffi::RSMPI_UINT32_T,
            DType::I64 => ffi::RSMPI_INT64_T,
            DType::U64 => ffi::RSMPI_UINT64_T,
            _ => return None,
        })
    }
}

/// MPI's op for a reduction it has (avg and premul_sum are pld's: sum, scaled by the caller).
fn mpi_op(op: pld_model::ReduceOp) -> Option<ffi::MPI_Op> {
    use pld_model::ReduceOp;
    // SAFETY: constant handles initialised by MPI_Init.
    unsafe {
        Some(match op {
            ReduceOp::Sum => ffi::RSMPI_SUM,
            ReduceOp::Max => ffi::RSMPI_MAX,
            ReduceOp::Min => ffi::RSMPI_MIN,
            ReduceOp::Prod => ffi::RSMPI_PROD,
            _ => return None,
        })
    }
}

/// A count MPI takes (a C int), or an error naming the call.
fn mpi_count(what: &str, count: usize) -> Result<c_int> {
    c_int::try_from(count)
        .map_err(|_| Error::system(what, format!("{count} elements is more than MPI takes in one call")))
}

impl Columns {
    /// The all_reduce of a column of two (`me`: this rank's place in it): each sends its data to
    /// the other and reduces what it received with its own, both in the same order (place 1's
    /// operand first), so both hold the same bits. Open MPI's MPI_Allreduce of two processes
    /// over TCP measured a step at 4 KiB (pld's all_reduce across two hosts 32.8 / 63.8 /
    /// 38.2 us at 2 / 4 / 8 KiB); one exchange has none.
    fn exchange_and_reduce(
        &self,
        me: c_int,
        data: *mut u8,
        theirs: &mut [u8],
        (n, ty, op): (c_int, ffi::MPI_Datatype, ffi::MPI_Op),
        timeout: Duration,
    ) -> Result<()> {
        let peer = 1 - me;
        let _armed = Watchdog::arm(self.rank, timeout, "all_reduce between nodes");
        // SAFETY: `data` and `theirs` each hold `n` elements of `ty`; the peer makes the same
        // exchange (the same count: every member of a column reduces the same slice).
        unsafe {
            check(
                "MPI_Sendrecv",
                ffi::MPI_Sendrecv(
                    data.cast(),
                    n,
                    ty,
                    peer,
                    0,
                    theirs.as_mut_ptr().cast(),
                    n,
                    ty,
                    peer,
                    0,
                    self.column,
                    ffi::RSMPI_STATUS_IGNORE,
                ),
            )?;
            // MPI_Reduce_local(in, inout): inout = in op inout. Place 1's operand goes first on
            // both (max and min of a NaN depend on the order).
            if me == 1 {
                check("MPI_Reduce_local", ffi::MPI_Reduce_local(data.cast(), theirs.as_mut_ptr().cast(), n, ty, op))?;
                std::ptr::copy_nonoverlapping(theirs.as_ptr(), data, theirs.len());
                Ok(())
            } else {
                check("MPI_Reduce_local", ffi::MPI_Reduce_local(theirs.as_ptr().cast(), data.cast(), n, ty, op))
            }
        }
    }

    fn comm(&self, among: Among) -> ffi::MPI_Comm {
        match among {
            Among::Column => self.column,
            Among::World => world(),
        }
    }
}

impl Network for Columns {
    fn reduces(&self, dtype: pld_model::DType, op: pld_model::ReduceOp) -> bool {
        mpi_type(dtype).is_some() && mpi_op(op).is_some()
    }

    fn all_reduce(
        &self,
        among: Among,
        data: *mut u8,
        count: usize,
        dtype: pld_model::DType,
        op: pld_model::ReduceOp,
        timeout: Duration,
    ) -> Result<()> {
        let (Some(ty), Some(mpi_op)) = (mpi_type(dtype), mpi_op(op)) else {
            return Err(Error::system("all_reduce between nodes", format!("MPI cannot reduce {dtype} with {op:?}")));
        };
        let n = mpi_count("MPI_Allreduce", count)?;
        // The `mpi` crate's bindings have no MPI_IN_PLACE (its value differs between MPIs):
        // the input is a copy, in a buffer kept between calls (a fresh one would fault in every
        // page of a large call).
        let bytes = count * dtype.size();
        let mut input = self.scratch.lock().unwrap_or_else(|p| p.into_inner());
        if input.len() < bytes {
            input.resize(bytes, 0);
        }
        if let (Among::Column, Some(me)) = (among, self.pair) {
            return self.exchange_and_reduce(me, data, &mut input[..bytes], (n, ty, mpi_op), timeout);
        }
        // SAFETY: `data` holds `count` elements of `dtype` (the caller's window); `input` is
        // this call's own buffer.
        unsafe { std::ptr::copy_nonoverlapping(data, input.as_mut_ptr(), bytes) };
        let _armed = Watchdog::arm(self.rank, timeout, "all_reduce between nodes");
        // SAFETY: `input` and `data` each hold `count` elements of `dtype`; every member of `among`
        // makes the same call.
        unsafe {
            check(
                "MPI_Allreduce",
                ffi::MPI_Allreduce(input.as_ptr().cast(), data.cast(), n, ty, mpi_op, self.comm(among)),
            )
        }
    }

    fn broadcast(&self, among: Among, data: *mut u8, bytes: usize, root: usize, timeout: Duration) -> Result<()> {
        let n = mpi_count("MPI_Bcast", bytes)?;
        let _armed = Watchdog::arm(self.rank, timeout, "broadcast between nodes");
        // SAFETY: `data` holds `bytes` bytes; every member of `among` makes the same call.
        unsafe {
            check("MPI_Bcast", ffi::MPI_Bcast(data.cast(), n, ffi::RSMPI_UINT8_T, root as c_int, self.comm(among)))
        }
    }

    fn all_gather(&self, among: Among, mine: *const u8, all: *mut u8, bytes: usize, timeout: Duration) -> Result<()> {
        let n = mpi_count("MPI_Allgather", bytes)?;
        let _armed = Watchdog::arm(self.rank, timeout, "all_gather between nodes");
        // SAFETY: `mine` holds `bytes` bytes and `all` one block of them per member of `among`;
        // every member makes the same call.
        unsafe {
            check(
                "MPI_Allgather",
                ffi::MPI_Allgather(
                    mine.cast(),
                    n,
                    ffi::RSMPI_UINT8_T,
                    all.cast(),
                    n,
                    ffi::RSMPI_UINT8_T,
                    self.comm(among),
                ),
            )
        }
    }

    fn node_barrier(&self, timeout: Duration) -> Result<()> {
        let _armed = Watchdog::arm(self.rank, timeout, "a barrier of the node's ranks");
        // SAFETY: a barrier every rank of the node makes.
        unsafe { check("MPI_Barrier", ffi::MPI_Barrier(self.node)) }
    }

    fn local_index(&self, rank: usize) -> usize {
        self.local_index[rank]
    }
}

/// The nodes of the job (the groups of ranks that can share memory, `MPI_COMM_TYPE_SHARED`),
/// as every rank sees them.
struct Nodes {
    count: usize,
    /// The fewest and the most ranks one node runs.
    ranks: (usize, usize),
    /// By world rank: its node's lowest world rank, and the node's host name.
    node_of: Vec<(usize, String)>,
    /// This process's rank.
    rank: usize,
    /// The ranks on this machine, of every node on it: they share its cores. More than the
    /// node's where nodes are containers or namespaces of one machine (`.ci/two-hosts`).
    on_machine: usize,
    /// The cores of this machine, the least any of its processes counts (a container may see
    /// fewer), so that every process on it makes the same LL layout.
    cpus: usize,
    /// Every process's liveness beacon, for telling which peers are gone.
    beacons: beacon::Beacons,
}

/// This machine's identity, the same in every container and namespace on it: the kernel's boot
/// id (its first 16 hex digits).
fn machine_id() -> Option<u64> {
    let id = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").ok()?;
    let digits: String = id.chars().filter(char::is_ascii_hexdigit).take(16).collect();
    u64::from_str_radix(&digits, 16).ok()
}

/// Host names travel as this many 8-byte words (longer ones are cut).
const NAME_WORDS: usize = 8;

impl Nodes {
    /// Every rank's node rank, node size, node (its lowest world rank) and host name gathered:
    /// the nodes are the ranks that are rank 0 of theirs.
    fn agree(rank: usize, node_rank: usize, node_size: usize, leader: usize, timeout: Duration) -> Result<Nodes> {
        let mut name = [0u8; 8 * NAME_WORDS];
        let mut buf = vec![0 as std::ffi::c_char; ffi::MPI_MAX_PROCESSOR_NAME as usize + 1];
        let mut len = 0;
        // SAFETY: the buffer holds MPI_MAX_PROCESSOR_NAME characters, as the call requires.
        unsafe { check("MPI_Get_processor_name", ffi::MPI_Get_processor_name(buf.as_mut_ptr(), &mut len))? };
        for (to, &from) in name.iter_mut().zip(&buf[..len.clamp(0, 8 * NAME_WORDS as c_int) as usize]) {
            *to = from as u8;
        }
        // Where the machine is unknown, each node counts as a machine of its own.
        let machine = machine_id().unwrap_or(u64::MAX - leader as u64);
        let cpus = crate::cpus::node_cpus() as u64;
        let mut mine = vec![node_rank as u64, node_size as u64, leader as u64, machine, cpus];
        mine.extend(name.chunks(8).map(|w| u64::from_le_bytes(w.try_into().unwrap_or_default())));
        const BEACON_AT: usize = 5 + NAME_WORDS;
        mine.extend(beacon::Beacon::words(beacon::Beacon::open().as_ref()));
        let all = allgather_within(rank, &mine, timeout, "counting the job's nodes")?;
        let rows = all.chunks(mine.len());
        let on_machine = rows.clone().filter(|r| r[3] == mine[3]).count();
        let cpus = rows.clone().filter(|r| r[3] == mine[3]).map(|r| r[4] as usize).min().unwrap_or(1).max(1);
        let sizes = rows.clone().filter(|r| r[0] == 0).map(|r| r[1] as usize);
        let (count, min, max) = sizes.fold((0, usize::MAX, 0), |(n, lo, hi), s| (n + 1, lo.min(s), hi.max(s)));
        let node_of = rows
            .clone()
            .map(|r| {
                let bytes: Vec<u8> =
                    r[5..BEACON_AT].iter().flat_map(|w| w.to_le_bytes()).take_while(|&b| b != 0).collect();
                (r[2] as usize, String::from_utf8_lossy(&bytes).into_owned())
            })
            .collect::<Vec<_>>();
        // The beacons' witness: a rank of another node, the ranks spread over them, else the
        // next rank.
        let nranks = node_of.len();
        let elsewhere: Vec<usize> = (0..nranks).filter(|&p| node_of[p].0 != leader).collect();
        let witness = match elsewhere.len() {
            0 => (nranks > 1).then(|| (rank + 1) % nranks),
            n => Some(elsewhere[rank % n]),
        };
        let beacons = beacon::Beacons::new(rank, rows.clone().map(|r| &r[BEACON_AT..]), witness);
        Ok(Nodes { count, ranks: (min, max), node_of, rank, on_machine, cpus, beacons })
    }

    /// The world ranks of the node whose lowest rank is `leader`, in node-rank order.
    fn ranks_on(&self, leader: usize) -> impl Iterator<Item = usize> + '_ {
        self.node_of.iter().enumerate().filter(move |(_, (l, _))| *l == leader).map(|(r, _)| r)
    }

    /// By world rank: the index of its node (nodes numbered by their lowest rank).
    fn node_indices(&self) -> Vec<usize> {
        let mut leaders: Vec<usize> = self.node_of.iter().map(|(l, _)| *l).collect();
        leaders.sort_unstable();
        leaders.dedup();
        self.node_of.iter().map(|(l, _)| leaders.binary_search(l).unwrap_or(0)).collect()
    }

    /// The launcher's line for reports: one node's windows are shared (or forced through RMA);
    /// across nodes, how many and how many ranks each runs.
    fn launcher(&self, rma: bool) -> String {
        match (self.count, self.ranks) {
            (1, _) if rma => "mpi (RMA)".to_owned(),
            (1, _) => "mpi (shared windows)".to_owned(),
            (n, (lo, hi)) if lo == hi => format!("mpi ({n} nodes, {lo} ranks per node)"),
            (n, (lo, hi)) => format!("mpi ({n} nodes, {lo} to {hi} ranks per node)"),
        }
    }
}

/// Every process's settings gathered and compared: the ones that shape each window's layout or
/// the protocol must be equal everywhere (else credits would land where a peer does not look);
/// a difference is an error on every rank naming the setting and each process's value. A
/// process whose own settings are invalid still takes part (so no peer waits for it) and
/// reports its own error; the others name it.
fn agree_on_settings(rank: usize, nranks: usize, builder: &WorldBuilder) -> Result<(Settings, bool)> {
    let mine = builder.settings(DEFAULT_WINDOW_BYTES).and_then(|s| Ok((s, env_mpi_rma()?)));
    // The deadline of this first agreement: the process's own, or the default if it has none.
    let timeout = mine.as_ref().map_or(Duration::from_millis(crate::config::DEFAULT_TIMEOUT_MS), |(s, _)| s.timeout);
    // Per rank: whether its settings are valid, then each shared value.
    const WIDTH: usize = 5;
    let words: Vec<u64> = match &mine {
        Ok((settings, forced)) => {
            std::iter::once(1).chain(settings.shared_by_every_process(*forced).iter().map(|&(_, v)| v)).collect()
        }
        Err(_) => vec![0; WIDTH],
    };
    let all = allgather_within(rank, &words, timeout, "the settings agreement at world creation")?;
    let (settings, forced) = mine?;
    if let Some(peer) = (0..nranks).find(|&r| all[r * WIDTH] == 0) {
        return Err(Error::InvalidSetting {
            setting: format!("a setting of rank {peer}"),
            value: "(see that rank's own error)".into(),
            expected: "valid settings on every process".into(),
        });
    }
    for (i, (setting, _)) in settings.shared_by_every_process(forced).iter().enumerate() {
        let values: Vec<u64> = (0..nranks).map(|r| all[r * WIDTH + 1 + i]).collect();
        if values.iter().any(|&v| v != values[0]) {
            return Err(Error::MismatchedSettings { setting: (*setting).to_owned(), values });
        }
    }
    Ok((settings, forced))
}

/// `MPI_Allgather` of `mine` (the same length on every rank), bounded by `timeout`: a process
/// that never arrives would leave the others in the gather for ever, so a watchdog thread ends
/// the job (naming this rank and what it waited for) once the deadline passes. The gather itself
/// is MPI's blocking one: a non-blocking gather polled with `MPI_Test` measured 1-5 ms per
/// agreement on two processes (libnbc progresses only when tested), the blocking one 2 us.
fn allgather_within(rank: usize, mine: &[u64], timeout: Duration, what: &str) -> Result<Vec<u64>> {
    let mut size = 0;
    // SAFETY: a plain query on the world communicator.
    unsafe { check("MPI_Comm_size", ffi::MPI_Comm_size(world(), &mut size))? };
    let mut all = vec![0u64; mine.len() * size as usize];
    let count = mine.len() as c_int;
    let _armed = Watchdog::arm(rank, timeout, what);
    // SAFETY: every rank makes the same collective call; the buffers hold `count` and
    // `count * size` u64.
    unsafe {
        check(
            "MPI_Allgather",
            ffi::MPI_Allgather(
                mine.as_ptr().cast(),
                count,
                ffi::RSMPI_UINT64_T,
                all.as_mut_ptr().cast(),
                count,
                ffi::RSMPI_UINT64_T,
                world(),
            ),
        )?;
    }
    Ok(all)
}

/// The deadline of the agreement in progress, watched by one thread per process.
struct Watchdog {
    /// Nanoseconds after `epoch` at which the armed agreement times out; 0: none armed.
    deadline_ns: std::sync::atomic::AtomicU64,
    /// What the armed agreement is, for the message (written before arming).
    what: Mutex<(usize, String, u64)>,
    epoch: Instant,
}

/// Disarms the watchdog when the agreement ends.
struct Armed(&'static Watchdog);

impl Drop for Armed {
    fn drop(&mut self) {
        self.0.deadline_ns.store(0, Ordering::Release);
    }
}

impl Watchdog {
    fn get() -> &'static Watchdog {
        static WATCHDOG: std::sync::OnceLock<&'static Watchdog> = std::sync::OnceLock::new();
        WATCHDOG.get_or_init(|| {
            let dog: &'static Watchdog = Box::leak(Box::new(Watchdog {
                deadline_ns: std::sync::atomic::AtomicU64::new(0),
                what: Mutex::new((0, String::new(), 0)),
                epoch: Instant::now(),
            }));
            let _ = std::thread::Builder::new().name("pld-mpi-watchdog".into()).spawn(move || dog.watch());
            dog
        })
    }

    /// Arms the deadline of one agreement; the returned guard disarms it.
    fn arm(rank: usize, timeout: Duration, what: &str) -> Armed {
        let dog = Watchdog::get();
        *dog.what.lock().unwrap_or_else(|p| p.into_inner()) = (rank, what.to_owned(), timeout.as_millis() as u64);
        let deadline = dog.epoch.elapsed().saturating_add(timeout).as_nanos().min(u64::MAX as u128) as u64;
        dog.deadline_ns.store(deadline.max(1), Ordering::Release);
        Armed(dog)
    }

    /// Checks the armed deadline a few times a second; ends the job when one passed.
    fn watch(&self) {
        loop {
            std::thread::sleep(Duration::from_millis(50));
            let deadline = self.deadline_ns.load(Ordering::Acquire);
            if deadline != 0 && self.epoch.elapsed().as_nanos() as u64 > deadline {
                let (rank, what, timeout_ms) = self.what.lock().unwrap_or_else(|p| p.into_inner()).clone();
                // Across nodes a peer that never arrived may be gone with its host: say so.
                let peers: Vec<usize> =
                    (0..NODES.get().map_or(0, |n| n.node_of.len())).filter(|&p| p != rank).collect();
                let error = match lost_peer(&peers) {
                    Some(lost) => lost.into_error(rank, what, None),
                    None => Error::AgreementTimeout { rank, what, timeout_ms },
                };
                abort_job(rank, &error);
            }
        }
    }
}

/// Every rank's side of its `index`-th allocation, gathered within the deadline: a barrier (no
/// rank credits a window its owner has not zeroed yet), the check that all allocated the same,
/// and, when a rank could not allocate, an error on every rank naming it and why.
fn agree_on_allocation(claim: &AllocationClaim<'_>, timeout: Duration) -> Result<()> {
    let &AllocationClaim { rank, index, name, bytes, failed } = claim;
    let mine = [bytes as u64, name_hash(name), u64::from(failed.is_some()), failed.unwrap_or(0) as u64];
    let all = allgather_within(rank, &mine, timeout, &format!("allocating window `{name}` (allocation #{index})"))?;
    if let Some((peer, theirs)) = all.chunks(4).enumerate().find(|(_, theirs)| theirs[2] != 0) {
        return Err(Error::AllocationFailed {
            failed_rank: peer,
            name: name.to_owned(),
            bytes: theirs[0] as usize,
            available: theirs[3] as usize,
        });
    }
    match all.chunks(4).position(|theirs| theirs[..2] != mine[..2]) {
        None => Ok(()),
        Some(peer) => Err(Error::MismatchedAllocation {
            rank,
            name: name.to_owned(),
            bytes,
            index,
            peer,
            peer_name: if all[4 * peer + 1] == mine[1] { name.to_owned() } else { "<another name>".to_owned() },
            peer_bytes: all[4 * peer] as usize,
        }),
    }
}

/// A window name's hash, the same in every process.
fn name_hash(name: &str) -> u64 {
    let text = pld_model::fnv1a64([name.as_bytes()]);
    u64::from_str_radix(&text["fnv1a64:".len()..], 16).unwrap_or(0)
}

impl Drop for MpiState {
    fn drop(&mut self) {
        // SAFETY: every rank reaches this point when its world is dropped; the barrier keeps a
        // fast rank from freeing its window while a peer still reads it.
        unsafe {
            ffi::MPI_Barrier(world());
            if self.remote {
                PROBE_WINDOW.lock().unwrap_or_else(|p| p.into_inner()).take();
                ffi::MPI_Win_unlock_all(self.win);
            }
            ffi::MPI_Win_free(&mut self.win);
            if let Some(mut shared) = self.shared_win.take() {
                ffi::MPI_Win_free(&mut shared);
            }
            if let Some(mut control) = self.control_win.take() {
                ffi::MPI_Win_free(&mut control);
            }
            ffi::MPI_Comm_free(&mut self.node_comm);
            if let Some(mut column) = self.column_comm.take() {
                ffi::MPI_Comm_free(&mut column);
            }
        }
        // Finalizes MPI.
        drop(self.universe.lock().unwrap_or_else(|p| p.into_inner()).take());
    }
}

/// A failure on this rank ends the job with a message naming the rank: peers in other
/// processes cannot see this process's error, and an MPI job must not hang.
fn abort_job(rank: usize, error: &Error) {
    eprintln!("pld: rank {rank} failed, aborting the MPI job: {error}");
    // MPI_Abort must reach the launcher, which may itself be cut off from a lost host and
    // never answer: then this process ends on its own (a non-zero exit ends an MPI job too).
    // `abort`, not `exit`: other threads may be inside MPI, whose exit handlers must not run
    // under them.
    let _ = std::thread::Builder::new().name("pld-mpi-abort".into()).spawn(|| {
        std::thread::sleep(Duration::from_secs(2));
        std::process::abort();
    });
    // SAFETY: MPI is initialised; MPI_Abort does not return.
    unsafe { ffi::MPI_Abort(world(), 1) };
}

/// A panic in any thread of this process aborts the job (a Rust panic alone would leave the
/// other ranks waiting for this one until their deadline).
fn install_panic_hook(rank: i32) {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            previous(info);
            eprintln!("pld: rank {rank} panicked, aborting the MPI job");
            // SAFETY: as in `abort_job`.
            unsafe { ffi::MPI_Abort(world(), 1) };
        }));
    });
}

/// When the launcher ends the job (SIGTERM: Open MPI's daemons send it when the job loses a
/// host, then SIGKILL a second later), this process says which peers no longer answer before
/// it goes: across hosts that names the ranks lost with their host, which nothing else reports.
fn report_when_ended(rank: usize) {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let Ok(mut signals) = signal_hook::iterator::Signals::new([signal_hook::consts::SIGTERM]) else { return };
        let _ = std::thread::Builder::new().name("pld-mpi-sigterm".into()).spawn(move || {
            if signals.forever().next().is_none() {
                return;
            }
            // Peers probing this process from now on hear that the launcher is ending it.
            beacon::mark_ending();
            // Only peers on other nodes: the launcher ends this node's processes together, so
            // a local peer that no longer answers says nothing about a host.
            let remote: Vec<usize> = NODES.get().map_or_else(Vec::new, |nodes| {
                let mine = nodes.node_of.get(rank).map(|(leader, _)| *leader);
                (0..nodes.node_of.len()).filter(|&p| Some(nodes.node_of[p].0) != mine).collect()
            });
            if !remote.is_empty() {
                // Open MPI sends SIGKILL a second after SIGTERM; a lost host's processes have
                // ended within tens of milliseconds of its SIGTERM here.
                match lost_peer_within(&remote, Duration::from_millis(300)) {
                    Some(lost) => eprintln!(
                        "pld: rank {rank} was ended by the launcher (SIGTERM): lost rank {} on node {} ({}); \
                         ranks lost with that node: {:?}",
                        lost.peer, lost.node, lost.cause, lost.ranks
                    ),
                    None => eprintln!(
                        "pld: rank {rank} was ended by the launcher (SIGTERM); no node was lost: every other node \
                         answers or was ended by the launcher too"
                    ),
                }
            }
            // Then end as SIGTERM's default would have (no exit handlers under MPI's threads).
            let _ = signal_hook::low_level::emulate_default_handler(signal_hook::consts::SIGTERM);
            std::process::abort();
        });
    });
}

/// Shared windows: every peer is addressable; only the futex is needed.
const SHARED_OPS: Ops = Ops {
    data: std::ptr::null_mut(),
    sleep: futex_sleep,
    wake: futex_wake,
    put: rma_put,
    get: rma_get,
    accumulate: rma_accumulate,
};

/// Across nodes: peers of the node wake a sleeper through the futex as on one node; updates
/// from other nodes land only while MPI progresses, so a sleep is short and polls MPI first.
const HYBRID_OPS: Ops = Ops {
    data: std::ptr::null_mut(),
    sleep: hybrid_sleep,
    wake: futex_wake,
    put: rma_put,
    get: rma_get,
    accumulate: rma_accumulate,
};

const RMA_OPS: Ops = Ops {
    data: std::ptr::null_mut(),
    sleep: rma_sleep,
    wake: rma_wake,
    put: rma_put,
    get: rma_get,
    accumulate: rma_accumulate,
};

/// The state `pld_ops.data` points to.
///
/// # Safety
/// `data` must be the `MpiState` this module set it to, alive for the call.
unsafe fn state<'a>(data: *mut c_void) -> &'a MpiState {
    // SAFETY: forwarded from the caller.
    unsafe { &*data.cast::<MpiState>() }
}

/// The nodes of this process's world (one MPI world per process), for naming lost peers.
static NODES: std::sync::OnceLock<Nodes> = std::sync::OnceLock::new();

/// The first remote transfer that failed: the peer and MPI's words for it.
static FAILED_TRANSFER: Mutex<Option<(usize, String)>> = Mutex::new(None);

/// Notes `peer` as unreachable, and why (the first note is kept: the root cause).
fn note_lost(peer: usize, cause: String) {
    FAILED_TRANSFER.lock().unwrap_or_else(|p| p.into_inner()).get_or_insert((peer, cause));
}

/// Notes a failed one-sided call to `peer` (the first one is kept) and gives the kernel's status.
fn transfer_failed(peer: i32, what: &str, code: c_int) -> i32 {
    let mut text = vec![0 as std::ffi::c_char; ffi::MPI_MAX_ERROR_STRING as usize + 1];
    let mut len = 0;
    // SAFETY: the buffer holds MPI_MAX_ERROR_STRING characters, as the call requires.
    let words = if unsafe { ffi::MPI_Error_string(code, text.as_mut_ptr(), &mut len) } == 0 {
        let bytes: Vec<u8> = text[..len.max(0) as usize].iter().map(|&c| c as u8).collect();
        String::from_utf8_lossy(&bytes).into_owned()
    } else {
        format!("MPI error code {code}")
    };
    note_lost(peer as usize, format!("{what} to rank {peer} failed: {words}"));
    DeviceStatus::Transport as i32
}

/// The RMA window while it lives (set at creation, cleared before it is freed), for probes.
static PROBE_WINDOW: Mutex<Option<Handle<ffi::MPI_Win>>> = Mutex::new(None);

/// An MPI handle (a window, a communicator) kept in a static for any thread to use.
struct Handle<T>(T);

// SAFETY: MPI is initialised with MPI_THREAD_MULTIPLE; its handles are plain values any thread
// may pass to MPI.
unsafe impl<T> Send for Handle<T> {}
// SAFETY: as above.
unsafe impl<T> Sync for Handle<T> {}

/// How long a probe waits for a peer's answer: a peer that is alive answers a 4-byte Get in
/// microseconds, even over TCP; one that sends nothing back in this time is taken for lost.
const PROBE_PATIENCE: Duration = Duration::from_millis(300);

/// Where probes land: never read, and static so that a Get that never completes (a peer lost
/// without a reset) writes into memory that outlives the probe.
static PROBE_WORD: AtomicI32 = AtomicI32::new(0);

/// Whether `peer` still answers: a 4-byte request-based Get from its window, tested until
/// [`PROBE_PATIENCE`] passes. A peer whose host is gone fails it (the connection is refused or
/// reset) or never completes it; either is noted as a failed transfer. Returns whether it did.
fn probe(peer: usize) -> bool {
    let window = PROBE_WINDOW.lock().unwrap_or_else(|p| p.into_inner());
    let Some(Handle(win)) = *window else { return false };
    // SAFETY: a Get of 4 bytes at offset 0 (inside every window) into a static, inside the
    // lock_all epoch of a live window (the lock keeps `Drop` from freeing it meanwhile); the
    // request is tested, never waited on, so a peer that never answers cannot hold this thread.
    let code = unsafe {
        let mut request = ffi::RSMPI_REQUEST_NULL;
        let to = peer as c_int;
        let code = ffi::MPI_Rget(
            PROBE_WORD.as_ptr().cast(),
            4,
            ffi::RSMPI_UINT8_T,
            to,
            0,
            4,
            ffi::RSMPI_UINT8_T,
            win,
            &mut request,
        );
        let started = Instant::now();
        let mut done = 0;
        let mut code = code;
        while code == 0 && done == 0 && started.elapsed() < PROBE_PATIENCE {
            code = ffi::MPI_Test(&mut request, &mut done, ffi::RSMPI_STATUS_IGNORE);
            if done == 0 {
                std::thread::sleep(Duration::from_micros(200));
            }
        }
        match (code, done) {
            (0, 0) => -1,
            (code, _) => code,
        }
    };
    match code {
        0 => false,
        -1 => {
            note_lost(peer, format!("rank {peer} did not answer within {} ms", PROBE_PATIENCE.as_millis()));
            true
        }
        code => {
            transfer_failed(peer as i32, "MPI_Get", code);
            true
        }
    }
}

/// The peer of the first failed transfer, or with none yet the first of `suspects` (peers a
/// wait timed out on) found gone, with its node and the ranks lost with it.
///
/// Peers are judged by their beacons (a connect to each process's own port, see [`beacon`]);
/// where beacons cannot tell, by a probe through the job's window. The ranks lost are those of
/// the peer's node whose beacons say gone; without beacons, every rank of a node other than
/// this rank's (a host lost) or the peer alone (a process of this node).
fn lost_peer(suspects: &[usize]) -> Option<LostPeer> {
    lost_peer_within(suspects, Duration::ZERO)
}

/// [`lost_peer`], asking the suspects again until `patience` has passed while every one still
/// answers and none is being ended by the launcher: the launcher's SIGTERM after a lost host
/// can come before that host's processes have ended.
fn lost_peer_within(suspects: &[usize], patience: Duration) -> Option<LostPeer> {
    let nodes = NODES.get()?;
    let started = Instant::now();
    while FAILED_TRANSFER.lock().unwrap_or_else(|p| p.into_inner()).is_none() {
        // A suspect the launcher is ending too: the job is being ended everywhere, not for a
        // loss, so there is nothing to wait for.
        let mut ending = false;
        for &peer in suspects {
            match nodes.beacons.check(peer) {
                beacon::Verdict::Alive => continue,
                beacon::Verdict::Ending => {
                    ending = true;
                    continue;
                }
                beacon::Verdict::Gone(cause) => note_lost(peer, cause),
                beacon::Verdict::Unknown if !probe(peer) => continue,
                beacon::Verdict::Unknown => {}
            }
            break;
        }
        if ending || started.elapsed() >= patience {
            break;
        }
        std::thread::sleep(Duration::from_millis(25));
    }
    let (peer, cause) = FAILED_TRANSFER.lock().unwrap_or_else(|p| p.into_inner()).clone()?;
    let (leader, node) = nodes.node_of.get(peer)?.clone();
    let others: Vec<usize> = nodes.ranks_on(leader).filter(|&r| r != peer && r != nodes.rank).collect();
    let ranks = match (nodes.beacons.gone_among(&others), nodes.node_of.get(nodes.rank)) {
        (Some(mut gone), _) => {
            gone.push(peer);
            gone.sort_unstable();
            gone.into()
        }
        // A peer of this rank's own node: that process is gone, not the host.
        (None, Some((mine, _))) if *mine == leader => Box::new([peer]) as Box<[usize]>,
        (None, _) => nodes.ranks_on(leader).collect(),
    };
    Some(LostPeer { peer, node, ranks, cause })
}

/// Largest transfer in one MPI call (counts are C ints).
const CHUNK: u64 = 1 << 30;

/// Moves `bytes` one chunk at a time (MPI counts are C ints): `call(done, n)` issues the
/// one-sided call for bytes `[done, done + n)`; a flush then completes them all, so the data
/// has landed (or arrived) when the kernel goes on.
fn chunked(state: &MpiState, what: &str, peer: i32, bytes: u64, mut call: impl FnMut(u64, c_int) -> c_int) -> i32 {
    let mut done = 0;
    while done < bytes {
        let n = (bytes - done).min(CHUNK) as c_int;
        let code = call(done, n);
        if code != 0 {
            return transfer_failed(peer, what, code);
        }
        done += n as u64;
    }
    // SAFETY: a flush of the passive-target epoch opened at creation, on a live window.
    let code = unsafe { ffi::MPI_Win_flush(peer, state.win) };
    if code != 0 {
        return transfer_failed(peer, what, code);
    }
    DeviceStatus::Ok as i32
}

unsafe extern "C" fn rma_put(data: *mut c_void, peer: i32, dst_off: u64, src: *const c_void, bytes: u64) -> i32 {
    // SAFETY: `data` is our state; `src` holds `bytes` (the device ABI's contract).
    let state = unsafe { state(data) };
    chunked(state, "MPI_Put", peer, bytes, |done, n| {
        // SAFETY: a Put inside the lock_all epoch, from inside `src`.
        unsafe {
            ffi::MPI_Put(
                src.cast::<u8>().add(done as usize).cast(),
                n,
                ffi::RSMPI_UINT8_T,
                peer,
                (dst_off + done) as ffi::MPI_Aint,
                n,
                ffi::RSMPI_UINT8_T,
                state.win,
            )
        }
    })
}

unsafe extern "C" fn rma_get(data: *mut c_void, peer: i32, dst: *mut c_void, src_off: u64, bytes: u64) -> i32 {
    // SAFETY: `data` is our state; `dst` holds `bytes`.
    let state = unsafe { state(data) };
    chunked(state, "MPI_Get", peer, bytes, |done, n| {
        // SAFETY: a Get inside the epoch, into `dst`; the flush completes it before it is read.
        unsafe {
            ffi::MPI_Get(
                dst.cast::<u8>().add(done as usize).cast(),
                n,
                ffi::RSMPI_UINT8_T,
                peer,
                (src_off + done) as ffi::MPI_Aint,
                n,
                ffi::RSMPI_UINT8_T,
                state.win,
            )
        }
    })
}

/// Signals: an atomic MPI_Accumulate (sum) for `add`; `set` is a 4-byte Put (the credit
/// protocol only adds; a set is for kernels that own the cell).
unsafe extern "C" fn rma_accumulate(data: *mut c_void, peer: i32, cell_off: u64, value: i32, op: i32) -> i32 {
    // SAFETY: `data` is our state.
    let state = unsafe { state(data) };
    if op != NotifyOp::AtomicAdd as i32 {
        // SAFETY: `value` lives for the call and the Put is flushed inside `rma_put`.
        return unsafe { rma_put(data, peer, cell_off, (&raw const value).cast(), 4) };
    }
    // SAFETY: an Accumulate inside the epoch, flushed so the peer can see it at once.
    let code = unsafe {
        ffi::MPI_Accumulate(
            (&raw const value).cast(),
            1,
            ffi::RSMPI_INT32_T,
            peer,
            cell_off as ffi::MPI_Aint,
            1,
            ffi::RSMPI_INT32_T,
            ffi::RSMPI_SUM,
            state.win,
        )
    };
    // SAFETY: as above.
    let code = if code != 0 { code } else { unsafe { ffi::MPI_Win_flush(peer, state.win) } };
    if code != 0 {
        return transfer_failed(peer, "MPI_Accumulate", code);
    }
    DeviceStatus::Ok as i32
}

/// A wait slice on the RMA path: make remote updates of the own window visible, let MPI make
/// progress (a target may have to serve peers' one-sided calls), then yield the core briefly.
unsafe extern "C" fn rma_sleep(data: *mut c_void, cell: *const i32, observed: i32, timeout_ns: u64) {
    // SAFETY: `data` is our state.
    progress(unsafe { state(data) });
    if timeout_ns == 0 {
        return; // a yielding wait's call: it wanted the progress only
    }
    // SAFETY: `cell` is a live aligned cell of the own window, accessed atomically.
    if unsafe { (*cell.cast::<AtomicI32>()).load(Ordering::Acquire) } == observed {
        std::thread::sleep(std::time::Duration::from_nanos(timeout_ns.min(50_000)));
    }
}

/// Makes remote updates of the own window visible and lets MPI progress (a target may have to
/// serve peers' one-sided calls, which land only while it does).
fn progress(state: &MpiState) {
    let mut flag = 0;
    // SAFETY: plain MPI calls on live handles; the status is ignored.
    unsafe {
        ffi::MPI_Win_sync(state.win);
        ffi::MPI_Iprobe(ffi::RSMPI_ANY_SOURCE, ffi::RSMPI_ANY_TAG, world(), &mut flag, ffi::RSMPI_STATUS_IGNORE);
    }
}

/// A wait slice across nodes: MPI progresses (updates from other nodes land), then a futex sleep
/// that a peer of the node ends at once, bounded for the ones from other nodes.
unsafe extern "C" fn hybrid_sleep(data: *mut c_void, cell: *const i32, observed: i32, timeout_ns: u64) {
    // SAFETY: `data` is our state.
    progress(unsafe { state(data) });
    // SAFETY: forwarded: a live aligned cell of the own window, shared with the node's peers.
    unsafe { futex_sleep(data, cell, observed, timeout_ns.min(50_000)) };
}

/// Nothing to wake on the RMA path: waiters poll.
unsafe extern "C" fn rma_wake(_: *mut c_void, _: i32, _: *const i32) {}
