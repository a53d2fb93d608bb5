//! The symmetric heap: one memory region per rank and one allocator of offsets shared by all, so
//! an allocation sits at the same offset in every rank's window (peer address = peer base +
//! offset, as in the device ABI).

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use rustix::mm::MapFlags;

use super::mapping::Mapping;
use crate::error::{Error, Result};

/// Every allocation starts on a cache line, so a signal never shares a line with data.
pub(crate) const ALIGN: usize = 64;

/// One rank's window: anonymous memory reserved without commitment (`MAP_NORESERVE`), so a
/// large heap costs nothing until it is used; or memory another layer owns (an MPI window),
/// with no mapping of its own and `base` maybe null (a peer reached only through the transport).
struct Region {
    base: *mut u8,
    /// The mapping behind `base` when this process made it (unmapped with the region).
    _mapping: Option<Mapping>,
    /// Whether this process writes the region (zeroes new allocations in it).
    local: bool,
}

impl Region {
    fn new(len: usize) -> Result<Region> {
        let mapping = Mapping::new(len, MapFlags::NORESERVE)
            .map_err(|e| Error::system(format!("reserving a {len}-byte window"), e))?;
        Ok(Region { base: mapping.base(), _mapping: Some(mapping), local: true })
    }
}

#[derive(Default)]
struct Book {
    /// Free blocks: offset -> length, coalesced.
    free: BTreeMap<usize, usize>,
    /// Live allocations: offset -> (length, name), for diagnostics.
    live: BTreeMap<usize, (usize, String)>,
}

/// Regions of every rank plus the shared book of offsets.
pub(crate) struct SymmetricHeap {
    regions: Vec<Region>,
    capacity: usize,
    book: Mutex<Book>,
    /// Bytes pld itself holds for the world's life (the call board, the small-message area),
    /// named in an out-of-memory error so the user sees where the rest of the heap went.
    reserved: AtomicUsize,
}

// SAFETY: the regions are plain memory shared by the rank threads by design; every access to
// them goes through kernels (synchronised by signals) or through the host while the rank's
// queue is drained.
unsafe impl Send for SymmetricHeap {}
// SAFETY: as above.
unsafe impl Sync for SymmetricHeap {}

impl SymmetricHeap {
    /// `capacity` bytes per rank, a multiple of [`ALIGN`] (the settings check it).
    pub(crate) fn new(nranks: usize, capacity: usize) -> Result<SymmetricHeap> {
        debug_assert!(capacity.is_multiple_of(ALIGN));
        let regions = (0..nranks).map(|_| Region::new(capacity)).collect::<Result<Vec<_>>>()?;
        Ok(SymmetricHeap::with_regions(regions, capacity))
    }

    /// A heap over windows another layer allocated (and frees): `bases[r]` is rank r's window
    /// (null when it is reached only through the transport), `local[r]` whether this process
    /// owns it. Every process keeps its own book; the same allocations in the same order give
    /// the same offsets everywhere.
    #[cfg(feature = "mpi")]
    pub(crate) fn external(bases: &[*mut u8], local: &[bool], capacity: usize) -> SymmetricHeap {
        let regions = bases.iter().zip(local).map(|(&base, &local)| Region { base, _mapping: None, local }).collect();
        SymmetricHeap::with_regions(regions, capacity - capacity % ALIGN)
    }

    fn with_regions(regions: Vec<Region>, capacity: usize) -> SymmetricHeap {
        let mut book = Book::default();
        book.free.insert(0, capacity);
        SymmetricHeap { regions, capacity, book: Mutex::new(book), reserved: AtomicUsize::new(0) }
    }

    /// Records that everything allocated so far is pld's own, for the world's life.
    pub(crate) fn mark_reserved(&self) {
        self.reserved.store(self.live_bytes(), Ordering::Relaxed);
    }

    /// Bytes pld holds for the world's life (see [`SymmetricHeap::mark_reserved`]).
    pub(crate) fn reserved_bytes(&self) -> usize {
        self.reserved.load(Ordering::Relaxed)
    }

    pub(crate) fn capacity(&self) -> usize {
        self.capacity
    }

    pub(crate) fn base(&self, rank: usize) -> *mut u8 {
        self.regions[rank].base
    }

    /// Reserves `bytes` at one offset on every rank and zeroes them there (which also faults
    /// the pages in now rather than on a collective's hot path).
    pub(crate) fn alloc(&self, name: &str, bytes: usize) -> Result<usize> {
        let mut book = self.book.lock().unwrap_or_else(|p| p.into_inner());
        // The free figure is the largest free block, whatever the request (a request larger
        // than the whole heap reported 0 free before).
        let too_big = |book: &Book| Error::OutOfWindowMemory {
            name: name.to_owned(),
            requested: bytes,
            available: book.free.values().copied().max().unwrap_or(0),
            capacity: self.capacity,
            reserved: self.reserved_bytes(),
        };
        // `capacity` is a multiple of ALIGN, so a request no larger rounds up without overflow.
        if bytes > self.capacity {
            return Err(too_big(&book));
        }
        let len = bytes.max(1).next_multiple_of(ALIGN);
        let offset = {
            let found = book.free.iter().find(|&(_, &l)| l >= len).map(|(&o, &l)| (o, l));
            let Some((offset, free_len)) = found else {
                return Err(too_big(&book));
            };
            book.free.remove(&offset);
            if free_len > len {
                book.free.insert(offset + len, free_len - len);
            }
            book.live.insert(offset, (len, name.to_owned()));
            offset
        };
        drop(book);
        self.zero(offset, len);
        Ok(offset)
    }

    /// Returns an allocation's offsets to the free list.
    pub(crate) fn free(&self, offset: usize) {
        let mut book = self.book.lock().unwrap_or_else(|p| p.into_inner());
        let Some((len, _)) = book.live.remove(&offset) else {
            return;
        };
        let (mut start, mut end) = (offset, offset + len);
        if let Some((&prev, &prev_len)) = book.free.range(..offset).next_back()
            && prev + prev_len == start
        {
            book.free.remove(&prev);
            start = prev;
        }
        if let Some(next_len) = book.free.remove(&end) {
            end += next_len;
        }
        book.free.insert(start, end - start);
    }

    /// Zeroes `[offset, offset + len)` on every rank this process owns. Callers guarantee no
    /// rank uses it now.
    pub(crate) fn zero(&self, offset: usize, len: usize) {
        for region in self.regions.iter().filter(|r| r.local) {
            // SAFETY: offset + len lies inside the region (checked at allocation) and no kernel
            // touches this range concurrently.
            unsafe { std::ptr::write_bytes(region.base.add(offset), 0, len) };
        }
    }

    /// The largest free block: what one more allocation may take.
    pub(crate) fn largest_free(&self) -> usize {
        let book = self.book.lock().unwrap_or_else(|p| p.into_inner());
        book.free.values().copied().max().unwrap_or(0)
    }

    /// Bytes held by live allocations.
    pub(crate) fn live_bytes(&self) -> usize {
        let book = self.book.lock().unwrap_or_else(|p| p.into_inner());
        book.live.values().map(|(len, _)| len).sum()
    }

    /// The live allocation containing `offset`: (its offset, its name).
    pub(crate) fn owner_of(&self, offset: usize) -> Option<(usize, String)> {
        let book = self.book.lock().unwrap_or_else(|p| p.into_inner());
        let (&start, (len, name)) = book.live.range(..=offset).next_back()?;
        (offset < start + len).then(|| (start, name.clone()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frees_coalesce_and_space_is_reused() {
        let heap = SymmetricHeap::new(2, 4096).unwrap();
        let a = heap.alloc("a", 100).unwrap();
        let b = heap.alloc("b", 1000).unwrap();
        let c = heap.alloc("c", 64).unwrap();
        assert_eq!((a, b), (0, 128));
        assert_eq!(heap.owner_of(b + 999), Some((b, "b".to_string())));
        heap.free(b);
        heap.free(a);
        heap.free(c);
        assert_eq!(heap.live_bytes(), 0);
        assert_eq!(heap.alloc("all", 4096).unwrap(), 0);
        assert!(matches!(heap.alloc("more", 1), Err(Error::OutOfWindowMemory { .. })));
    }

    #[test]
    fn reused_memory_is_zeroed() {
        let heap = SymmetricHeap::new(1, 4096).unwrap();
        let a = heap.alloc("a", 64).unwrap();
        // SAFETY: test owns the heap; offset a is live.
        unsafe { heap.base(0).add(a).write(7) };
        heap.free(a);
        let b = heap.alloc("b", 64).unwrap();
        // SAFETY: as above.
        assert_eq!(unsafe { heap.base(0).add(b).read() }, 0);
    }
}
