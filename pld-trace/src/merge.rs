//! The files of one MPI job's processes (`trace.<rank>.json`) on one timeline. Every process of
//! one host reads the same `CLOCK_MONOTONIC`, so their events stay where they are. A second
//! host's clock has another origin: where the job spanned hosts, pld measured each host's
//! clock against rank 0's at start-up (`clock_offset_ns`: the fastest of 32 round trips between
//! the host's first rank and rank 0, NTP's estimate, right to within half that round trip,
//! `clock_offset_error_ns`), and each host's events move by that offset onto rank 0's clock;
//! where the world ended normally it was measured again then (`clock_offset_end_ns`), and the
//! shift follows the line between the two, so that clocks drifting apart over a long run stay
//! aligned. The residual skew is the two largest of those bounds added (two hosts were each
//! measured against rank 0's). Files without it (an older pld) are aligned on their
//! `sync_ns` instead (when each process left the launcher's start-up exchange, a barrier every
//! process leaves together), with the residual skew how far apart one host's processes left it.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{Result, bail};
use serde_json::{Value, json};

use crate::Trace;

/// A merged trace and how its clocks were aligned.
pub struct Merged {
    /// The events of every file, shifted where needed.
    pub trace: Trace,
    /// Hosts seen, each with the shift applied to its events (microseconds; when the world
    /// started, where the clocks were measured).
    pub shifts: BTreeMap<String, f64>,
    /// Hosts whose clock was measured again when the world ended, with how far it drifted from
    /// rank 0's over the run (microseconds; the shift grows by as much along the run).
    pub drift_us: BTreeMap<String, f64>,
    /// The skew left between hosts (microseconds): 0 for one host; with measured offsets, the
    /// two largest error bounds of distinct hosts added (each host was measured against rank
    /// 0's, whose own is 0); aligned on `sync_ns`, the largest spread of it among one host's
    /// files.
    pub skew_us: f64,
    /// How the clocks were aligned.
    pub alignment: Alignment,
}

/// How a merge put its files' clocks on one timeline.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Alignment {
    /// Every file from one host: one `CLOCK_MONOTONIC`, nothing shifted, no skew.
    OneClock,
    /// Each host shifted by its clock's offset to rank 0's, measured at start-up; the skew is
    /// the offsets' error bounds.
    MeasuredOffsets,
    /// Each host shifted to line up when its processes left the start-up exchange (files
    /// without measured offsets); the skew is how far apart one host's processes left it.
    StartUpExchange,
}

impl Alignment {
    /// How the clocks were aligned, in words.
    pub fn describe(self) -> &'static str {
        match self {
            Alignment::OneClock => "one host, one CLOCK_MONOTONIC: no shift",
            Alignment::MeasuredOffsets => "each host shifted by its clock's offset, measured at start-up",
            Alignment::StartUpExchange => "each host shifted to line its start-up exchange up",
        }
    }

    /// What the residual skew is, in words.
    pub fn skew_is(self) -> &'static str {
        match self {
            Alignment::OneClock => "one clock",
            Alignment::MeasuredOffsets => "the offsets' error bounds: half the round trip each was measured over",
            Alignment::StartUpExchange => "how far apart one host's processes left the start-up exchange",
        }
    }
}

/// How one file's events move onto the merged clock: by `shift_us` at `at_us` of the file's
/// own clock, and by `drift` more for every microsecond after it (the offset measured when the
/// world ended, against the one when it started).
#[derive(Clone, Copy, Debug)]
struct Shift {
    at_us: f64,
    shift_us: f64,
    drift: f64,
}

impl Shift {
    fn constant(shift_us: f64) -> Shift {
        Shift { at_us: 0.0, shift_us, drift: 0.0 }
    }

    /// The shift at `ts` of the file's clock.
    fn at(self, ts: f64) -> f64 {
        self.shift_us + self.drift * (ts - self.at_us)
    }
}

/// Merges the traces at `paths` (each written by one process).
pub fn merge(paths: &[impl AsRef<Path>]) -> Result<Merged> {
    if paths.is_empty() {
        bail!("no trace files to merge");
    }
    let traces: Vec<Trace> = paths.iter().map(|p| Trace::load(p.as_ref())).collect::<Result<_>>()?;
    let host = |t: &Trace| t.other.get("host").and_then(Value::as_str).unwrap_or("?").to_owned();
    let sync = |t: &Trace| t.other.get("sync_ns").and_then(Value::as_u64).unwrap_or(0) as f64 / 1e3;
    let mut per_host: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    for t in &traces {
        per_host.entry(host(t)).or_default().push(sync(t));
    }
    // Each host's reference: the mean of its processes' sync points.
    let reference: BTreeMap<String, f64> =
        per_host.iter().map(|(h, s)| (h.clone(), s.iter().sum::<f64>() / s.len() as f64)).collect();
    let first = reference[&host(&traces[0])];
    let spread = per_host
        .values()
        .map(|s| s.iter().cloned().fold(f64::MIN, f64::max) - s.iter().cloned().fold(f64::MAX, f64::min))
        .fold(0.0, f64::max);
    // The offsets pld measured, where every file has one: when the world started and, where the
    // world ended normally, again then (each host's files carry the same).
    let measured: Option<Vec<(String, Shift, f64)>> = traces
        .iter()
        .map(|t| {
            let at = |key: &str| t.other.get(key).and_then(Value::as_u64).map(|ns| ns as f64 / 1e3);
            let offset = |key: &str| t.other.get(key).and_then(Value::as_i64).map(|ns| ns as f64 / 1e3);
            let start = (at("clock_offset_at_ns").unwrap_or(0.0), offset("clock_offset_ns")?);
            let mut error = at("clock_offset_error_ns")?;
            let mut shift = Shift { at_us: start.0, shift_us: start.1, drift: 0.0 };
            if let (Some(end_at), Some(end), Some(end_error)) =
                (at("clock_offset_end_at_ns"), offset("clock_offset_end_ns"), at("clock_offset_end_error_ns"))
                && end_at > start.0
            {
                shift.drift = (end - start.1) / (end_at - start.0);
                error = error.max(end_error);
            }
            Some((host(t), shift, error))
        })
        .collect();
    // By file: how its events move (microseconds), onto rank 0's clock where it was measured.
    let (file_shifts, skew_us, alignment): (Vec<Shift>, f64, Alignment) = match measured {
        Some(measured) if per_host.len() > 1 => {
            // Two hosts were each measured against rank 0's: between them the error can add
            // up (rank 0's own host has none), so the two largest bounds of distinct hosts.
            let mut worst: BTreeMap<&str, f64> = BTreeMap::new();
            for (h, _, error) in &measured {
                let e = worst.entry(h.as_str()).or_insert(0.0);
                *e = e.max(*error);
            }
            let mut bounds: Vec<f64> = worst.into_values().collect();
            bounds.sort_by(|a, b| b.total_cmp(a));
            let skew = bounds.iter().take(2).sum();
            (measured.into_iter().map(|(_, shift, _)| shift).collect(), skew, Alignment::MeasuredOffsets)
        }
        _ if per_host.len() > 1 => (
            traces.iter().map(|t| Shift::constant(first - reference[&host(t)])).collect(),
            spread,
            Alignment::StartUpExchange,
        ),
        _ => (vec![Shift::constant(0.0); traces.len()], 0.0, Alignment::OneClock),
    };
    // By host, for the summary: its first file's shift when the world started, and how far its
    // clock drifted from rank 0's by the end.
    let mut shifts: BTreeMap<String, f64> = BTreeMap::new();
    let mut drift_us: BTreeMap<String, f64> = BTreeMap::new();
    for (t, shift) in traces.iter().zip(&file_shifts) {
        shifts.entry(host(t)).or_insert(shift.shift_us);
        let run = t.events.iter().map(|e| e.ts + e.dur).fold(shift.at_us, f64::max) - shift.at_us;
        if shift.drift != 0.0 {
            // To the nanosecond, the offsets' own resolution.
            drift_us.entry(host(t)).or_insert((shift.drift * run * 1e3).round() / 1e3);
        }
    }
    let mut raw = Vec::new();
    let mut seen_meta = std::collections::HashSet::new();
    for (t, shift) in traces.iter().zip(&file_shifts) {
        for e in &t.raw {
            let mut e = e.clone();
            if e["ph"] == "M" {
                if !seen_meta.insert(e.to_string()) {
                    continue;
                }
            } else if let Some(ts) = e["ts"].as_f64() {
                e["ts"] = json!(ts + shift.at(ts));
            }
            raw.push(e);
        }
    }
    let nranks = traces.iter().map(Trace::nranks).max().unwrap_or(0);
    let files: Vec<Value> = traces.iter().map(|t| t.other.clone()).collect();
    let doc = json!({
        "traceEvents": raw,
        "displayTimeUnit": "ns",
        "otherData": {
            "writer": "pld-trace merge",
            "nranks": nranks,
            "clock": if alignment == Alignment::MeasuredOffsets {
                "CLOCK_MONOTONIC of rank 0's host"
            } else {
                "CLOCK_MONOTONIC of the first file's host"
            },
            "host_shifts_us": shifts,
            "host_drift_us": drift_us,
            "skew_us": skew_us,
            "alignment": alignment.describe(),
            "files": files,
        },
    });
    Ok(Merged { trace: Trace::from_json(doc)?, shifts, drift_us, skew_us, alignment })
}

impl Merged {
    /// Writes the merged trace.
    pub fn write(&self, path: &Path) -> Result<()> {
        let doc = json!({"traceEvents": self.trace.raw, "displayTimeUnit": "ns", "otherData": self.trace.other});
        std::fs::write(path, serde_json::to_vec(&doc)?)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A one-event trace of `rank` as process `host` wrote it, its start-up exchange left at
    /// `sync_us` and its event at `ts_us` (both on that host's clock).
    fn file(dir: &Path, host: &str, rank: u64, sync_us: u64, ts_us: f64) -> std::path::PathBuf {
        let doc = json!({
            "traceEvents": [{"name": "barrier!", "cat": "collective", "ph": "X", "ts": ts_us, "dur": 1.0,
                             "pid": rank, "tid": 0, "args": {"call": 1, "site": "a.rs:1", "algorithm": "LL"}}],
            "otherData": {"host": host, "nranks": 3, "sync_ns": sync_us * 1000},
        });
        let path = dir.join(format!("t.{rank}.json"));
        std::fs::write(&path, doc.to_string()).unwrap();
        path
    }

    #[test]
    fn one_host_keeps_its_clock_and_another_host_is_shifted_onto_it() {
        let dir = std::env::temp_dir().join(format!("pld-trace-merge-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        // Host a's processes left the start-up exchange at 1000 and 1004 us of its clock (the
        // spread is the skew left), host b's at 501000 us of its own: its events move back by
        // 500 ms less the half of a's spread (each host's reference is its processes' mean).
        let paths = [
            file(&dir, "a", 0, 1000, 2000.0),
            file(&dir, "a", 1, 1004, 2010.0),
            file(&dir, "b", 2, 501_000, 502_000.0),
        ];
        let merged = merge(&paths).unwrap();
        assert_eq!(merged.shifts["a"], 0.0);
        assert_eq!(merged.shifts["b"], 1002.0 - 501_000.0);
        assert_eq!(merged.skew_us, 4.0);
        let ts: Vec<f64> = merged.trace.events.iter().map(|e| e.ts).collect();
        assert_eq!(ts, [2000.0, 2010.0, 2002.0]);
        assert!(merged.trace.check().is_empty(), "{:?}", merged.trace.check());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn measured_offsets_put_every_host_on_rank_0s_clock() {
        let dir = std::env::temp_dir().join(format!("pld-trace-merge-offsets-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        // Host b's clock reads 500 ms ahead of rank 0's (offset -500 ms, right to within 12 us):
        // its event at 502000 us happened at 2000 us of rank 0's clock, whatever its sync point.
        let with_offset = |path: std::path::PathBuf, offset_us: i64, error_us: u64| {
            let mut doc: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
            doc["otherData"]["clock_offset_ns"] = json!(offset_us * 1000);
            doc["otherData"]["clock_offset_error_ns"] = json!(error_us * 1000);
            std::fs::write(&path, doc.to_string()).unwrap();
            path
        };
        let paths = [
            with_offset(file(&dir, "a", 0, 1000, 2000.0), 0, 0),
            with_offset(file(&dir, "a", 1, 1004, 2010.0), 0, 0),
            with_offset(file(&dir, "b", 2, 509_000, 502_000.0), -500_000, 12),
        ];
        let merged = merge(&paths).unwrap();
        assert_eq!(merged.shifts["a"], 0.0);
        assert_eq!(merged.shifts["b"], -500_000.0);
        assert_eq!(merged.skew_us, 12.0);
        let ts: Vec<f64> = merged.trace.events.iter().map(|e| e.ts).collect();
        assert_eq!(ts, [2000.0, 2010.0, 2000.0]);
        // A third host, 30 ms behind and right to within 5 us: between b and c the two bounds add.
        let c = with_offset(file(&dir, "c", 3, 1, -27_990.0), 30_000, 5);
        let merged = merge(&[&paths[0], &paths[1], &paths[2], &c]).unwrap();
        assert_eq!(merged.skew_us, 17.0);
        assert_eq!(merged.trace.events.iter().map(|e| e.ts).collect::<Vec<_>>(), [2000.0, 2010.0, 2000.0, 2010.0]);
        // Measured again when the world ended, 10 ms of b's clock later, 10 us further: b's
        // clock runs 1 us a millisecond fast, and an event 5 ms in moves by half of that more.
        let drifting = |path: &std::path::PathBuf| {
            let mut doc: Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
            doc["otherData"]["clock_offset_at_ns"] = json!(497_000_000u64);
            doc["otherData"]["clock_offset_end_at_ns"] = json!(507_000_000u64);
            doc["otherData"]["clock_offset_end_ns"] = json!(-499_990_000i64);
            doc["otherData"]["clock_offset_end_error_ns"] = json!(20_000u64);
            std::fs::write(path, doc.to_string()).unwrap();
        };
        drifting(&paths[2]);
        let merged = merge(&paths).unwrap();
        assert_eq!(merged.trace.events.iter().map(|e| e.ts).collect::<Vec<_>>(), [2000.0, 2010.0, 2005.0]);
        assert_eq!(merged.skew_us, 20.0);
        assert_eq!(merged.drift_us["b"], 5.001);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
