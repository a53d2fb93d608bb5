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

/// Bytes of the process's writable mappings of at least `bytes` each: the window regions (which
/// the kernel may merge into one when adjacent). The C library's arenas reserve 64 MiB each but
/// keep most of it inaccessible, so their writable parts stay far smaller.
fn writable_bytes_in_mappings_of_at_least(bytes: usize) -> usize {
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap_or_default();
    maps.lines()
        .filter_map(|l| {
            let mut fields = l.split_whitespace();
            let (range, perms) = (fields.next()?, fields.next()?);
            let (a, b) = range.split_once('-')?;
            let len = usize::from_str_radix(b, 16).ok()? - usize::from_str_radix(a, 16).ok()?;
            (perms.starts_with("rw") && len >= bytes).then_some(len)
        })
        .sum()
}

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
    let regions_before = writable_bytes_in_mappings_of_at_least(WINDOW_BYTES);
    for round in 0..4 {
        let world = World::builder(8).timeout(Duration::from_millis(200)).window_bytes(WINDOW_BYTES).local().unwrap();
        assert_eq!(threads(), threads_before + 8, "round {round}: one thread per rank");
        assert!(virtual_bytes() >= virtual_before + 8 * WINDOW_BYTES, "round {round}: one window region per rank");
        assert!(
            writable_bytes_in_mappings_of_at_least(WINDOW_BYTES) >= regions_before + 8 * WINDOW_BYTES,
            "round {round}: a region per rank"
        );
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
        // Tight: no window region is left mapped (each is 256 MiB; a neighbouring mapping the
        // kernel merged with the regions may stay, measured 264 KiB).
        let left = writable_bytes_in_mappings_of_at_least(WINDOW_BYTES);
        assert!(left <= regions_before + (1 << 20), "round {round}: {left} bytes of window regions still mapped");
        // Loose, for the rest: the C library keeps a malloc arena per thread that allocated
        // (64 MiB of address space each, made in any round) and cached stacks.
        assert!(now < virtual_before + 8 * (64 << 20) + (32 << 20), "round {round}: {now} bytes of address space");
    }
}
