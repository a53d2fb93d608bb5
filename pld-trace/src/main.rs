//! `pld-trace`: reads the traces pld writes (`PLD_TRACE=trace.json`).
//!
//! - `pld-trace summary trace.json` prints per rank and call site the count, total and mean time
//!   and wait share, and the straggler; writes an SVG swimlane (`--svg`, default
//!   `trace.svg` beside the trace).
//! - `pld-trace merge trace.*.json -o trace.json` puts an MPI job's per-process files on one
//!   timeline (clocks aligned: see `pld_trace::merge`).
//! - `pld-trace check trace.json` holds a trace to the Trace Event Format and pld's promises.

use std::path::PathBuf;

use anyhow::{Result, bail};
use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(name = "pld-trace", about = "Reads pld's traces (PLD_TRACE=path.json)")]
struct Args {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Per rank and call site: count, total and mean time, wait share; the straggler; an SVG.
    Summary {
        /// The trace (one file, or one `merge` wrote).
        trace: PathBuf,
        /// Where the SVG swimlane goes [default: the trace's path with `.svg`].
        #[arg(long)]
        svg: Option<PathBuf>,
    },
    /// Merges the files of an MPI job's processes onto one timeline.
    Merge {
        /// The files (`trace.0.json trace.1.json ...`).
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// The merged trace.
        #[arg(short, long)]
        output: PathBuf,
    },
    /// Checks a trace: the Trace Event Format's fields, no overlapping events on a track
    /// (nesting aside), every rank's calls all there once each.
    Check { trace: PathBuf },
}

fn main() -> Result<()> {
    match Args::parse().command {
        Command::Summary { trace, svg } => {
            let loaded = pld_trace::Trace::load(&trace)?;
            print!("{}", pld_trace::summary(&loaded));
            let svg = svg.unwrap_or_else(|| trace.with_extension("svg"));
            pld_trace::svg(&loaded, &svg)?;
            println!("swimlane: {}", svg.display());
        }
        Command::Merge { files, output } => {
            let merged = pld_trace::merge(&files)?;
            merged.write(&output)?;
            let hosts = merged.shifts.len();
            println!(
                "{} files from {hosts} host{} -> {} ({} events); clocks: {}; residual skew {:.1} us ({})",
                files.len(),
                if hosts == 1 { "" } else { "s" },
                output.display(),
                merged.trace.events.len(),
                if hosts == 1 {
                    merged.alignment.describe().to_owned()
                } else if merged.drift_us.is_empty() {
                    format!("{}: {:?} us", merged.alignment.describe(), merged.shifts)
                } else {
                    format!(
                        "{}: {:?} us, and measured again at the end: drifted {:?} us over the run",
                        merged.alignment.describe(),
                        merged.shifts,
                        merged.drift_us
                    )
                },
                merged.skew_us,
                merged.alignment.skew_is()
            );
        }
        Command::Check { trace } => {
            let loaded = pld_trace::Trace::load(&trace)?;
            let problems = loaded.check();
            if !problems.is_empty() {
                for p in &problems {
                    eprintln!("{p}");
                }
                bail!("{}: {} problem(s)", trace.display(), problems.len());
            }
            let calls: usize = loaded.calls_by_rank().values().map(Vec::len).sum();
            println!("{}: {} events, {calls} collective calls, all well formed", trace.display(), loaded.events.len());
        }
    }
    Ok(())
}
