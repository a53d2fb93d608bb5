//! Private anonymous memory this process maps, and unmaps when it is dropped: the local ranks'
//! windows and a trace's event chunks.

use rustix::mm::{MapFlags, ProtFlags, mmap_anonymous, munmap};

/// A private anonymous read-write mapping.
pub(crate) struct Mapping {
    base: *mut u8,
    len: usize,
}

// SAFETY: the mapping is plain memory owned by this value; who reads and writes it, and when,
// is the owner's protocol.
unsafe impl Send for Mapping {}
// SAFETY: as above.
unsafe impl Sync for Mapping {}

impl Mapping {
    /// `len` bytes, mapped with `flags` besides `MAP_PRIVATE` (`NORESERVE`: reserved, committed
    /// as touched; `POPULATE`: its pages in place at once).
    pub(crate) fn new(len: usize, flags: MapFlags) -> rustix::io::Result<Mapping> {
        // SAFETY: a fresh private anonymous mapping aliases nothing.
        let base = unsafe {
            mmap_anonymous(std::ptr::null_mut(), len, ProtFlags::READ | ProtFlags::WRITE, MapFlags::PRIVATE | flags)
        }?;
        Ok(Mapping { base: base.cast(), len })
    }

    /// The first byte.
    pub(crate) fn base(&self) -> *mut u8 {
        self.base
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: `base`/`len` describe a mapping this value owns, which nothing uses any more
        // (its owner is being dropped).
        let _ = unsafe { munmap(self.base.cast(), self.len) };
    }
}
