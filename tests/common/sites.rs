//! One call site for the tests of planned call sites: a broadcast made at one line of host
//! code whatever the window, root and signal (`Host::broadcast` takes its caller's location,
//! and this function does not pass it on).

use pld::{Broadcast, Element, Host, Result, Window};

/// Broadcasts `target` from `root` with `signal`, always from this one line.
pub fn broadcast_here<T: Element>(
    host: &Host<'_>,
    target: &Window<'_, T>,
    root: i64,
    signal: &Window<'_, i32>,
) -> Result<()> {
    host.broadcast(target, Broadcast::root(root).signal(signal))
}
