//! [`Error`]: every way a pld call can fail, each with the context needed to act on it.

use pld_model::{DType, WaitCmp};

/// Result of every fallible pld operation.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What went wrong, with the rank, the call, the buffer and expected vs found where they apply.
///
/// `call` fields describe the collective or kernel and where the host code called it, e.g.
/// `all_reduce(mode = ring, op = max, dtype = f32) at src/main.rs:12:9`.
///
/// `Debug` prints the same message as `Display`, so `fn main() -> pld::Result<()>` shows what
/// went wrong in words; match on the variant for its fields.
#[derive(Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A world needs at least one rank.
    #[error("a world needs at least one rank, but {requested} were requested")]
    NoRanks {
        /// The rank count asked for.
        requested: usize,
    },
    /// The operating system refused something pld needs (memory, a thread, a file).
    #[error("{what} failed: {reason}")]
    System {
        /// What pld was doing.
        what: String,
        /// The OS's answer.
        reason: String,
    },
    /// A setting (a `PLD_*` variable or a builder value) that cannot be meant.
    #[error("{setting} = `{value}` is not a valid setting: expected {expected}")]
    InvalidSetting {
        /// The variable or builder method.
        setting: String,
        /// The value given.
        value: String,
        /// The form it accepts.
        expected: String,
    },
    /// The processes of an MPI job run with different settings that shape memory or the
    /// protocol: they would write where their peers do not read.
    #[error(
        "the processes of this job disagree on {setting}: {}; every process must run with the same value",
        values.iter().enumerate().map(|(r, v)| format!("rank {r} has {v}")).collect::<Vec<_>>().join(", ")
    )]
    MismatchedSettings {
        /// The variable (or builder method).
        setting: String,
        /// Each rank's value, by rank.
        values: Vec<u64>,
    },
    /// A rank could not allocate a window every rank was allocating (the others stop too,
    /// rather than wait for it).
    #[error(
        "rank {failed_rank} could not allocate window `{name}` ({bytes} bytes per rank): its largest free \
         block is {available} bytes (raise PLD_WINDOW_BYTES or WorldBuilder::window_bytes)"
    )]
    AllocationFailed {
        /// The rank whose allocation failed.
        failed_rank: usize,
        /// The window.
        name: String,
        /// Its size per rank.
        bytes: usize,
        /// The largest free block that rank had.
        available: usize,
    },
    /// The processes of a job did not all reach an agreement (an allocation) within the
    /// deadline.
    #[error(
        "rank {rank} waited {timeout_ms} ms in {what} for the other processes, which never all arrived \
         (a process took another path, or stopped)"
    )]
    AgreementTimeout {
        /// The rank that gave up.
        rank: usize,
        /// What it was agreeing on.
        what: String,
        /// The deadline.
        timeout_ms: u64,
    },
    /// Two host scopes on one world at the same time would interleave their collectives.
    #[error(
        "another host scope is active on this world; a world runs one host function at a time \
         (finish or drop the other `Host` first)"
    )]
    WorldBusy,
    /// The symmetric heap has no room for a window.
    #[error(
        "window `{name}` needs {requested} bytes per rank but only {available} of the \
         {capacity}-byte symmetric heap are free (pld reserves {reserved} of them for small \
         messages and the call board; raise PLD_WINDOW_BYTES or WorldBuilder::window_bytes)"
    )]
    OutOfWindowMemory {
        /// The window being allocated.
        name: String,
        /// Bytes asked for.
        requested: usize,
        /// Largest free block.
        available: usize,
        /// Heap size per rank.
        capacity: usize,
        /// Bytes of it pld holds for the world's life.
        reserved: usize,
    },
    /// A typed view does not fit in its allocation.
    #[error(
        "view of `{buffer}` as {dtype} {shape:?} needs {view_bytes} bytes but the allocation \
         holds {alloc_bytes}"
    )]
    ViewOutOfBounds {
        /// The allocation's name.
        buffer: String,
        /// The view's element type.
        dtype: DType,
        /// The view's shape.
        shape: Vec<usize>,
        /// Bytes the view covers.
        view_bytes: usize,
        /// Bytes the allocation holds.
        alloc_bytes: usize,
    },
    /// A collective operand has the wrong shape, dtype or size.
    #[error("{call}: {role} `{buffer}` must be {expected}, found {found}")]
    BadOperand {
        /// The call.
        call: String,
        /// The operand's role (`target`, `signal`, ...).
        role: &'static str,
        /// The operand's window name.
        buffer: String,
        /// What the contract requires.
        expected: String,
        /// What was passed.
        found: String,
    },
    /// Two operands of one collective are the same allocation.
    #[error(
        "{call}: `{buffer}` is passed as both {first} and {second}; the windows of one call \
         must be distinct allocations"
    )]
    AliasedWindows {
        /// The call.
        call: String,
        /// The window passed twice.
        buffer: String,
        /// Its first role.
        first: &'static str,
        /// Its second role.
        second: &'static str,
    },
    /// A broadcast root outside `0..nranks`.
    #[error("{call}: root {root} is out of range for a world of {nranks} ranks (expected 0..{nranks})")]
    RootOutOfRange {
        /// The call.
        call: String,
        /// The root given.
        root: i64,
        /// World size.
        nranks: usize,
    },
    /// `nranks = N` was declared but the world has another size.
    #[error("{call}: declared nranks = {declared} but the world has {world} ranks")]
    NranksMismatch {
        /// The call.
        call: String,
        /// The declared count.
        declared: usize,
        /// The world's rank count.
        world: usize,
    },
    /// A rank index outside the world.
    #[error("{what}: rank {rank} is out of range for a world of {nranks} ranks")]
    RankOutOfRange {
        /// What addressed the rank.
        what: String,
        /// The rank given.
        rank: usize,
        /// World size.
        nranks: usize,
    },
    /// Host data staged into or out of a view has the wrong length.
    #[error("staging `{buffer}` on rank {rank}: the view holds {expected} elements, the host data {found}")]
    StagingSize {
        /// The window.
        buffer: String,
        /// The rank.
        rank: usize,
        /// Elements in the view.
        expected: usize,
        /// Elements in the host data.
        found: usize,
    },
    /// An all_to_all_v or all_gather_v count below zero or above the capacity of a block.
    #[error(
        "rank {rank}, {call}: `{buffer}`[{peer}] = {value} is outside 0..={capacity} \
         (rows per peer block)"
    )]
    InvalidCount {
        /// The rank that found it.
        rank: usize,
        /// The call.
        call: String,
        /// The counts window.
        buffer: String,
        /// Index of the count (the peer it is for or from).
        peer: usize,
        /// The count found.
        value: i64,
        /// Rows per peer block.
        capacity: i64,
    },
    /// A wait passed its deadline.
    #[error(
        "rank {rank} timed out after {timeout_ms} ms in {call}: waiting for `{signal}`[{cell}] \
         {cmp} {expected}, observed {observed}; peers that never arrived: {missing:?}; {ranks}",
        cmp = cmp.symbol(),
        ranks = ranks.join("; ")
    )]
    Timeout {
        /// The rank that gave up.
        rank: usize,
        /// The call it was in.
        call: String,
        /// The signal window.
        signal: String,
        /// The cell index within the signal.
        cell: usize,
        /// The comparison.
        cmp: WaitCmp,
        /// The value waited for.
        expected: i32,
        /// The value last seen.
        observed: i32,
        /// Peers whose credit cell in this signal row was still below `expected`.
        missing: Box<[usize]>,
        /// The deadline that passed.
        timeout_ms: u64,
        /// Every rank's state: the collective it is in and the last one it completed.
        ranks: Box<[String]>,
    },
    /// Ranks called different collectives (or the same with another op, dtype, count, root or
    /// algorithm) at the same point; found before any data moved.
    #[error(
        "rank {rank}: {call} does not match its peer: rank {peer} called {peer_call} where rank {rank} called {own_call}; {ranks}",
        ranks = ranks.join("; ")
    )]
    MismatchedCall {
        /// The rank that found the mismatch.
        rank: usize,
        /// Its call, with where the host code made it.
        call: String,
        /// The peer it compared with.
        peer: usize,
        /// The peer's call, as the peer published it.
        peer_call: String,
        /// This rank's call, as it published it.
        own_call: String,
        /// Every rank's state and last calls, from its flight recorder (ranks of other
        /// processes: a pointer to their own report).
        ranks: Box<[String]>,
    },
    /// A send or a receive found no partner before the deadline: the peer never posted the
    /// matching receive (or send), or posted it somewhere this rank never reaches.
    #[error(
        "rank {rank} timed out after {timeout_ms} ms in {call}: {waiting}; {ranks}",
        ranks = ranks.join("; ")
    )]
    Unmatched {
        /// The rank that gave up.
        rank: usize,
        /// Its send or receive, with where the host code made it.
        call: String,
        /// The peer it waited for.
        peer: usize,
        /// What it waited for, naming the peer and the call it expected there.
        waiting: String,
        /// The deadline that passed.
        timeout_ms: u64,
        /// Every rank's state: the call it is in and the last one it completed.
        ranks: Box<[String]>,
    },
    /// Ranks allocated different windows at the same point of a [`World::spmd`](crate::World::spmd)
    /// section (windows are allocated collectively: the k-th of every rank is one window).
    #[error(
        "rank {rank} allocated `{name}` ({bytes} bytes) as window #{index} where rank {peer} \
         allocated `{peer_name}` ({peer_bytes} bytes); every rank must allocate the same windows \
         in the same order"
    )]
    MismatchedAllocation {
        /// The rank that found the mismatch.
        rank: usize,
        /// The window it asked for.
        name: String,
        /// Its size per rank.
        bytes: usize,
        /// The allocation's index in the section.
        index: u64,
        /// The rank that allocated first.
        peer: usize,
        /// The window that rank asked for.
        peer_name: String,
        /// Its size.
        peer_bytes: usize,
    },
    /// A host of a [`World::spmd`](crate::World::spmd) section addressed a rank another host
    /// drives.
    #[error("{what}: rank {rank} is driven by another host (this host drives ranks {owned:?})")]
    RankNotOwned {
        /// What addressed the rank.
        what: String,
        /// The rank given.
        rank: usize,
        /// The ranks this host drives.
        owned: std::ops::Range<usize>,
    },
    /// A kernel returned a failure status.
    #[error("rank {rank}: {call} failed: {reason}")]
    KernelFailed {
        /// The rank.
        rank: usize,
        /// The call.
        call: String,
        /// The status, decoded.
        reason: String,
    },
    /// A kernel's access fell outside one of its buffers; it was stopped before the access (no
    /// memory was touched), as Rust stops an index out of bounds.
    #[error(
        "rank {rank}: {call}: index out of bounds at {at}: `{buffer}` holds {limit} elements but the \
         access covers {offset}..{end}",
        end = offset.saturating_add(*len)
    )]
    OutOfBounds {
        /// The rank.
        rank: usize,
        /// The call (the kernel, where it was launched).
        call: String,
        /// Where in the kernel's source: `file:line` (or `line N`).
        at: String,
        /// The buffer: the kernel parameter's name, or `a tile`.
        buffer: String,
        /// The access's first element.
        offset: i64,
        /// Its element count.
        len: i64,
        /// The buffer's length in elements.
        limit: i64,
    },
    /// A remote transfer to a peer failed (MPI across hosts): the peer's host is down or cut off,
    /// and with it every rank it ran.
    #[error("rank {rank}: {call}: lost rank {peer} on node {node} ({cause}); ranks lost with that node: {lost:?}")]
    PeerLost {
        /// The rank that found it.
        rank: usize,
        /// The call in flight.
        call: String,
        /// The rank it could not reach.
        peer: usize,
        /// That rank's node (its host name).
        node: String,
        /// The ranks lost with it: the peer and the other ranks of its node found gone by
        /// their beacons; where beacons cannot tell, every rank of a node other than `rank`'s
        /// (a host lost), or the peer alone on `rank`'s own node.
        lost: Box<[usize]>,
        /// The transport's error.
        cause: String,
    },
    /// A task panicked on a rank's device worker.
    #[error("rank {rank}: {call} panicked: {message}")]
    RankPanicked {
        /// The rank.
        rank: usize,
        /// The call.
        call: String,
        /// The panic message.
        message: String,
    },
    /// A rank stopped because another rank failed (reported only when no root cause is known).
    #[error("rank {rank}: {call} was aborted because another rank failed")]
    Aborted {
        /// The rank.
        rank: usize,
        /// The call.
        call: String,
    },
    /// A device binary could not be loaded or does not match this runtime.
    #[error("device binary `{binary}`: {reason}; rebuild it with `cargo build`")]
    DeviceBinary {
        /// Which binary.
        binary: String,
        /// What is wrong.
        reason: String,
    },
}

impl Error {
    /// The rank the error happened on, when it is rank-specific.
    pub fn rank(&self) -> Option<usize> {
        match self {
            Error::InvalidCount { rank, .. }
            | Error::Timeout { rank, .. }
            | Error::MismatchedCall { rank, .. }
            | Error::Unmatched { rank, .. }
            | Error::MismatchedAllocation { rank, .. }
            | Error::KernelFailed { rank, .. }
            | Error::PeerLost { rank, .. }
            | Error::OutOfBounds { rank, .. }
            | Error::RankPanicked { rank, .. }
            | Error::Aborted { rank, .. }
            | Error::AgreementTimeout { rank, .. } => Some(*rank),
            _ => None,
        }
    }

    pub(crate) fn system(what: impl Into<String>, reason: impl std::fmt::Display) -> Error {
        Error::System { what: what.into(), reason: reason.to_string() }
    }
}

/// The readable message, as `Display` gives it: what `fn main() -> pld::Result<()>` prints
/// when it returns an error (Rust prints the `Debug` form there).
impl std::fmt::Debug for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Display::fmt(self, f)
    }
}
