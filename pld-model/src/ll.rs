//! The LL message area of every window, defined once: the runtime allocates and addresses it
//! from here, and `pld_device.h` repeats the constants in C (a pld-backend test compiles the
//! header and checks every constant and offset against these definitions).
//!
//! Layout at the area's offset: `[0, 64)` the rank's `past` cell (u64, read by peers); the
//! private tables `last_sent[nranks][LL_SLOTS]` and `known_past[nranks]` (u64); then the inbox,
//! slot `[sender][call % LL_SLOTS]` of `stride` bytes each, a fingerprint header, then data.
//! A message that gets no reply (a broadcast's, a scatter's) is marked in `last_sent` with
//! [`LL_UNANSWERED`]; its reader sets [`LL_TAKEN`] in the slot's call number once it took it.

/// Slots per sender in every inbox (`PLD_LL_SLOTS` in C): how many calls a sender may run ahead
/// of a reader. 32, not 8: a broadcast's or scatter's root posts and leaves, and at 4 ranks on 2
/// cores it pays a rotation of every thread each time it must wait for a reader (8 B broadcast
/// 2.0 -> 0.94 us, gather 1.4 -> 0.9 us, scatter 1.3 -> 1.0 us; 16 slots gave 1.2-1.6 us).
pub const LL_SLOTS: u64 = 32;
/// Bytes of the fingerprint header before each slot's payload (`PLD_LL_HEADER` in C).
pub const LL_HEADER: u64 = 32;
/// A slot's call number once its reader took an unanswered message (`PLD_LL_TAKEN` in C).
pub const LL_TAKEN: u64 = 1 << 63;
/// In a sender's `last_sent` table: the message in that slot gets no reply, and its reader
/// marks it taken (`PLD_LL_UNANSWERED` in C).
pub const LL_UNANSWERED: u64 = 1 << 62;
/// Inbox bytes per window at most: the slot payload shrinks at high rank counts. 4 MiB with 32
/// slots keeps every payload and shrink point of 1 MiB with 8.
pub const LL_INBOX_BUDGET: u64 = 4 << 20;
/// The largest LL payload a setting may ask for: one sender's slots fill the inbox budget.
pub const LL_MAX_BYTES: u64 = LL_INBOX_BUDGET / LL_SLOTS - LL_HEADER;
/// The smallest slot worth having: a header and one cache line of payload.
const MIN_STRIDE: u64 = LL_HEADER + 64;

/// Where everything of the LL area lies, relative to its start.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LlLayout {
    /// Ranks of the world (every one has slots in every inbox).
    pub nranks: u64,
    /// Bytes of one inbox slot (header and payload), a multiple of 64.
    pub stride: u64,
}

impl LlLayout {
    /// The layout for payloads of up to `payload` bytes per rank at `nranks`, or `None` when
    /// LL messages are off (`payload` 0) or no useful slot fits the inbox budget at this rank
    /// count. The slot shrinks (by halves) until every sender's slots fit the budget. `payload`
    /// must be at most [`LL_MAX_BYTES`]; every product is checked, so no rank count or payload
    /// can wrap the area into something smaller than what is addressed.
    pub fn new(nranks: u64, payload: u64) -> Option<LlLayout> {
        if payload == 0 || payload > LL_MAX_BYTES || nranks == 0 {
            return None;
        }
        let mut stride = (LL_HEADER + payload).max(MIN_STRIDE).next_multiple_of(64);
        loop {
            let inbox = nranks.checked_mul(LL_SLOTS)?.checked_mul(stride)?;
            if inbox <= LL_INBOX_BUDGET {
                break;
            }
            // Halving stops at the smallest useful slot: past it no slot fits at this scale.
            let smaller = (stride / 2).next_multiple_of(64);
            if smaller < MIN_STRIDE || smaller == stride {
                return None;
            }
            stride = smaller;
        }
        (stride >= MIN_STRIDE).then_some(LlLayout { nranks, stride })
    }

    /// The largest payload one slot carries (at least what was asked for, at rank counts
    /// where the slot did not have to shrink).
    pub fn payload(&self) -> u64 {
        self.stride - LL_HEADER
    }

    /// Bytes of the private tables after the `past` cell (`pld_ll_tables_bytes` in C).
    pub fn tables_bytes(nranks: u64) -> u64 {
        (8 * nranks * (LL_SLOTS + 1)).next_multiple_of(64)
    }

    /// Offset of `sender`'s `last_sent` entry for `peer`'s slot of call `seq` (the tables are
    /// private to the sender).
    pub fn last_sent_off(&self, peer: u64, seq: u64) -> u64 {
        64 + 8 * (peer * LL_SLOTS + seq % LL_SLOTS)
    }

    /// Offset of `sender`'s slot for call `seq` from the area's start (`pld_ll_slot_off`).
    pub fn slot_off(&self, sender: u64, seq: u64) -> u64 {
        64 + Self::tables_bytes(self.nranks) + (sender * LL_SLOTS + seq % LL_SLOTS) * self.stride
    }

    /// Bytes of the whole area: `past`, the tables and every sender's slots.
    pub fn bytes(&self) -> u64 {
        64 + Self::tables_bytes(self.nranks) + self.nranks * LL_SLOTS * self.stride
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_slot_shrinks_with_the_rank_count_and_the_area_fits_the_budget() {
        for nranks in [1, 2, 3, 8, 64, 512, 1024, 2048, 2049, 4096, 1 << 40, u64::MAX] {
            for payload in [1, 64, 4096, LL_MAX_BYTES] {
                if let Some(ll) = LlLayout::new(nranks, payload) {
                    assert!(ll.stride >= MIN_STRIDE && ll.stride.is_multiple_of(64));
                    assert!(nranks * LL_SLOTS * ll.stride <= LL_INBOX_BUDGET, "{nranks} {payload}");
                    assert!(ll.slot_off(nranks - 1, LL_SLOTS - 1) + ll.stride <= ll.bytes());
                } else {
                    assert!(nranks > 1024, "{nranks} ranks, {payload} bytes: LL off");
                }
            }
        }
    }

    #[test]
    fn off_for_a_zero_or_impossible_payload() {
        assert_eq!(LlLayout::new(4, 0), None);
        assert_eq!(LlLayout::new(4, LL_MAX_BYTES + 1), None);
        assert_eq!(LlLayout::new(4, 1 << 60), None);
        assert_eq!(LlLayout::new(2049, 4096), None);
        assert!(LlLayout::new(4, 4096).is_some_and(|l| l.payload() >= 4096));
        assert!(LlLayout::new(2, 1).is_some_and(|l| l.payload() >= 1));
    }
}
