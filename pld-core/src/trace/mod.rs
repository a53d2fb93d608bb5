//! Where the time goes: the flight recorder every rank keeps ([`recorder`]), and traces in
//! Chrome's Trace Event Format (`PLD_TRACE`, [`WorldBuilder::trace`](crate::WorldBuilder::trace)):
//! one track per rank (its collectives, kernels and staging, each named as the user wrote it)
//! and one per host (syncs and reads), with each collective's call site, call number, group,
//! windows, bytes, dtype, op, the algorithm chosen, and its time waiting on peers apart from
//! its time moving and reducing data.
//!
//! Timestamps are `CLOCK_MONOTONIC` microseconds, which every process of one host shares, so
//! the files of one MPI job's processes on a host line up as they are; across hosts `pld-trace
//! merge` aligns each file's `sync_ns` (the moment its process left the launcher's start-up
//! exchange, which every process leaves together).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use serde_json::{Value, json};

use crate::call::Label;
use crate::error::{Error, Result};

pub(crate) mod clock;
pub(crate) mod recorder;

use clock::{Anchor, TickScale};
use recorder::{Entry, State};

/// One finished call on one rank, as a trace keeps it.
pub(crate) struct Event {
    pub(crate) label: Label,
    pub(crate) rank: usize,
    /// The rank's collective call number; 0 for other work.
    pub(crate) seq: u64,
    /// Ticks at start and end, and spent waiting on peers.
    pub(crate) start: u64,
    pub(crate) end: u64,
    pub(crate) wait: u64,
    /// Whether the kernel moved its data as LL messages.
    pub(crate) ll: bool,
    pub(crate) ok: bool,
}

/// Something a host did that took time (a sync, a read), on the host's track.
struct HostEvent {
    name: String,
    /// The rank the host drives alone (`World::spmd`, MPI); `None`: the controller of all.
    host: Option<usize>,
    start: u64,
    end: u64,
}

/// What a world records beyond its flight recorders, and where it writes it.
pub(crate) struct Tracer {
    /// Where the trace goes (with this process's rank in the name under MPI).
    pub(crate) path: Option<PathBuf>,
    /// Where the flight recorder goes when a call fails.
    pub(crate) on_error: Option<PathBuf>,
    /// Whether calls read the clock (a trace, or a dump on error, needs their times).
    pub(crate) timed: bool,
    start: Anchor,
    /// `CLOCK_MONOTONIC` when this process left the launcher's start-up exchange.
    pub(crate) sync_ns: u64,
    events: Mutex<Vec<Vec<Event>>>,
    host_events: Mutex<Vec<HostEvent>>,
    dumped: AtomicBool,
    launcher: &'static str,
    nranks: usize,
    local: std::ops::Range<usize>,
}

/// Events a recording thread gathers before it hands them to the world (a lock per chunk, not
/// per call).
pub(crate) const CHUNK: usize = 1024;

impl Tracer {
    /// `per_process`: the launcher runs one rank per process, so each writes its own file.
    pub(crate) fn new(
        trace: Option<&Path>,
        on_error: Option<&Path>,
        launcher: &'static str,
        nranks: usize,
        local: std::ops::Range<usize>,
        sync_ns: u64,
    ) -> Tracer {
        let per_process = launcher != "local";
        let name = |path: &Path| if per_process { with_rank(path, local.start) } else { path.to_owned() };
        Tracer {
            path: trace.map(name),
            on_error: on_error.map(name),
            timed: trace.is_some() || on_error.is_some(),
            start: Anchor::now(),
            sync_ns,
            events: Mutex::new(Vec::new()),
            host_events: Mutex::new(Vec::new()),
            dumped: AtomicBool::new(false),
            launcher,
            nranks,
            local,
        }
    }

    /// Whether every call is kept for a trace.
    pub(crate) fn tracing(&self) -> bool {
        self.path.is_some()
    }

    /// Takes a recording thread's events.
    pub(crate) fn hand_over(&self, events: Vec<Event>) {
        if !events.is_empty() {
            self.events.lock().unwrap_or_else(|p| p.into_inner()).push(events);
        }
    }

    /// Records a host's span of work (`start` from [`clock::ticks`]) on its track.
    pub(crate) fn host_span(&self, name: impl Into<String>, host: Option<usize>, start: u64) {
        let end = clock::ticks();
        let event = HostEvent { name: name.into(), host, start, end };
        self.host_events.lock().unwrap_or_else(|p| p.into_inner()).push(event);
    }

    /// Writes the trace (when the world ends): every event, in start order per track.
    pub(crate) fn write(&self) -> Result<()> {
        let Some(path) = &self.path else { return Ok(()) };
        let scale = TickScale::since(self.start);
        let mut events: Vec<Event> =
            std::mem::take(&mut *self.events.lock().unwrap_or_else(|p| p.into_inner())).into_iter().flatten().collect();
        events.sort_by_key(|e| (e.rank, e.start));
        let hosts = std::mem::take(&mut *self.host_events.lock().unwrap_or_else(|p| p.into_inner()));
        let mut out = self.metadata(hosts.iter().map(|h| h.host));
        out.extend(events.iter().map(|e| call_event(e, &scale, None)));
        out.extend(hosts.iter().map(|h| {
            json!({
                "name": h.name, "cat": "host", "ph": "X",
                "ts": scale.ns(h.start) / 1e3, "dur": scale.span_ns(h.end.saturating_sub(h.start)) / 1e3,
                "pid": self.nranks, "tid": host_tid(h.host), "args": {},
            })
        }));
        self.write_file(path, out)
    }

    /// Writes every local rank's flight recorder as a trace, once (the first failure's).
    /// `running(rank, entry)` describes a call still in flight.
    pub(crate) fn dump_on_error(&self, ranks: &[(usize, Vec<Entry>)], running: impl Fn(usize, &Entry) -> String) {
        let Some(path) = &self.on_error else { return };
        if self.dumped.swap(true, Ordering::AcqRel) {
            return;
        }
        let scale = TickScale::since(self.start);
        let now = clock::ticks();
        let mut out = self.metadata(std::iter::empty());
        for (rank, entries) in ranks {
            for entry in entries.iter().filter(|e| e.start != 0) {
                let Some(label) = entry.label.clone() else { continue };
                let state = match entry.state {
                    State::Done => "done".to_owned(),
                    State::Failed => "failed".to_owned(),
                    State::Running => running(*rank, entry),
                };
                let event = Event {
                    label,
                    rank: *rank,
                    seq: entry.seq,
                    start: entry.start,
                    end: if entry.state == State::Running { now } else { entry.end },
                    wait: entry.wait,
                    ll: entry.ll,
                    ok: entry.state == State::Done,
                };
                out.push(call_event(&event, &scale, Some(&state)));
            }
        }
        // A report must not fail the program a second time: a dump that cannot be written says
        // so on standard error.
        if let Err(error) = self.write_file(path, out) {
            eprintln!("pld: PLD_TRACE_ON_ERROR: {error}");
        }
    }

    /// The tracks' names and the file's description.
    fn metadata(&self, hosts: impl Iterator<Item = Option<usize>>) -> Vec<Value> {
        let meta = |pid: usize, tid: usize, what: &str, name: String| json!({"name": what, "ph": "M", "ts": 0, "dur": 0, "pid": pid, "tid": tid, "args": {"name": name}});
        let mut out = Vec::new();
        for rank in self.local.clone() {
            out.push(meta(rank, 0, "process_name", format!("rank {rank}")));
            out.push(json!({"name": "process_sort_index", "ph": "M", "ts": 0, "dur": 0, "pid": rank, "tid": 0,
                            "args": {"sort_index": rank}}));
            out.push(meta(rank, 0, "thread_name", "device".into()));
        }
        let mut hosts: Vec<Option<usize>> = hosts.collect();
        hosts.sort();
        hosts.dedup();
        if !hosts.is_empty() {
            out.push(meta(self.nranks, 0, "process_name", "hosts".into()));
        }
        for host in hosts {
            let name = host.map_or_else(|| "host controller".to_owned(), |r| format!("host of rank {r}"));
            out.push(meta(self.nranks, host_tid(host), "thread_name", name));
        }
        out
    }

    fn write_file(&self, path: &Path, events: Vec<Value>) -> Result<()> {
        let doc = json!({
            "traceEvents": events,
            "displayTimeUnit": "ns",
            "otherData": {
                "writer": "pld",
                "host": host_name(),
                "pid": std::process::id(),
                "launcher": self.launcher,
                "nranks": self.nranks,
                "ranks": self.local.clone().collect::<Vec<_>>(),
                "clock": "CLOCK_MONOTONIC",
                "sync_ns": self.sync_ns,
            },
        });
        let what = || format!("writing the trace {}", path.display());
        let file = std::fs::File::create(path).map_err(|e| Error::system(what(), e))?;
        let mut file = std::io::BufWriter::new(file);
        serde_json::to_writer(&mut file, &doc).map_err(|e| Error::system(what(), e))?;
        file.flush().map_err(|e| Error::system(what(), e))
    }
}

/// A host's thread on the hosts' track: the controller's is 0, rank `r`'s host's `r + 1`.
fn host_tid(host: Option<usize>) -> usize {
    host.map_or(0, |r| r + 1)
}

/// `trace.json` -> `trace.<rank>.json` (a path without an extension gets `.<rank>`).
pub(crate) fn with_rank(path: &Path, rank: usize) -> PathBuf {
    match (path.file_stem(), path.extension()) {
        (Some(stem), Some(ext)) => {
            path.with_file_name(format!("{}.{rank}.{}", stem.to_string_lossy(), ext.to_string_lossy()))
        }
        _ => PathBuf::from(format!("{}.{rank}", path.display())),
    }
}

/// This machine's name (the UTS namespace's): which processes share a clock.
pub(crate) fn host_name() -> String {
    rustix::system::uname().nodename().to_string_lossy().into_owned()
}

/// One call as a complete event on its rank's track.
fn call_event(e: &Event, scale: &TickScale, state: Option<&str>) -> Value {
    let dur_ns = scale.span_ns(e.end.saturating_sub(e.start));
    let wait_ns = scale.span_ns(e.wait).min(dur_ns);
    let mut args = serde_json::Map::new();
    let cat = match &e.label {
        Label::Work(work) => {
            args.insert("description".into(), json!(work.text));
            if let Some(site) = &work.site {
                args.insert("site".into(), json!(site));
            }
            work.kind
        }
        label => {
            let (what, at, group) = label.parts().expect("a label is work or a collective");
            args.insert("call".into(), json!(e.seq));
            args.insert("site".into(), json!(format!("{}:{}", at.file(), at.line())));
            args.insert("description".into(), json!(label.describe()));
            args.insert("group".into(), group.map_or_else(|| json!("world"), |g| json!(g.as_ref())));
            let (dtype, op) = what.dtype_and_op();
            if let Some(dtype) = dtype {
                args.insert("dtype".into(), json!(dtype.to_string()));
            }
            if let Some(op) = op {
                args.insert("op".into(), json!(op.to_string()));
            }
            if let Label::Traced(traced) = label {
                args.insert("windows".into(), json!(traced.windows));
                args.insert("bytes".into(), json!(traced.bytes));
                let algorithm = if e.ll { "LL" } else { traced.algorithm };
                args.insert("algorithm".into(), json!(algorithm));
            }
            args.insert("wait_us".into(), json!(wait_ns / 1e3));
            args.insert("work_us".into(), json!((dur_ns - wait_ns) / 1e3));
            "collective"
        }
    };
    args.insert("ok".into(), json!(e.ok));
    if let Some(state) = state {
        args.insert("state".into(), json!(state));
    }
    json!({
        "name": e.label.trace_name(), "cat": cat, "ph": "X",
        "ts": scale.ns(e.start) / 1e3, "dur": dur_ns / 1e3,
        "pid": e.rank, "tid": 0, "args": Value::Object(args),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_process_names_its_file_by_rank() {
        assert_eq!(with_rank(Path::new("out/trace.json"), 3), PathBuf::from("out/trace.3.json"));
        assert_eq!(with_rank(Path::new("trace"), 0), PathBuf::from("trace.0"));
    }
}
