//! The MPI baseline: this crate's `baselines/mpibench.c` (every collective, through the MPI call
//! a user would make), built with `mpicc` and run with `mpirun` at the same sizes, in the same
//! invocation.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};

use crate::measure::Config;
use pld::Collective;

/// What pld is compared with in one run: its rows and how the table names it.
pub struct Baseline {
    /// Column prefix (`mpi`, `unchecked`).
    pub column: &'static str,
    /// Legend and summary name (`Open MPI`).
    pub name: &'static str,
    pub rows: Vec<BaselineRow>,
}

/// One size of the baseline.
pub struct BaselineRow {
    pub bytes: usize,
    pub time_us: f64,
    pub busbw: f64,
    pub wrong: u64,
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

pub fn run(config: &Config, sizes: &[usize], source: Option<&Path>) -> Result<Vec<BaselineRow>> {
    if config.dtype != pld::DType::F32 || config.op != pld::ReduceOp::Sum {
        bail!("the MPI baseline measures f32 sum only; run with --dtype f32 --op sum");
    }
    let name = harness_name(config.coll);
    let source = source.map(Path::to_path_buf).unwrap_or_else(default_source);
    let binary = std::env::temp_dir().join(format!("pld-bench-mpibench-{}", crate::path_tag(&source)));
    let stale = std::fs::metadata(&binary)
        .and_then(|b| Ok(b.modified()? < std::fs::metadata(&source)?.modified()?))
        .unwrap_or(true);
    if stale {
        let status = Command::new("mpicc")
            .args(["-O3", "-o"])
            .arg(&binary)
            .arg(&source)
            .status()
            .context("running mpicc (install openmpi-bin and libopenmpi-dev)")?;
        if !status.success() {
            bail!("mpicc failed on {}", source.display());
        }
    }
    let (min, max) = (sizes.first().copied().unwrap_or(8), sizes.last().copied().unwrap_or(8));
    let factor = if sizes.len() > 1 { sizes[1] / sizes[0] } else { 4 };
    let output = Command::new("mpirun")
        .args(["--allow-run-as-root", "--oversubscribe", "-np"])
        .arg(config.nranks.to_string())
        .arg(&binary)
        .args([name, &min.to_string(), &max.to_string(), &factor.to_string(), &config.seconds.to_string()])
        .output()
        .context("running mpirun")?;
    if !output.status.success() {
        bail!("mpirun failed: {}", String::from_utf8_lossy(&output.stderr));
    }
    let rows = String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter(|l| !l.trim_start().starts_with('#') && !l.trim().is_empty())
        .filter_map(|line| {
            let f: Vec<&str> = line.split_whitespace().collect();
            // size count iters avg min max algbw busbw #wrong
            Some(BaselineRow {
                bytes: f.first()?.parse().ok()?,
                time_us: f.get(3)?.parse().ok()?,
                busbw: f.get(7)?.parse().ok()?,
                wrong: f.get(8)?.parse().ok()?,
            })
        })
        .collect();
    Ok(rows)
}
