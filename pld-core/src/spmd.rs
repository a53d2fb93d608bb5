//! [`World::spmd`]: every rank's host function on a thread of its own, as every process runs
//! it under MPI.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use crate::call::panic_message;
use crate::cpus::pin_thread;
use crate::error::{Error, Result};
use crate::host::Host;
use crate::section::Section;
use crate::world::World;

impl World {
    /// Runs `f` once per rank, each on a thread of its own with a host that drives that rank
    /// alone: the way every process runs the host function under MPI, so ranks may take
    /// different paths and can disagree. Windows are allocated collectively (the k-th
    /// allocation of every rank is one window; a rank allocating another size is an error on
    /// both sides); every collective call is checked against the peers' before data moves.
    ///
    /// Returns each rank's result, by rank. A failure on any rank (an error returned by `f`, a
    /// failed call, a panic) ends every rank's calls in flight and later in the section with an
    /// error naming the root cause, and the section fails as a whole: a rank that finished its
    /// part gets the root cause as its result. When the section ends, the world is reset and
    /// usable again.
    pub fn spmd<R: Send>(&self, f: impl Fn(&Host<'_>) -> Result<R> + Sync) -> Result<Vec<Result<R>>> {
        if self.local_ranks() != (0..self.nranks()) {
            return Err(Error::system(
                "World::spmd",
                "this process runs only some ranks of the world (MPI): every process already runs the host \
                 function for its own rank, through `World::host`",
            ));
        }
        if self.shared().host_active.swap(true, Ordering::AcqRel) {
            return Err(Error::WorldBusy);
        }
        let section = Arc::new(Section::new(self.nranks()));
        let f = &f;
        let results = std::thread::scope(|scope| {
            let threads: Vec<_> = (0..self.nranks())
                .map(|rank| {
                    let section = Arc::clone(&section);
                    std::thread::Builder::new()
                        .name(format!("pld-host-{rank}"))
                        .spawn_scoped(scope, move || self.run_rank_host(rank, section, f))
                })
                .collect();
            threads
                .into_iter()
                .enumerate()
                .map(|(rank, thread)| match thread {
                    Ok(thread) => thread.join().unwrap_or_else(|panic| Err(host_panicked(rank, panic.as_ref()))),
                    Err(e) => Err(Error::system(format!("starting rank {rank}'s host thread"), e)),
                })
                .collect()
        });
        drop(section);
        // Every host is done: clear what a failure left behind (the abort flag, the credits of
        // the calls it cut short) and line the call numbers up again, every rank past them
        // (ranks that diverged made different numbers of calls), so the world is as good as new.
        let outcome = self.sync();
        self.shared().align_call_numbers();
        self.shared().host_active.store(false, Ordering::Release);
        // A section fails as a whole, as an MPI job does: a rank that finished its part before
        // (or without meeting) the failure gets the root cause too.
        Ok(match outcome {
            Ok(()) => results,
            Err(root) => results.into_iter().map(|r| r.and_then(|_| Err(root.clone()))).collect(),
        })
    }

    /// One rank's host function under [`World::spmd`]: its failures (an error it returns, a
    /// panic) are the world's, so peers waiting for this rank stop instead of timing out.
    fn run_rank_host<R>(&self, rank: usize, section: Arc<Section>, f: &impl Fn(&Host<'_>) -> Result<R>) -> Result<R> {
        pin_thread(rank, &self.shared().tuning.pin_cpus);
        let host = Host::new(self, rank..rank + 1, Some(section));
        let result = match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(&host))) {
            Ok(result) => result,
            Err(panic) => Err(host_panicked(rank, panic.as_ref())),
        };
        if let Err(error) = &result {
            self.shared().record_failure(rank, error.clone(), None);
        }
        let finished = host.finish();
        result.and_then(|value| finished.map(|()| value))
    }
}

/// A rank's host function panicked.
fn host_panicked(rank: usize, panic: &(dyn std::any::Any + Send)) -> Error {
    Error::RankPanicked { rank, call: "the host function".into(), message: panic_message(panic) }
}
