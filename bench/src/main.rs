//! `pld-bench`: an nccl-tests-style benchmark of pld's collectives, with MPIs side by side.
//!
//! ```text
//! pld-bench all_reduce -b 8 -e 64M -f 4 -n 2 --baseline mpi --csv ar.csv --plot ar.svg
//! ```
//!
//! For every size: time per operation (many calls queued, one sync: device time, not dispatch
//! round trips), algbw = S / time, busbw = algbw x the nccl-tests factor, then a correctness
//! run with a fresh exact pattern compared element by element (#wrong). `--baseline mpi` runs
//! the MPI collective at the same sizes in the same invocation (by building and running
//! `bench/baselines/mpibench.c` with the `--mpi` MPI's `mpicc`/`mpirun`) and adds a ratio
//! column; `--baseline all` runs every installed MPI and compares with the best at each size.

mod line;
mod measure;
mod mpi;
mod pattern;
mod report;

use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use clap::Parser;
use mpi::{Baseline, BaselineRow, Mpi};
use pld::Collective;

/// nccl-tests' bus bandwidth factor of a collective at `n` ranks.
fn bus_factor(coll: Collective, n: usize) -> f64 {
    let n = n as f64;
    match coll {
        Collective::AllReduce => 2.0 * (n - 1.0) / n,
        Collective::Broadcast | Collective::Barrier | Collective::Reduce | Collective::Send | Collective::Recv => 1.0,
        _ => (n - 1.0) / n,
    }
}

/// How the bench names a collective: `sendrecv` for the ring exchange of send!/recv!.
fn bench_name(coll: Collective) -> &'static str {
    match coll {
        Collective::Send | Collective::Recv => "sendrecv",
        other => other.name(),
    }
}

/// A collective by its name; `sendrecv` (or `send`) is the ring exchange of send!/recv!: every
/// rank sends its buffer to the next rank and receives the previous rank's, as `MPI_Sendrecv`.
fn parse_collective(name: &str) -> Result<Collective, String> {
    let names = || {
        let names: Vec<&str> = Collective::ALL.iter().filter(|c| **c != Collective::Recv).map(|c| c.name()).collect();
        names.join(", ").replace("send", "sendrecv")
    };
    match name {
        "sendrecv" | "send" => Ok(Collective::Send),
        "recv" => Err(format!("`recv` is measured with its send: run `sendrecv` (one of {})", names())),
        _ => Collective::from_name(name).ok_or_else(|| format!("unknown collective `{name}` (one of {})", names())),
    }
}

#[derive(Parser, Debug)]
#[command(name = "pld-bench", about = "nccl-tests-style benchmark of pld collectives, side by side with MPIs")]
struct Args {
    /// The collective (all_reduce, all_gather, reduce_scatter, broadcast, all_to_all, all_to_all_v, barrier,
    /// reduce, gather, scatter, all_gather_v).
    #[arg(value_parser = parse_collective)]
    collective: Collective,
    /// Smallest size (bytes; K, M, G suffixes).
    #[arg(short = 'b', long = "minbytes", default_value = "8", value_parser = parse_size)]
    min_bytes: usize,
    /// Largest size.
    #[arg(short = 'e', long = "maxbytes", default_value = "64M", value_parser = parse_size)]
    max_bytes: usize,
    /// Size step factor.
    #[arg(short = 'f', long = "stepfactor", default_value_t = 4)]
    factor: usize,
    /// Ranks [default: 2; under mpirun, the job's process count, which a given -n must equal].
    #[arg(short = 'n', long = "nranks")]
    nranks: Option<usize>,
    /// all_reduce mode (`mesh`, `ring`; all_reduce only).
    #[arg(long)]
    mode: Option<String>,
    /// `per-rank`: every rank has a host thread of its own calling the collectives
    /// (`World::spmd`, as MPI runs a process per rank; a host then runs its rank's calls
    /// itself); `one`: one host thread drives every rank through their device workers.
    #[arg(long, default_value = "per-rank")]
    hosts: String,
    /// Reduce op (`sum`, `max`, `min`, `prod`; all_reduce and reduce_scatter only).
    #[arg(long)]
    op: Option<String>,
    /// Element type.
    #[arg(long, default_value = "f32")]
    dtype: String,
    /// Seconds of timing per size.
    #[arg(long, default_value_t = 0.25)]
    time: f64,
    /// Run a baseline side by side: `mpi` (the MPI `--mpi` names, through
    /// `bench/baselines/mpibench.c`, in each of its fastest settings), `all` (every installed MPI,
    /// the ratio against the best of them at each size), `unchecked` (pld without its
    /// mismatched-call check: the check's cost), `tracing` (pld without its flight recorder,
    /// with it, and tracing every call: their costs), `world` (with `--group-of`) or
    /// `bench:<path>` (another build of pld-bench, e.g. an earlier commit's, run alternately). pld and the
    /// baseline run alternately `--repeat` times each and each size keeps its best time.
    #[arg(long)]
    baseline: Option<String>,
    /// With `--baseline mpi`: `openmpi4` (the system's), `openmpi5` or `mpich` (installed by
    /// `bench/baselines/install-mpis.sh`), or the path of another MPI's mpicc, mpirun or their folder.
    #[arg(long, default_value = "openmpi4")]
    mpi: String,
    /// With `--baseline all`: the MPIs to run, comma-separated (default: every installed one).
    #[arg(long, value_delimiter = ',')]
    mpis: Option<Vec<String>>,
    /// The MPI harness's C source (default: `bench/baselines/mpibench.c` in this repository).
    #[arg(long)]
    harness: Option<PathBuf>,
    /// With `--baseline`: how many times pld and the baseline each run, alternately (each size
    /// keeps each side's best time, so a moment of noise on this shared machine does not decide
    /// a ratio).
    #[arg(long, default_value_t = 3)]
    repeat: usize,
    /// Run every call over a group of the first K ranks of the `-n` world (the others idle),
    /// in group terms: `--group-of 2 -n 4 --baseline world` compares it with a 2-rank world.
    #[arg(long = "group-of")]
    group_of: Option<usize>,
    /// With `--group-of K`: split the whole world into groups of K consecutive ranks, every
    /// call running in all of them at once (groups that share the machine's cores).
    #[arg(long, requires = "group_of")]
    split: bool,
    /// Write the table as CSV.
    #[arg(long)]
    csv: Option<PathBuf>,
    /// Write busbw against size as SVG.
    #[arg(long)]
    plot: Option<PathBuf>,
}

fn parse_size(text: &str) -> Result<usize, String> {
    let text = text.trim();
    let (digits, unit) = match text.char_indices().find(|(_, c)| c.is_ascii_alphabetic()) {
        Some((i, _)) => text.split_at(i),
        None => (text, ""),
    };
    let value: usize = digits.parse().map_err(|_| format!("not a size: `{text}`"))?;
    let scale = match unit.to_ascii_uppercase().trim_end_matches('B') {
        "" => 1,
        "K" => 1 << 10,
        "M" => 1 << 20,
        "G" => 1 << 30,
        other => return Err(format!("unknown size unit `{other}` in `{text}` (use K, M or G)")),
    };
    Ok(value * scale)
}

/// A measured row: its time, and its wrong elements to carry over.
trait Timed {
    fn bytes(&self) -> usize;
    fn time_us(&self) -> f64;
    fn add_wrong(&mut self, from: &Self);
}

impl Timed for measure::Row {
    fn bytes(&self) -> usize {
        self.bytes
    }
    fn time_us(&self) -> f64 {
        self.time_us
    }
    fn add_wrong(&mut self, from: &Self) {
        self.wrong += from.wrong;
    }
}

impl Timed for BaselineRow {
    fn bytes(&self) -> usize {
        self.bytes
    }
    fn time_us(&self) -> f64 {
        self.time_us
    }
    fn add_wrong(&mut self, from: &Self) {
        self.wrong += from.wrong;
    }
}

/// Keeps, size by size, the faster of two measurements (and every wrong element of both); a
/// size `best` lacks (it starts empty for a baseline) is taken as it comes.
fn keep_best<R: Timed>(best: &mut Vec<R>, again: Vec<R>) {
    for mut a in again {
        match best.iter_mut().find(|b| b.bytes() == a.bytes()) {
            Some(b) if a.time_us() < b.time_us() => {
                a.add_wrong(b);
                *b = a;
            }
            Some(b) => b.add_wrong(&a),
            None => best.push(a),
        }
    }
}

/// Each MPI's rows, best of every run so far.
fn measure_mpis(
    mpis: &[Mpi],
    config: &measure::Config,
    sizes: &[usize],
    args: &Args,
    best: &mut [Vec<BaselineRow>],
) -> Result<()> {
    for (mpi, best) in mpis.iter().zip(best) {
        keep_best(best, mpi.run(config, sizes, args.harness.as_deref())?);
    }
    Ok(())
}

/// The job's process count from the MPI launcher's environment (Open MPI; MPICH and others through PMI).
fn mpi_job_size() -> Option<usize> {
    ["OMPI_COMM_WORLD_SIZE", "PMI_SIZE"].iter().find_map(|v| std::env::var(v).ok().and_then(|s| s.parse().ok()))
}

fn main() -> Result<()> {
    let args = Args::parse();
    // Under mpirun the world is the job: the windows are sized and the patterns checked for its
    // process count, so -n is taken from the launcher (a -n that differs was a mistake).
    let nranks = match (pld::World::launched_by_mpi().then(mpi_job_size).flatten(), args.nranks) {
        (Some(job), Some(n)) if n != job => bail!("-n {n}, but mpirun started {job} processes"),
        (Some(job), _) => job,
        (None, Some(n)) => n,
        (None, None) if pld::World::launched_by_mpi() => {
            bail!("started by an MPI launcher whose process count is not in the environment: give -n")
        }
        (None, None) => 2,
    };

    if args.factor < 2 {
        bail!("-f must be 2 or more");
    }
    if nranks == 0 {
        bail!("-n must be 1 or more");
    }
    // An option that does not apply to the collective is an error, not silently ignored.
    let reducing = matches!(args.collective, Collective::AllReduce | Collective::ReduceScatter | Collective::Reduce);
    if let (Some(mode), false) = (&args.mode, args.collective == Collective::AllReduce) {
        bail!("--mode {mode} applies to all_reduce only, not {}", bench_name(args.collective));
    }
    if let (Some(op), false) = (&args.op, reducing) {
        bail!("--op {op} applies to all_reduce, reduce_scatter and reduce only, not {}", bench_name(args.collective));
    }
    let op_name = args.op.as_deref().unwrap_or("sum");
    let op = pld::ReduceOp::from_name(op_name).with_context(|| format!("unknown op `{op_name}`"))?;
    let mode_name = args.mode.as_deref().unwrap_or("mesh");
    let mode = pld::AllReduceMode::from_name(mode_name).with_context(|| format!("unknown mode `{mode_name}`"))?;
    let dtype = pld::DType::from_name(&args.dtype).with_context(|| format!("unknown dtype `{}`", args.dtype))?;
    let mut sizes = Vec::new();
    if args.collective == Collective::Barrier {
        sizes.push(0);
    } else {
        // nccl-tests' sizes: from -b, times -f, up to -e (a -e off the steps is not added).
        let mut b = args.min_bytes.max(1);
        while b <= args.max_bytes {
            sizes.push(b);
            b = b.saturating_mul(args.factor);
        }
        if sizes.is_empty() {
            bail!("-b {} is above -e {}", args.min_bytes, args.max_bytes);
        }
    }
    if let Some(k) = args.group_of
        && (k == 0 || k > nranks)
    {
        bail!("--group-of {k} needs 1 to {nranks} ranks (the world's -n)");
    }
    if let Some(k) = args.group_of
        && args.split
        && nranks % k != 0
    {
        bail!("--split needs -n {nranks} to be a multiple of --group-of {k}");
    }
    if args.baseline.as_deref() == Some("world") && args.group_of.is_none() {
        bail!("--baseline world compares a group with a world of its size: give --group-of K");
    }
    let under_mpi = pld::World::launched_by_mpi();
    if under_mpi && args.baseline.is_some() {
        bail!("--baseline runs pld's own launcher next to the baseline; run it without mpirun");
    }
    if under_mpi && !cfg!(feature = "mpi") {
        bail!("started by mpirun, but pld-bench was built without its `mpi` feature (--features mpi)");
    }
    let config = measure::Config {
        coll: args.collective,
        nranks,
        launcher: "local",
        op,
        mode,
        dtype,
        seconds: args.time,
        check_calls: true,
        recording: measure::Recording::Recorder,
        host_per_rank: match args.hosts.as_str() {
            "per-rank" => true,
            "one" => false,
            other => bail!("unknown --hosts `{other}` (`per-rank` or `one`)"),
        },
        stream: args.baseline.is_none(),
        cpus: std::thread::available_parallelism().map_or(1, |n| n.get()),
        group_of: args.group_of,
        split: args.split,
    };
    // The machine's mode, beside the table (not under mpirun: every process would probe).
    let line_at_start = if under_mpi { None } else { line::round_trip_ns() };
    // Under mpirun each process measures its own rank of the job; rank 0 reports for it.
    let measured = measure::sweep(&config, &sizes)?;
    let config = measure::Config { nranks: measured.nranks, launcher: measured.launcher, ..config };
    let (rows, baseline) = match args.baseline.as_deref() {
        None => (measured.rows, None),
        Some(which @ ("mpi" | "all")) => {
            let mpis = match (which, &args.mpis) {
                ("mpi", _) => vec![Mpi::resolve(&args.mpi)?],
                (_, Some(names)) => names.iter().map(|name| Mpi::resolve(name)).collect::<Result<_>>()?,
                (_, None) => Mpi::installed(),
            };
            if mpis.is_empty() {
                bail!(
                    "--baseline all: no MPI installed (apt-get install openmpi-bin libopenmpi-dev; bash bench/baselines/install-mpis.sh)"
                );
            }
            if which == "all" {
                let names: Vec<&str> = mpis.iter().map(|m| m.name.as_str()).collect();
                eprintln!("# measuring {} side by side with pld", names.join(", "));
            }
            let mut best_mpi = vec![Vec::new(); mpis.len()];
            measure_mpis(&mpis, &config, &sizes, &args, &mut best_mpi)?;
            let mut best = measured.rows;
            for _ in 1..args.repeat.max(1) {
                keep_best(&mut best, measure::sweep(&config, &sizes)?.rows);
                measure_mpis(&mpis, &config, &sizes, &args, &mut best_mpi)?;
            }
            let baseline = if which == "mpi" {
                let mpi = &mpis[0];
                Baseline::single("mpi", mpi.name.clone(), best_mpi.remove(0))
            } else {
                Baseline::best_of(mpis.iter().map(|m| m.short.clone()).zip(best_mpi).collect())
            };
            (best, Some(baseline))
        }
        Some("unchecked") => {
            let unchecked = measure::Config { check_calls: false, ..config };
            let (mut best, mut best_unchecked) = (measured.rows, measure::sweep(&unchecked, &sizes)?.rows);
            for _ in 1..args.repeat.max(1) {
                keep_best(&mut best, measure::sweep(&config, &sizes)?.rows);
                keep_best(&mut best_unchecked, measure::sweep(&unchecked, &sizes)?.rows);
            }
            (best, Some(Baseline::single("unchecked", "pld unchecked", pld_rows(&best_unchecked))))
        }
        Some("tracing") => {
            // Three worlds alternating: no flight recorder, the default one, a trace.
            use measure::Recording;
            let off = measure::Config { recording: Recording::Off, ..config };
            let traced = measure::Config { recording: Recording::Trace, ..config };
            let mut best = measured.rows;
            let mut best_off = measure::sweep(&off, &sizes)?.rows;
            let mut best_traced = measure::sweep(&traced, &sizes)?.rows;
            for _ in 1..args.repeat.max(1) {
                keep_best(&mut best_off, measure::sweep(&off, &sizes)?.rows);
                keep_best(&mut best, measure::sweep(&config, &sizes)?.rows);
                keep_best(&mut best_traced, measure::sweep(&traced, &sizes)?.rows);
            }
            if measured.rank == 0 {
                print!("{}", report::recording_costs(&config, &best_off, &best, &best_traced, args.repeat));
                print_line_probe(line_at_start);
            }
            return Ok(());
        }
        Some(other) if other.starts_with("bench:") => {
            // Another build of pld-bench (an earlier commit's), run as a child with the same
            // sizes, ranks and time, alternating with this one.
            let path = PathBuf::from(&other["bench:".len()..]);
            let (mut best, mut best_other) = (measured.rows, other_bench(&path, &args, nranks)?);
            for _ in 1..args.repeat.max(1) {
                keep_best(&mut best, measure::sweep(&config, &sizes)?.rows);
                keep_best(&mut best_other, other_bench(&path, &args, nranks)?);
            }
            (best, Some(Baseline::single("other", format!("pld-bench at {}", path.display()), best_other)))
        }
        Some("world") => {
            // The same calls on a world as large as the group, alternating with the group's.
            let k = config.call_ranks();
            let alone = measure::Config { nranks: k, group_of: None, split: false, ..config };
            let (mut best, mut best_alone) = (measured.rows, measure::sweep(&alone, &sizes)?.rows);
            for _ in 1..args.repeat.max(1) {
                keep_best(&mut best, measure::sweep(&config, &sizes)?.rows);
                keep_best(&mut best_alone, measure::sweep(&alone, &sizes)?.rows);
            }
            (best, Some(Baseline::single("world", "a world of the group's size", pld_rows(&best_alone))))
        }
        Some(other) => {
            bail!("unknown baseline `{other}` (`mpi`, `all`, `unchecked`, `tracing`, `world` or `bench:<path>`)")
        }
    };
    if rows.iter().any(|r| r.wrong > 0) {
        bail!("wrong results on rank {} (see #wrong)", measured.rank);
    }
    if measured.rank != 0 {
        return Ok(());
    }
    if config.stream {
        use std::io::Write as _;
        let _ = writeln!(std::io::stdout(), "{}", report::footer(&rows, None)); // `| head` is no error
    } else {
        report::print(&config, &rows, baseline.as_ref());
    }
    if baseline.is_some() && args.repeat > 1 {
        println!("# each time: the best of {} runs, pld and the baseline alternating", args.repeat);
    }
    print_line_probe(line_at_start);
    if let Some(path) = &args.csv {
        report::csv(path, &config, &rows, baseline.as_ref())?;
    }
    if let Some(path) = &args.plot {
        report::plot(path, &config, &rows, baseline.as_ref())?;
    }
    Ok(())
}

/// Prints the cross-core round trip at the run's start and now, where the start was probed.
fn print_line_probe(at_start: Option<f64>) {
    let Some(start) = at_start else { return };
    if let Some(end) = line::round_trip_ns() {
        println!("{}", line::report(start, end));
    }
}

/// The rows another pld-bench binary measures with this run's collective, sizes, ranks, dtype
/// and time (`--baseline bench:<path>`), read from its table.
fn other_bench(path: &std::path::Path, args: &Args, nranks: usize) -> Result<Vec<BaselineRow>> {
    let out = std::process::Command::new(path)
        .args([bench_name(args.collective), "-b", &args.min_bytes.to_string(), "-e", &args.max_bytes.to_string()])
        .args(["-f", &args.factor.to_string(), "-n", &nranks.to_string(), "--time", &args.time.to_string()])
        .args(["--dtype", &args.dtype])
        .output()
        .with_context(|| format!("running {}", path.display()))?;
    if !out.status.success() {
        bail!("{} failed: {}", path.display(), String::from_utf8_lossy(&out.stderr));
    }
    // The table's rows: size, count, type, redop, root, time(us), algbw, busbw, #wrong.
    let rows = mpi::parse_rows(&String::from_utf8_lossy(&out.stdout), 5, "");
    if rows.is_empty() {
        bail!("{} printed no table", path.display());
    }
    Ok(rows)
}

/// pld's own rows as a baseline's (`--baseline unchecked`, `--baseline world`).
fn pld_rows(rows: &[measure::Row]) -> Vec<BaselineRow> {
    rows.iter()
        .map(|r| BaselineRow {
            bytes: r.bytes,
            time_us: r.time_us,
            busbw: r.busbw,
            wrong: r.wrong as u64,
            source: String::new(),
        })
        .collect()
}

/// A short tag of a path, so harness binaries built from different sources do not collide.
fn path_tag(path: &std::path::Path) -> String {
    use std::hash::{DefaultHasher, Hash, Hasher};
    let mut hasher = DefaultHasher::new();
    path.hash(&mut hasher);
    format!("{:016x}", hasher.finish())
}
