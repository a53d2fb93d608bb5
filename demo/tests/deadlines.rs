//! The deadline is per wait, as the guide promises (and as MPI and NCCL users expect of a
//! timeout: it bounds how long one wait for a peer takes, not how long a kernel runs).

use std::time::Duration;

use pld::{Error, World};
use pld_demo::slow_credits;

#[test]
fn two_waits_each_shorter_than_the_deadline_pass_though_together_they_are_longer() {
    let world = World::builder(2).timeout(Duration::from_millis(1000)).local().unwrap();
    let program = slow_credits::load(&world).unwrap();
    // Two waits of 700 ms each: 1.4 s in all under a 1 s deadline.
    program.paused(700, 2).unwrap();
}

#[test]
fn one_wait_longer_than_the_deadline_still_times_out() {
    let world = World::builder(2).timeout(Duration::from_millis(500)).local().unwrap();
    let program = slow_credits::load(&world).unwrap();
    let err = program.paused(1200, 1).unwrap_err();
    assert!(matches!(err, Error::Timeout { .. }), "{err}");
    assert!(err.to_string().contains("500 ms"), "{err}");
    // The kernel waits on cell 1 alone: that cell's peer is the one missing, no other.
    assert!(err.to_string().contains("peers that never arrived: [1]"), "{err}");
}
