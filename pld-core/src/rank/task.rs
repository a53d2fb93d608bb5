//! The unit of work a rank's queue carries.

use super::RankState;
use crate::call::{Label, SignalCells};
use crate::comm::Comm;
use crate::device::abi::{CollArgs, KernelFn};
use crate::error::Result;

/// What a task does on its rank's worker.
pub(crate) type Work = Box<dyn FnOnce(&mut RankState) -> Result<()> + Send>;

/// A task's job: a builtin collective kernel with its arguments (plain data: queueing one
/// allocates nothing and releases nothing on the worker), or any other work.
pub(crate) enum Job {
    Kernel(KernelCall),
    Work(Work),
}

/// A builtin collective kernel and its arguments.
#[derive(Clone, Copy)]
pub(crate) struct KernelCall {
    pub(crate) kernel: KernelFn,
    pub(crate) args: CollArgs,
    pub(crate) scratch_bytes: usize,
    /// The communicator it runs in, and the rank's place and call number there.
    pub(crate) comm: CommCall,
}

/// A [`KernelCall`] with its arguments borrowed, as a host submits it: run on the host's own
/// thread it is never copied (moving the 136-byte arguments into a call, read back with wider
/// loads than they were written with, cost a tenth of a small collective's host path); queued,
/// it becomes a [`KernelCall`].
#[derive(Clone, Copy)]
pub(crate) struct KernelRef<'a> {
    pub(crate) kernel: KernelFn,
    pub(crate) args: &'a CollArgs,
    pub(crate) scratch_bytes: usize,
    pub(crate) comm: CommCall,
}

impl KernelRef<'_> {
    /// The call with its own copy of the arguments, for a queue.
    pub(crate) fn to_owned(self) -> KernelCall {
        KernelCall { kernel: self.kernel, args: *self.args, scratch_bytes: self.scratch_bytes, comm: self.comm }
    }
}

/// A rank's part in one call of a communicator.
#[derive(Clone, Copy)]
pub(crate) struct CommCall {
    /// The communicator; its host keeps it alive until every rank is past the call.
    pub(crate) comm: *const Comm,
    /// The rank's member index in it.
    pub(crate) member: usize,
    /// The call's number in it (the fingerprint's `seq`).
    pub(crate) seq: u64,
}

// SAFETY: `comm` is only read, and outlives the call (see the field).
unsafe impl Send for CommCall {}

impl CommCall {
    pub(crate) fn comm(&self) -> &Comm {
        // SAFETY: the host keeps the communicator alive until every rank is past the call.
        unsafe { &*self.comm }
    }
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
