//! The memory a trace's events go to: a few events staged in a small buffer that stays in the
//! cache, then copied together into chunks mapped with their pages already in place
//! (`MAP_POPULATE`). A million calls write 32 MB; a page fault for each 4 KiB page as a call
//! first touched it, and then a store to a line not in the cache per call (which holds up the
//! call's next atomic instruction until the line arrives), each cost more than the rest of
//! recording a small call (8 B all_reduce at 2 ranks: 0.26 us a call with faults, 0.235 us
//! without, 0.213 us without the stores). Populating is dear even so (about 0.75 ms per 2 MiB
//! here: 20 ns a call at 2 ranks while calls filled new chunks), so a trace keeps a bounded
//! number of calls per rank, in chunks populated when the world starts, and a long run
//! refills the memory of its oldest events.

use rustix::mm::MapFlags;

use super::Event;
use crate::memory::Mapping;

/// Events staged before they are copied into the chunk (2 KiB).
const STAGED: usize = 64;

/// A recording thread's events: staged, then in a chunk the world gave it
/// (`Tracer::next_chunk`); a full chunk goes back to the world, which gives the next.
#[derive(Default)]
pub(crate) struct EventLog {
    staged: Vec<Event>,
    chunk: Option<Chunk>,
}

impl EventLog {
    /// Records `event`; returns a chunk that is full, to hand over.
    #[inline]
    pub(crate) fn push(&mut self, event: Event) -> Option<Chunk> {
        if self.staged.capacity() == 0 {
            self.staged.reserve_exact(STAGED);
        }
        self.staged.push(event);
        if self.staged.len() < STAGED {
            return None;
        }
        self.flush()
    }

    /// Fills `chunk` next (an empty one): the caller gives one before the first event and after
    /// every full one [`EventLog::push`] returned.
    pub(crate) fn fill(&mut self, chunk: Chunk) {
        debug_assert!(chunk.len() == 0 && chunk.capacity.is_multiple_of(STAGED));
        self.chunk = Some(chunk);
    }

    /// Moves the staged events into the chunk; returns the chunk if it is full.
    #[cold]
    fn flush(&mut self) -> Option<Chunk> {
        let chunk = self.chunk.get_or_insert_with(|| Chunk::new(CHUNK));
        chunk.extend(&self.staged);
        self.staged.clear();
        if chunk.is_full() { self.chunk.take() } else { None }
    }

    /// Everything recorded and not handed over yet.
    pub(crate) fn finish(&mut self) -> Option<Chunk> {
        if !self.staged.is_empty() {
            let _ = self.flush().map(|full| self.chunk = Some(full));
        }
        self.chunk.take()
    }
}

/// Events per chunk at most: 2 MiB.
pub(crate) const CHUNK: usize = (2 << 20) / size_of::<Event>();

/// The events per chunk of a trace that keeps `keep` calls per rank: [`CHUNK`], or fewer for a
/// small bound (a whole number of staged batches).
pub(crate) fn chunk_events(keep: usize) -> usize {
    keep.next_multiple_of(STAGED).clamp(STAGED, CHUNK)
}

/// A fixed-capacity run of events in its own populated mapping (or, where the mapping cannot
/// be made, an ordinary vector).
pub(crate) struct Chunk {
    /// The mapping and the events written to it.
    mapped: Option<(Mapping, usize)>,
    fallback: Vec<Event>,
    capacity: usize,
}

impl Chunk {
    /// An empty chunk of `capacity` events.
    pub(crate) fn new(capacity: usize) -> Chunk {
        match Mapping::new(capacity * size_of::<Event>(), MapFlags::POPULATE) {
            Ok(mapping) => Chunk { mapped: Some((mapping, 0)), fallback: Vec::new(), capacity },
            Err(_) => Chunk { mapped: None, fallback: Vec::with_capacity(capacity), capacity },
        }
    }

    /// Whether it holds its capacity.
    pub(crate) fn is_full(&self) -> bool {
        self.len() >= self.capacity
    }

    /// The events it holds.
    pub(crate) fn len(&self) -> usize {
        match &self.mapped {
            Some((_, len)) => *len,
            None => self.fallback.len(),
        }
    }

    /// Forgets its events, keeping its memory.
    pub(crate) fn clear(&mut self) {
        match &mut self.mapped {
            Some((_, len)) => *len = 0,
            None => self.fallback.clear(),
        }
    }

    /// Appends `events` (they must fit: the chunk holds a whole number of staged batches).
    pub(crate) fn extend(&mut self, events: &[Event]) {
        match &mut self.mapped {
            Some((mapping, len)) => {
                assert!(*len + events.len() <= self.capacity, "a trace chunk overflowed");
                let base = mapping.base().cast::<Event>();
                // SAFETY: the slots `len..len + events.len()` lie inside the mapping (checked
                // above), which this chunk owns; `Event` is plain data.
                unsafe { copy_streaming(events, base.add(*len)) };
                *len += events.len();
            }
            None => self.fallback.extend_from_slice(events),
        }
    }

    /// Makes the events written so far visible to the thread the chunk goes to next
    /// (`copy_streaming`'s stores are ordered by no lock; this orders them).
    pub(crate) fn publish(&self) {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: SFENCE is in every x86-64 CPU; it orders stores and touches no memory.
        unsafe {
            core::arch::x86_64::_mm_sfence()
        };
    }

    /// The events, to read (fenced first: streaming stores must be ordered before any read,
    /// the storing thread's own included).
    pub(crate) fn as_slice(&self) -> &[Event] {
        self.publish();
        match &self.mapped {
            // SAFETY: the first `len` slots were written by `extend`.
            Some((mapping, len)) => unsafe { std::slice::from_raw_parts(mapping.base().cast::<Event>(), *len) },
            None => &self.fallback,
        }
    }
}

/// Copies `events` to `to` with stores that bypass the caches: a chunk's memory is written once
/// and read when the world ends, and an ordinary copy first reads each of its lines from memory
/// (2 KiB of misses every 64 calls, 4% of a traced 8 B all_reduce at 2 ranks). A target that is
/// not 16-byte aligned (no chunk's mapping gives one) takes a plain copy. The streaming stores
/// are weakly ordered: [`Chunk::publish`] before another thread reads.
///
/// # Safety
/// `to..to + events.len()` must be writable memory no one else accesses meanwhile.
unsafe fn copy_streaming(events: &[Event], to: *mut Event) {
    #[cfg(target_arch = "x86_64")]
    {
        use core::arch::x86_64::{__m128i, _mm_loadu_si128, _mm_stream_si128};
        const { assert!(size_of::<Event>() == 32) };
        if (to as usize).is_multiple_of(16) {
            let (from, to) = (events.as_ptr().cast::<__m128i>(), to.cast::<__m128i>());
            for i in 0..events.len() * 2 {
                // SAFETY: both halves of each event lie in `events` and in the target, which is
                // 16-byte aligned (checked above); SSE2 is in every x86-64 CPU.
                unsafe { _mm_stream_si128(to.add(i), _mm_loadu_si128(from.add(i))) };
            }
            return;
        }
    }
    // SAFETY: as the caller promises.
    unsafe { std::ptr::copy_nonoverlapping(events.as_ptr(), to, events.len()) };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn holds_what_was_pushed() {
        let mut log = EventLog::default();
        let mut full = Vec::new();
        for i in 0..(CHUNK + 100) as u64 {
            full.extend(log.push(Event { start: i, end: i + 1, wait: 0, seq: i as u32, label: 0 }));
        }
        assert_eq!(full.len(), 1);
        assert!(full[0].is_full());
        assert_eq!(full[0].as_slice()[CHUNK - 1].start, CHUNK as u64 - 1);
        let rest = log.finish().expect("the last 100");
        assert_eq!(
            rest.as_slice().iter().map(|e| e.start).collect::<Vec<_>>(),
            (CHUNK as u64..CHUNK as u64 + 100).collect::<Vec<_>>()
        );
        assert!(log.finish().is_none());
    }
}
