//! Where the time goes: the flight recorder every rank keeps ([`recorder`]), and traces in
//! Chrome's Trace Event Format (`PLD_TRACE`, [`WorldBuilder::trace`](crate::WorldBuilder::trace)):
//! one track per rank (its collectives, kernels and staging, each named as the user wrote it)
//! and one per host (syncs and reads), with each collective's call site, call number, group,
//! windows, bytes, dtype, op, the algorithm chosen, and its time waiting on peers apart from
//! its time moving and reducing data.
//!
//! Timestamps are `CLOCK_MONOTONIC` microseconds, which every process of one host shares, so
//! the files of one MPI job's processes on a host line up as they are; across hosts each file
//! carries its host's clock offset to rank 0's, measured at start-up (`clock_offset_ns`, with
//! its error bound), which `pld-trace merge` applies.

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};

use crate::call::Label;
use crate::error::{Error, Result};

pub(crate) mod clock;
pub(crate) mod events;
pub(crate) mod recorder;

use clock::{Anchor, TickScale};
use events::Chunk;
use recorder::{Entry, State};

/// One finished call on one rank, as a trace keeps it: 32 bytes (a long run records millions,
/// and each is written to fresh memory while the call's peers wait).
#[derive(Clone, Copy)]
pub(crate) struct Event {
    /// Ticks at start and end, and spent waiting on peers.
    pub(crate) start: u64,
    pub(crate) end: u64,
    pub(crate) wait: u64,
    /// The rank's collective call number; 0 for other work.
    pub(crate) seq: u32,
    /// The label's index in the rank's table ([`Tracer::label_id`]) with [`Event::OK`] and
    /// [`Event::LL`].
    pub(crate) label: u32,
}

impl Event {
    /// The call succeeded.
    pub(crate) const OK: u32 = 1 << 31;
    /// The kernel moved its data as LL messages.
    pub(crate) const LL: u32 = 1 << 30;
    const ID: u32 = Event::LL - 1;
}

/// A recording thread's map from its calls' labels to their index in its rank's table.
#[derive(Default)]
pub(crate) struct LabelIds {
    last: Option<(usize, u32)>,
    known: HashMap<usize, u32>,
}

/// Something a host did that took time (a sync, a read), on the host's track.
struct HostEvent {
    name: String,
    /// The rank the host drives alone (`World::spmd`, MPI); `None`: the controller of all.
    host: Option<usize>,
    start: u64,
    end: u64,
}

/// A call as a trace event shows it.
struct Shown<'a> {
    rank: usize,
    seq: u64,
    start: u64,
    end: u64,
    wait: u64,
    ll: bool,
    ok: bool,
    /// For a flight recorder's dump: how the call stands.
    state: Option<&'a str>,
}

/// A rank's trace memory: the events handed over (the newest [`Tracer::keep`] and less than a
/// chunk more; the chunks being filled hold the newest of all), and empty chunks made when the
/// world started, for its threads to fill.
#[derive(Default)]
struct Kept {
    chunks: std::collections::VecDeque<Chunk>,
    /// Events dropped to stay within the bound.
    dropped: u64,
    free: Vec<Chunk>,
}

impl Kept {
    /// Events in `chunks` (a few chunks: counted when asked, once per chunk filled).
    fn held(&self) -> usize {
        self.chunks.iter().map(Chunk::len).sum()
    }
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
    /// When this process left the launcher's start-up exchange, and its clock's offset to
    /// rank 0's where the job spans hosts.
    pub(crate) clock: clock::ClockSync,
    /// The clock's offset measured again when the world ended (across hosts), so that a merge
    /// can follow the clocks' drift over the run.
    clock_at_end: Mutex<Option<clock::ClockOffset>>,
    /// By rank: the events handed over, and the labels they index.
    events: Box<[Mutex<Kept>]>,
    /// Calls kept per rank (at least: whole chunks are dropped, once the rest hold as many).
    keep: usize,
    labels: Box<[Mutex<Vec<Label>>]>,
    host_events: Mutex<Vec<HostEvent>>,
    dumped: AtomicBool,
    launcher: String,
    nranks: usize,
    local: std::ops::Range<usize>,
}

impl Tracer {
    /// `per_process`: the launcher runs one rank per process, so each writes its own file.
    /// `keep`: the calls a trace keeps per rank.
    pub(crate) fn new(
        (trace, keep): (Option<&Path>, usize),
        on_error: Option<&Path>,
        launcher: &str,
        nranks: usize,
        local: std::ops::Range<usize>,
        clock: clock::ClockSync,
    ) -> Result<Tracer> {
        let per_process = launcher != "local";
        let name = |path: &Path| if per_process { with_rank(path, local.start) } else { path.to_owned() };
        let (path, on_error) = (trace.map(name), on_error.map(name));
        // A path that cannot be written is an error now, not a lost trace at the end: the trace's
        // file is made at once (and written when the world ends); the dump's folder must exist.
        if let Some(path) = &path {
            std::fs::File::create(path).map_err(|e| Error::InvalidSetting {
                setting: "PLD_TRACE (or WorldBuilder::trace)".into(),
                value: path.display().to_string(),
                expected: format!("a file this process can create ({e})"),
            })?;
        }
        if let Some(path) = &on_error {
            let folder = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
            if !folder.is_dir() {
                return Err(Error::InvalidSetting {
                    setting: "PLD_TRACE_ON_ERROR (or WorldBuilder::trace_on_error)".into(),
                    value: path.display().to_string(),
                    expected: format!("a file in a folder that exists ({} does not)", folder.display()),
                });
            }
        }
        let chunk = events::chunk_events(keep);
        let events = (0..nranks)
            .map(|rank| {
                // Every chunk the bound needs and the one being filled, populated now:
                // populating a chunk's pages as calls filled it cost 20 ns a call at 2 ranks
                // (0.75 ms per 2 MiB here).
                let chunks = if path.is_some() && local.contains(&rank) { keep.div_ceil(chunk) + 1 } else { 0 };
                Mutex::new(Kept { free: (0..chunks).map(|_| Chunk::new(chunk)).collect(), ..Kept::default() })
            })
            .collect();
        Ok(Tracer {
            timed: path.is_some() || on_error.is_some(),
            path,
            on_error,
            start: Anchor::now(),
            clock,
            clock_at_end: Mutex::new(None),
            events,
            keep,
            labels: (0..nranks).map(|_| Mutex::default()).collect(),
            host_events: Mutex::new(Vec::new()),
            dumped: AtomicBool::new(false),
            launcher: launcher.to_owned(),
            nranks,
            local,
        })
    }

    /// Whether every call is kept for a trace.
    pub(crate) fn tracing(&self) -> bool {
        self.path.is_some()
    }

    /// The index of `label` in `rank`'s table, added on first sight. Labels are told apart by
    /// identity (a host makes one per call site and shape, see `Host::traced_label`; the
    /// table keeps each alive, so an address is never reused for another).
    #[inline(always)]
    pub(crate) fn label_id(&self, rank: usize, label: &Label, ids: &mut LabelIds) -> u32 {
        let key = match label {
            Label::Traced(call) => Arc::as_ptr(call) as usize,
            _ => 0,
        };
        if let Some((last, id)) = ids.last
            && last == key
            && key != 0
        {
            return id;
        }
        self.new_label_id(rank, label, key, ids)
    }

    /// [`Tracer::label_id`] for a label other than the thread's last.
    #[inline(never)]
    fn new_label_id(&self, rank: usize, label: &Label, key: usize, ids: &mut LabelIds) -> u32 {
        let id = match ids.known.get(&key) {
            Some(&id) => id,
            None => {
                let mut table = self.labels[rank].lock().unwrap_or_else(|p| p.into_inner());
                let id = (table.len() as u32).min(Event::ID);
                table.push(label.clone());
                // Only a traced call's label is kept by its host and reused; other labels are
                // new objects each time, and remembering them would only grow.
                if matches!(label, Label::Traced(_)) {
                    ids.known.insert(key, id);
                }
                id
            }
        };
        ids.last = Some((key, id));
        id
    }

    /// An empty chunk for a thread recording `rank`'s calls: one made when the world started,
    /// else the memory of the rank's oldest events where it holds its bound without them
    /// (they are dropped), else a new one.
    pub(crate) fn next_chunk(&self, rank: usize) -> Chunk {
        let mut kept = self.events[rank].lock().unwrap_or_else(|p| p.into_inner());
        if let Some(free) = kept.free.pop() {
            return free;
        }
        if kept.chunks.front().is_some_and(|oldest| kept.held() - oldest.len() >= self.keep)
            && let Some(mut oldest) = kept.chunks.pop_front()
        {
            kept.dropped += oldest.len() as u64;
            oldest.clear();
            return oldest;
        }
        Chunk::new(events::chunk_events(self.keep))
    }

    /// Takes a recording thread's events of `rank` (a lock per chunk of them, not per call).
    pub(crate) fn hand_over(&self, rank: usize, events: Chunk) {
        events.publish();
        if events.len() > 0 {
            self.events[rank].lock().unwrap_or_else(|p| p.into_inner()).chunks.push_back(events);
        }
    }

    /// Records a host's span of work (`start` from [`clock::ticks`]) on its track.
    pub(crate) fn host_span(&self, name: impl Into<String>, host: Option<usize>, start: u64) {
        let end = clock::ticks();
        let event = HostEvent { name: name.into(), host, start, end };
        self.host_events.lock().unwrap_or_else(|p| p.into_inner()).push(event);
    }

    /// Keeps the clock's offset measured when the world ended, for the file written next.
    pub(crate) fn clock_at_end(&self, offset: clock::ClockOffset) {
        *self.clock_at_end.lock().unwrap_or_else(|p| p.into_inner()) = Some(offset);
    }

    /// Writes the trace (when the world ends): every event, in start order per track, one at a
    /// time.
    pub(crate) fn write(&self) -> Result<()> {
        let Some(path) = &self.path else { return Ok(()) };
        let scale = TickScale::since(self.start);
        let hosts = std::mem::take(&mut *self.host_events.lock().unwrap_or_else(|p| p.into_inner()));
        // Every local rank's events, taken once (in `ranks` order, as `dropped_calls` lists them).
        let kept: Vec<(usize, Kept)> = self
            .local
            .clone()
            .map(|rank| (rank, std::mem::take(&mut *self.events[rank].lock().unwrap_or_else(|p| p.into_inner()))))
            .collect();
        let dropped = kept.iter().map(|(_, k)| k.dropped).collect();
        self.write_file(path, Some(dropped), |out| {
            self.metadata(out, hosts.iter().map(|h| h.host))?;
            for (rank, kept) in kept {
                if kept.dropped > 0 {
                    eprintln!(
                        "pld: the trace {} keeps the last {} calls of rank {rank}; its {} earlier ones were \
                         dropped (PLD_TRACE_EVENTS or WorldBuilder::trace_events keeps more)",
                        path.display(),
                        kept.held(),
                        kept.dropped
                    );
                }
                let mut events: Vec<Event> = kept.chunks.iter().flat_map(|c| c.as_slice().iter().copied()).collect();
                events.sort_unstable_by_key(|e| e.start);
                let labels = self.labels[rank].lock().unwrap_or_else(|p| p.into_inner());
                let mut fragments: Vec<Option<Fragments>> = (0..labels.len()).map(|_| None).collect();
                for e in &events {
                    let id = (e.label & Event::ID) as usize;
                    let Some(label) = labels.get(id) else { continue };
                    if fragments[id].is_none() {
                        fragments[id] = Some(Fragments::of(label)?);
                    }
                    let frags = fragments[id].as_ref().expect("made above");
                    let shown = Shown {
                        rank,
                        seq: u64::from(e.seq),
                        start: e.start,
                        end: e.end,
                        wait: e.wait,
                        ll: e.label & Event::LL != 0,
                        ok: e.label & Event::OK != 0,
                        state: None,
                    };
                    write_call(out, frags, &shown, &scale)?;
                }
            }
            for h in &hosts {
                let (ts, dur) = (scale.ns(h.start) / 1e3, scale.span_ns(h.end.saturating_sub(h.start)) / 1e3);
                write!(out, ",\n{{\"name\":")?;
                write_str(out, &h.name)?;
                write!(out, ",\"cat\":\"host\",\"ph\":\"X\",\"ts\":{ts:.3},\"dur\":{dur:.3},")?;
                write!(out, "\"pid\":{},\"tid\":{},\"args\":{{}}}}", self.nranks, host_tid(h.host))?;
            }
            Ok(())
        })
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
        let written = self.write_file(path, None, |out| {
            self.metadata(out, std::iter::empty())?;
            for (rank, entries) in ranks {
                for entry in entries.iter().filter(|e| e.start != 0) {
                    let Some(label) = &entry.label else { continue };
                    let state = match entry.state {
                        State::Done => "done".to_owned(),
                        State::Failed => "failed".to_owned(),
                        State::Running => running(*rank, entry),
                    };
                    let shown = Shown {
                        rank: *rank,
                        seq: entry.seq,
                        start: entry.start,
                        end: if entry.state == State::Running { now } else { entry.end },
                        wait: entry.wait,
                        ll: entry.ll,
                        ok: entry.state == State::Done,
                        state: Some(&state),
                    };
                    write_call(out, &Fragments::of(label)?, &shown, &scale)?;
                }
            }
            Ok(())
        });
        // A report must not fail the program a second time: a dump that cannot be written says
        // so on standard error.
        if let Err(error) = written {
            eprintln!("pld: PLD_TRACE_ON_ERROR: {error}");
        }
    }

    /// The tracks' names (the first events of the file).
    fn metadata(&self, out: &mut dyn Write, hosts: impl Iterator<Item = Option<usize>>) -> std::io::Result<()> {
        let mut first = true;
        let mut meta = |pid: usize, tid: usize, what: &str, args: Value| -> std::io::Result<()> {
            let event = json!({"name": what, "ph": "M", "ts": 0, "dur": 0, "pid": pid, "tid": tid, "args": args});
            if !std::mem::take(&mut first) {
                out.write_all(b",\n")?;
            }
            serde_json::to_writer(&mut *out, &event).map_err(std::io::Error::other)
        };
        for rank in self.local.clone() {
            meta(rank, 0, "process_name", json!({"name": format!("rank {rank}")}))?;
            meta(rank, 0, "process_sort_index", json!({"sort_index": rank}))?;
            meta(rank, 0, "thread_name", json!({"name": "device"}))?;
        }
        let mut hosts: Vec<Option<usize>> = hosts.collect();
        hosts.sort();
        hosts.dedup();
        if !hosts.is_empty() {
            meta(self.nranks, 0, "process_name", json!({"name": "hosts"}))?;
        }
        for host in hosts {
            let name = host.map_or_else(|| "host controller".to_owned(), |r| format!("host of rank {r}"));
            meta(self.nranks, host_tid(host), "thread_name", json!({"name": name}))?;
        }
        Ok(())
    }

    /// Writes `{"traceEvents": [...], "displayTimeUnit": "ns", "otherData": {...}}`, the events
    /// by `events` (the metadata first, then each preceded by a comma); `dropped`: a trace's
    /// calls dropped per local rank (`dropped_calls`).
    fn write_file(
        &self,
        path: &Path,
        dropped: Option<Vec<u64>>,
        events: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
    ) -> Result<()> {
        let mut other = json!({
            "writer": "pld",
            "host": host_name(),
            "pid": std::process::id(),
            "launcher": self.launcher,
            "nranks": self.nranks,
            "ranks": self.local.clone().collect::<Vec<_>>(),
            "clock": "CLOCK_MONOTONIC",
            "sync_ns": self.clock.sync_ns,
        });
        if let Some(start) = self.clock.offset {
            other["clock_offset_ns"] = json!(start.offset_ns);
            other["clock_offset_error_ns"] = json!(start.error_ns);
            other["clock_offset_at_ns"] = json!(start.at_ns);
        }
        if let Some(end) = *self.clock_at_end.lock().unwrap_or_else(|p| p.into_inner()) {
            other["clock_offset_end_ns"] = json!(end.offset_ns);
            other["clock_offset_end_error_ns"] = json!(end.error_ns);
            other["clock_offset_end_at_ns"] = json!(end.at_ns);
        }
        if let Some(dropped) = dropped {
            other["dropped_calls"] = json!(dropped);
        }
        let written = (|| {
            let mut out = std::io::BufWriter::new(std::fs::File::create(path)?);
            out.write_all(b"{\"traceEvents\":[\n")?;
            events(&mut out)?;
            out.write_all(b"\n],\"displayTimeUnit\":\"ns\",\"otherData\":")?;
            serde_json::to_writer(&mut out, &other).map_err(std::io::Error::other)?;
            out.write_all(b"}\n")?;
            out.flush()
        })();
        written.map_err(|e| Error::system(format!("writing the trace {}", path.display()), e))
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

/// A JSON string (escaped by serde_json).
fn write_str(out: &mut (impl Write + ?Sized), text: &str) -> std::io::Result<()> {
    serde_json::to_writer(out, text).map_err(std::io::Error::other)
}

/// What every event of one label shares, written once per label: the name and category, and
/// the arguments that do not change from call to call.
struct Fragments {
    /// `,\n{"name":..,"cat":..,"ph":"X"`
    head: Vec<u8>,
    /// `,"site":..,"description":..` and, for a collective, group, dtype, op, windows, bytes.
    args: Vec<u8>,
    collective: bool,
    /// The algorithm of a traced collective (LL when the call moved its data as messages).
    algorithm: Option<&'static str>,
}

impl Fragments {
    fn of(label: &Label) -> std::io::Result<Fragments> {
        let (mut head, mut args) = (b",\n{\"name\":".to_vec(), Vec::new());
        write_str(&mut head, &label.trace_name())?;
        let mut algorithm = None;
        let collective = match label {
            Label::Work(work) => {
                write!(head, ",\"cat\":\"{}\",\"ph\":\"X\"", work.kind)?;
                args.extend_from_slice(b",\"description\":");
                write_str(&mut args, &work.text)?;
                if let Some(site) = &work.site {
                    args.extend_from_slice(b",\"site\":");
                    write_str(&mut args, site)?;
                }
                false
            }
            label => {
                let (what, at, group) = label.parts().expect("a label is work or a collective");
                head.extend_from_slice(b",\"cat\":\"collective\",\"ph\":\"X\"");
                args.extend_from_slice(b",\"site\":");
                write_str(&mut args, &format!("{}:{}", at.file(), at.line()))?;
                args.extend_from_slice(b",\"description\":");
                write_str(&mut args, &label.describe())?;
                match group {
                    Some(members) => write!(args, ",\"group\":{members:?}")?,
                    None => args.extend_from_slice(b",\"group\":\"world\""),
                }
                let (dtype, op) = what.dtype_and_op();
                if let Some(dtype) = dtype {
                    write!(args, ",\"dtype\":\"{dtype}\"")?;
                }
                if let Some(op) = op {
                    write!(args, ",\"op\":\"{op}\"")?;
                }
                if let Label::Traced(traced) = label {
                    args.extend_from_slice(b",\"windows\":");
                    write_str(&mut args, &traced.windows)?;
                    write!(args, ",\"bytes\":{}", traced.bytes)?;
                    algorithm = Some(traced.algorithm);
                }
                true
            }
        };
        Ok(Fragments { head, args, collective, algorithm })
    }
}

/// Nanoseconds as microseconds with three decimals, from integers (float formatting was most
/// of the time writing a trace took).
struct Micros(f64);

impl std::fmt::Display for Micros {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let ns = self.0.max(0.0).round() as u64;
        write!(f, "{}.{:03}", ns / 1000, ns % 1000)
    }
}

/// One call as a complete event on its rank's track, preceded by a comma.
fn write_call(out: &mut dyn Write, frags: &Fragments, e: &Shown<'_>, scale: &TickScale) -> std::io::Result<()> {
    let dur_ns = scale.span_ns(e.end.saturating_sub(e.start));
    let wait_ns = scale.span_ns(e.wait).min(dur_ns);
    out.write_all(&frags.head)?;
    write!(out, ",\"ts\":{},\"dur\":{},\"pid\":{},\"tid\":0,", Micros(scale.ns(e.start)), Micros(dur_ns), e.rank)?;
    write!(out, "\"args\":{{\"ok\":{}", e.ok)?;
    if frags.collective {
        write!(out, ",\"call\":{}", e.seq)?;
    }
    out.write_all(&frags.args)?;
    if let Some(algorithm) = frags.algorithm {
        write!(out, ",\"algorithm\":\"{}\"", if e.ll { "LL" } else { algorithm })?;
    }
    if frags.collective {
        write!(out, ",\"wait_us\":{},\"work_us\":{}", Micros(wait_ns), Micros(dur_ns - wait_ns))?;
    }
    if let Some(state) = e.state {
        out.write_all(b",\"state\":")?;
        write_str(out, state)?;
    }
    out.write_all(b"}}")
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
