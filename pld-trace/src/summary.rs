//! Where the time went: per rank and call site, the count, total and mean time and the share
//! spent waiting on peers; and the straggler, the rank the others waited for most.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use crate::{Event, Trace};

/// One rank's calls from one site (or of one name, for work without a site).
#[derive(Clone, Debug, PartialEq)]
pub struct SiteStats {
    /// The rank.
    pub rank: u64,
    /// `all_reduce!`, `kernel `halve``, ...
    pub name: String,
    /// `file:line`, or empty.
    pub site: String,
    /// Calls.
    pub count: usize,
    /// Their time in all, and per call (microseconds).
    pub total_us: f64,
    /// `total_us / count`.
    pub mean_us: f64,
    /// The share of `total_us` spent waiting on peers (collectives; 0 for other work).
    pub wait_share: f64,
}

/// A trace summarised.
#[derive(Clone, Debug)]
pub struct Summary {
    /// By rank, then by first appearance.
    pub sites: Vec<SiteStats>,
    /// Collective calls per rank.
    pub calls: BTreeMap<u64, usize>,
    /// For each rank, the microseconds other ranks spent in calls before it arrived (it came
    /// last to those calls).
    pub waited_for: BTreeMap<u64, f64>,
    /// For each rank that dropped calls to stay within its bound (`PLD_TRACE_EVENTS`), how
    /// many: the counts above are of the calls kept.
    pub dropped: BTreeMap<u64, u64>,
}

impl Summary {
    /// The rank the others waited for most, and how long they waited for it (microseconds).
    pub fn straggler(&self) -> Option<(u64, f64)> {
        self.waited_for.iter().max_by(|a, b| a.1.total_cmp(b.1)).map(|(&r, &us)| (r, us)).filter(|(_, us)| *us > 0.0)
    }
}

/// Summarises the events on the ranks' tracks.
pub fn summary(trace: &Trace) -> Summary {
    let mut sites: Vec<SiteStats> = Vec::new();
    let mut index: BTreeMap<(u64, String, String), usize> = BTreeMap::new();
    let nranks = trace.nranks();
    let mut rank_events: Vec<&Event> =
        trace.events.iter().filter(|e| e.cat != "host" && (nranks == 0 || e.pid < nranks)).collect();
    rank_events.sort_by(|a, b| a.pid.cmp(&b.pid).then(a.ts.total_cmp(&b.ts)));
    for e in rank_events {
        let key = (e.pid, e.name.clone(), e.site().unwrap_or_default().to_owned());
        let i = *index.entry(key).or_insert_with(|| {
            sites.push(SiteStats {
                rank: e.pid,
                name: e.name.clone(),
                site: e.site().unwrap_or_default().to_owned(),
                count: 0,
                total_us: 0.0,
                mean_us: 0.0,
                wait_share: 0.0,
            });
            sites.len() - 1
        });
        let s = &mut sites[i];
        s.count += 1;
        s.total_us += e.dur;
        s.wait_share += e.wait_us().min(e.dur);
    }
    for s in &mut sites {
        s.mean_us = s.total_us / s.count as f64;
        s.wait_share = if s.total_us > 0.0 { s.wait_share / s.total_us } else { 0.0 };
    }
    // The k-th call from one site on every rank is one call: whoever started it last kept the
    // others waiting from their start to its.
    // A trace that dropped its oldest calls kept each rank's last ones, so there the k-th call
    // from the end is one call.
    let by_rank = trace.calls_by_rank();
    let calls = by_rank.iter().map(|(&r, c)| (r, c.len())).collect();
    let dropped = dropped_calls(trace);
    let mut matched: BTreeMap<(String, usize), Vec<&Event>> = BTreeMap::new();
    for events in by_rank.values() {
        let mut seen: BTreeMap<&str, usize> = BTreeMap::new();
        let mut in_order: Vec<&&Event> = events.iter().collect();
        if !dropped.is_empty() {
            in_order.reverse();
        }
        for e in in_order {
            let site = e.site().unwrap_or("?");
            let k = seen.entry(site).or_default();
            matched.entry((site.to_owned(), *k)).or_default().push(e);
            *k += 1;
        }
    }
    let mut waited_for: BTreeMap<u64, f64> = by_rank.keys().map(|&r| (r, 0.0)).collect();
    for events in matched.values().filter(|e| e.len() > 1) {
        let last = events.iter().max_by(|a, b| a.ts.total_cmp(&b.ts)).expect("not empty");
        let kept: f64 = events.iter().map(|e| (last.ts - e.ts).max(0.0)).sum();
        *waited_for.entry(last.pid).or_default() += kept;
    }
    Summary { sites, calls, waited_for, dropped }
}

/// The calls each rank dropped, from the writer's `otherData.dropped_calls` (per rank it lists
/// in `ranks`; a merged trace keeps each file's under `files`).
fn dropped_calls(trace: &Trace) -> BTreeMap<u64, u64> {
    let of = |other: &serde_json::Value| -> Vec<(u64, u64)> {
        let (Some(ranks), Some(dropped)) = (other["ranks"].as_array(), other["dropped_calls"].as_array()) else {
            return Vec::new();
        };
        ranks
            .iter()
            .zip(dropped)
            .filter_map(|(r, d)| Some((r.as_u64()?, d.as_u64()?)))
            .filter(|&(_, d)| d > 0)
            .collect()
    };
    let mut all = of(&trace.other);
    if let Some(files) = trace.other["files"].as_array() {
        all.extend(files.iter().flat_map(of));
    }
    all.into_iter().collect()
}

impl std::fmt::Display for Summary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "{:>4}  {:<26} {:<34} {:>7} {:>12} {:>10} {:>6}",
            "rank", "call", "site", "count", "total(us)", "mean(us)", "wait"
        );
        for s in &self.sites {
            let _ = writeln!(
                out,
                "{:>4}  {:<26} {:<34} {:>7} {:>12.1} {:>10.2} {:>5.0}%",
                s.rank,
                s.name,
                s.site,
                s.count,
                s.total_us,
                s.mean_us,
                100.0 * s.wait_share
            );
        }
        let calls: Vec<String> = self.calls.iter().map(|(r, c)| format!("rank {r}: {c}")).collect();
        let _ = writeln!(out, "collective calls: {}", calls.join(", "));
        if !self.dropped.is_empty() {
            let dropped: Vec<String> = self.dropped.iter().map(|(r, d)| format!("rank {r}: {d}")).collect();
            let _ = writeln!(
                out,
                "dropped: {} (earlier calls not in the trace; PLD_TRACE_EVENTS keeps more)",
                dropped.join(", ")
            );
        }
        match self.straggler() {
            Some((rank, us)) => {
                let _ = writeln!(out, "straggler: rank {rank} (the others waited {us:.1} us in all for it to arrive)");
            }
            None => {
                let _ = writeln!(out, "straggler: none (no call had a rank arrive after another)");
            }
        }
        f.write_str(&out)
    }
}
