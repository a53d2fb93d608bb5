//! The host collectives: the checks and dispatch behind `Host::all_reduce` and friends. Every
//! check reads the contract table of `pld-model`; every data movement happens in a builtin
//! device kernel.

use std::panic::Location;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use pld_model::{
    AllReduceMode, Collective, DType, Element, KernelKind, KernelVariant, LL_MAX_BYTES, ReduceOp, TILE_BYTES,
};

use crate::call::{CallParts, CallWhat, Label, RecorderSite, SignalCells};
use crate::device::abi::CollArgs;
use crate::device::builtins;
use crate::error::{Error, Result};
use crate::fingerprint::Fingerprint;
use crate::group::Group;
use crate::host::{Host, foreign_window};
use crate::memory::{Allocation, Operand, Window};
use crate::rank::{CommCall, KernelRef};

mod across_nodes;
mod options;
mod p2p;
mod site;

pub(crate) use across_nodes::AcrossNodes;

pub use options::{AllReduce, Broadcast, Common, Opts, Reduce, ReduceScatter, Rooted};
pub(crate) use p2p::Collected;
pub use p2p::{RecvFrom, SendTo};
use site::SiteKey;
pub(crate) use site::SitePlans;

/// A traced label a host made, with what it is for: the call (its site, what it is, its
/// group), the size and algorithm, and the windows (by identity: a weak reference keeps its
/// allocation's address from being reused while the cache holds it). Compared field by field,
/// cheapest first: a general label comparison per call cost 5% of a small traced collective.
pub(crate) struct TracedBySite {
    at: &'static Location<'static>,
    what: CallWhat,
    /// The group's members, by identity (held, so the address is not reused).
    group: Option<Arc<[usize]>>,
    bytes: u64,
    algorithm: &'static str,
    windows: Vec<std::sync::Weak<Allocation>>,
    label: Label,
}

impl TracedBySite {
    /// Whether this label is the one for the call (inlined: called out of line it was 5% of a
    /// traced 1-rank all_reduce's host path).
    #[inline(always)]
    fn is_for(
        &self,
        (what, at, group): CallParts<'_>,
        bytes: u64,
        algorithm: &'static str,
        operands: &[(&'static str, Operand<'_>)],
    ) -> bool {
        std::ptr::eq(self.at, at)
            && self.bytes == bytes
            && self.what == what
            && self.group.as_ref().map(Arc::as_ptr) == group.map(Arc::as_ptr)
            && std::ptr::eq(self.algorithm, algorithm)
            && self.windows.len() == operands.len()
            && self.windows.iter().zip(operands).all(|(w, (_, o))| std::ptr::eq(w.as_ptr(), Arc::as_ptr(o.alloc)))
    }
}

/// A checked collective call, ready to be queued on every rank.
struct Plan<'p, 'a> {
    /// What the call is and where the host code made it (its label is made where it is
    /// needed: a `Label` in the plan made the plan's drop an out-of-line call per collective).
    what: CallWhat,
    at: &'static Location<'static>,
    operands: &'p [(&'static str, Operand<'a>)],
    signal: PlanSignal<'a>,
    /// The rank count the call declared, and the signal it gave (with its operands, what a
    /// call site's next call is compared on: [`site`]).
    declared: Option<usize>,
    given_signal: Option<Operand<'a>>,
    /// The groups the call runs over (`None`: the world).
    groups: Option<&'a [Group]>,
    /// The rank count of the call: the world's, or its groups' (one size for all of them).
    size: usize,
    /// The reduce op as the caller gave it, for the fingerprint (`avg` runs `sum`'s kernel but
    /// must not match a `sum` on a peer).
    op: Option<ReduceOp>,
    /// A window the runtime made for the call (fp8's ring: the f32 shadow), held like the
    /// operands until every rank is past the call.
    own_window: Option<Arc<Allocation>>,
}

/// A call's kernel and arguments, checked and built: what [`Host::issue`] numbers and submits
/// on every rank, and what a call site keeps for its next call ([`site`]).
#[derive(Clone, Copy)]
pub(crate) struct Prepared {
    kernel: crate::device::abi::KernelFn,
    /// The kernel's arguments, their fingerprint words but for the call's number.
    args: CollArgs,
    scratch_bytes: usize,
    signal: SignalCells,
    /// What a trace shows of the call: its main operand's bytes, its kernel's algorithm.
    bytes: u64,
    kind: KernelKind,
}

/// What a call is, as its submission on every rank labels it (see [`Host::submit_call`]).
struct Site<'c, 'a> {
    what: CallWhat,
    at: &'static Location<'static>,
    groups: Option<&'a [Group]>,
    operands: &'c [(&'static str, Operand<'a>)],
    /// Its label as a trace shows it, where its site's plan keeps one ([`site`]); else a
    /// traced call's label is looked up in the host's cache ([`Host::traced_label`]).
    traced: Option<&'c Label>,
    /// Its site in the flight recorder of the host's rank, where its plan knows it.
    recorder_site: RecorderSite,
}

impl<'p, 'a> Plan<'p, 'a> {
    /// What the call site keeps this call's plan by, where its next call may reuse it
    /// ([`site`]): a call over the world with a signal of its own and no host steps
    /// (`premul_sum`'s scaling, `avg`'s division, fp8's f32 shadow). [`Host::issue_planned`]
    /// looks up only calls over the world with a signal; nothing else is ever kept.
    fn site_key(&self) -> Option<SiteKey<'p, 'a>> {
        let signal = self.given_signal?;
        let host_steps = self.own_window.is_some() || matches!(self.op, Some(ReduceOp::PremulSum | ReduceOp::Avg));
        (self.groups.is_none() && !host_steps).then_some(SiteKey {
            at: self.at,
            what: self.what,
            nranks: self.declared,
            operands: self.operands,
            signal,
        })
    }

    /// The call's label (for the world; a group's call is labelled in its group).
    #[inline(always)]
    fn label(&self) -> Label {
        Label::Call(self.what, self.at, 0)
    }
}

/// What a `premul_sum` call puts back on one rank afterwards: every element outside `keep`
/// (the member's result), from the copy saved before scaling.
struct Restore {
    rank: usize,
    keep: std::ops::Range<usize>,
    saved: Arc<std::sync::Mutex<Vec<u8>>>,
}

/// The signal of a call: the caller's, or one allocated for the call.
enum PlanSignal<'a> {
    Given(&'a Arc<Allocation>),
    Own(Arc<Allocation>),
}

impl PlanSignal<'_> {
    fn alloc(&self) -> &Arc<Allocation> {
        match self {
            PlanSignal::Given(alloc) => alloc,
            PlanSignal::Own(alloc) => alloc,
        }
    }
}

impl Host<'_> {
    /// Checks the shared options and the operands, resolving the signal.
    #[inline(always)]
    fn plan<'p, 'a>(
        &self,
        collective: Collective,
        what: CallWhat,
        location: &'static Location<'static>,
        common: Common<'a>,
        operands: &'p [(&'static str, Operand<'a>)],
    ) -> Result<Plan<'p, 'a>> {
        let size = self.check_call(what, location, &common, operands)?;
        let signal = match common.signal {
            Some(signal) => PlanSignal::Given(signal.alloc),
            None => PlanSignal::Own(self.call_signal(collective)?),
        };
        Ok(Plan {
            what,
            at: location,
            operands,
            signal,
            declared: common.nranks,
            given_signal: common.signal,
            groups: common.groups,
            size,
            op: None,
            own_window: None,
        })
    }

    /// Checks a call's shared options (groups of one size, the declared rank count, the
    /// signal's shape) and its windows (this world's, no two the same); gives its rank count.
    #[inline(always)]
    fn check_call(
        &self,
        what: CallWhat,
        location: &'static Location<'static>,
        common: &Common<'_>,
        operands: &[(&'static str, Operand<'_>)],
    ) -> Result<usize> {
        // Described lazily: formatting a label per call would cost more than a small collective.
        self.check_healthy()?;
        let call = || Label::Call(what, location, 0).describe();
        let nranks = self.nranks();
        let size = match common.groups {
            None => nranks,
            Some(groups) => {
                let size = groups.first().map_or(0, Group::size);
                if let Some(other) = groups.iter().find(|g| g.size() != size) {
                    return Err(Error::InvalidSetting {
                        setting: format!("the groups of {}", call()),
                        value: format!("{:?} and {:?}", groups[0], other),
                        expected: "groups of one size (run a collective over each group of a split apart)".into(),
                    });
                }
                size
            }
        };
        if let Some(declared) = common.nranks
            && declared != size
        {
            return Err(Error::NranksMismatch { call: call(), declared, world: size });
        }
        let own = self.world().shared().heap();
        // Window i of the call, the signal last: indexed, not a chained iterator, since this
        // runs per call and the iterator's copies cost more than a small collective's transfer.
        let signal = common.signal.map(|s| ("signal", s));
        let windows = operands.len() + usize::from(signal.is_some());
        let window = |i: usize| operands.get(i).copied().or(signal);
        for i in 0..windows {
            let Some((first, a)) = window(i) else { break };
            if !a.alloc.is_in(own) {
                return Err(foreign_window(call(), first, a.name()));
            }
            for j in i + 1..windows {
                if let Some((second, b)) = window(j)
                    && Arc::ptr_eq(a.alloc, b.alloc)
                {
                    return Err(Error::AliasedWindows { call: call(), buffer: a.name().to_owned(), first, second });
                }
            }
        }
        if let Some(signal) = common.signal {
            let cells = Collective::signal_cells(nranks);
            if signal.dtype != Collective::SIGNAL_DTYPE || signal.len() != cells {
                return Err(Error::BadOperand {
                    call: call(),
                    role: "signal",
                    buffer: signal.name().to_owned(),
                    expected: format!("{} [{cells}] (one cell per rank)", DType::I32),
                    found: signal.describe(),
                });
            }
        }
        Ok(size)
    }

    /// Queues `variant` on every rank this host drives, with `args` and the call's fingerprint
    /// (`dtype`, `count` and `row_len`: the element type, element count and row length of the
    /// main operand), and keeps what it built for the call site's next call where that may
    /// reuse it ([`site`]). The plan is borrowed: moved by value, its last bytes were read back
    /// as one 16-byte word right after the caller stored `op` there as a byte, a failed
    /// store-to-load forward that was a fifth of `all_reduce`'s own time.
    fn dispatch(
        &self,
        plan: &Plan<'_, '_>,
        variant: KernelVariant,
        mut args: CollArgs,
        scratch_bytes: usize,
        (dtype, count, row_len): (Option<DType>, usize, usize),
    ) -> Result<()> {
        let kernel = builtins()?.kernel(variant);
        let shared = self.world().shared();
        let signal_alloc = plan.signal.alloc();
        args.signal_off = signal_alloc.offset() as u64;
        args.flags = if shared.settings.check_calls { CollArgs::CHECK_CALLS } else { 0 };
        // The communicators this host's ranks run the call in: the world, or each one's group.
        // A group's areas are the same in every group of a partition; a rank in none is left out.
        let comms: &[Group] = plan.groups.unwrap_or(&[]);
        if let Some(first) = comms.first() {
            comms.iter().for_each(|g| self.keep_comm(&g.comm));
            (args.board_off, args.ll_off) = (first.comm.board_off as u64, first.comm.ll.offset as u64);
            (args.ll_stride, args.ll_slots) = (first.comm.ll.stride() as u64, first.comm.ll.slots());
        } else {
            let comm = &shared.world;
            (args.board_off, args.ll_off, args.ll_stride, args.ll_slots) =
                (comm.board_off as u64, comm.ll.offset as u64, comm.ll.stride() as u64, comm.ll.slots());
        }
        // The call's number goes in per call (`submit_call`); the rest of its words once.
        args.call = Fingerprint {
            seq: 0,
            kind: variant.kind,
            op: plan.op.or(variant.reduction.map(|(op, _)| op)),
            dtype,
            root: args.root,
            count: count as u64,
            row_len: row_len as u64,
        }
        .words();
        let mut prepared = Prepared {
            kernel,
            args,
            scratch_bytes,
            signal: SignalCells { offset: signal_alloc.offset(), bytes: signal_alloc.bytes() },
            bytes: (count * dtype.map_or(0, DType::size)) as u64,
            kind: variant.kind,
        };
        // A kept plan holds its traced label too, made here once, so the calls issued from it
        // look nothing up (`issue_planned`).
        let mut traced = None;
        if let Some(key) = plan.site_key() {
            traced = shared.tracer.timed.then(|| self.traced_label_of(plan.what, plan.at, plan.operands, &prepared));
            let recorder_site = self.recorder_site_of(plan.what, plan.at);
            self.sites.borrow_mut().keep(&key, &prepared, traced.clone(), recorder_site);
        }
        let site = Site {
            what: plan.what,
            at: plan.at,
            groups: plan.groups,
            operands: plan.operands,
            traced: traced.as_ref(),
            recorder_site: 0,
        };
        self.issue(&site, &mut prepared, plan.own_window.as_ref(), signal_alloc);
        Ok(())
    }

    /// Issues a call its site planned before ([`site`]), if it did, and says so: the call over
    /// the world with a signal, the same collective and options, windows and shapes as then,
    /// on a healthy host. `false`: plan it (which also reports a failed host's error). Out of
    /// line and not generic: one copy of the submission for every collective and element
    /// type; a `bool`, not a `Result`, so the caller moves no error-sized value per call.
    #[inline(never)]
    fn issue_planned(
        &self,
        what: CallWhat,
        at: &'static Location<'static>,
        common: &Common<'_>,
        operands: &[(&'static str, Operand<'_>)],
    ) -> bool {
        let Some(signal) = common.signal else { return false };
        if common.groups.is_some() || self.has_failed() {
            return false;
        }
        let key = SiteKey { at, what, nranks: common.nranks, operands, signal };
        // Borrowed while the call runs, its arguments numbered in place (copied out, they
        // cost a `memcpy` a call); nothing the call runs plans another.
        let mut sites = self.sites.borrow_mut();
        let Some((prepared, traced, recorder_site)) = sites.get(&key) else { return false };
        let site = Site { what, at, groups: None, operands, traced, recorder_site };
        self.issue(&site, prepared, None, signal.alloc);
        true
    }

    /// Issues the call from its site's plan where [`Host::issue_planned`] can, else runs `plan`
    /// (out of line: [`planning`]).
    #[inline(always)]
    fn planned_or(
        &self,
        what: CallWhat,
        at: &'static Location<'static>,
        common: &Common<'_>,
        operands: &[(&'static str, Operand<'_>)],
        plan: impl FnOnce() -> Result<()>,
    ) -> Result<()> {
        if self.issue_planned(what, at, common, operands) {
            return Ok(());
        }
        planning(plan)
    }

    /// Numbers a prepared call and submits it on every rank this host drives; holds its
    /// windows (`operands`, `own_window`, `signal`) until every rank is past it where needed.
    #[inline(always)]
    fn issue(
        &self,
        call: &Site<'_, '_>,
        prepared: &mut Prepared,
        own_window: Option<&Arc<Allocation>>,
        signal: &Arc<Allocation>,
    ) {
        let shared = self.world().shared();
        // A host driving one rank (every host of an SPMD section or an MPI process) submits
        // without a loop: around one, the compiler hoisted some thirty loop invariants into
        // stack slots, a tenth of a small call's instructions for a loop that runs once.
        let ranks = self.ranks();
        let (last_seq, queued) = if ranks.len() == 1 {
            self.submit_call(ranks.start, call, prepared).unwrap_or((0, false))
        } else {
            let mut all = (0, false);
            for rank in ranks {
                if let Some((seq, queued)) = self.submit_call(rank, call, prepared) {
                    all = (all.0.max(seq), all.1 | queued);
                }
            }
            all
        };
        // Across processes every host must free windows at the same point of its program, or
        // the next allocation lands at different offsets in different processes (a process
        // whose calls ran inline freed a call's own signal at once, a peer whose calls were
        // queued held it: the next call's credits went to cells nobody waited on, a hang). So
        // there the windows are held even when the call ran inline.
        if queued || shared.fabric.agree_on_allocation.is_some() {
            let windows = call.operands.iter().map(|(_, operand)| Arc::clone(operand.alloc));
            let own = own_window.cloned();
            self.hold_in_flight(last_seq, windows.chain(own).chain([Arc::clone(signal)]));
        }
    }

    /// Numbers `prepared` for `rank` and submits it there (see [`Host::issue`]); gives the rank's
    /// call number and whether the call was queued, or `None` for a rank in none of the
    /// call's groups.
    #[inline(always)]
    fn submit_call(&self, rank: usize, call: &Site<'_, '_>, prepared: &mut Prepared) -> Option<(u64, bool)> {
        let shared = self.world().shared();
        let comms: &[Group] = call.groups.unwrap_or(&[]);
        let (comm, member) = match comms {
            [] => (&shared.world, rank),
            groups => groups.iter().find_map(|g| g.comm.member(rank).map(|m| (&g.comm, m)))?,
        };
        // Only the host that owns the rank numbers its calls (a Host is used from one thread):
        // a load and a store, not a locked read-modify-write. Two numbers: the rank's call
        // number over every communicator (its progress, the windows held in flight), and the
        // call's number in its communicator (the fingerprint, the LL slot).
        let task = &shared.ranks[rank].issued.0;
        let seq = task.load(Ordering::Relaxed) + 1;
        task.store(seq, Ordering::Relaxed);
        let numbered = &comm.issued[member].0;
        let seq_in_comm = numbered.load(Ordering::Relaxed) + 1;
        numbered.store(seq_in_comm, Ordering::Relaxed);
        prepared.args.call.seq = seq_in_comm;
        let call_in = CommCall { comm: Arc::as_ptr(comm), member, seq: seq_in_comm };
        // Made in its place: a label returned from a function had its tag bytes read back as
        // whole words before their stores had landed (a stall of a tenth of a barrier).
        let label = match comms {
            [] => Label::Call(call.what, call.at, call.recorder_site),
            _ => Label::GroupCall(call.what, call.at, Arc::clone(&comm.members)),
        };
        let label = &label;
        // A trace shows each call's operands, size and algorithm: the label for that is
        // borrowed from the host's cache, not cloned (a reference count touched per call
        // cost a tenth of a small collective).
        let cached;
        let label = match (shared.tracer.timed, call.traced) {
            (false, _) => label,
            (true, Some(planned)) => planned,
            (true, None) => {
                let i = self.traced_label(label, call.operands, prepared.bytes, algorithm(prepared.kind));
                cached = std::cell::Ref::map(self.traced.borrow(), |cache| &cache[i].label);
                &*cached
            }
        };
        let kernel = KernelRef {
            kernel: prepared.kernel,
            args: &prepared.args,
            scratch_bytes: prepared.scratch_bytes,
            comm: call_in,
        };
        let queued = self.submit_kernel(rank, label, seq, Some(prepared.signal), kernel);
        Some((seq, queued))
    }

    /// The site of a call over the world in the flight recorder of this host's rank, for its
    /// site's plan to keep ([`RecorderSite`]): 0 where the host drives several ranks (a plan
    /// serves all of them, and each rank's recorder numbers its sites alone), where nothing is
    /// recorded, or where calls are timed (the recorder then keeps the traced label, with the
    /// call's windows, bytes and algorithm for a dump on error, and a plain label interned here
    /// would stand in for it).
    fn recorder_site_of(&self, what: CallWhat, at: &'static Location<'static>) -> RecorderSite {
        let ranks = self.ranks();
        let shared = self.world().shared();
        let recorder = &shared.ranks[ranks.start].recorder;
        if ranks.len() != 1 || !recorder.enabled() || shared.tracer.timed {
            return 0;
        }
        recorder.intern(&Label::Call(what, at, 0)).wrapping_add(1)
    }

    /// The label a trace shows of a call over the world, for its site's plan to keep.
    #[cold]
    #[inline(never)]
    fn traced_label_of(
        &self,
        what: CallWhat,
        at: &'static Location<'static>,
        operands: &[(&'static str, Operand<'_>)],
        prepared: &Prepared,
    ) -> Label {
        let i = self.traced_label(&Label::Call(what, at, 0), operands, prepared.bytes, algorithm(prepared.kind));
        self.traced.borrow()[i].label.clone()
    }

    /// The index in this host's cache of the label a trace shows of a call: made once per call
    /// site (and group), operands, size and algorithm, and then reused (making one per call
    /// cost more than a small collective).
    fn traced_label(
        &self,
        call: &Label,
        operands: &[(&'static str, Operand<'_>)],
        bytes: u64,
        algorithm: &'static str,
    ) -> usize {
        let Some(parts) = call.parts() else { unreachable!("a collective's label") };
        let mut cache = self.traced.borrow_mut();
        if let Some(i) = cache.iter().position(|t| t.is_for(parts, bytes, algorithm, operands)) {
            return i;
        }
        if cache.len() >= 256 {
            cache.clear();
        }
        let windows = operands.iter().map(|(role, o)| format!("{role} = `{}`", o.name())).collect::<Vec<_>>();
        let (what, at, group) = parts;
        cache.push(TracedBySite {
            at,
            what,
            group: group.cloned(),
            bytes,
            algorithm,
            windows: operands.iter().map(|(_, o)| Arc::downgrade(o.alloc)).collect(),
            label: call.traced(windows.join(", "), bytes, algorithm),
        });
        cache.len() - 1
    }

    fn bad(call: &Label, role: &'static str, operand: &Operand<'_>, expected: String) -> Error {
        Error::BadOperand {
            call: call.describe(),
            role,
            buffer: operand.name().to_owned(),
            expected,
            found: operand.describe(),
        }
    }

    /// Every rank's `target` becomes the `op`-reduction of all ranks' `target`, in place.
    ///
    /// Mesh mode reduces in rank order on every rank (identical bits everywhere); ring mode takes
    /// any element count, including fewer elements than ranks.
    #[track_caller]
    pub fn all_reduce<T: Element>(&self, target: &Window<'_, T>, opts: AllReduce<'_>) -> Result<()> {
        let call = CallWhat::AllReduce { mode: opts.mode, op: opts.op, dtype: T::DTYPE };
        let operands = [("target", target.operand())];
        if self.all_reduce_across_nodes(call, &operands, target, &opts)? {
            return Ok(());
        }
        let at = Location::caller();
        self.planned_or(call, at, &opts.common, &operands, || {
            let mut plan = self.plan(Collective::AllReduce, call, at, opts.common, &operands)?;
            plan.op = Some(opts.op);
            let (groups, size) = (plan.groups, plan.size);
            // The whole target is the result on every rank: nothing to restore after scaling.
            let restore = self.premultiply(&plan, target, opts.op, opts.scale, |_| None)?;
            debug_assert!(restore.is_empty());
            // Auto picks the mode; mesh mode picks one-shot or two-shot by size (same reduction
            // order, same bits).
            let transport_only = self.world().shared().fabric.transport_only;
            let (kind, scratch) = match opts.mode.resolve(target.bytes(), plan.size, transport_only) {
                AllReduceMode::Mesh
                    if target.bytes() >= self.world().shared().settings.two_shot_bytes_for(plan.size) =>
                {
                    (KernelKind::AllReduceTwoShot, 3 * TILE_BYTES)
                }
                // fp8 accumulates a tile at a time in an f32 tile (and, as messages, 4 bytes per element).
                AllReduceMode::Mesh if T::DTYPE.is_fp8() => {
                    (KernelKind::AllReduceMesh, target.bytes() + 3 * TILE_BYTES + 4 * ll_sized(target.bytes()))
                }
                AllReduceMode::Mesh => (KernelKind::AllReduceMesh, target.bytes() + 2 * TILE_BYTES),
                AllReduceMode::Ring => (KernelKind::AllReduceRing, TILE_BYTES),
                AllReduceMode::Auto => unreachable!("resolve gives an explicit mode"),
            };
            let mut args = CollArgs {
                target_off: target.offset() as u64,
                count: target.len() as u64,
                divisor: kernel_divisor(T::DTYPE, opts.op, size),
                ..CollArgs::default()
            };
            if kind == KernelKind::AllReduceRing && T::DTYPE.is_fp8() {
                // The ring carries partial sums between neighbours: in f32, in a shadow of the
                // target made for the call (see pld-backend's wide.rs).
                let shadow = self.call_window::<f32>("__auto_f32_partials", [target.len().max(1)])?;
                args.input_off = shadow.offset() as u64;
                plan.own_window = Some(shadow.allocation());
            }
            self.dispatch(
                &plan,
                KernelVariant::reducing(kind, opts.op, T::DTYPE),
                args,
                scratch,
                (Some(T::DTYPE), target.len(), target.len()),
            )?;
            if host_divides(T::DTYPE, opts.op) {
                self.finish_average(groups, size, target, |_| Some(0..target.len()));
            }
            Ok(())
        })
    }

    /// `target` is `[nranks, n]` on every rank; row `r` of rank `r` becomes the reduction of row
    /// `r` over all ranks (other rows are left as they were).
    #[track_caller]
    pub fn reduce_scatter<T: Element>(&self, target: &Window<'_, T>, opts: ReduceScatter<'_>) -> Result<()> {
        let call = CallWhat::ReduceScatter { op: opts.op, dtype: T::DTYPE };
        let operands = [("target", target.operand())];
        let at = Location::caller();
        self.planned_or(call, at, &opts.common, &operands, || {
            let mut plan = self.plan(Collective::ReduceScatter, call, at, opts.common, &operands)?;
            plan.op = Some(opts.op);
            let (groups, n) = (plan.groups, plan.size);
            let row = target.len() / n.max(1);
            // Every row is read by its owner, so all are scaled; the rows other than the member's
            // own are put back afterwards (the contract leaves them as they were).
            let restore =
                self.premultiply(&plan, target, opts.op, opts.scale, |member| Some(member * row..(member + 1) * row))?;
            if !target.len().is_multiple_of(n) {
                return Err(Self::bad(
                    &plan.label(),
                    "target",
                    &plan.operands[0].1,
                    format!("[{n}, row] ({n} equal rows)"),
                ));
            }
            let args = CollArgs {
                target_off: target.offset() as u64,
                count: (target.len() / n) as u64,
                divisor: kernel_divisor(T::DTYPE, opts.op, n),
                ..CollArgs::default()
            };
            let variant = KernelVariant::reducing(KernelKind::ReduceScatter, opts.op, T::DTYPE);
            // fp8: an f32 tile besides the staging tile (as messages: 4 bytes per element of a row).
            let scratch = match T::DTYPE.is_fp8() {
                true => 2 * TILE_BYTES + 4 * ll_sized(target.bytes() / n),
                false => TILE_BYTES,
            };
            self.dispatch(&plan, variant, args, scratch, (Some(T::DTYPE), target.len(), target.len() / n))?;
            self.restore_unreduced(restore, target);
            if host_divides(T::DTYPE, opts.op) {
                let row = target.len() / n;
                self.finish_average(groups, n, target, |member| Some(member * row..(member + 1) * row));
            }
            Ok(())
        })
    }

    /// Every rank's `target` becomes the root's.
    #[track_caller]
    pub fn broadcast<T: Element>(&self, target: &Window<'_, T>, opts: Broadcast<'_>) -> Result<()> {
        let call = CallWhat::Broadcast { root: opts.root, dtype: T::DTYPE };
        let root = opts.root;
        let operands = [("target", target.operand())];
        if self.broadcast_across_nodes(call, &operands, target, &opts)? {
            return Ok(());
        }
        let at = Location::caller();
        self.planned_or(call, at, &opts.common, &operands, || {
            let plan = self.plan(Collective::Broadcast, call, at, opts.common, &operands)?;
            let root = Self::checked_root(&plan, root)?;
            let args = CollArgs {
                target_off: target.offset() as u64,
                count: target.bytes() as u64,
                root,
                ..CollArgs::default()
            };
            self.dispatch(
                &plan,
                KernelVariant::movement(KernelKind::Broadcast),
                args,
                TILE_BYTES,
                (Some(T::DTYPE), target.len(), target.len()),
            )
        })
    }

    /// Row `p` of every rank's `target` (`[nranks, n]`) becomes rank `p`'s `local` (`n`).
    #[track_caller]
    pub fn all_gather<T: Element>(&self, local: &Window<'_, T>, target: &Window<'_, T>, opts: Opts<'_>) -> Result<()> {
        let call = CallWhat::AllGather { dtype: T::DTYPE };
        let operands = [("local", local.operand()), ("target", target.operand())];
        if self.all_gather_across_nodes(call, &operands, local, target, &opts)? {
            return Ok(());
        }
        let at = Location::caller();
        self.planned_or(call, at, &opts.common, &operands, || {
            let plan = self.plan(Collective::AllGather, call, at, opts.common, &operands)?;
            let n = plan.size;
            if target.len() != n * local.len() {
                let expected =
                    format!("{n} x {} = {} elements ({n} rows of `{}`)", local.len(), n * local.len(), local.name());
                return Err(Self::bad(&plan.label(), "target", &plan.operands[1].1, expected));
            }
            let args = CollArgs {
                target_off: target.offset() as u64,
                input_off: local.offset() as u64,
                row_bytes: local.bytes() as u64,
                ..CollArgs::default()
            };
            self.dispatch(
                &plan,
                KernelVariant::movement(KernelKind::AllGather),
                args,
                TILE_BYTES,
                (Some(T::DTYPE), local.len(), local.len()),
            )
        })
    }

    /// Row `p` of rank `r`'s `target` becomes row `r` of rank `p`'s `input`; both `[nranks, n]`.
    #[track_caller]
    pub fn all_to_all<T: Element>(&self, input: &Window<'_, T>, target: &Window<'_, T>, opts: Opts<'_>) -> Result<()> {
        let call = CallWhat::AllToAll { dtype: T::DTYPE };
        let operands = [("input", input.operand()), ("target", target.operand())];
        let at = Location::caller();
        self.planned_or(call, at, &opts.common, &operands, || {
            let plan = self.plan(Collective::AllToAll, call, at, opts.common, &operands)?;
            let n = plan.size;
            if !input.len().is_multiple_of(n) {
                return Err(Self::bad(
                    &plan.label(),
                    "input",
                    &plan.operands[0].1,
                    format!("[{n}, row] ({n} equal rows)"),
                ));
            }
            if target.len() != input.len() {
                return Err(Self::bad(
                    &plan.label(),
                    "target",
                    &plan.operands[1].1,
                    format!("{} elements, like `{}`", input.len(), input.name()),
                ));
            }
            let args = CollArgs {
                target_off: target.offset() as u64,
                input_off: input.offset() as u64,
                row_bytes: (input.bytes() / n) as u64,
                ..CollArgs::default()
            };
            self.dispatch(
                &plan,
                KernelVariant::movement(KernelKind::AllToAll),
                args,
                TILE_BYTES,
                (Some(T::DTYPE), input.len(), input.len() / n),
            )
        })
    }

    /// `input` and `target` are `[nranks * max_rows, ...]`: block `d` of `input` holds up to
    /// `max_rows` rows for rank `d`, of which `send_counts[d]` are sent. Block `p` of `target`
    /// receives rank `p`'s rows for this rank and `recv_counts[p]` their count; rows beyond the
    /// count are not touched. A count below 0 or above `max_rows` is an error naming the rank.
    #[track_caller]
    pub fn all_to_all_v<T: Element>(
        &self,
        input: &Window<'_, T>,
        target: &Window<'_, T>,
        send_counts: &Window<'_, i32>,
        recv_counts: &Window<'_, i32>,
        opts: Opts<'_>,
    ) -> Result<()> {
        let call = CallWhat::AllToAllV { dtype: T::DTYPE };
        let operands = [
            ("input", input.operand()),
            ("target", target.operand()),
            ("send_counts", send_counts.operand()),
            ("recv_counts", recv_counts.operand()),
        ];
        let at = Location::caller();
        self.planned_or(call, at, &opts.common, &operands, || {
            let plan = self.plan(Collective::AllToAllV, call, at, opts.common, &operands)?;
            let n = plan.size;
            let rows = input.shape().dims().first().copied().unwrap_or(0);
            if input.shape().dims().len() < 2 || rows % n != 0 {
                return Err(Self::bad(
                    &plan.label(),
                    "input",
                    &plan.operands[0].1,
                    format!("[{n} * max_rows, ...] (a block of rows per rank)"),
                ));
            }
            if target.shape() != input.shape() {
                return Err(Self::bad(
                    &plan.label(),
                    "target",
                    &plan.operands[1].1,
                    format!("{:?}, like `{}`", input.shape().dims(), input.name()),
                ));
            }
            for (i, counts) in [(2, send_counts), (3, recv_counts)] {
                if counts.len() != n {
                    return Err(Self::bad(
                        &plan.label(),
                        plan.operands[i].0,
                        &plan.operands[i].1,
                        format!("i32 [{n}] (one count per rank)"),
                    ));
                }
            }
            let args = CollArgs {
                target_off: target.offset() as u64,
                input_off: input.offset() as u64,
                row_bytes: (input.shape().dims()[1..].iter().product::<usize>() * T::DTYPE.size()) as u64,
                send_counts_off: send_counts.offset() as u64,
                recv_counts_off: recv_counts.offset() as u64,
                max_rows: (rows / n) as i64,
                ..CollArgs::default()
            };
            self.dispatch(
                &plan,
                KernelVariant::movement(KernelKind::AllToAllV),
                args,
                TILE_BYTES,
                (Some(T::DTYPE), input.len(), input.operand().row_len()),
            )
        })
    }

    /// The root's `target` becomes the `op`-reduction of every rank's `target` (in rank order:
    /// the bits all_reduce gives); the other ranks' `target` is read, never written.
    #[track_caller]
    pub fn reduce<T: Element>(&self, target: &Window<'_, T>, opts: Reduce<'_>) -> Result<()> {
        let call = CallWhat::Reduce { op: opts.op, root: opts.root, dtype: T::DTYPE };
        let operands = [("target", target.operand())];
        let at = Location::caller();
        self.planned_or(call, at, &opts.common, &operands, || {
            let mut plan = self.plan(Collective::Reduce, call, at, opts.common, &operands)?;
            plan.op = Some(opts.op);
            let root = Self::checked_root(&plan, opts.root)?;
            let (groups, size) = (plan.groups, plan.size);
            // Every rank's target is read and so scaled; the non-roots' are put back afterwards.
            let whole = target.len();
            let restore = self.premultiply(&plan, target, opts.op, opts.scale, |member| {
                Some(if member == root as usize { 0..whole } else { 0..0 })
            })?;
            let args = CollArgs {
                target_off: target.offset() as u64,
                count: target.len() as u64,
                root,
                divisor: kernel_divisor(T::DTYPE, opts.op, size),
                ..CollArgs::default()
            };
            // Scratch: the whole payload when it may travel as messages, else three tiles (fp8: an
            // f32 tile more, and 4 bytes per element as messages).
            let scratch = match T::DTYPE.is_fp8() {
                true => 4 * TILE_BYTES + 4 * ll_sized(target.bytes()),
                false => 3 * TILE_BYTES + ll_sized(target.bytes()),
            };
            let variant = KernelVariant::reducing(KernelKind::Reduce, opts.op, T::DTYPE);
            self.dispatch(&plan, variant, args, scratch, (Some(T::DTYPE), target.len(), target.len()))?;
            self.restore_unreduced(restore, target);
            if host_divides(T::DTYPE, opts.op) {
                let root = root as usize;
                self.finish_average(groups, size, target, |member| (member == root).then_some(0..target.len()));
            }
            Ok(())
        })
    }

    /// Starts `op = premul_sum(scalar)`: each member's whole `target` multiplied by `scalar`,
    /// queued on its rank before the call (peers read it only once the call on this rank says it
    /// is ready). `result(member)` is the element range the call leaves reduced there (`None`:
    /// the whole target): every other element is saved first and returned, to be put back by
    /// [`Host::restore_unreduced`] after the call. Any other op: nothing queued. An integer
    /// dtype takes an integer scalar only.
    fn premultiply<T: Element>(
        &self,
        plan: &Plan<'_, '_>,
        target: &Window<'_, T>,
        op: ReduceOp,
        scalar: Option<f64>,
        result: impl Fn(usize) -> Option<std::ops::Range<usize>>,
    ) -> Result<Vec<Restore>> {
        if op != ReduceOp::PremulSum {
            return Ok(Vec::new());
        }
        let scalar = scalar.unwrap_or(1.0);
        if !T::DTYPE.is_float() && (scalar.fract() != 0.0 || !scalar.is_finite()) {
            return Err(Error::InvalidSetting {
                setting: format!("the premul_sum scalar of {}", plan.label().describe()),
                value: scalar.to_string(),
                expected: format!("an integer: `{}` is an integer dtype", T::DTYPE),
            });
        }
        let (offset, len) = (target.offset(), target.len());
        let mut restores = Vec::new();
        for (rank, member) in self.members(plan.groups) {
            let saved = match result(member) {
                Some(kept) if kept != (0..len) => {
                    let saved = Arc::new(std::sync::Mutex::new(Vec::new()));
                    restores.push(Restore { rank, keep: kept, saved: Arc::clone(&saved) });
                    Some(saved)
                }
                _ => None,
            };
            let call = format!("the premultiplication of `{}` by {scalar} on rank {rank}", target.name());
            let name = format!("premultiply `{}`", target.name());
            self.local_pass::<T>(rank, (name, call), offset, len, move |data| {
                if let Some(saved) = &saved {
                    *saved.lock().unwrap_or_else(|p| p.into_inner()) = bytemuck::cast_slice(data).to_vec();
                }
                for x in data {
                    *x = T::premultiply(*x, scalar);
                }
            });
        }
        Ok(restores)
    }

    /// Queues `pass` over `len` elements at `offset` of `rank`'s own window, in order with the
    /// rank's calls: the local step of `premul_sum` (before its call) and `avg` (after).
    fn local_pass<T: Element>(
        &self,
        rank: usize,
        (name, call): (String, String),
        offset: usize,
        len: usize,
        pass: impl FnOnce(&mut [T]) + Send + 'static,
    ) {
        let work = move |state: &mut crate::rank::RankState| {
            // SAFETY: the range lies inside a view, which lies inside its allocation, which lives
            // while the host scope does; the rank's queue orders this with the call.
            pass(unsafe { std::slice::from_raw_parts_mut(state.local_base().add(offset).cast::<T>(), len) });
            Ok(())
        };
        self.submit(rank, &Label::work("local pass", name, call, None), 0, None, Box::new(work));
    }

    /// Puts back, after a `premul_sum` call, every element of `target` outside each member's
    /// result, as [`Host::premultiply`] saved it.
    fn restore_unreduced<T: Element>(&self, restores: Vec<Restore>, target: &Window<'_, T>) {
        for Restore { rank, keep, saved } in restores {
            let call = format!("the restore of `{}` after premul_sum on rank {rank}", target.name());
            let name = format!("restore `{}`", target.name());
            self.local_pass::<T>(rank, (name, call), target.offset(), target.len(), move |data| {
                let saved: Vec<u8> = std::mem::take(&mut *saved.lock().unwrap_or_else(|p| p.into_inner()));
                let saved: &[T] = bytemuck::cast_slice(&saved);
                for (i, (x, old)) in data.iter_mut().zip(saved).enumerate() {
                    if !keep.contains(&i) {
                        *x = *old;
                    }
                }
            });
        }
    }

    /// The ranks this host drives that take part in a call over `groups`, with their member
    /// index (their rank in the call's terms).
    fn members(&self, groups: Option<&[Group]>) -> Vec<(usize, usize)> {
        self.ranks()
            .filter_map(|rank| match groups {
                None => Some((rank, rank)),
                Some(groups) => groups.iter().find_map(|g| g.rank_of(rank)).map(|m| (rank, m)),
            })
            .collect()
    }

    /// Finishes `op = avg`: each member's reduced elements (`region(member)`, an element range
    /// of `target`; `None`: it holds none) divided by the call's rank count, queued right after
    /// the call on the member's rank, so it runs once the sum is there and before anything the
    /// host queues next. (The device kernels sum; one division at the end is what NCCL's
    /// `ncclAvg` computes, and rounds once.)
    fn finish_average<T: Element>(
        &self,
        groups: Option<&[Group]>,
        size: usize,
        target: &Window<'_, T>,
        region: impl Fn(usize) -> Option<std::ops::Range<usize>>,
    ) {
        for (rank, member) in self.members(groups) {
            let Some(range) = region(member) else { continue };
            let (offset, len) = (target.offset() + range.start * size_of::<T>(), range.len());
            let call = format!("the division of `{}` by {size} (op = avg) on rank {rank}", target.name());
            let name = format!("divide `{}`", target.name());
            self.local_pass::<T>(rank, (name, call), offset, len, move |data| {
                for x in data {
                    *x = T::average(*x, size);
                }
            });
        }
    }

    /// Row `p` of the root's `target` (`[nranks, n]`) becomes rank `p`'s `local` (`n`); the
    /// other ranks' `target` is not touched.
    #[track_caller]
    pub fn gather<T: Element>(&self, local: &Window<'_, T>, target: &Window<'_, T>, opts: Rooted<'_>) -> Result<()> {
        let call = CallWhat::Gather { root: opts.root, dtype: T::DTYPE };
        let operands = [("local", local.operand()), ("target", target.operand())];
        let at = Location::caller();
        self.planned_or(call, at, &opts.common, &operands, || {
            let plan = self.plan(Collective::Gather, call, at, opts.common, &operands)?;
            let root = Self::checked_root(&plan, opts.root)?;
            let n = plan.size;
            if target.len() != n * local.len() {
                let expected =
                    format!("{n} x {} = {} elements ({n} rows of `{}`)", local.len(), n * local.len(), local.name());
                return Err(Self::bad(&plan.label(), "target", &plan.operands[1].1, expected));
            }
            let args = CollArgs {
                target_off: target.offset() as u64,
                input_off: local.offset() as u64,
                row_bytes: local.bytes() as u64,
                root,
                ..CollArgs::default()
            };
            let variant = KernelVariant::movement(KernelKind::Gather);
            self.dispatch(&plan, variant, args, TILE_BYTES, (Some(T::DTYPE), local.len(), local.len()))
        })
    }

    /// Every rank's `target` (`n`) becomes row `rank` of the root's `input` (`[nranks, n]`);
    /// only the root's `input` is read.
    #[track_caller]
    pub fn scatter<T: Element>(&self, input: &Window<'_, T>, target: &Window<'_, T>, opts: Rooted<'_>) -> Result<()> {
        let call = CallWhat::Scatter { root: opts.root, dtype: T::DTYPE };
        let operands = [("input", input.operand()), ("target", target.operand())];
        let at = Location::caller();
        self.planned_or(call, at, &opts.common, &operands, || {
            let plan = self.plan(Collective::Scatter, call, at, opts.common, &operands)?;
            let root = Self::checked_root(&plan, opts.root)?;
            let n = plan.size;
            if input.len() != n * target.len() {
                let expected =
                    format!("{n} x {} = {} elements ({n} rows of `{}`)", target.len(), n * target.len(), target.name());
                return Err(Self::bad(&plan.label(), "input", &plan.operands[0].1, expected));
            }
            let args = CollArgs {
                target_off: target.offset() as u64,
                input_off: input.offset() as u64,
                row_bytes: target.bytes() as u64,
                root,
                ..CollArgs::default()
            };
            let variant = KernelVariant::movement(KernelKind::Scatter);
            self.dispatch(&plan, variant, args, TILE_BYTES, (Some(T::DTYPE), target.len(), target.len()))
        })
    }

    /// `local` is `[max_rows, ...]` and `target` `[nranks * max_rows, ...]` (rows of the same
    /// shape); `counts` is `i32 [nranks]`. Each rank sends the first `counts[rank]` rows of its
    /// `local` (set before the call; below 0 or above `max_rows` is an error naming the rank);
    /// block `p` of every rank's `target` receives rank `p`'s rows, and `counts[p]` their count.
    /// Rows past a count are not touched.
    #[track_caller]
    pub fn all_gather_v<T: Element>(
        &self,
        local: &Window<'_, T>,
        target: &Window<'_, T>,
        counts: &Window<'_, i32>,
        opts: Opts<'_>,
    ) -> Result<()> {
        let call = CallWhat::AllGatherV { dtype: T::DTYPE };
        let operands = [("local", local.operand()), ("target", target.operand()), ("counts", counts.operand())];
        let at = Location::caller();
        self.planned_or(call, at, &opts.common, &operands, || {
            let plan = self.plan(Collective::AllGatherV, call, at, opts.common, &operands)?;
            let n = plan.size;
            let dims = local.shape().dims();
            let max_rows = dims.first().copied().unwrap_or(0);
            let row_elems: usize = dims.iter().skip(1).product();
            // Rows of the same length (a 1-D `local` has rows of one element), `n * max_rows` of them.
            let target_dims = target.shape().dims();
            let target_row: usize = target_dims.iter().skip(1).product();
            if target_dims.first().copied() != Some(n * max_rows) || target_row != row_elems {
                let mut shape = vec![n * max_rows];
                shape.extend_from_slice(dims.get(1..).unwrap_or(&[]));
                let expected = format!("{shape:?} ({n} blocks of `{}`'s {max_rows} rows)", local.name());
                return Err(Self::bad(&plan.label(), "target", &plan.operands[1].1, expected));
            }
            if counts.len() != n {
                return Err(Self::bad(
                    &plan.label(),
                    "counts",
                    &plan.operands[2].1,
                    format!("i32 [{n}] (one count per rank)"),
                ));
            }
            let args = CollArgs {
                target_off: target.offset() as u64,
                input_off: local.offset() as u64,
                row_bytes: (row_elems * T::DTYPE.size()) as u64,
                send_counts_off: counts.offset() as u64,
                max_rows: max_rows as i64,
                ..CollArgs::default()
            };
            // Scratch: a message (a count and a block) when blocks travel as messages.
            let scratch = TILE_BYTES.max(8 + local.bytes());
            let variant = KernelVariant::movement(KernelKind::AllGatherV);
            self.dispatch(&plan, variant, args, scratch, (Some(T::DTYPE), local.len(), row_elems))
        })
    }

    /// A root in the call's terms (its group's, or the world's), else an error naming the call.
    /// (Inline, its error apart: out of line, the check cost a rooted call 24 instructions.)
    #[inline(always)]
    fn checked_root(plan: &Plan<'_, '_>, root: i64) -> Result<i32> {
        if root < 0 || root >= plan.size as i64 {
            return Err(Self::root_out_of_range(plan, root));
        }
        Ok(root as i32)
    }

    /// The error of a root outside the call's ranks ([`Host::checked_root`]'s slow path).
    #[cold]
    #[inline(never)]
    fn root_out_of_range(plan: &Plan<'_, '_>, root: i64) -> Error {
        Error::RootOutOfRange { call: plan.label().describe(), root, nranks: plan.size }
    }

    /// No rank passes until every rank has arrived.
    #[track_caller]
    pub fn barrier(&self, opts: Opts<'_>) -> Result<()> {
        let at = Location::caller();
        self.planned_or(CallWhat::Barrier, at, &opts.common, &[], || {
            let plan = self.plan(Collective::Barrier, CallWhat::Barrier, at, opts.common, &[])?;
            self.dispatch(
                &plan,
                KernelVariant::movement(KernelKind::Barrier),
                CollArgs::default(),
                TILE_BYTES,
                (None, 0, 0),
            )
        })
    }
}

/// Runs `plan`, a collective's path when its site has no plan for the call ([`site`]): out of
/// line, so the path a planned call takes keeps a small frame.
#[cold]
#[inline(never)]
fn planning<R>(plan: impl FnOnce() -> R) -> R {
    plan()
}

/// The algorithm a kernel runs, for traces (a kernel that moved its data as LL messages is
/// shown as `LL` instead).
fn algorithm(kind: KernelKind) -> &'static str {
    match kind {
        KernelKind::AllReduceMesh => "one-shot",
        KernelKind::AllReduceTwoShot => "two-shot",
        KernelKind::AllReduceRing => "ring",
        KernelKind::Barrier => "signals",
        _ => "direct",
    }
}

/// `bytes` if a payload of that size may travel as LL messages, else 0: the scratch a
/// kernel's message form needs on top of its rounds form.
fn ll_sized(bytes: usize) -> usize {
    if bytes as u64 <= LL_MAX_BYTES { bytes } else { 0 }
}

/// `op = avg` divides once: fp8 in the kernel's one rounding (the f32 sum divided, then
/// rounded: [`CollArgs::divisor`]), every other dtype on the host after the sum.
fn kernel_divisor(dtype: DType, op: ReduceOp, size: usize) -> u64 {
    if dtype.is_fp8() && op == ReduceOp::Avg { size as u64 } else { 0 }
}

/// Whether the host finishes `op = avg` by dividing the kernel's sum (see [`kernel_divisor`]).
fn host_divides(dtype: DType, op: ReduceOp) -> bool {
    op == ReduceOp::Avg && !dtype.is_fp8()
}
