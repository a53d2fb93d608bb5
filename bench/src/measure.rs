//! Timing pld's collectives and checking their results.

use std::io::Write as _;
use std::time::{Duration, Instant};

use anyhow::Result;
use indicatif::{ProgressBar, ProgressStyle};
use pld::{
    AllReduce, AllReduceMode, Broadcast, DType, Host, Opts, RecvFrom, Reduce, ReduceOp, ReduceScatter, Rooted, SendTo,
    Window,
};

use crate::pattern::{BenchElem, inputs, reduced};
use pld::Collective;

/// What to measure.
pub struct Config {
    pub coll: Collective,
    pub nranks: usize,
    /// How the ranks run (`World::launcher`).
    pub launcher: &'static str,
    pub op: ReduceOp,
    pub mode: AllReduceMode,
    pub dtype: DType,
    pub seconds: f64,
    /// Whether calls compare fingerprints (off only for `--baseline unchecked`).
    pub check_calls: bool,
    /// What the world records (`--baseline tracing` compares the three).
    pub recording: Recording,
    /// Whether every rank has a host thread of its own (`World::spmd`, the way MPI runs one
    /// process per rank) rather than one host driving every rank.
    pub host_per_rank: bool,
    /// Print each row as soon as it is measured (rank 0's view; every rank's wrong elements
    /// are added up at the end), as nccl-tests does; off when a baseline decides the table.
    pub stream: bool,
    /// CPUs of the machine, for the header (counted before any rank thread is pinned).
    pub cpus: usize,
    /// Run every call over the group of the first `k` ranks (the others idle), in group terms.
    pub group_of: Option<usize>,
    /// With `group_of`: split the whole world into groups of `k` consecutive ranks, every call
    /// running in all of them at once (`-n` a multiple of `k`).
    pub split: bool,
}

impl Config {
    /// The ranks a call runs on: the group's, or the world's.
    pub fn call_ranks(&self) -> usize {
        self.group_of.unwrap_or(self.nranks)
    }
}

/// What a world records while it is measured.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Recording {
    /// No flight recorder (`PLD_FLIGHT_RECORDER=0`).
    Off,
    /// The default: the flight recorder, no clock read per call.
    Recorder,
    /// A trace of every call (`PLD_TRACE`), written to /dev/null when the world ends.
    Trace,
}

/// One size's result.
pub struct Row {
    /// S in nccl-tests' sense (bytes).
    pub bytes: usize,
    /// Elements per rank (per peer block for gather/scatter/all-to-all).
    pub count: usize,
    pub time_us: f64,
    pub algbw: f64,
    pub busbw: f64,
    pub wrong: usize,
}

/// Calls queued between two syncs while timing (bounds the memory of queued tasks).
const BATCH: usize = 2048;

/// A sweep's rows, measured on this process's ranks of the world it ran on.
pub struct Sweep {
    pub rows: Vec<Row>,
    /// The first rank this process runs (0 unless under mpirun).
    pub rank: usize,
    pub nranks: usize,
    /// The world's launcher line (`World::launcher`).
    pub launcher: &'static str,
}

pub fn sweep(config: &Config, sizes: &[usize]) -> Result<Sweep> {
    macro_rules! typed {
        ($($d:ident => $t:ty),*) => {
            match config.dtype { $(DType::$d => sweep_typed::<$t>(config, sizes),)* }
        };
    }
    typed!(I8 => i8, U8 => u8, I32 => i32, U32 => u32, I64 => i64, U64 => u64,
           F16 => pld::f16, BF16 => pld::bf16, F32 => f32, F64 => f64,
           F8E4M3 => pld::f8e4m3, F8E5M2 => pld::f8e5m2)
}

/// (elements per rank or per block, S bytes) for a requested size.
fn shape(coll: Collective, bytes: usize, n: usize, elem: usize) -> (usize, usize) {
    match coll {
        Collective::Barrier => (0, 0),
        Collective::AllGather
        | Collective::ReduceScatter
        | Collective::AllToAll
        | Collective::AllToAllV
        | Collective::Gather
        | Collective::Scatter
        | Collective::AllGatherV => {
            let chunk = (bytes / elem / n).max(1);
            (chunk, chunk * n * elem)
        }
        Collective::AllReduce | Collective::Broadcast | Collective::Reduce | Collective::Send | Collective::Recv => {
            let count = (bytes / elem).max(1);
            (count, count * elem)
        }
    }
}

fn sweep_typed<T: BenchElem>(config: &Config, sizes: &[usize]) -> Result<Sweep> {
    let (n, k) = (config.nranks, config.call_ranks());
    let elem = config.dtype.size();
    // Shapes are in the call's terms (a group's size under --group-of).
    let max = sizes.iter().map(|&b| shape(config.coll, b, k, elem).0).max().unwrap_or(1).max(1);
    // Two windows at the largest size, the counts and signals, and room for alignment.
    let world = world(n, config, 2 * k * max * elem + (1 << 20))?;
    let n = world.nranks();
    anyhow::ensure!(n == config.nranks, "the world has {n} ranks, the sweep was sized for {}", config.nranks);
    // Tables name the launcher the world runs on (under mpirun, MPI's line with its node count),
    // not the default the command line started from; a line of its own lives as long as the
    // run (one sweep per process under mpirun, where it differs).
    let launcher: &'static str = match world.launcher() {
        same if same == config.launcher => config.launcher,
        other => Box::leak(other.to_owned().into_boxed_str()),
    };
    let config = &Config { launcher, ..*config };
    if config.host_per_rank && !pld::World::launched_by_mpi() {
        // Every rank's thread runs the sweep; rank 0 reports, with every rank's wrong elements.
        let mut ranks = world.spmd(|host| sweep_on::<T>(config, sizes, host, max))?.into_iter();
        let mut rows = ranks.next().expect("rank 0 ran")?;
        for other in ranks {
            for (row, theirs) in rows.iter_mut().zip(other?) {
                row.wrong += theirs.wrong;
            }
        }
        return Ok(Sweep { rows, rank: 0, nranks: n, launcher });
    }
    let host = world.host()?;
    let rows = sweep_on::<T>(config, sizes, &host, max)?;
    Ok(Sweep { rows, rank: host.ranks().start, nranks: n, launcher })
}

/// The sweep on `host`'s ranks (`max`: the largest element count of any size).
fn sweep_on<T: BenchElem>(config: &Config, sizes: &[usize], host: &Host<'_>, max: usize) -> pld::Result<Vec<Row>> {
    let elem = config.dtype.size();
    // Under `--group-of k`, every call runs over the group of ranks 0..k (or, with `--split`, in
    // every group of k consecutive ranks at once); shapes in group terms.
    let group = match config.group_of {
        Some(k) if config.split => Some(host.split(|r| Some(((r / k) as u32, r as i64)))?),
        Some(k) => Some(host.split(|r| (r < k).then_some((0, r as i64)))?),
        None => None,
    };
    let n = config.call_ranks();
    macro_rules! grouped {
        ($opts:expr) => {
            match &group {
                Some(g) => $opts.group(g),
                None => $opts,
            }
        };
    }
    // Windows at the largest size, allocated (and faulted in) once; each size views a prefix.
    let a = host.alloc("a", n * max * elem)?;
    let b = host.alloc("b", n * max * elem)?;
    let send = host.window::<i32>("send_counts", [n])?;
    let recv = host.window::<i32>("recv_counts", [n])?;
    let signal = host.signal("signal")?;
    let progress = if host.rank().unwrap_or(0) == 0 {
        ProgressBar::new(sizes.len() as u64)
    } else {
        ProgressBar::hidden() // under MPI, rank 0 speaks for the job
    };
    let progress = progress.with_style(
        ProgressStyle::with_template("{prefix} [{bar:30}] {pos}/{len} sizes {msg}").expect("a valid template"),
    );
    progress.set_prefix(format!("pld {} x{n}", crate::bench_name(config.coll)));
    let mut rows = Vec::new();
    for &requested in sizes {
        let (count, bytes) = shape(config.coll, requested, n, elem);
        progress.set_message(format!("{bytes} B"));
        let (wa, wb) = match config.coll {
            Collective::AllGather | Collective::Gather => (a.view::<T>([count])?, b.view::<T>([n, count])?),
            Collective::Scatter => (a.view::<T>([n, count])?, b.view::<T>([count])?),
            Collective::AllGatherV => (a.view::<T>([count, 1])?, b.view::<T>([n * count, 1])?),
            Collective::AllToAllV => (a.view::<T>([n * count, 1])?, b.view::<T>([n * count, 1])?),
            Collective::ReduceScatter | Collective::AllToAll => (a.view::<T>([n, count])?, b.view::<T>([n, count])?),
            _ => (a.view::<T>([count])?, b.view::<T>([count])?),
        };
        if matches!(config.coll, Collective::AllToAllV | Collective::AllGatherV) {
            // Every block full: the same bytes as the collective without counts.
            for r in host.ranks() {
                host.write(&send, r, &vec![count as i32; n])?;
            }
        }
        // Each arm builds only its own options: the call is what is timed, against an MPI
        // harness that builds none.
        let opts = || grouped!(Opts::new().signal(&signal));
        let call = || -> pld::Result<()> {
            match config.coll {
                Collective::AllReduce => {
                    host.all_reduce(&wa, grouped!(AllReduce::mesh().mode(config.mode).op(config.op).signal(&signal)))
                }
                Collective::AllGather => host.all_gather(&wa, &wb, opts()),
                Collective::ReduceScatter => {
                    host.reduce_scatter(&wa, grouped!(ReduceScatter::new().op(config.op).signal(&signal)))
                }
                Collective::Broadcast => host.broadcast(&wa, grouped!(Broadcast::root(0).signal(&signal))),
                Collective::AllToAll => host.all_to_all(&wa, &wb, opts()),
                Collective::AllToAllV => host.all_to_all_v(&wa, &wb, &send, &recv, opts()),
                Collective::Barrier => host.barrier(opts()),
                Collective::Reduce => host.reduce(&wa, grouped!(Reduce::root(0).op(config.op).signal(&signal))),
                Collective::Gather => host.gather(&wa, &wb, grouped!(Rooted::root(0).signal(&signal))),
                Collective::Scatter => host.scatter(&wa, &wb, grouped!(Rooted::root(0).signal(&signal))),
                Collective::AllGatherV => host.all_gather_v(&wa, &wb, &send, opts()),
                // A ring exchange, every rank's send first (in group ranks under --group-of):
                // one batch per rank of one send and one receive.
                Collective::Send | Collective::Recv => {
                    for i in 0..n {
                        host.send(&wa, grouped!(SendTo::rank(((i + 1) % n) as i64).from(i as i64)))?;
                    }
                    for i in 0..n {
                        host.recv(&wb, grouped!(RecvFrom::rank(((i + n - 1) % n) as i64).to(i as i64)))?;
                    }
                    Ok(())
                }
            }
        };
        let warm_up = if rows.is_empty() { FIRST_WARM_UP } else { WARM_UP };
        // A host whose rank is outside the group takes part in the timing's agreements only:
        // its calls would be no-ops, and looping over them would take a core from the group.
        let member = group.as_ref().is_none_or(|g| host.ranks().any(|r| g.group_of(r).is_some()));
        let time = time_per_call(host, &call, config.seconds, warm_up, member)?;
        let wrong = check::<T>(config, host, &wa, &wb, count, &call)?;
        let time_us = time.as_secs_f64() * 1e6;
        let algbw = if time_us > 0.0 { bytes as f64 / time_us / 1e3 } else { 0.0 };
        let row = Row { bytes, count, time_us, algbw, busbw: algbw * crate::bus_factor(config.coll, n), wrong };
        if config.stream && host.rank().unwrap_or(host.ranks().start) == 0 {
            if rows.is_empty() {
                print_above(&progress, &crate::report::header(config, None));
            }
            print_above(&progress, &crate::report::row_line(config, &row, None));
        }
        rows.push(row);
        progress.inc(1);
    }
    progress.finish_and_clear();
    Ok(rows)
}

/// Prints `text` above the progress bar (which is drawn on a terminal only).
fn print_above(progress: &ProgressBar, text: &str) {
    if progress.is_hidden() {
        // A closed pipe (`| head`) ends the output, not the measurement.
        let _ = writeln!(std::io::stdout(), "{text}");
    } else {
        progress.println(text);
    }
}

/// The world to measure: this process's rank of the MPI job under `mpirun` (feature `mpi`),
/// otherwise `n` ranks as threads.
/// `window_bytes` per rank: what the sweep allocates (under MPI the window is committed shared
/// memory, so it is sized to need).
fn world(n: usize, config: &Config, window_bytes: usize) -> pld::Result<pld::World> {
    let builder = |n| {
        let builder = pld::World::builder(n).check_calls(config.check_calls);
        match config.recording {
            Recording::Off => builder.flight_recorder(0),
            Recording::Recorder => builder,
            // The cost of recording is measured, not of writing the file once the world ends.
            Recording::Trace => builder.trace("/dev/null"),
        }
    };
    #[cfg(feature = "mpi")]
    if pld::World::launched_by_mpi() {
        return builder(0).window_bytes(window_bytes).mpi();
    }
    #[cfg(not(feature = "mpi"))]
    let _ = window_bytes; // only an MPI world is sized to need (the local heap is reserved, not committed)
    builder(n).local()
}

/// How long calls run before each size is timed.
const WARM_UP: Duration = Duration::from_millis(50);
/// ... and before the first size, right after the world started and faulted in its windows
/// (hundreds of MiB at the largest sizes): at 4 ranks on 2 cores the first size still measured
/// 5-10% slow after 50 ms (4.4-4.5 us against 4.1 us for the next sizes).
const FIRST_WARM_UP: Duration = Duration::from_millis(400);

/// Average time of one call: calls are queued back to back and synchronised once per batch.
fn time_per_call(
    host: &Host<'_>,
    call: &dyn Fn() -> pld::Result<()>,
    seconds: f64,
    warm_up: Duration,
    member: bool,
) -> pld::Result<Duration> {
    let run = |iters: usize| -> pld::Result<Duration> {
        if !member {
            return Ok(Duration::ZERO);
        }
        host.sync()?;
        let start = Instant::now();
        let mut left = iters;
        while left > 0 {
            for _ in 0..left.min(BATCH) {
                call()?;
            }
            left = left.saturating_sub(BATCH);
            host.sync()?;
        }
        Ok(start.elapsed())
    };
    // Under MPI every process times its own rank; each decision is taken on the slowest rank's
    // time (an all_reduce max), or the processes would make different numbers of calls.
    let slowest = |elapsed: Duration| -> pld::Result<Duration> {
        let nanos = host.window::<u64>("elapsed_ns", [1])?;
        for r in host.ranks() {
            host.write(&nanos, r, &[elapsed.as_nanos() as u64])?;
        }
        host.all_reduce(&nanos, AllReduce::mesh().op(ReduceOp::Max))?;
        Ok(Duration::from_nanos(host.read(&nanos, host.ranks().start)?[0]))
    };
    // Warm up for `warm_up`, not a few calls: right after a world starts (each sweep starts one),
    // the scheduler is still placing more rank threads than cores, and the first size measured
    // came out 10-50% slow at 4 ranks on 2 cores. Scratch, page tables and caches warm too.
    // Every rank takes each decision on the slowest rank's time, so all make the same calls.
    let (mut warmed, mut iters) = (Duration::ZERO, 2);
    while warmed < warm_up {
        warmed += slowest(run(iters)?)?;
        iters *= 2;
    }
    // `iters` calls, 4x more while the slowest rank took less than SHORTEST_RUN (up to `most`).
    let at_least_shortest = |mut iters: usize, most: usize| -> pld::Result<(usize, Duration)> {
        let mut elapsed = slowest(run(iters)?)?;
        while elapsed < SHORTEST_RUN && iters < most {
            iters = (iters * 4).min(most);
            elapsed = slowest(run(iters)?)?;
        }
        Ok((iters, elapsed))
    };
    let (iters, elapsed) = at_least_shortest(1, 1 << 20)?;
    let per_call = elapsed.as_secs_f64() / iters as f64;
    let iters = ((seconds / per_call.max(1e-9)) as usize).clamp(5, MOST_CALLS);
    // A measured run shorter than the calibration's (it found calls slower than they run now)
    // is not kept: so short a run can end before a queue (a socket's, an LL inbox's) fills,
    // timing a burst instead of the steady state. As bench/baselines/mpibench.c does.
    let (iters, elapsed) = at_least_shortest(iters, MOST_CALLS)?;
    Ok(elapsed / iters as u32)
}

/// The shortest run a time is taken from (calibration and measurement alike).
const SHORTEST_RUN: Duration = Duration::from_millis(20);

/// The most calls one measured run makes.
const MOST_CALLS: usize = 2_000_000;

/// Writes a fresh pattern, runs once, and counts the elements that differ from the expected.
fn check<T: BenchElem>(
    config: &Config,
    host: &Host<'_>,
    a: &Window<'_, T>,
    b: &Window<'_, T>,
    count: usize,
    call: &dyn Fn() -> pld::Result<()>,
) -> pld::Result<usize> {
    // Patterns by group rank (the groups are consecutive: rank r is `r % n` in its group);
    // ranks outside every group are not checked.
    let n = config.call_ranks();
    let split = config.split;
    let ranks = || host.ranks().filter(move |&r| split || r < n);
    let (op, k) = (config.op, 7);
    let mut wrong = 0;
    let count_wrong = |found: &[T], expected: &[T]| found.iter().zip(expected).filter(|(f, e)| f != e).count();
    match config.coll {
        Collective::Barrier => {
            call()?;
            host.sync()?;
        }
        Collective::AllReduce | Collective::Broadcast => {
            for r in ranks() {
                host.write(a, r, &inputs::<T>(op, r % n, k, count))?;
            }
            call()?;
            let expected = if config.coll == Collective::AllReduce {
                reduced::<T>(op, n, k, count)
            } else {
                inputs::<T>(op, 0, k, count)
            };
            for r in ranks() {
                wrong += count_wrong(&host.read(a, r)?, &expected);
            }
        }
        Collective::ReduceScatter => {
            for r in ranks() {
                host.write(a, r, &inputs::<T>(op, r % n, k, n * count))?;
            }
            call()?;
            let expected = reduced::<T>(op, n, k, n * count);
            for r in ranks() {
                let found = host.read(a, r)?;
                wrong += count_wrong(
                    &found[(r % n) * count..(r % n + 1) * count],
                    &expected[(r % n) * count..(r % n + 1) * count],
                );
            }
        }
        Collective::AllGather | Collective::AllGatherV => {
            for r in ranks() {
                host.write(a, r, &inputs::<T>(op, r % n, k, count))?;
            }
            call()?;
            let expected: Vec<T> = (0..n).flat_map(|p| inputs::<T>(op, p, k, count)).collect();
            for r in ranks() {
                wrong += count_wrong(&host.read(b, r)?, &expected);
            }
        }
        // The rooted ones: root 0 of each group; the others' windows are checked untouched.
        Collective::Reduce => {
            for r in ranks() {
                host.write(a, r, &inputs::<T>(op, r % n, k, count))?;
            }
            call()?;
            let expected = reduced::<T>(op, n, k, count);
            for r in ranks() {
                let expected = if r % n == 0 { expected.clone() } else { inputs::<T>(op, r % n, k, count) };
                wrong += count_wrong(&host.read(a, r)?, &expected);
            }
        }
        Collective::Gather => {
            let untouched = inputs::<T>(op, n + 1, k, n * count);
            for r in ranks() {
                host.write(a, r, &inputs::<T>(op, r % n, k, count))?;
                host.write(b, r, &untouched)?;
            }
            call()?;
            let expected: Vec<T> = (0..n).flat_map(|p| inputs::<T>(op, p, k, count)).collect();
            for r in ranks() {
                wrong += count_wrong(&host.read(b, r)?, if r % n == 0 { &expected } else { &untouched });
            }
        }
        Collective::Scatter => {
            let rows: Vec<T> = (0..n).flat_map(|p| inputs::<T>(op, p, k, count)).collect();
            for r in ranks() {
                host.write(a, r, &if r % n == 0 { rows.clone() } else { inputs::<T>(op, n + 1, k, n * count) })?;
            }
            call()?;
            for r in ranks() {
                wrong += count_wrong(&host.read(b, r)?, &inputs::<T>(op, r % n, k, count));
            }
        }
        Collective::Send | Collective::Recv => {
            for r in ranks() {
                host.write(a, r, &inputs::<T>(op, r % n, k, count))?;
            }
            call()?;
            for r in ranks() {
                wrong += count_wrong(&host.read(b, r)?, &inputs::<T>(op, (r % n + n - 1) % n, k, count));
            }
        }
        Collective::AllToAll | Collective::AllToAllV => {
            for r in ranks() {
                host.write(a, r, &inputs::<T>(op, r % n, k, n * count))?;
            }
            call()?;
            for r in ranks() {
                let expected: Vec<T> = (0..n)
                    .flat_map(|p| inputs::<T>(op, p, k, n * count)[(r % n) * count..(r % n + 1) * count].to_vec())
                    .collect();
                wrong += count_wrong(&host.read(b, r)?, &expected);
            }
        }
    }
    Ok(wrong)
}
