//! The flight recorder: each rank's last calls in a fixed ring, always on (64 by default,
//! `PLD_FLIGHT_RECORDER`), for hang reports and mismatch errors. One thread at a time writes a
//! rank's ring (its worker, or its host running a call inline: they hand over through the
//! queue); any thread may read it, so every slot is a small seqlock of atomics, and a call costs
//! a few plain stores. Labels are interned: a slot names its call site by index, so recording a
//! call clones nothing and takes no lock unless its site is new to the recording thread.

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering, fence};

use crate::call::{CallWhat, Label};

/// How an entry's call went.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum State {
    Running = 1,
    Done = 2,
    Failed = 3,
}

impl State {
    fn from_u8(v: u8) -> State {
        match v {
            2 => State::Done,
            3 => State::Failed,
            _ => State::Running,
        }
    }
}

/// One rank's ring.
pub(crate) struct Recorder {
    /// A power of two long, longer than `keep` (an index is a mask, not a division: one per
    /// call cost 3%); one slot, never read, where nothing is kept.
    ring: Box<[Slot]>,
    /// Each slot's times, where calls are timed (else empty).
    times: Box<[Times]>,
    /// The entries reports show: the setting's count.
    keep: usize,
    /// Entries begun so far: the next entry's number.
    next: AtomicU64,
    sites: Mutex<Sites>,
}

/// One entry: two words, written by the rank's thread with plain stores (a call stores both
/// and the ring's count when it starts, and one when it ends), four to a cache line so the ring
/// stays small in the caches the call's data moves through.
#[derive(Default)]
struct Slot {
    /// The rank's collective call number (0: work that is not a collective).
    seq: AtomicU64,
    /// The site's index (low 32 bits), the [`State`] (bits 32..40) and whether the call moved
    /// its data as LL messages (bit 40; timed recorders only).
    site_state: AtomicU64,
}

/// An entry's ticks at the start and end, and spent waiting (timed recorders only).
#[derive(Default)]
struct Times {
    start: AtomicU64,
    end: AtomicU64,
    wait: AtomicU64,
}

fn site_state(site: u32, state: State, ll: bool) -> u64 {
    u64::from(site) | (state as u64) << 32 | u64::from(ll) << 40
}

/// The labels of the calls recorded, by index; at most [`Sites::MAX`], then one shared entry.
#[derive(Default)]
struct Sites {
    labels: Vec<Label>,
    /// Work labels by text (each staging call makes a new one).
    texts: HashMap<String, u32>,
    /// Call labels by the address of their place in the source: a site is looked up among
    /// the few made there, not the whole table.
    by_place: HashMap<usize, Vec<u32>>,
}

impl Sites {
    /// Distinct call sites kept; a program that makes more (new groups in a loop) has the rest
    /// recorded as "a call".
    const MAX: usize = 4096;
    const OVERFLOW: u32 = u32::MAX;
}

/// An entry read back.
#[derive(Clone, Debug)]
pub(crate) struct Entry {
    pub(crate) seq: u64,
    pub(crate) label: Option<Label>,
    pub(crate) state: State,
    pub(crate) start: u64,
    pub(crate) end: u64,
    pub(crate) wait: u64,
    pub(crate) ll: bool,
}

impl std::fmt::Debug for Label {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.describe())
    }
}

/// A recording thread's cache of interned sites (its last one first).
#[derive(Default)]
pub(crate) struct SiteCache {
    /// The last world collective's site, apart (the common case, compared without a match).
    last_call: Option<(&'static std::panic::Location<'static>, CallWhat, u32)>,
    last: Option<(Label, u32)>,
    known: Vec<(Label, u32)>,
}

impl Recorder {
    /// A recorder of the last `calls` calls, with their times when `timed`.
    pub(crate) fn new(calls: usize, timed: bool) -> Recorder {
        // One slot more than kept: the slot of the entry being written is never one a report
        // reads.
        // (The settings keep `calls` far below an overflow; one slot if it ever were not, so the
        // unchecked index stays in bounds.)
        let len = calls.checked_add(1).and_then(usize::checked_next_power_of_two).unwrap_or(1);
        Recorder {
            ring: (0..len).map(|_| Slot::default()).collect(),
            times: (0..if timed && calls > 0 { len } else { 0 }).map(|_| Times::default()).collect(),
            keep: calls,
            next: AtomicU64::new(0),
            sites: Mutex::new(Sites::default()),
        }
    }

    /// The slot of entry `number`, without a bounds check (every call records: with the check
    /// and the length's loads the recorder took 10 more instructions a call).
    #[inline(always)]
    fn slot(&self, number: u64) -> &Slot {
        let index = number as usize & (self.ring.len() - 1);
        // SAFETY: the ring is never empty and its length is a power of two, so `index`, masked
        // with one less, is below the length.
        unsafe { self.ring.get_unchecked(index) }
    }

    /// The times of entry `number`, where calls are timed.
    #[inline(always)]
    fn times(&self, number: u64) -> Option<&Times> {
        self.times.get(number as usize & (self.ring.len() - 1))
    }

    /// Whether it records at all.
    pub(crate) fn enabled(&self) -> bool {
        self.keep != 0
    }

    /// The index of `label`'s site, interned on first sight.
    #[inline(always)]
    fn site(&self, label: &Label, cache: &mut SiteCache) -> u32 {
        // A call issued from its site's plan, which knows its site here.
        if let Label::Call(_, _, known) = label
            && *known != 0
        {
            return known - 1;
        }
        // A world collective from the thread's last site, compared on its place and what it is
        // kept unboxed (measured at 1 rank, 8 B all_reduce: the recorder costs about 3 ns a call with
        // this, 4-5 ns with only the general label comparison below).
        if let Label::Call(what, at, _) = label
            && let Some((last_at, last_what, id)) = &cache.last_call
            && std::ptr::eq(*at, *last_at)
            && what == last_what
        {
            return *id;
        }
        if let Some((last, id)) = &cache.last
            && last.same_site(label)
        {
            return *id;
        }
        self.new_site(label, cache)
    }

    /// [`Recorder::site`] for a label other than the thread's last.
    #[cold]
    #[inline(never)]
    fn new_site(&self, label: &Label, cache: &mut SiteCache) -> u32 {
        let id = match cache.known.iter().find(|(known, _)| known.same_site(label)) {
            Some((_, id)) => *id,
            None => {
                let id = self.intern(label);
                // Work labels are new objects each time: caching them would only grow.
                if !matches!(label, Label::Work(_)) && id != Sites::OVERFLOW && cache.known.len() < Sites::MAX {
                    cache.known.push((label.clone(), id));
                }
                id
            }
        };
        if let Label::Call(what, at, _) = label {
            cache.last_call = Some((at, *what, id));
        }
        cache.last = Some((label.clone(), id));
        id
    }

    /// The index of `label`'s site in the recorder's table (added if new), or
    /// [`Sites::OVERFLOW`] once the table is full. A host interns its call sites' labels
    /// when it plans them ([`RecorderSite`](crate::call::RecorderSite)).
    pub(crate) fn intern(&self, label: &Label) -> u32 {
        let mut sites = self.sites.lock().unwrap_or_else(|p| p.into_inner());
        // Work labels by their text (each staging call makes a new one); calls by site, so a
        // site planned again (its windows changed) keeps its index.
        let place = label.parts().map(|(_, at, _)| std::ptr::from_ref(at) as usize);
        let known = match (label, place) {
            (Label::Work(work), _) => sites.texts.get(&work.text).copied(),
            (_, Some(place)) => sites
                .by_place
                .get(&place)
                .and_then(|ids| ids.iter().copied().find(|&id| sites.labels[id as usize].same_site(label))),
            _ => None,
        };
        if let Some(id) = known {
            return id;
        }
        if sites.labels.len() >= Sites::MAX {
            return Sites::OVERFLOW;
        }
        let id = sites.labels.len() as u32;
        sites.labels.push(label.clone());
        match (label, place) {
            (Label::Work(work), _) => {
                sites.texts.insert(work.text.clone(), id);
            }
            (_, Some(place)) => sites.by_place.entry(place).or_default().push(id),
            _ => {}
        }
        id
    }

    /// Records that the rank starts `label` (collective call `seq`, 0 for other work) at
    /// `start` ticks (0 untimed); returns the entry's number and site for [`Recorder::end`].
    /// Inlined, as `end`: every call records (out of line, 5% of a 1-rank barrier's host path).
    #[inline(always)]
    pub(crate) fn begin(&self, label: &Label, seq: u64, start: u64, cache: &mut SiteCache) -> (u64, u32) {
        let site = self.site(label, cache);
        let number = self.next.load(Ordering::Relaxed);
        let slot = self.slot(number);
        // A reader that sees any of the stores below sees `next` at `number` at least, and so
        // knows the slot's earlier entry is being overwritten.
        fence(Ordering::Release);
        slot.seq.store(seq, Ordering::Relaxed);
        slot.site_state.store(site_state(site, State::Running, false), Ordering::Relaxed);
        if start != 0
            && let Some(times) = self.times(number)
        {
            times.start.store(start, Ordering::Relaxed);
            times.end.store(0, Ordering::Relaxed);
            times.wait.store(0, Ordering::Relaxed);
        }
        self.next.store(number + 1, Ordering::Release);
        (number, site)
    }

    /// Records how entry `number` ended.
    #[inline(always)]
    pub(crate) fn end(&self, number: u64, site: u32, state: State, (end, wait, ll): (u64, u64, bool)) {
        let slot = self.slot(number);
        if end != 0
            && let Some(times) = self.times(number)
        {
            times.end.store(end, Ordering::Relaxed);
            times.wait.store(wait, Ordering::Relaxed);
        }
        slot.site_state.store(site_state(site, state, ll), Ordering::Release);
    }

    /// The entries still in the ring, oldest first (one being rewritten now is left out).
    pub(crate) fn entries(&self) -> Vec<Entry> {
        if !self.enabled() {
            return Vec::new();
        }
        let next = self.next.load(Ordering::Acquire);
        let first = next.saturating_sub(self.keep as u64);
        let raw: Vec<(u32, Entry)> = (first..next)
            .map(|number| {
                let slot = self.slot(number);
                let packed = slot.site_state.load(Ordering::Acquire);
                let time = |f: fn(&Times) -> &AtomicU64| self.times(number).map_or(0, |t| f(t).load(Ordering::Relaxed));
                let entry = Entry {
                    seq: slot.seq.load(Ordering::Relaxed),
                    label: None,
                    state: State::from_u8((packed >> 32) as u8),
                    start: time(|t| &t.start),
                    end: time(|t| &t.end),
                    wait: time(|t| &t.wait),
                    ll: packed >> 40 & 1 != 0,
                };
                (packed as u32, entry)
            })
            .collect();
        // The writer starts on entry `n + len` (in entry `n`'s slot) only once `next` is past
        // `n + len - 1`: entries read before `next` got there are whole.
        fence(Ordering::Acquire);
        let after = self.next.load(Ordering::Relaxed);
        let len = self.ring.len() as u64;
        let raw: Vec<(u32, Entry)> =
            raw.into_iter().zip(first..).filter(|(_, number)| after < number + len).map(|(e, _)| e).collect();
        let sites = self.sites.lock().unwrap_or_else(|p| p.into_inner());
        raw.into_iter()
            .map(|(site, mut entry)| {
                entry.label = sites.labels.get(site as usize).cloned();
                entry
            })
            .collect()
    }
}

/// The entries as text: runs of consecutive calls from one site and in one state are one item
/// (`#3-#60 all_reduce(...) at f.rs:9:5: done (58 calls)`), so a loop reads as one line.
pub(crate) fn describe_entries(entries: &[Entry], running: impl Fn(&Entry) -> String) -> Vec<String> {
    let mut items: Vec<String> = Vec::new();
    let mut i = 0;
    while i < entries.len() {
        let e = &entries[i];
        let mut j = i + 1;
        if e.state != State::Running {
            while j < entries.len()
                && entries[j].state == e.state
                && entries[j].seq != 0
                && e.seq != 0
                && entries[j].seq == entries[j - 1].seq + 1
                && match (&entries[j].label, &e.label) {
                    (Some(a), Some(b)) => a.same_site(b),
                    _ => false,
                }
            {
                j += 1;
            }
        }
        let what = e.label.as_ref().map_or_else(|| "a call".to_owned(), Label::describe);
        let number = match (e.seq, entries[j - 1].seq) {
            (0, _) => String::new(),
            (a, b) if a == b => format!("#{a} "),
            (a, b) => format!("#{a}-#{b} "),
        };
        let state = match e.state {
            State::Done => "done".to_owned(),
            State::Failed => "failed".to_owned(),
            State::Running => running(e),
        };
        let count = if j - i > 1 { format!(" ({} calls)", j - i) } else { String::new() };
        items.push(format!("{number}{what}: {state}{count}"));
        i = j;
    }
    items
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::call::CallWhat;

    /// Records a call of `label` that ran to its end in `state`.
    fn record(recorder: &Recorder, label: &Label, seq: u64, state: State, cache: &mut SiteCache) {
        let (entry, site) = recorder.begin(label, seq, 0, cache);
        recorder.end(entry, site, state, (0, 0, false));
    }

    #[test]
    fn keeps_the_last_calls_and_runs_them_together() {
        let recorder = Recorder::new(4, false);
        let mut cache = SiteCache::default();
        let here = std::panic::Location::caller();
        let call = Label::Call(CallWhat::Barrier, here, 0);
        for seq in 1..=6 {
            record(&recorder, &call, seq, State::Done, &mut cache);
        }
        let staging = Label::work("staging", "write `x`".into(), "write of `x` on rank 0".into(), None);
        recorder.begin(&staging, 0, 0, &mut cache);
        let entries = recorder.entries();
        assert_eq!(entries.iter().map(|e| e.seq).collect::<Vec<_>>(), [4, 5, 6, 0]);
        let text = describe_entries(&entries, |_| "running".into());
        assert_eq!(text.len(), 2, "{text:?}");
        assert!(text[0].starts_with("#4-#6 barrier() at "), "{text:?}");
        assert!(text[0].ends_with(": done (3 calls)"), "{text:?}");
        assert_eq!(text[1], "write of `x` on rank 0: running");
    }

    #[test]
    fn a_planned_call_names_the_site_its_plan_interned() {
        let recorder = Recorder::new(4, false);
        let mut cache = SiteCache::default();
        let here = std::panic::Location::caller();
        let barrier = Label::Call(CallWhat::Barrier, here, 0);
        let broadcast = Label::Call(CallWhat::Broadcast { root: 1, dtype: pld_model::DType::F32 }, here, 0);
        // A site planned again keeps its index; another call at the same place gets its own.
        let site = recorder.intern(&barrier);
        assert_eq!(recorder.intern(&barrier), site);
        let other = recorder.intern(&broadcast);
        assert_ne!(other, site);
        // The plan's site is taken as it is (no lookup), and names the call in reports.
        record(&recorder, &Label::Call(CallWhat::Barrier, here, other + 1), 1, State::Done, &mut cache);
        record(&recorder, &barrier, 2, State::Done, &mut cache);
        let labels: Vec<String> = recorder.entries().iter().map(|e| e.label.as_ref().unwrap().describe()).collect();
        assert!(labels[0].starts_with("broadcast(root = 1"), "{labels:?}");
        assert!(labels[1].starts_with("barrier() at "), "{labels:?}");
    }

    #[test]
    fn records_nothing_with_no_slots() {
        let recorder = Recorder::new(0, false);
        assert!(!recorder.enabled());
        assert!(recorder.entries().is_empty());
    }
}
