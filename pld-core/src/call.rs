//! Calls as the ranks run them: what a collective call is (for messages), where it was made,
//! and the signal it must leave clean.

use std::panic::Location;
use std::sync::Arc;

use pld_model::{AllReduceMode, DType, ReduceOp};

/// What a collective call is, for messages (formatted only when one is needed).
#[derive(Clone, Copy, Debug, PartialEq)]
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

fn plural(n: u32) -> &'static str {
    if n == 1 { "" } else { "s" }
}

/// Describes a call for messages; formatted only on the error path, never per call. A
/// collective's label is plain data (cloning it touches no shared counter).
#[derive(Clone)]
pub(crate) enum Label {
    /// A fixed text (staging, kernel launches).
    Text(Arc<str>),
    /// A collective call and where the host code made it.
    Call(CallWhat, &'static Location<'static>),
    /// A collective call over a group (its members' world ranks) and where it was made.
    GroupCall(CallWhat, &'static Location<'static>, Arc<[usize]>),
}

impl Label {
    /// This call's label as one group's part of it.
    pub(crate) fn in_group(&self, members: &Arc<[usize]>) -> Label {
        match self {
            Label::Call(what, at) | Label::GroupCall(what, at, _) => Label::GroupCall(*what, at, Arc::clone(members)),
            text => text.clone(),
        }
    }

    /// A label from a fixed text.
    pub(crate) fn text(text: String) -> Label {
        Label::Text(text.into())
    }

    /// Whether both label the same call from the same place (by identity: no string compare).
    pub(crate) fn same_site(&self, other: &Label) -> bool {
        match (self, other) {
            (Label::Call(a, at_a), Label::Call(b, at_b)) => a == b && std::ptr::eq(*at_a, *at_b),
            (Label::GroupCall(a, at_a, g_a), Label::GroupCall(b, at_b, g_b)) => {
                a == b && std::ptr::eq(*at_a, *at_b) && Arc::ptr_eq(g_a, g_b)
            }
            (Label::Text(a), Label::Text(b)) => Arc::ptr_eq(a, b),
            _ => false,
        }
    }

    pub(crate) fn describe(&self) -> String {
        match self {
            Label::Text(text) => text.to_string(),
            Label::Call(what, at) => format!("{what} at {}:{}:{}", at.file(), at.line(), at.column()),
            Label::GroupCall(what, at, members) => {
                format!("{what} over group {members:?} at {}:{}:{}", at.file(), at.line(), at.column())
            }
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
