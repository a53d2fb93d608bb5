//! The windows of one [`World::spmd`](crate::World::spmd) section, allocated collectively by
//! hosts on threads of one process.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use crate::error::{Error, Result};
use crate::memory::Allocation;
use crate::world::World;

/// The windows of one [`World::spmd`] section: each rank's k-th allocation is one window,
/// created by the first rank to reach it and handed to the others.
pub(crate) struct Section {
    nranks: usize,
    pending: Mutex<HashMap<u64, SharedAllocation>>,
}

struct SharedAllocation {
    alloc: Arc<Allocation>,
    first_rank: usize,
    waiting: usize,
}

impl Section {
    pub(crate) fn new(nranks: usize) -> Section {
        Section { nranks, pending: Mutex::new(HashMap::new()) }
    }

    pub(crate) fn alloc(
        &self,
        world: &World,
        rank: usize,
        index: u64,
        name: &str,
        bytes: usize,
    ) -> Result<Arc<Allocation>> {
        let mut pending = self.pending.lock().unwrap_or_else(|p| p.into_inner());
        let Some(entry) = pending.get_mut(&index) else {
            let alloc = Allocation::new(world.shared().heap(), name, bytes)?;
            if self.nranks > 1 {
                let entry = SharedAllocation { alloc: Arc::clone(&alloc), first_rank: rank, waiting: self.nranks - 1 };
                pending.insert(index, entry);
            }
            return Ok(alloc);
        };
        if entry.alloc.bytes() != bytes || entry.alloc.name() != name {
            return Err(Error::MismatchedAllocation {
                rank,
                name: name.to_owned(),
                bytes,
                index,
                peer: entry.first_rank,
                peer_name: entry.alloc.name().to_owned(),
                peer_bytes: entry.alloc.bytes(),
            });
        }
        let alloc = Arc::clone(&entry.alloc);
        entry.waiting -= 1;
        if entry.waiting == 0 {
            pending.remove(&index);
        }
        Ok(alloc)
    }
}
