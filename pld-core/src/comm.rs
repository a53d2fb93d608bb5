//! Communicators: an ordered set of world ranks that run collectives together, with what their
//! calls need of their own. Kernels see a communicator's members as ranks `0..size`: each
//! member's window base and sleeper cell in member order, and the transport's services with
//! member indices mapped back to world ranks. Each has its own call board and LL message area
//! in every window and numbers its calls per member, so calls of different communicators never
//! share a fingerprint slot, an LL slot or a call number. The world is one (members `0..n`); a
//! [`Group`](crate::Group) is another.

use std::ffi::c_void;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::device::abi::Ops;
use crate::memory::{Allocation, LlArea, SymmetricHeap};
use crate::progress::Padded;

/// One communicator.
pub(crate) struct Comm {
    /// Member index -> world rank.
    pub(crate) members: Arc<[usize]>,
    /// Whether member `i` is world rank `i` (the world): a lookup per call is then free.
    identity: bool,
    /// Each member's window as kernels address it (null: through the transport), by member.
    pub(crate) peer_bases: Box<[*mut u8]>,
    /// Each member's sleeper cell (shared), by member.
    pub(crate) sleepers: Box<[*mut i32]>,
    /// The transport's services as kernels of this communicator call them (peer = member).
    ops: *const Ops,
    /// A group's translation of member indices to world ranks, behind `ops`.
    _mapped: Option<Box<MappedOps>>,
    /// Offset of the call board (two fingerprint slots per member).
    pub(crate) board_off: usize,
    /// The LL message area (sized for this communicator's members).
    pub(crate) ll: LlArea,
    /// Calls made by each member: the `seq` of the member's next call's fingerprint.
    pub(crate) issued: Box<[Padded<AtomicU64>]>,
    /// A group's board and LL area, freed with it.
    _areas: Vec<Arc<Allocation>>,
}

// SAFETY: the pointers point into the heap's regions and the fabric's control cells, which live
// as long as the world; they are shared by design and accessed only by kernels under the signal
// protocol.
unsafe impl Send for Comm {}
// SAFETY: as above.
unsafe impl Sync for Comm {}

/// What a communicator's calls need of the world to be built.
pub(crate) struct CommParts<'a> {
    pub(crate) heap: &'a SymmetricHeap,
    /// Whether every rank is reached through the transport, its own too.
    pub(crate) transport_only: bool,
    /// By world rank: its node. A communicator with members on several nodes reaches every
    /// member through the transport, its own rank too: a signal cell that peers of other nodes
    /// update with the transport's atomics (MPI_Accumulate) must not also take the CPU's, which
    /// MPI does not order against its own (a lost credit, or a cell left set).
    pub(crate) node_of: &'a [usize],
    /// The fabric's sleeper cells, by world rank.
    pub(crate) sleepers: *mut i32,
    pub(crate) ops: *const Ops,
}

impl Comm {
    /// A communicator of `members` (world ranks, in member order) with its areas at `board_off`
    /// and `ll`, kept alive by `areas`.
    pub(crate) fn new(
        members: Vec<usize>,
        parts: &CommParts<'_>,
        board_off: usize,
        ll: LlArea,
        areas: Vec<Arc<Allocation>>,
    ) -> Comm {
        let identity = members.iter().enumerate().all(|(i, &r)| i == r);
        let mut mapped = (!identity).then(|| {
            Box::new(MappedOps {
                world: parts.ops,
                members: members.iter().map(|&r| r as i32).collect(),
                table: Ops { data: std::ptr::null_mut(), sleep, wake, put, get, accumulate },
            })
        });
        let ops = match &mut mapped {
            Some(m) => {
                m.table.data = std::ptr::from_mut::<MappedOps>(m).cast();
                &raw const m.table
            }
            None => parts.ops,
        };
        let first_node = members.first().map(|&r| parts.node_of[r]);
        let through_transport = parts.transport_only || members.iter().any(|&r| Some(parts.node_of[r]) != first_node);
        Comm {
            peer_bases: members
                .iter()
                .map(|&r| if through_transport { std::ptr::null_mut() } else { parts.heap.base(r) })
                .collect(),
            // SAFETY: the fabric's control block holds one sleeper cell per world rank.
            sleepers: members.iter().map(|&r| unsafe { parts.sleepers.add(r) }).collect(),
            issued: members.iter().map(|_| Padded(AtomicU64::new(0))).collect(),
            members: members.into(),
            identity,
            ops,
            _mapped: mapped,
            board_off,
            ll,
            _areas: areas,
        }
    }

    /// Number of members.
    pub(crate) fn size(&self) -> usize {
        self.members.len()
    }

    /// The member index of world rank `rank`, if it is a member.
    pub(crate) fn member(&self, rank: usize) -> Option<usize> {
        if self.identity {
            return (rank < self.members.len()).then_some(rank);
        }
        self.members.iter().position(|&r| r == rank)
    }

    pub(crate) fn ops(&self) -> *const Ops {
        self.ops
    }

    /// Records in member `member`'s window that it is past this communicator's call `seq`:
    /// its LL writers may rewrite the inbox slots it used.
    pub(crate) fn mark_past(&self, heap: &SymmetricHeap, member: usize, seq: u64) {
        if self.ll.layout.is_some() {
            // SAFETY: the LL area is allocated in every window while the communicator lives; its
            // first 8 bytes are the member's `past` cell, only ever accessed atomically.
            let past = unsafe { &*heap.base(self.members[member]).add(self.ll.offset).cast::<AtomicU64>() };
            past.store(seq, Ordering::Release);
        }
    }
}

/// A group's view of the transport: member indices mapped to world ranks, then the world's
/// services. (Only `data` and the functions' `peer` differ from the world's table.)
struct MappedOps {
    world: *const Ops,
    members: Box<[i32]>,
    table: Ops,
}

/// # Safety
/// `data` is the `MappedOps` the table belongs to, alive as long as its communicator.
unsafe fn mapped<'a>(data: *mut c_void) -> (&'a Ops, &'a [i32]) {
    // SAFETY: forwarded from the caller; `world` is the fabric's table, alive with the world.
    unsafe {
        let m = &*data.cast::<MappedOps>();
        (&*m.world, &m.members)
    }
}

unsafe extern "C" fn sleep(data: *mut c_void, cell: *const i32, observed: i32, timeout_ns: u64) {
    // SAFETY: called by kernels through the table `data` belongs to.
    unsafe {
        let (world, _) = mapped(data);
        (world.sleep)(world.data, cell, observed, timeout_ns);
    }
}

unsafe extern "C" fn wake(data: *mut c_void, peer: i32, cell: *const i32) {
    // SAFETY: as `sleep`; `peer` is a member index below the member count.
    unsafe {
        let (world, members) = mapped(data);
        (world.wake)(world.data, members[peer as usize], cell);
    }
}

unsafe extern "C" fn put(data: *mut c_void, peer: i32, dst_off: u64, src: *const c_void, bytes: u64) -> i32 {
    // SAFETY: as `wake`.
    unsafe {
        let (world, members) = mapped(data);
        (world.put)(world.data, members[peer as usize], dst_off, src, bytes)
    }
}

unsafe extern "C" fn get(data: *mut c_void, peer: i32, dst: *mut c_void, src_off: u64, bytes: u64) -> i32 {
    // SAFETY: as `wake`.
    unsafe {
        let (world, members) = mapped(data);
        (world.get)(world.data, members[peer as usize], dst, src_off, bytes)
    }
}

unsafe extern "C" fn accumulate(data: *mut c_void, peer: i32, cell_off: u64, value: i32, op: i32) -> i32 {
    // SAFETY: as `wake`.
    unsafe {
        let (world, members) = mapped(data);
        (world.accumulate)(world.data, members[peer as usize], cell_off, value, op)
    }
}
