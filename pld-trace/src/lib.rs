//! pld's traces, read back: [`Trace::load`] parses a file `PLD_TRACE` wrote (Chrome's Trace
//! Event Format), [`Trace::check`] holds it to that format and to pld's own promises (no two
//! events of one track overlap unless one nests in the other; every rank's calls are all there,
//! once each), [`merge`] puts the files of an MPI job's processes on one timeline, [`summary`]
//! says where the time went, and [`svg`] draws the swimlanes.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use anyhow::{Context, Result, bail};
use serde_json::{Value, json};

mod draw;
mod merge;
mod summary;

pub use draw::svg;
pub use merge::{Alignment, Merged, merge};
pub use summary::{SiteStats, Summary, summary};

/// One complete (`X`) event.
#[derive(Clone, Debug)]
pub struct Event {
    /// As the user wrote it: `all_reduce!`, `kernel `halve``, `write `x``, `sync`.
    pub name: String,
    /// `collective`, `kernel`, `staging`, `local pass` or `host`.
    pub cat: String,
    /// The start, in microseconds (`CLOCK_MONOTONIC`).
    pub ts: f64,
    /// The duration, in microseconds.
    pub dur: f64,
    /// The rank (a rank's track), or the world's rank count (the hosts' track).
    pub pid: u64,
    /// The thread within the track (0 on a rank's; a host's on the hosts' track).
    pub tid: u64,
    /// Call site, call number, group, windows, bytes, dtype, op, algorithm, wait and work time.
    pub args: Value,
}

impl Event {
    /// The call site (`file:line`), when the event has one.
    pub fn site(&self) -> Option<&str> {
        self.args.get("site").and_then(Value::as_str)
    }

    /// The rank's collective call number (collectives only).
    pub fn call(&self) -> Option<u64> {
        self.args.get("call").and_then(Value::as_u64)
    }

    /// Microseconds spent waiting on peers (collectives only).
    pub fn wait_us(&self) -> f64 {
        self.args.get("wait_us").and_then(Value::as_f64).unwrap_or(0.0)
    }

    /// The end, in microseconds.
    pub fn end(&self) -> f64 {
        self.ts + self.dur
    }
}

/// A trace file read back.
#[derive(Clone, Debug)]
pub struct Trace {
    /// Every event of the file as written, metadata included.
    pub raw: Vec<Value>,
    /// The complete events, in file order.
    pub events: Vec<Event>,
    /// The file's `otherData` (pld writes host, pid, launcher, nranks, ranks, clock, sync_ns,
    /// and across hosts clock_offset_ns and clock_offset_error_ns).
    pub other: Value,
}

impl Trace {
    /// Reads and parses `path`; every event must have `ph`, `ts`, `dur`, `pid`, `tid` and `name`.
    pub fn load(path: &Path) -> Result<Trace> {
        let text = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        let doc: Value =
            serde_json::from_str(&text).with_context(|| format!("{} is not valid JSON", path.display()))?;
        Trace::from_json(doc).with_context(|| format!("{} is not a trace pld can read", path.display()))
    }

    /// A trace from its JSON document.
    pub fn from_json(doc: Value) -> Result<Trace> {
        let Some(raw) = doc.get("traceEvents").and_then(Value::as_array).cloned() else {
            bail!("no `traceEvents` array");
        };
        let mut events = Vec::new();
        for (i, e) in raw.iter().enumerate() {
            for field in ["ph", "ts", "dur", "pid", "tid", "name"] {
                if e.get(field).is_none() {
                    bail!("event {i} has no `{field}`: {e}");
                }
            }
            let number =
                |field: &str| e[field].as_f64().with_context(|| format!("event {i}: `{field}` is not a number"));
            let (ts, dur) = (number("ts")?, number("dur")?);
            if !(dur >= 0.0 && ts.is_finite()) {
                bail!("event {i} has a negative or impossible time: {e}");
            }
            if e["ph"] != "X" {
                continue;
            }
            events.push(Event {
                name: e["name"].as_str().with_context(|| format!("event {i}: `name` is not text"))?.to_owned(),
                cat: e.get("cat").and_then(Value::as_str).unwrap_or_default().to_owned(),
                ts,
                dur,
                pid: e["pid"].as_u64().with_context(|| format!("event {i}: `pid` is not a whole number"))?,
                tid: e["tid"].as_u64().with_context(|| format!("event {i}: `tid` is not a whole number"))?,
                args: e.get("args").cloned().unwrap_or(json!({})),
            });
        }
        Ok(Trace { raw, events, other: doc.get("otherData").cloned().unwrap_or(Value::Null) })
    }

    /// The world's rank count, as the file says (0 if it does not).
    pub fn nranks(&self) -> u64 {
        self.other.get("nranks").and_then(Value::as_u64).unwrap_or(0)
    }

    /// The collective events, by rank.
    pub fn calls_by_rank(&self) -> BTreeMap<u64, Vec<&Event>> {
        let mut by_rank: BTreeMap<u64, Vec<&Event>> = BTreeMap::new();
        for e in self.events.iter().filter(|e| e.cat == "collective") {
            by_rank.entry(e.pid).or_default().push(e);
        }
        by_rank.values_mut().for_each(|calls| calls.sort_by_key(|e| e.call()));
        by_rank
    }

    /// Every problem found, each a line; empty when the trace holds what pld promises:
    /// - no two events of one track overlap unless one lies within the other;
    /// - every collective event names its call number, call site and algorithm;
    /// - each rank's call numbers run without a gap or a repeat (every call it made is there,
    ///   once), and every rank that made calls at a site made as many there as every other.
    pub fn check(&self) -> Vec<String> {
        let mut problems = Vec::new();
        let mut tracks: HashMap<(u64, u64), Vec<&Event>> = HashMap::new();
        for e in &self.events {
            tracks.entry((e.pid, e.tid)).or_default().push(e);
        }
        for ((pid, tid), mut events) in tracks {
            // Longest first at one start, so a span's children follow it.
            events.sort_by(|a, b| a.ts.total_cmp(&b.ts).then(b.dur.total_cmp(&a.dur)));
            let mut open: Vec<&Event> = Vec::new();
            for e in events {
                while open.last().is_some_and(|o| o.end() <= e.ts) {
                    open.pop();
                }
                if let Some(o) = open.last()
                    && e.end() > o.end() + 1e-3
                {
                    problems.push(format!(
                        "track {pid}/{tid}: `{}` at {:.3} us overlaps `{}` at {:.3} us without nesting in it",
                        e.name, e.ts, o.name, o.ts
                    ));
                }
                open.push(e);
            }
        }
        for e in self.events.iter().filter(|e| e.cat == "collective") {
            for field in ["call", "site", "algorithm"] {
                if e.args.get(field).is_none() {
                    problems.push(format!("rank {}: `{}` at {:.3} us has no `{field}`", e.pid, e.name, e.ts));
                }
            }
        }
        let mut per_site: BTreeMap<&str, BTreeMap<u64, usize>> = BTreeMap::new();
        for (rank, calls) in self.calls_by_rank() {
            let numbers: Vec<u64> = calls.iter().filter_map(|e| e.call()).collect();
            if let Some(&first) = numbers.first() {
                for (i, &n) in numbers.iter().enumerate() {
                    if n != first + i as u64 {
                        problems.push(format!("rank {rank}: call #{n} where #{} was due", first + i as u64));
                        break;
                    }
                }
            }
            for e in calls {
                *per_site.entry(e.site().unwrap_or("?")).or_default().entry(rank).or_default() += 1;
            }
        }
        for (site, ranks) in per_site {
            let counts: Vec<usize> = ranks.values().copied().collect();
            if counts.windows(2).any(|w| w[0] != w[1]) {
                problems.push(format!("{site}: the ranks made different numbers of calls there: {ranks:?}"));
            }
        }
        problems
    }
}
