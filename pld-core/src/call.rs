//! Calls as the ranks run them: what a collective call is (for messages), where it was made,
//! and the signal it must leave clean.

use std::panic::Location;
use std::sync::Arc;

use pld_model::{AllReduceMode, DType, ReduceOp};

/// What a collective call is, for messages (formatted only when one is needed).
#[derive(Clone, Copy, Debug)]
pub(crate) enum CallWhat {
    AllReduce {
        mode: AllReduceMode,
        op: ReduceOp,
        dtype: DType,
    },
    ReduceScatter {
        op: ReduceOp,
        dtype: DType,
    },
    Broadcast {
        root: i64,
        dtype: DType,
    },
    AllGather {
        dtype: DType,
    },
    AllToAll {
        dtype: DType,
    },
    AllToAllV {
        dtype: DType,
    },
    Barrier,
    Reduce {
        op: ReduceOp,
        root: i64,
        dtype: DType,
    },
    Gather {
        root: i64,
        dtype: DType,
    },
    Scatter {
        root: i64,
        dtype: DType,
    },
    AllGatherV {
        dtype: DType,
    },
    /// One rank's batch of consecutive sends and receives.
    SendRecv {
        sends: u32,
        receives: u32,
    },
}

/// Written out to be inlined: the flight recorder compares a call with the thread's last per
/// call, and the derived comparison, called out of line, was 3% of a 1-rank barrier's host path.
/// One arm per variant of `self` and no catch-all, so a new variant does not compile until it
/// is compared here.
impl PartialEq for CallWhat {
    #[inline(always)]
    fn eq(&self, other: &CallWhat) -> bool {
        use CallWhat::*;
        match *self {
            AllReduce { mode, op, dtype } => {
                matches!(*other, AllReduce { mode: m, op: o, dtype: d } if m == mode && o == op && d == dtype)
            }
            ReduceScatter { op, dtype } => matches!(*other, ReduceScatter { op: o, dtype: d } if o == op && d == dtype),
            Broadcast { root, dtype } => matches!(*other, Broadcast { root: r, dtype: d } if r == root && d == dtype),
            Gather { root, dtype } => matches!(*other, Gather { root: r, dtype: d } if r == root && d == dtype),
            Scatter { root, dtype } => matches!(*other, Scatter { root: r, dtype: d } if r == root && d == dtype),
            AllGather { dtype } => matches!(*other, AllGather { dtype: d } if d == dtype),
            AllToAll { dtype } => matches!(*other, AllToAll { dtype: d } if d == dtype),
            AllToAllV { dtype } => matches!(*other, AllToAllV { dtype: d } if d == dtype),
            AllGatherV { dtype } => matches!(*other, AllGatherV { dtype: d } if d == dtype),
            Barrier => matches!(*other, Barrier),
            Reduce { op, root, dtype } => {
                matches!(*other, Reduce { op: o, root: r, dtype: d } if o == op && r == root && d == dtype)
            }
            SendRecv { sends, receives } => {
                matches!(*other, SendRecv { sends: s, receives: r } if s == sends && r == receives)
            }
        }
    }
}

impl std::fmt::Display for CallWhat {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CallWhat::AllReduce { mode, op, dtype } => {
                write!(f, "all_reduce(mode = {}, op = {op}, dtype = {dtype})", mode.name())
            }
            CallWhat::ReduceScatter { op, dtype } => write!(f, "reduce_scatter(op = {op}, dtype = {dtype})"),
            CallWhat::Broadcast { root, dtype } => write!(f, "broadcast(root = {root}, dtype = {dtype})"),
            CallWhat::AllGather { dtype } => write!(f, "all_gather(dtype = {dtype})"),
            CallWhat::AllToAll { dtype } => write!(f, "all_to_all(dtype = {dtype})"),
            CallWhat::AllToAllV { dtype } => write!(f, "all_to_all_v(dtype = {dtype})"),
            CallWhat::Barrier => write!(f, "barrier()"),
            CallWhat::Reduce { op, root, dtype } => write!(f, "reduce(op = {op}, root = {root}, dtype = {dtype})"),
            CallWhat::Gather { root, dtype } => write!(f, "gather(root = {root}, dtype = {dtype})"),
            CallWhat::Scatter { root, dtype } => write!(f, "scatter(root = {root}, dtype = {dtype})"),
            CallWhat::AllGatherV { dtype } => write!(f, "all_gather_v(dtype = {dtype})"),
            CallWhat::SendRecv { sends, receives } => {
                write!(f, "send!/recv! batch ({sends} send{}, {receives} receive{})", plural(*sends), plural(*receives))
            }
        }
    }
}

impl CallWhat {
    /// The collective's name, as its macro is spelled (without the `!`).
    pub(crate) fn name(&self) -> &'static str {
        match self {
            CallWhat::AllReduce { .. } => "all_reduce",
            CallWhat::ReduceScatter { .. } => "reduce_scatter",
            CallWhat::Broadcast { .. } => "broadcast",
            CallWhat::AllGather { .. } => "all_gather",
            CallWhat::AllToAll { .. } => "all_to_all",
            CallWhat::AllToAllV { .. } => "all_to_all_v",
            CallWhat::Barrier => "barrier",
            CallWhat::Reduce { .. } => "reduce",
            CallWhat::Gather { .. } => "gather",
            CallWhat::Scatter { .. } => "scatter",
            CallWhat::AllGatherV { .. } => "all_gather_v",
            CallWhat::SendRecv { .. } => "send_recv",
        }
    }

    /// The dtype and reduce op of the call, where it has them.
    pub(crate) fn dtype_and_op(&self) -> (Option<DType>, Option<ReduceOp>) {
        match *self {
            CallWhat::AllReduce { op, dtype, .. }
            | CallWhat::ReduceScatter { op, dtype }
            | CallWhat::Reduce { op, dtype, .. } => (Some(dtype), Some(op)),
            CallWhat::Broadcast { dtype, .. }
            | CallWhat::AllGather { dtype }
            | CallWhat::AllToAll { dtype }
            | CallWhat::AllToAllV { dtype }
            | CallWhat::Gather { dtype, .. }
            | CallWhat::Scatter { dtype, .. }
            | CallWhat::AllGatherV { dtype } => (Some(dtype), None),
            CallWhat::Barrier | CallWhat::SendRecv { .. } => (None, None),
        }
    }
}

fn plural(n: u32) -> &'static str {
    if n == 1 { "" } else { "s" }
}

/// Describes a call for messages; formatted only on the error path, never per call. A
/// collective's label is plain data (cloning it touches no shared counter).
#[derive(Clone)]
pub(crate) enum Label {
    /// Work that is not a collective (staging, kernel launches, local passes).
    Work(Arc<WorkLabel>),
    /// A collective call and where the host code made it, with its site in the flight
    /// recorder of the rank it runs on where the host's plan of that site knows it
    /// ([`RecorderSite`]).
    Call(CallWhat, &'static Location<'static>, RecorderSite),
    /// A collective call over a group (its members' world ranks) and where it was made.
    GroupCall(CallWhat, &'static Location<'static>, Arc<[usize]>),
    /// A collective call with what a trace shows of it (made only while a trace is recorded).
    Traced(Arc<TracedCall>),
}

/// A call site's index in the flight recorder of one rank, plus one; 0: not known (the
/// recorder looks the label up). Made when a host that drives one rank plans a call site
/// (`collective::site`), so a call issued from the plan spares the recorder its lookup, which
/// compares the whole call (a third of what the recorder costs a call). Never part of a
/// label's identity ([`Label::same_site`]).
pub(crate) type RecorderSite = u32;

/// A collective call's parts: what it is, where it was made, its group (`None`: the world).
pub(crate) type CallParts<'a> = (CallWhat, &'static Location<'static>, Option<&'a Arc<[usize]>>);

/// Work that is not a collective: its short name (a trace event's) and its description.
pub(crate) struct WorkLabel {
    /// `kernel`, `staging` or `local pass` (a trace event's category).
    pub(crate) kind: &'static str,
    pub(crate) name: String,
    pub(crate) text: String,
    /// Where the host code asked for it (`file:line`), when known.
    pub(crate) site: Option<String>,
}

/// A collective call as a trace shows it.
pub(crate) struct TracedCall {
    pub(crate) what: CallWhat,
    pub(crate) at: &'static Location<'static>,
    /// The group's members (world ranks), `None` for the world.
    pub(crate) group: Option<Arc<[usize]>>,
    /// The operands, as `role = `name``.
    pub(crate) windows: String,
    /// Bytes of the main operand per rank.
    pub(crate) bytes: u64,
    /// The algorithm the runtime chose (LL messages, when the kernel used them, are said by the
    /// trace event).
    pub(crate) algorithm: &'static str,
}

impl Label {
    /// This collective call's label with what a trace shows of it: its operands (`role =
    /// `name``), the bytes of its main operand per rank, the algorithm chosen.
    pub(crate) fn traced(&self, windows: String, bytes: u64, algorithm: &'static str) -> Label {
        match self.parts() {
            Some((what, at, group)) => {
                Label::Traced(Arc::new(TracedCall { what, at, group: group.cloned(), windows, bytes, algorithm }))
            }
            None => self.clone(),
        }
    }

    /// A label for work that is not a collective (`kind`, see [`WorkLabel`]): `name` for
    /// traces, `text` for messages.
    pub(crate) fn work(kind: &'static str, name: String, text: String, site: Option<String>) -> Label {
        Label::Work(Arc::new(WorkLabel { kind, name, text, site }))
    }

    /// The collective, where it was made and its group (`None`: not a collective, or the world).
    pub(crate) fn parts(&self) -> Option<CallParts<'_>> {
        match self {
            Label::Work(_) => None,
            Label::Call(what, at, _) => Some((*what, *at, None)),
            Label::GroupCall(what, at, members) => Some((*what, *at, Some(members))),
            Label::Traced(call) => Some((call.what, call.at, call.group.as_ref())),
        }
    }

    /// Whether both label the same call from the same place (by identity: no string compare).
    /// The two common cases inline (the flight recorder asks per call), the rest out of line.
    #[inline(always)]
    pub(crate) fn same_site(&self, other: &Label) -> bool {
        match (self, other) {
            (Label::Call(a, at_a, _), Label::Call(b, at_b, _)) => std::ptr::eq(*at_a, *at_b) && a == b,
            (Label::Traced(a), Label::Traced(b)) if Arc::ptr_eq(a, b) => true,
            _ => self.same_site_otherwise(other),
        }
    }

    /// [`Label::same_site`] for the other cases: labels of different kinds, distinct traced
    /// labels (compared by their parts), and work.
    #[inline(never)]
    fn same_site_otherwise(&self, other: &Label) -> bool {
        match (self, other) {
            (Label::Work(a), Label::Work(b)) => Arc::ptr_eq(a, b),
            (Label::Work(_), _) | (_, Label::Work(_)) => false,
            (a, b) => match (a.parts(), b.parts()) {
                (Some((wa, at_a, ga)), Some((wb, at_b, gb))) => {
                    wa == wb
                        && std::ptr::eq(at_a, at_b)
                        && match (ga, gb) {
                            (None, None) => true,
                            (Some(ga), Some(gb)) => Arc::ptr_eq(ga, gb) || ga == gb,
                            _ => false,
                        }
                }
                _ => false,
            },
        }
    }

    /// The name a trace gives the event: the macro (`all_reduce!`) or the work's short name.
    pub(crate) fn trace_name(&self) -> String {
        match (self, self.parts()) {
            (Label::Work(work), _) => work.name.clone(),
            (_, Some((CallWhat::SendRecv { .. }, _, _))) => "send!/recv!".to_owned(),
            (_, Some((what, _, _))) => format!("{}!", what.name()),
            (_, None) => unreachable!("a label is work or a collective"),
        }
    }

    pub(crate) fn describe(&self) -> String {
        match (self, self.parts()) {
            (Label::Work(work), _) => work.text.clone(),
            (_, Some((what, at, None))) => format!("{what} at {}:{}:{}", at.file(), at.line(), at.column()),
            (_, Some((what, at, Some(members)))) => {
                format!("{what} over group {members:?} at {}:{}:{}", at.file(), at.line(), at.column())
            }
            (_, None) => unreachable!("a label is work or a collective"),
        }
    }
}

/// The cells of a call's signal, zeroed at the next sync if the call fails or is skipped. The
/// host keeps the signal's window alive until then (see `Host`'s calls in flight).
#[derive(Clone, Copy, Debug)]
pub(crate) struct SignalCells {
    pub(crate) offset: usize,
    pub(crate) bytes: usize,
}

/// The text of a panic's payload.
pub(crate) fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "<non-string panic payload>".into())
}
