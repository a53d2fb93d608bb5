//! What a failed kernel's status and diagnosis mean: a timeout naming the signal and the peers
//! that never arrived, a mismatched call naming both sides, a bad count naming the buffer.

use std::sync::atomic::{AtomicI32, Ordering};

use pld_model::{DeviceStatus, WaitCmp};

use super::RankState;
use crate::call::Label;
use crate::comm::Comm;
use crate::device::KernelSource;
use crate::device::abi::{Diag, FingerprintWords};
use crate::error::Error;
use crate::fingerprint::describe_words;
use crate::memory::SymmetricHeap;

impl RankState {
    /// The error a failed kernel's status and diagnosis describe (the call is formatted here
    /// only, never on success).
    /// `comm`: the communicator the kernel ran in; its member indices become world ranks here.
    pub(super) fn failure(
        &self,
        status: i32,
        diag: &Diag,
        call: &Label,
        own_call: FingerprintWords,
        comm: &Comm,
        source: Option<KernelSource>,
    ) -> Error {
        let rank = self.rank;
        let call = call.describe();
        let owner = |off: u64| self.shared.heap().owner_of(off as usize);
        let error = match DeviceStatus::from_code(status) {
            Some(DeviceStatus::Aborted) => Error::Aborted { rank, call },
            Some(DeviceStatus::Timeout) if comm.ll.contains(diag.cell_off) => {
                // An LL wait: for a peer's message of this call (the inbox) or for a peer to be
                // past the call that last used a slot (its `past` cell).
                let peer = world_rank(comm, diag.index.max(0) as usize);
                let inbox = diag.cell_off != comm.ll.offset as u64;
                Error::Timeout {
                    rank,
                    call,
                    signal: if inbox { "pld's small-message inbox" } else { "pld's small-message slot release" }.into(),
                    cell: peer,
                    cmp: if inbox { WaitCmp::Eq } else { WaitCmp::Ge },
                    expected: diag.expected,
                    observed: diag.observed,
                    missing: Box::new([peer]),
                    timeout_ms: self.shared.settings.timeout.as_millis() as u64,
                    ranks: self.shared.progress_report(),
                }
            }
            Some(DeviceStatus::Timeout) => {
                let (start, signal) = owner(diag.cell_off).unwrap_or((0, "<freed window>".into()));
                let cmp = if diag.cmp == WaitCmp::Eq as i32 { WaitCmp::Eq } else { WaitCmp::Ge };
                // A row before its signal's start is no row of it.
                let row_len = if diag.row_off >= start as u64 { diag.row_len.max(0) as usize } else { 0 };
                // A wait on a lone cell (a user kernel's `wait`) needs that cell's notify alone.
                // A builtin's wait names its row: the cells of the row still short of the
                // expected value, by index in the signal (for a credit signal the index is the
                // peer), this rank's own cell excepted.
                // Cells are indexed by member: the report names world ranks.
                let cell = (diag.cell_off as usize - start) / 4;
                let member = comm.member(rank).unwrap_or(rank);
                let missing = if diag.row_len == 0 {
                    Box::new([world_rank(comm, cell)]) as Box<[usize]>
                } else {
                    let heap = self.shared.heap();
                    short_cells(heap, rank, diag.row_off as usize, row_len, diag.expected, cmp)
                        .map(|cell| (cell - start) / 4)
                        .filter(|&index| index != member)
                        .map(|index| world_rank(comm, index))
                        .collect()
                };
                Error::Timeout {
                    rank,
                    call,
                    signal,
                    cell,
                    cmp,
                    expected: diag.expected,
                    observed: diag.observed,
                    missing,
                    timeout_ms: self.shared.settings.timeout.as_millis() as u64,
                    ranks: self.shared.progress_report(),
                }
            }
            // An unanswered message of an earlier call (`value`) its reader passed by without
            // taking, found when this rank next used the slot (`pld_ll_untaken`).
            Some(DeviceStatus::Mismatch) if diag.value > 0 => {
                let reader = world_rank(comm, diag.index.max(0) as usize);
                crate::untaken::found_by_kernel(self.shared.heap(), rank, reader, diag.cell_off, diag.peer_call)
                    .error(call, self.shared.progress_report())
            }
            Some(DeviceStatus::Mismatch) => Error::MismatchedCall {
                rank,
                call,
                peer: world_rank(comm, diag.index.max(0) as usize),
                peer_call: describe_words(diag.peer_call),
                own_call: describe_words(own_call),
                ranks: self.shared.progress_report(),
            },
            Some(DeviceStatus::BadCount) => Error::InvalidCount {
                rank,
                call,
                buffer: owner(diag.cell_off).map_or_else(|| "<counts>".into(), |(_, n)| n),
                peer: world_rank(comm, diag.index.max(0) as usize),
                value: diag.value,
                capacity: diag.limit,
            },
            // A user kernel's bounds check names its source line (lines start at 1), in its
            // file and with its parameter's name when the launcher gave them.
            Some(DeviceStatus::OutOfBounds) if diag.expected > 0 => {
                let (line, index) = (diag.expected, usize::try_from(diag.index).ok());
                Error::OutOfBounds {
                    rank,
                    call,
                    at: source.map_or_else(|| format!("line {line}"), |(file, _)| format!("{file}:{line}")),
                    buffer: match (index, source) {
                        (None, _) => "a tile".into(),
                        (Some(i), Some((_, params))) if i < params.len() => params[i].to_owned(),
                        (Some(i), _) => format!("parameter {i}"),
                    },
                    offset: diag.value,
                    len: diag.cell_off as i64,
                    limit: diag.limit,
                }
            }
            // The transport knows which peer it could not reach, and that peer's node.
            Some(DeviceStatus::Transport) if let Some(lost) = self.shared.fabric.lost_peer.and_then(|f| f(&[])) => {
                lost.into_error(rank, call, None)
            }
            Some(other) => Error::KernelFailed { rank, call, reason: describe(other) },
            None => Error::KernelFailed { rank, call, reason: format!("unknown status {status}") },
        };
        match error {
            // Across hosts a peer that never arrived may be gone with its host: the transport
            // probes the peers the wait was for.
            Error::Timeout { rank, call, missing, timeout_ms, .. }
                if let Some(lost) = self.shared.fabric.lost_peer.and_then(|f| f(&missing))
                    && missing.contains(&lost.peer) =>
            {
                lost.into_error(rank, call, Some(timeout_ms))
            }
            error => error,
        }
    }
}

/// The window offsets of the cells of the signal row at `row_off` (`row_len` cells) of `rank`'s
/// window still short of `expected` by `cmp`: the peers a wait on that row still waits for.
/// None where the row does not lie in the window.
pub(crate) fn short_cells(
    heap: &SymmetricHeap,
    rank: usize,
    row_off: usize,
    row_len: usize,
    expected: i32,
    cmp: WaitCmp,
) -> impl Iterator<Item = usize> + '_ {
    let fits = row_off.is_multiple_of(4) && row_off.checked_add(4 * row_len).is_some_and(|end| end <= heap.capacity());
    (0..if fits { row_len } else { 0 }).map(move |i| row_off + 4 * i).filter(move |&cell| {
        // SAFETY: the row lies inside the rank's window (checked above), which lives as long as
        // the heap; signal cells are only accessed atomically.
        let v = unsafe { (*heap.base(rank).add(cell).cast::<AtomicI32>()).load(Ordering::SeqCst) };
        match cmp {
            WaitCmp::Eq => v != expected,
            WaitCmp::Ge => v < expected,
        }
    })
}

/// The world rank of member `index` of `comm` (a signal cell past the members: itself).
fn world_rank(comm: &Comm, index: usize) -> usize {
    comm.members.get(index).copied().unwrap_or(index)
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
