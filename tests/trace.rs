//! The quickstart, unchanged, with `PLD_TRACE`: its trace checks against the Trace Event Format
//! and holds its all_reduce once per rank with its call site and algorithm, and its staging.
//! (The trace's other promises are tested in pld-trace/tests; under MPI, `.ci/run` traces the
//! end-to-end suite and merges its processes' files.)

mod common;

use common::sites::broadcast_here;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The quickstart example's executable, built beside this test (by `cargo test`, which builds
/// the examples; else here).
fn quickstart() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let profile_dir = exe.parent().and_then(Path::parent).unwrap();
    let example = profile_dir.join("examples").join("quickstart");
    if !example.exists() {
        let status = Command::new(env!("CARGO"))
            .args(["build", "--example", "quickstart"])
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .status()
            .unwrap();
        assert!(status.success(), "building the quickstart failed");
    }
    example
}

/// An empty folder of this test's own under the target's temporary folder.
fn fresh_dir(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn the_quickstart_writes_a_trace_with_its_all_reduce_on_every_rank() {
    let path = fresh_dir("trace-quickstart").join("quickstart.json");
    let out = Command::new(quickstart()).env("PLD_TRACE", &path).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success() && stdout.ends_with("ok\n"), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    let trace = pld_trace::Trace::load(&path).unwrap();
    assert_eq!(trace.check(), Vec::<String>::new());
    for e in trace.raw.iter() {
        for field in ["ph", "ts", "dur", "pid", "tid", "name"] {
            assert!(e.get(field).is_some(), "{e}");
        }
    }
    let calls = trace.calls_by_rank();
    assert_eq!(calls.keys().copied().collect::<Vec<_>>(), [0, 1, 2, 3]);
    for (rank, calls) in calls {
        let [call] = calls.as_slice() else { panic!("rank {rank}: {calls:?}") };
        assert_eq!(call.name, "all_reduce!");
        assert_eq!(call.site(), Some("examples/quickstart.rs:20"));
        assert_eq!(call.args["algorithm"], "ring");
        assert_eq!(call.args["windows"], "target = `data`");
        assert_eq!(call.args["bytes"], 1024);
        assert_eq!(call.args["op"], "sum");
        assert_eq!(call.args["dtype"], "f32");
        let staged = trace.events.iter().filter(|e| e.pid == rank && e.name == "write `data`").count();
        assert_eq!(staged, 1, "rank {rank}");
    }
    // The host's reads of the result (stage_out!) are on the host's track.
    assert_eq!(trace.events.iter().filter(|e| e.cat == "host" && e.name.starts_with("read `data`")).count(), 4);
}

/// A trace keeps each rank's last calls, as many as asked and less than two chunks more (a
/// chunk is 128 calls for a bound of 100), and says how many it dropped; the calls it keeps are
/// the last ones, in order, none missing.
#[test]
fn a_long_run_keeps_each_ranks_last_calls_and_says_how_many_it_dropped() {
    let path = fresh_dir("trace-bounded").join("bounded.json");
    let calls = 1000;
    {
        let world = pld::World::builder(2).trace(&path).trace_events(100).local().unwrap();
        let host = world.host().unwrap();
        for _ in 0..calls {
            host.barrier(pld::Opts::new()).unwrap();
        }
    }
    let trace = pld_trace::Trace::load(&path).unwrap();
    assert_eq!(trace.check(), Vec::<String>::new());
    let dropped =
        trace.other["dropped_calls"].as_array().unwrap().iter().map(|d| d.as_u64().unwrap()).collect::<Vec<_>>();
    for (rank, kept) in trace.calls_by_rank() {
        assert!((100..100 + 2 * 128).contains(&kept.len()), "rank {rank} kept {}", kept.len());
        let numbers: Vec<u64> = kept.iter().map(|e| e.call().unwrap()).collect();
        let first = calls - kept.len() as u64 + 1;
        assert_eq!(numbers, (first..=calls).collect::<Vec<_>>(), "rank {rank}");
        assert_eq!(dropped[rank as usize] + kept.len() as u64, calls, "rank {rank}");
    }
    let summary = pld_trace::summary(&trace);
    assert_eq!(summary.dropped.values().sum::<u64>(), dropped.iter().sum::<u64>());
    assert!(summary.to_string().contains("dropped: rank 0: "), "{summary}");
}

/// A call site the host plans once keeps its traced label with its plan: a site taking
/// windows in turn (each twice, so its plan is used; another size and dtype) and one window
/// from another root (its plan replaced in its slot) shows every call with its own window,
/// bytes, root and call number, on every rank.
#[test]
fn a_site_called_with_windows_in_turn_shows_each_calls_own_window() {
    let path = fresh_dir("trace-sites").join("sites.json");
    let rounds = 24;
    {
        let world = pld::World::builder(2).trace(&path).local().unwrap();
        let host = world.host().unwrap();
        let signal = host.signal("sig").unwrap();
        let (a, b) = (host.window::<f32>("a", [5]).unwrap(), host.window::<f32>("b", [5]).unwrap());
        let wide = host.window::<i64>("wide", [9]).unwrap();
        for k in 0..rounds {
            match k / 2 % 4 {
                0 => broadcast_here(&host, &a, 0, &signal).unwrap(),
                1 => broadcast_here(&host, &b, 1, &signal).unwrap(),
                2 => broadcast_here(&host, &wide, 0, &signal).unwrap(),
                _ => broadcast_here(&host, &a, 1, &signal).unwrap(),
            }
        }
    }
    let trace = pld_trace::Trace::load(&path).unwrap();
    assert_eq!(trace.check(), Vec::<String>::new());
    let calls = trace.calls_by_rank();
    assert_eq!(calls.len(), 2);
    for (rank, calls) in calls {
        let broadcasts: Vec<_> = calls.iter().filter(|c| c.name == "broadcast!").collect();
        assert_eq!(broadcasts.len(), rounds, "rank {rank}");
        for (k, call) in broadcasts.iter().enumerate() {
            let (window, bytes, root) = [("a", 20, 0), ("b", 20, 1), ("wide", 72, 0), ("a", 20, 1)][k / 2 % 4];
            assert_eq!(call.args["windows"], format!("target = `{window}`"), "rank {rank}, call {k}");
            assert_eq!(call.args["bytes"], bytes, "rank {rank}, call {k}");
            let description = call.args["description"].as_str().unwrap();
            assert!(description.contains(&format!("root = {root},")), "rank {rank}, call {k}: {description}");
        }
        let numbers: Vec<u64> = broadcasts.iter().map(|c| c.call().unwrap()).collect();
        assert!(numbers.windows(2).all(|w| w[0] < w[1]), "rank {rank}: {numbers:?}");
    }
}
