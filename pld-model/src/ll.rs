//! The LL message area of every window, defined once: the runtime allocates and addresses it
//! from here, and `pld_device.h` repeats the constants in C (a pld-backend test compiles the
//! header and checks every constant and offset against these definitions).
//!
//! Layout at the area's offset: `[0, 64)` the rank's `past` cell (u64, read by peers); the
//! private tables `last_sent[nranks][slots]` and `known_past[nranks]` (u64); then the inbox,
//! slot `[sender][call % slots]` of `stride` bytes each, a fingerprint header, then data.
//! A message that gets no reply (a broadcast's, a scatter's) is marked in `last_sent` with
//! [`LL_UNANSWERED`]; its reader sets [`LL_TAKEN`] in the slot's call number once it took it.

/// Slots per sender in every inbox at least: how many calls a sender may run ahead of a reader.
/// 32, not 8: a broadcast's or scatter's root posts and leaves, and at 4 ranks on 2 cores it pays
/// a rotation of every thread each time it must wait for a reader (8 B broadcast 2.0 -> 0.94 us,
/// gather 1.4 -> 0.9 us, scatter 1.3 -> 1.0 us; 16 slots gave 1.2-1.6 us).
pub const LL_SLOTS: u64 = 32;
/// Slots per sender where ranks outnumber the cores and the inbox budget and the window have
/// room (see [`LlLayout::new`]): every rotation of the threads then carries up to 128 calls
/// (measured side by side against 32 at 4 and 8 ranks on 2 cores: 8 B-512 B broadcast, gather
/// and scatter 1.3-2.2x faster at 4 ranks, 1.3-1.45x at 8; 128 against 64: 1.05-1.3x). Not
/// where each rank has a core: nobody runs that far ahead there, and 128 slots of 4 KiB were
/// slower at 2 ranks on 2 cores (0.82-0.94x; each call's message on a page of its own is the
/// suspect).
pub const LL_DEEP_SLOTS: u64 = 128;
/// The LL area takes at most this share of a window for its deeper slots (1/16: a window of
/// 1 MiB or less keeps [`LL_SLOTS`]).
pub const LL_DEEP_WINDOW_SHARE: u64 = 16;
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
    /// Slots per sender: a power of two, [`LL_SLOTS`] to [`LL_DEEP_SLOTS`].
    pub slots: u64,
}

impl LlLayout {
    /// The layout for payloads of up to `payload` bytes per rank at `nranks`, or `None` when
    /// LL messages are off (`payload` 0) or no useful slot fits the inbox budget at this rank
    /// count. `deep_room`: the bytes the area may take for more slots than [`LL_SLOTS`] (0: no
    /// more; see [`LlLayout::deep_room`]); then the most slots, up to [`LL_DEEP_SLOTS`], whose
    /// inbox fits the budget and whose area fits that room. Else [`LL_SLOTS`], the slot shrunk
    /// (by halves) until every sender's slots fit the budget. `payload` must be at most
    /// [`LL_MAX_BYTES`]; every product is checked, so no rank count or payload can wrap the area
    /// into something smaller than what is addressed.
    pub fn new(nranks: u64, payload: u64, deep_room: u64) -> Option<LlLayout> {
        if payload == 0 || payload > LL_MAX_BYTES || nranks == 0 {
            return None;
        }
        let mut stride = (LL_HEADER + payload).max(MIN_STRIDE).next_multiple_of(64);
        let mut slots = LL_DEEP_SLOTS;
        while slots > LL_SLOTS {
            let deep = LlLayout { nranks, stride, slots };
            let fits =
                nranks.checked_mul(slots).and_then(|s| s.checked_mul(stride)).is_some_and(|b| b <= LL_INBOX_BUDGET)
                    && deep.bytes() <= deep_room;
            if fits {
                return Some(deep);
            }
            slots /= 2;
        }
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
        (stride >= MIN_STRIDE).then_some(LlLayout { nranks, stride, slots: LL_SLOTS })
    }

    /// The room for deeper slots in windows of `window` bytes where ranks outnumber the cores
    /// (`crowded`), for [`LlLayout::new`]: a [`LL_DEEP_WINDOW_SHARE`] share, or none.
    pub fn deep_room(window: u64, crowded: bool) -> u64 {
        if crowded { window / LL_DEEP_WINDOW_SHARE } else { 0 }
    }

    /// The largest payload one slot carries (at least what was asked for, at rank counts
    /// where the slot did not have to shrink).
    pub fn payload(&self) -> u64 {
        self.stride - LL_HEADER
    }

    /// Bytes of the private tables after the `past` cell (`pld_ll_tables_bytes` in C).
    pub fn tables_bytes(&self) -> u64 {
        (8 * self.nranks * (self.slots + 1)).next_multiple_of(64)
    }

    /// Offset of `sender`'s `last_sent` entry for `peer`'s slot of call `seq` (the tables are
    /// private to the sender).
    pub fn last_sent_off(&self, peer: u64, seq: u64) -> u64 {
        64 + 8 * (peer * self.slots + seq % self.slots)
    }

    /// Offset of `sender`'s slot for call `seq` from the area's start (`pld_ll_slot_off`).
    pub fn slot_off(&self, sender: u64, seq: u64) -> u64 {
        64 + self.tables_bytes() + (sender * self.slots + seq % self.slots) * self.stride
    }

    /// Bytes of the whole area: `past`, the tables and every sender's slots.
    pub fn bytes(&self) -> u64 {
        64 + self.tables_bytes() + self.nranks * self.slots * self.stride
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_slot_shrinks_with_the_rank_count_and_the_area_fits_the_budget() {
        for nranks in [1, 2, 3, 8, 64, 512, 1024, 2048, 2049, 4096, 1 << 40, u64::MAX] {
            for payload in [1, 64, 4096, LL_MAX_BYTES] {
                if let Some(ll) = LlLayout::new(nranks, payload, 1 << 26) {
                    assert!(ll.stride >= MIN_STRIDE && ll.stride.is_multiple_of(64));
                    assert!(ll.slots.is_power_of_two() && (LL_SLOTS..=LL_DEEP_SLOTS).contains(&ll.slots));
                    assert!(nranks * ll.slots * ll.stride <= LL_INBOX_BUDGET, "{nranks} {payload}");
                    assert!(ll.slot_off(nranks - 1, ll.slots - 1) + ll.stride <= ll.bytes());
                } else {
                    assert!(nranks > 1024, "{nranks} ranks, {payload} bytes: LL off");
                }
            }
        }
    }

    #[test]
    fn off_for_a_zero_or_impossible_payload() {
        assert_eq!(LlLayout::new(4, 0, 1 << 26), None);
        assert_eq!(LlLayout::new(4, LL_MAX_BYTES + 1, 1 << 26), None);
        assert_eq!(LlLayout::new(4, 1 << 60, 1 << 26), None);
        assert_eq!(LlLayout::new(2049, 4096, 1 << 26), None);
        assert!(LlLayout::new(4, 4096, 1 << 26).is_some_and(|l| l.payload() >= 4096));
        assert!(LlLayout::new(2, 1, 1 << 26).is_some_and(|l| l.payload() >= 1));
    }

    #[test]
    fn deep_where_ranks_outnumber_the_cores_and_there_is_room() {
        let slots = |nranks, payload, room| LlLayout::new(nranks, payload, room).map(|l| (l.slots, l.payload()));
        let room = |window| LlLayout::deep_room(window, true);
        // 4 KiB slots: 128 deep up to 4 ranks, 64 at 8, the base 32 from 16 (the payload kept).
        assert_eq!(slots(2, 4096, room(1 << 30)), Some((128, 4128)));
        assert_eq!(slots(4, 4096, room(1 << 30)), Some((128, 4128)));
        assert_eq!(slots(8, 4096, room(1 << 30)), Some((64, 4128)));
        assert_eq!(slots(16, 4096, room(1 << 30)), Some((32, 4128)));
        // A small window keeps the base depth: its area would take more than its share.
        assert_eq!(slots(2, 4096, room(1 << 20)), Some((32, 4128)));
        assert_eq!(slots(2, 4096, room(16 << 20)), Some((64, 4128)));
        // Ranks with a core each keep the base depth.
        assert_eq!(slots(2, 4096, LlLayout::deep_room(1 << 30, false)), Some((32, 4128)));
    }
}
