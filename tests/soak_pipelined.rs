//! Pipelined calls keep the process flat: batches of collectives queued back to back, with no
//! read or sync between the calls of a batch (LL messages, one-shot, two-shot, ring, broadcast,
//! all_gather and barriers, so every LL slot and every signal is reused many times), under
//! `World::host` and under `World::spmd`. After the first batch (which warms up allocator arenas
//! and touches the windows' pages) the resident memory and the open file descriptors stay where
//! they were, and every batch's data is exact.
//!
//! A test binary of its own: it measures the process, which other tests running alongside would
//! disturb. `PLD_SOAK_BATCHES` sets the number of batches (default 12); `.ci/run` runs it under
//! MPI as well (`PLD_E2E_MODE=soak` in `tests/mpi_e2e.rs`).

mod common;

use common::soak::{batch, stays_flat};
use pld::World;

const RANKS: usize = 4;

#[test]
fn pipelined_calls_keep_memory_and_descriptors_flat() {
    let world = World::local(RANKS).unwrap();
    let live = world.live_window_bytes();
    stays_flat("World::host", || {
        let host = world.host().unwrap();
        batch(&host, &host.ranks().collect::<Vec<_>>()).unwrap();
        host.finish().unwrap();
        assert_eq!(world.live_window_bytes(), live, "every window is freed with its host");
    });
    stays_flat("World::spmd", || {
        for result in world.spmd(|host| batch(host, &[host.rank().unwrap()])).unwrap() {
            result.unwrap();
        }
        assert_eq!(world.live_window_bytes(), live, "every window is freed with its section");
    });
}
