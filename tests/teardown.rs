//! Dropping a world in any state, a failed call included, joins its rank threads and unmaps its
//! window regions; two threads cannot drive one world at once. (A test binary of its own: it counts the
//! process's threads and mappings, which other tests running alongside would disturb.)

use std::time::Duration;

use pld::{AllReduce, Error, Opts, World};

fn threads() -> usize {
    std::fs::read_dir("/proc/self/task").map(|d| d.count()).unwrap_or(0)
}

/// Each rank's window region (reserved address space, so it shows in the virtual size).
const WINDOW_BYTES: usize = 256 << 20;

/// The process's virtual size in bytes.
fn virtual_bytes() -> usize {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let kb = status
        .lines()
        .find_map(|l| l.strip_prefix("VmSize:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<usize>().ok());
    kb.unwrap_or(0) * 1024
}

#[test]
fn worlds_leave_no_thread_or_mapping_behind_and_refuse_a_second_controller() {
    // Warm up once so lazily created process-wide state (the builtin library) is not counted.
    drop(World::local(1).unwrap());
    let (threads_before, virtual_before) = (threads(), virtual_bytes());
    let mut settled = None;
    for round in 0..4 {
        let world = World::builder(8).timeout(Duration::from_millis(200)).window_bytes(WINDOW_BYTES).local().unwrap();
        assert_eq!(threads(), threads_before + 8, "round {round}: one thread per rank");
        assert!(virtual_bytes() >= virtual_before + 8 * WINDOW_BYTES, "round {round}: one window region per rank");
        {
            let host = world.host().unwrap();
            // A second controller, from another thread, is refused rather than interleaved.
            std::thread::scope(|s| {
                let other = s.spawn(|| world.host().map(drop));
                assert!(matches!(other.join().unwrap(), Err(Error::WorldBusy)));
            });
            let data = host.window::<f32>("data", [1 << 16]).unwrap();
            host.all_reduce(&data, AllReduce::ring()).unwrap();
            // Leave the world mid-error on the last round: a root out of range, then a failed call.
            if round >= 2 {
                let send = host.window::<i32>("send", [8]).unwrap();
                let recv = host.window::<i32>("recv", [8]).unwrap();
                let input = host.window::<f32>("input", [8, 1]).unwrap();
                let target = host.window::<f32>("target", [8, 1]).unwrap();
                host.write(&send, 3, &[5; 8]).unwrap(); // counts above the 1-row capacity
                host.all_to_all_v(&input, &target, &send, &recv, Opts::new()).unwrap();
                host.barrier(Opts::new()).unwrap(); // queued behind the failure
            } else {
                host.sync().unwrap();
            }
        }
        drop(world);
        assert_eq!(threads(), threads_before, "round {round}: every rank thread joined");
        let now = virtual_bytes();
        match settled {
            // The first round leaves what the C library keeps for reuse: a malloc arena per
            // thread that allocated (64 MiB of address space each) and cached stacks; the
            // window regions (8 x 256 MiB) go.
            None => {
                assert!(now < virtual_before + 8 * (64 << 20) + (32 << 20), "round 0: every window region unmapped");
                settled = Some(now);
            }
            // Later rounds reuse all of it: the address space returns to where round 0 left it,
            // to within 4 MiB (any window region left behind is 256 MiB).
            Some(settled) => assert!(
                now.abs_diff(settled) <= 4 << 20,
                "round {round}: {now} bytes of address space after teardown, {settled} after the first"
            ),
        }
    }
}
