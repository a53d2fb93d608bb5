//! Traces end to end: a program run with a trace checks against the Trace Event Format and
//! holds every call once per rank, with its site and algorithm; `pld-trace summary` counts what
//! the program called and draws the swimlane; a hang's report lists every rank's last calls
//! from its flight recorder, and `PLD_TRACE_ON_ERROR`'s dump reads back.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use pld::{AllReduce, Broadcast, Error, Opts, World};
use pld_trace::Trace;

/// A fresh scratch folder for one test.
fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("pld-trace-tests").join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Runs `pld-trace` with `args`; its standard output.
fn pld_trace(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_pld-trace")).args(args).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "pld-trace {args:?}: {stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    stdout
}

const NRANKS: usize = 4;
const ROUNDS: usize = 3;

/// The traced program: per round, an all_reduce in each mode, a broadcast, a barrier and an
/// all_reduce over each half of the world; the windows staged first. Returns the call sites
/// (`file:line`) each rank calls from, in order.
fn traced_program(world: &World) -> pld::Result<Vec<(String, &'static str)>> {
    let host = world.host()?;
    let small = host.window::<f32>("small", [2])?;
    let big = host.window::<f32>("big", [64 << 10])?;
    for r in host.ranks() {
        host.write(&small, r, &[r as f32; 2])?;
    }
    let halves = host.split(|r| Some(((r / 2) as u32, r as i64)))?;
    let mut sites = Vec::new();
    let mut at = |line: u32, name: &'static str| sites.push((format!("{}:{line}", file!()), name));
    for _ in 0..ROUNDS {
        host.all_reduce(&small, AllReduce::mesh())?;
        at(line!() - 1, "all_reduce!");
        host.all_reduce(&big, AllReduce::mesh())?;
        at(line!() - 1, "all_reduce!");
        host.all_reduce(&big, AllReduce::ring())?;
        at(line!() - 1, "all_reduce!");
        host.broadcast(&small, Broadcast::root(1))?;
        at(line!() - 1, "broadcast!");
        host.barrier(Opts::new())?;
        at(line!() - 1, "barrier!");
        host.all_reduce(&small, AllReduce::mesh().group(&halves))?;
        at(line!() - 1, "all_reduce!");
    }
    host.read(&small, 0)?;
    host.finish()?;
    Ok(sites)
}

#[test]
fn a_traced_program_has_every_call_once_per_rank_and_a_summary_that_counts_them() {
    let dir = scratch("program");
    let path = dir.join("trace.json");
    let world = World::builder(NRANKS).trace(&path).local().unwrap();
    let sites = traced_program(&world).unwrap();
    drop(world); // writes the trace
    let trace = Trace::load(&path).unwrap();
    assert_eq!(trace.check(), Vec::<String>::new());
    // Every rank made every call, in order, each with its site, algorithm and call number.
    let by_rank = trace.calls_by_rank();
    assert_eq!(by_rank.len(), NRANKS);
    for (rank, calls) in &by_rank {
        let got: Vec<(String, &str)> = calls.iter().map(|e| (e.site().unwrap().to_owned(), e.name.as_str())).collect();
        let want: Vec<(String, &str)> = sites.iter().map(|(s, n)| (s.clone(), *n)).collect();
        assert_eq!(got, want, "rank {rank}");
        let numbers: Vec<u64> = calls.iter().map(|e| e.call().unwrap()).collect();
        assert_eq!(numbers, (1..=sites.len() as u64).collect::<Vec<_>>(), "rank {rank}");
        for e in calls {
            let algorithm = e.args["algorithm"].as_str().unwrap();
            let bytes = e.args["bytes"].as_u64().unwrap();
            // Small payloads travel as LL messages; the big all_reduce runs the mode asked for.
            match (bytes, e.name.as_str()) {
                (8, _) => assert_eq!(algorithm, "LL", "{e:?}"),
                (262_144, _) => assert!(["two-shot", "ring"].contains(&algorithm), "{e:?}"),
                (0, "barrier!") => {}
                _ => panic!("unexpected call {e:?}"),
            }
            assert_eq!(e.args["windows"].as_str().unwrap().contains('`'), bytes > 0, "{e:?}");
            assert!(e.args["wait_us"].as_f64().unwrap() <= e.dur + 1e-6, "{e:?}");
        }
        let grouped = calls.iter().filter(|e| e.args["group"].is_array()).count();
        assert_eq!(grouped, ROUNDS, "rank {rank}");
    }
    // Staging and the host's read and syncs are on the timeline too.
    assert!(trace.events.iter().any(|e| e.name == "write `small`" && e.cat == "staging"));
    assert!(trace.events.iter().any(|e| e.cat == "host" && e.name.starts_with("read `small`")));

    // The summary counts every call of every site on every rank, and draws the swimlane.
    let svg = dir.join("lanes.svg");
    let out = pld_trace(&["summary", path.to_str().unwrap(), "--svg", svg.to_str().unwrap()]);
    let per_rank = (0..NRANKS).map(|r| format!("rank {r}: {}", sites.len())).collect::<Vec<_>>().join(", ");
    assert!(out.contains(&format!("collective calls: {per_rank}")), "{out}");
    for (site, _) in &sites {
        for rank in 0..NRANKS {
            let count = sites.iter().filter(|(s, _)| s == site).count();
            let line = out
                .lines()
                .find(|l| l.trim_start().starts_with(&format!("{rank} ")) && l.contains(site.as_str()))
                .unwrap_or_else(|| panic!("no line for rank {rank} at {site}:\n{out}"));
            let fields: Vec<&str> = line.split_whitespace().collect();
            let i = fields.iter().position(|f| *f == site).unwrap();
            assert_eq!(fields[i + 1], count.to_string(), "{line}");
        }
    }
    assert!(out.contains("straggler: "), "{out}");
    let drawn = std::fs::read_to_string(&svg).unwrap();
    assert!(drawn.starts_with("<svg") && drawn.contains("rank 3") && drawn.contains("all_reduce!"), "{drawn:.300}");
    assert!(pld_trace(&["check", path.to_str().unwrap()]).contains("all well formed"));
}

#[test]
fn a_hang_report_lists_every_rank_s_last_calls_and_the_dump_reads_back() {
    let dir = scratch("hang");
    let dump = dir.join("hang.json");
    let world = World::builder(3).timeout(Duration::from_millis(300)).trace_on_error(&dump).local().unwrap();
    let results = world
        .spmd(|host| {
            let data = host.window::<f32>("data", [4])?;
            for _ in 0..5 {
                host.all_reduce(&data, AllReduce::mesh())?;
            }
            if host.rank() != Some(2) {
                host.barrier(Opts::new())?; // rank 2 never arrives
            }
            host.sync()
        })
        .unwrap();
    let err = results[0].as_ref().unwrap_err();
    let message = err.to_string();
    let Error::Timeout { ranks, rank: reporter, .. } = err else { panic!("{message}") };
    for (rank, report) in ranks.iter().enumerate() {
        // The five all_reduce calls are one run; then the barrier, still waiting on rank 2.
        let run = format!("its last calls: #1-#5 all_reduce(mode = mesh, op = sum, dtype = f32) at {}", file!());
        assert!(report.contains(&run), "rank {rank}: {report}");
        assert!(report.contains(": done (5 calls)"), "rank {rank}: {report}");
        match rank {
            2 => assert!(report.starts_with("rank 2 is in no collective or kernel"), "{report}"),
            // The rank that reported still waits; the other may have timed out already.
            r if r == *reporter => assert!(report.contains("#6 barrier() at ") && report.contains("waiting on rank 2")),
            _ => assert!(report.contains("#6 barrier() at "), "{report}"),
        }
    }
    drop(world);
    // The dump: the same calls, with their times, as a trace.
    let trace = Trace::load(&dump).unwrap();
    assert_eq!(trace.check(), Vec::<String>::new());
    let by_rank = trace.calls_by_rank();
    assert_eq!(by_rank[&0].len(), 6, "{by_rank:?}");
    assert_eq!(by_rank[&2].len(), 5, "{by_rank:?}");
    let barrier = by_rank[&0].last().unwrap();
    assert_eq!(barrier.name, "barrier!");
    assert!(barrier.args["state"].as_str().unwrap().contains("rank 2") || !barrier.args["ok"].as_bool().unwrap());
    let out = pld_trace(&["summary", dump.to_str().unwrap()]);
    assert!(out.contains("collective calls: rank 0: 6, rank 1: 6, rank 2: 5"), "{out}");
    assert!(dump.with_extension("svg").exists());
}
