//! Unanswered LL messages: a broadcast's or a scatter's root posts its data and leaves, and each
//! reader marks the message taken (`pld_ll_take`). A reader that disagreed about the call and
//! did not wait for this root at all (it took itself for the root, or called a collective that
//! needs nothing of this rank) leaves the message untaken. The root's kernel finds that when it
//! next uses the slot (`pld_ll_untaken`); this module finds it at a sync, so a program's last
//! calls are checked too, and words both as one [`Error::MismatchedCall`].

use std::sync::atomic::{AtomicU64, Ordering};

use pld_model::{LL_TAKEN, LL_UNANSWERED, LlLayout};

use crate::comm::Comm;
use crate::device::abi::FingerprintWords;
use crate::error::Error;
use crate::fingerprint::describe_words;
use crate::memory::SymmetricHeap;

/// An unanswered message its reader passed by without taking.
pub(crate) struct Untaken {
    /// The sender (world rank).
    pub(crate) sender: usize,
    /// The reader that did not take it (world rank).
    pub(crate) reader: usize,
    /// The message's header: the sender's call.
    pub(crate) own: FingerprintWords,
    /// The reader's call of that number where its board still holds it (else `seq` 0).
    pub(crate) reader_call: FingerprintWords,
}

impl Untaken {
    /// The mismatch, found in `call` (the sender's call at hand, or the untaken one itself).
    pub(crate) fn error(&self, call: String, ranks: Box<[String]>) -> Error {
        // The header of an untaken message holds its plain call number.
        let (sender, reader, seq) = (self.sender, self.reader, self.own.seq);
        Error::MismatchedCall {
            rank: sender,
            call,
            peer: reader,
            peer_call: if self.reader_call.seq == seq {
                describe_words(self.reader_call)
            } else {
                format!("a call #{seq} that never took rank {sender}'s message (it did not wait for rank {sender})")
            },
            own_call: format!("{}, whose message rank {reader} passed by without taking it", describe_words(self.own)),
            ranks,
        }
    }
}

/// The words at `off` of a window (a header or a board slot), read as the device wrote them.
///
/// # Safety
/// `base + off` lies in a live window region, 8-byte aligned, with 32 bytes to read.
unsafe fn words_at(base: *mut u8, off: u64) -> FingerprintWords {
    // SAFETY: forwarded; the device writes these words atomically, so they are read so here.
    let word = |i: usize| unsafe { (*base.add(off as usize + 8 * i).cast::<AtomicU64>()).load(Ordering::Acquire) };
    FingerprintWords { seq: word(0), what: [word(1), word(2), word(3)] }
}

/// The message in `header_off` of `reader_base`'s window read by the sender's call `seq`:
/// untaken (with both calls) or not.
///
/// # Safety
/// As [`words_at`], for the header and the reader's board slot of `seq`.
unsafe fn untaken_at(
    comm: &Comm,
    reader_base: *mut u8,
    header_off: u64,
    seq: u64,
) -> Option<(FingerprintWords, FingerprintWords)> {
    // SAFETY: forwarded.
    let own = unsafe { words_at(reader_base, header_off) };
    if own.seq == seq | LL_TAKEN {
        return None;
    }
    let board_off = comm.board_off as u64 + (seq & 1) * std::mem::size_of::<FingerprintWords>() as u64;
    // SAFETY: forwarded.
    let reader_call = unsafe { words_at(reader_base, board_off) };
    Some((own, if reader_call.seq == seq { reader_call } else { FingerprintWords::default() }))
}

impl Comm {
    /// Member `member`'s unanswered messages whose readers are past their calls: each one
    /// taken is forgotten (checked once), each one untaken is returned (and forgotten). Only
    /// while `member` runs no kernel (its tables are its kernels' own).
    pub(crate) fn untaken(&self, heap: &SymmetricHeap, member: usize) -> Vec<Untaken> {
        let mut found = Vec::new();
        let Some(layout) = self.ll.layout else { return found };
        // Kernels address the area by this communicator's size (groups of one partition share
        // an area sized for the largest).
        let layout = LlLayout { nranks: self.size() as u64, ..layout };
        let base = heap.base(self.members[member]);
        if base.is_null() {
            return found;
        }
        for (p, &reader) in self.members.iter().enumerate().filter(|&(p, _)| p != member) {
            let reader_base = heap.base(reader);
            if reader_base.is_null() {
                continue;
            }
            // SAFETY: the LL area lies in every window while the communicator lives; its `past`
            // cell is read atomically.
            let past = unsafe { (*reader_base.add(self.ll.offset).cast::<AtomicU64>()).load(Ordering::Acquire) };
            for slot in 0..layout.slots {
                let entry = self.last_sent(base, &layout, p, slot);
                let sent = entry.load(Ordering::Relaxed);
                let seq = sent & !(LL_TAKEN | LL_UNANSWERED);
                if (sent & LL_UNANSWERED) == 0 || past < seq {
                    continue;
                }
                let header_off = (self.ll.offset as u64) + layout.slot_off(member as u64, seq);
                // SAFETY: the slot and the board lie in the reader's window (as above).
                if let Some((own, reader_call)) = unsafe { untaken_at(self, reader_base, header_off, seq) } {
                    found.push(Untaken { sender: self.members[member], reader, own, reader_call });
                }
                entry.store(seq, Ordering::Relaxed);
            }
        }
        found
    }

    /// Forgets that member `member`'s messages await being taken: after a failure cut calls
    /// short, their readers may never take them.
    pub(crate) fn forget_unanswered(&self, heap: &SymmetricHeap, member: usize) {
        let Some(layout) = self.ll.layout else { return };
        let base = heap.base(self.members[member]);
        if base.is_null() {
            return;
        }
        for p in 0..self.size() {
            for slot in 0..layout.slots {
                let entry = self.last_sent(base, &layout, p, slot);
                entry.fetch_and(!LL_UNANSWERED, Ordering::Relaxed);
            }
        }
    }

    /// The sender's (`base`'s) `last_sent` entry for peer `p`'s slot `slot`.
    fn last_sent<'a>(&self, base: *mut u8, layout: &LlLayout, p: usize, slot: u64) -> &'a AtomicU64 {
        // SAFETY: the tables lie in the LL area of the sender's window, 8-byte aligned; entries
        // are only ever accessed atomically outside kernels.
        unsafe { &*base.add(self.ll.offset + layout.last_sent_off(p as u64, slot) as usize).cast::<AtomicU64>() }
    }
}

/// The untaken message a kernel found when it next used the slot (`pld_ll_untaken`): the
/// message's header at `header_off` of `reader`'s window, the reader's call from the diagnosis.
pub(crate) fn found_by_kernel(
    heap: &SymmetricHeap,
    sender: usize,
    reader: usize,
    header_off: u64,
    reader_call: FingerprintWords,
) -> Untaken {
    let base = heap.base(reader);
    let own = if base.is_null() {
        FingerprintWords::default()
    } else {
        // SAFETY: the kernel named a slot of the LL area of the reader's window.
        unsafe { words_at(base, header_off) }
    };
    Untaken { sender, reader, own, reader_call }
}
