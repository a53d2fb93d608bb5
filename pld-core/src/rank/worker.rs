//! The worker loop of a rank: the thread that runs its queue.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::sync::mpsc::Receiver;

use super::{RankState, Task};
use crate::cpus::pin_thread;
use crate::shared::WaitLimits;

impl RankState {
    /// Runs the rank's queue until the world drops it.
    pub(crate) fn serve(mut self, queue: Receiver<Task>) {
        let shared = Arc::clone(&self.shared);
        pin_thread(self.rank, &shared.tuning.pin_cpus);
        while let Some(task) = self.next_task(&queue) {
            self.run(task, &shared);
            // Everything the task held (its windows, its signal) is released by now, so a
            // sync that sees the queue drained also sees the memory freed.
            shared.finish_task(self.rank);
        }
    }

    /// The next task: polled for a while first (a pipelined host queues the next call within
    /// microseconds, and a futex wake per task would cost more than the task), then blocking.
    fn next_task(&self, queue: &Receiver<Task>) -> Option<Task> {
        // This rank counts as busy while it polls (it holds a core).
        let busy = self.shared.busy.0.load(Ordering::Relaxed) + 1;
        let polls = if self.shared.tuning.limits(busy) == WaitLimits::ROOMY { 4000 } else { 16 };
        for i in 0..polls {
            match queue.try_recv() {
                Ok(task) => return Some(task),
                Err(std::sync::mpsc::TryRecvError::Disconnected) => return None,
                Err(std::sync::mpsc::TryRecvError::Empty) if i % 64 == 63 => std::thread::yield_now(),
                Err(std::sync::mpsc::TryRecvError::Empty) => std::hint::spin_loop(),
            }
        }
        queue.recv().ok()
    }
}
