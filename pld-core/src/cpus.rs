//! The machine's cores: how many the ranks share, and pinning a rank's thread to one.

/// Cores of this machine the ranks share: the online CPUs (an MPI process bound to one core
/// sees only that core, yet the node's ranks share all of them), at least this process's own.
pub(crate) fn node_cpus() -> usize {
    let own = std::thread::available_parallelism().map_or(1, |n| n.get());
    let online = std::fs::read_to_string("/sys/devices/system/cpu/online").ok().map(|list| {
        list.trim()
            .split(',')
            .map(|range| match range.split_once('-') {
                Some((a, b)) => b.parse::<usize>().unwrap_or(0).saturating_sub(a.parse().unwrap_or(0)) + 1,
                None => 1,
            })
            .sum::<usize>()
    });
    online.unwrap_or(own).max(own)
}

/// The CPUs this process may run on.
pub(crate) fn allowed_cpus() -> Vec<usize> {
    use rustix::thread::{CpuSet, sched_getaffinity};
    sched_getaffinity(None).map_or_else(|_| Vec::new(), |set| (0..CpuSet::MAX_CPU).filter(|&c| set.is_set(c)).collect())
}

/// Pins the calling thread to the CPU of `rank` among `cpus`, as mpirun binds one process per
/// core: two ranks' threads never share a core while another stands idle, and a rank's caches
/// stay warm. Best effort (a failure leaves the thread where it was); `cpus` empty: not pinned.
pub(crate) fn pin_thread(rank: usize, cpus: &[usize]) {
    if cpus.is_empty() {
        return;
    }
    pin_thread_to(cpus[rank % cpus.len()]);
}

thread_local! {
    /// The CPU the calling thread was last pinned to here.
    static PINNED: std::cell::Cell<Option<usize>> = const { std::cell::Cell::new(None) };
}

/// Pins the calling thread to `cpu`, with a system call only when it is pinned elsewhere (or
/// not at all) now. Best effort.
pub(crate) fn pin_thread_to(cpu: usize) {
    PINNED.with(|pinned| {
        if pinned.get() != Some(cpu) {
            let mut set = rustix::thread::CpuSet::new();
            set.set(cpu);
            let _ = rustix::thread::sched_setaffinity(None, &set);
            pinned.set(Some(cpu));
        }
    });
}
