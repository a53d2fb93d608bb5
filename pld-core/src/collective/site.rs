//! The calls planned at each call site: a collective that repeats, at the same line of host
//! code, a call already checked and planned there (the same collective and options, the same
//! windows with the same shapes and signal) skips its checks and the building of its kernel's
//! arguments; it is only numbered and submitted.
//!
//! Why: a small call's time at 2 ranks is its host path (some 800 instructions, none above 5%:
//! checks, arguments, fingerprint, label, bookkeeping), against Open MPI's eager 0.07 us. A
//! loop calls one site with one set of windows; what depends only on those is worked out once.
//!
//! What a call may reuse is decided by what its plan read: everything in the key below. Only
//! calls with nothing to do per call besides their kernel are kept: over the world (a group's
//! call labels its group each time), with a signal given (one made for the call is new each
//! time), and without host steps (`premul_sum`'s scaling, `avg`'s division, fp8's f32 shadow).

use crate::call::{CallWhat, Label, RecorderSite};
use crate::memory::Operand;
use std::panic::Location;

use super::Prepared;

/// The slots of the cache: a call site (and its first window) picks one, so a loop over a
/// few sites keeps each; a site that alternates windows (double buffering) keeps both unless
/// they land in one slot.
const SLOTS: usize = 64;

/// The most windows a collective takes besides its signal (all_to_all_v's four).
const MAX_WINDOWS: usize = 4;

/// A call planned at a site, with what its plan read.
struct SitePlan {
    at: &'static Location<'static>,
    what: CallWhat,
    /// The rank count the call declared.
    nranks: Option<usize>,
    /// The call's views in order (`count` of them), then its signal's, by identity: a view
    /// identity is one allocation with one shape, and is never reused (`Window`'s `id`).
    views: [u64; MAX_WINDOWS + 1],
    count: usize,
    prepared: Prepared,
    /// The call's label as a trace shows it, where calls are timed (looked up in the host's
    /// cache per call, it cost a tenth of a small traced call).
    traced: Option<Label>,
    /// The call's site in the flight recorder of the host's rank, where it has one.
    recorder_site: RecorderSite,
}

/// The calls planned by one host, by call site (see the module's text).
#[derive(Default)]
pub(crate) struct SitePlans {
    slots: Vec<Option<SitePlan>>,
}

/// What a call is, to look it up: its site, collective and options, windows and signal.
#[derive(Clone, Copy)]
pub(crate) struct SiteKey<'k, 'a> {
    pub(crate) at: &'static Location<'static>,
    pub(crate) what: CallWhat,
    pub(crate) nranks: Option<usize>,
    pub(crate) operands: &'k [(&'static str, Operand<'a>)],
    pub(crate) signal: Operand<'a>,
}

impl SiteKey<'_, '_> {
    #[inline(always)]
    fn slot(&self) -> usize {
        let view = self.operands.first().map_or(self.signal.id, |(_, o)| o.id);
        let mixed = (self.at as *const Location<'_> as u64) ^ view.rotate_left(17);
        (mixed.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> (u64::BITS - SLOTS.trailing_zeros())) as usize
    }
}

impl SitePlans {
    /// The plan kept for `key`'s call, if its site planned this same call last, its traced
    /// label and its site in the flight recorder.
    #[inline(always)]
    pub(crate) fn get(&mut self, key: &SiteKey<'_, '_>) -> Option<(&mut Prepared, Option<&Label>, RecorderSite)> {
        let plan = self.slots.get_mut(key.slot())?.as_mut()?;
        let count = key.operands.len();
        let same = std::ptr::eq(plan.at, key.at)
            && plan.what == key.what
            && plan.nranks == key.nranks
            && plan.count == count
            && plan.views[MAX_WINDOWS] == key.signal.id;
        if !same {
            return None;
        }
        for i in 0..count.min(MAX_WINDOWS) {
            if plan.views[i] != key.operands[i].1.id {
                return None;
            }
        }
        Some((&mut plan.prepared, plan.traced.as_ref(), plan.recorder_site))
    }

    /// Keeps `prepared` (and its traced label, where calls are timed, and its site in the
    /// flight recorder) as the plan of `key`'s call (in its slot, in place of what was there).
    pub(crate) fn keep(
        &mut self,
        key: &SiteKey<'_, '_>,
        prepared: &Prepared,
        traced: Option<Label>,
        recorder_site: RecorderSite,
    ) {
        if self.slots.is_empty() {
            self.slots.resize_with(SLOTS, || None);
        }
        if key.operands.len() > MAX_WINDOWS {
            return;
        }
        let mut views = [0; MAX_WINDOWS + 1];
        for (view, (_, operand)) in views.iter_mut().zip(key.operands) {
            *view = operand.id;
        }
        views[MAX_WINDOWS] = key.signal.id;
        let slot = key.slot();
        self.slots[slot] = Some(SitePlan {
            at: key.at,
            what: key.what,
            nranks: key.nranks,
            views,
            count: key.operands.len(),
            prepared: *prepared,
            traced,
            recorder_site,
        });
    }
}
