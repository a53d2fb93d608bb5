//! The option builders of the host collectives: what each call may say besides its windows.

use pld_model::{AllReduceMode, Element, ReduceOp};

use crate::group::{Group, GroupSet};
use crate::memory::{Operand, Window};

/// Options every collective shares: the signal to use, the rank count the caller expects, and
/// the group (or groups) the call runs over.
#[derive(Clone, Copy, Default)]
pub struct Common<'a> {
    pub(super) nranks: Option<usize>,
    pub(super) signal: Option<Operand<'a>>,
    pub(super) groups: Option<&'a [Group]>,
}

macro_rules! common_setters {
    ($ty:ident) => {
        impl<'a> $ty<'a> {
            /// Declares the rank count this call is written for; checked against the world.
            pub fn nranks(mut self, nranks: usize) -> Self {
                self.common.nranks = Some(nranks);
                self
            }

            /// Uses `signal` (i32, one cell per rank) instead of allocating one for the call.
            pub fn signal<T: Element>(mut self, signal: &'a Window<'_, T>) -> Self {
                self.common.signal = Some(signal.operand());
                self
            }

            /// Runs the call over `group` (a [`Group`], or [`Groups`](crate::Groups): then in
            /// every one of them at once). Roots, shapes and `nranks` are in group terms; ranks
            /// outside are untouched.
            pub fn group(mut self, group: &'a impl GroupSet) -> Self {
                self.common.groups = Some(group.group_list());
                self
            }
        }
    };
}

/// Options of [`Host::all_reduce`](crate::Host::all_reduce): `AllReduce::ring().op(ReduceOp::Max)`.
#[derive(Clone, Default)]
pub struct AllReduce<'a> {
    pub(super) mode: AllReduceMode,
    pub(super) op: ReduceOp,
    /// `premul_sum`'s scalar for this host's ranks (`None`: 1).
    pub(super) scale: Option<f64>,
    pub(super) common: Common<'a>,
}

impl<'a> AllReduce<'a> {
    /// Mesh (one-shot) mode with `op = sum`: the default.
    pub fn mesh() -> AllReduce<'a> {
        AllReduce::default()
    }

    /// Ring mode with `op = sum`.
    pub fn ring() -> AllReduce<'a> {
        AllReduce { mode: AllReduceMode::Ring, ..AllReduce::default() }
    }

    /// Sets the mode.
    pub fn mode(mut self, mode: AllReduceMode) -> AllReduce<'a> {
        self.mode = mode;
        self
    }

    /// Sets the reduce op.
    pub fn op(mut self, op: ReduceOp) -> AllReduce<'a> {
        self.op = op;
        self
    }

    /// `op = premul_sum(scalar)`: the sum of every rank's input times its rank's scalar (this
    /// host's ranks use `scalar`; under `World::spmd` or MPI each rank's host gives its own).
    pub fn premul_sum(mut self, scalar: f64) -> AllReduce<'a> {
        (self.op, self.scale) = (ReduceOp::PremulSum, Some(scalar));
        self
    }
}
common_setters!(AllReduce);

/// Options of [`Host::reduce_scatter`](crate::Host::reduce_scatter).
#[derive(Clone, Default)]
pub struct ReduceScatter<'a> {
    pub(super) op: ReduceOp,
    /// `premul_sum`'s scalar for this host's ranks (`None`: 1).
    pub(super) scale: Option<f64>,
    pub(super) common: Common<'a>,
}

impl<'a> ReduceScatter<'a> {
    /// `op = sum`.
    pub fn new() -> ReduceScatter<'a> {
        ReduceScatter::default()
    }

    /// Sets the reduce op.
    pub fn op(mut self, op: ReduceOp) -> ReduceScatter<'a> {
        self.op = op;
        self
    }

    /// `op = premul_sum(scalar)`, as [`AllReduce::premul_sum`].
    pub fn premul_sum(mut self, scalar: f64) -> ReduceScatter<'a> {
        (self.op, self.scale) = (ReduceOp::PremulSum, Some(scalar));
        self
    }
}
common_setters!(ReduceScatter);

/// Options of [`Host::broadcast`](crate::Host::broadcast); the root is required.
#[derive(Clone)]
pub struct Broadcast<'a> {
    pub(super) root: i64,
    pub(super) common: Common<'a>,
}

impl<'a> Broadcast<'a> {
    /// Broadcast from `root`.
    pub fn root(root: i64) -> Broadcast<'a> {
        Broadcast { root, common: Common::default() }
    }
}
common_setters!(Broadcast);

/// Options of [`Host::reduce`](crate::Host::reduce); the root is required.
#[derive(Clone)]
pub struct Reduce<'a> {
    pub(super) root: i64,
    pub(super) op: ReduceOp,
    /// `premul_sum`'s scalar for this host's ranks (`None`: 1).
    pub(super) scale: Option<f64>,
    pub(super) common: Common<'a>,
}

impl<'a> Reduce<'a> {
    /// Reduce to `root` with `op = sum`.
    pub fn root(root: i64) -> Reduce<'a> {
        Reduce { root, op: ReduceOp::Sum, scale: None, common: Common::default() }
    }

    /// Sets the reduce op.
    pub fn op(mut self, op: ReduceOp) -> Reduce<'a> {
        self.op = op;
        self
    }

    /// `op = premul_sum(scalar)`, as [`AllReduce::premul_sum`].
    pub fn premul_sum(mut self, scalar: f64) -> Reduce<'a> {
        (self.op, self.scale) = (ReduceOp::PremulSum, Some(scalar));
        self
    }
}
common_setters!(Reduce);

/// Options of the rooted collectives that move data only: [`Host::gather`](crate::Host::gather)
/// and [`Host::scatter`](crate::Host::scatter); the root is required.
#[derive(Clone)]
pub struct Rooted<'a> {
    pub(super) root: i64,
    pub(super) common: Common<'a>,
}

impl<'a> Rooted<'a> {
    /// Gather to, or scatter from, `root`.
    pub fn root(root: i64) -> Rooted<'a> {
        Rooted { root, common: Common::default() }
    }
}
common_setters!(Rooted);

/// Options of the collectives that take nothing but the shared ones: [`Host::all_gather`](crate::Host::all_gather),
/// [`Host::all_to_all`](crate::Host::all_to_all), [`Host::all_to_all_v`](crate::Host::all_to_all_v), [`Host::barrier`](crate::Host::barrier).
#[derive(Clone, Default)]
pub struct Opts<'a> {
    pub(super) common: Common<'a>,
}

impl<'a> Opts<'a> {
    /// No options: a signal is allocated for the call, the world's rank count is used.
    pub fn new() -> Opts<'a> {
        Opts::default()
    }
}
common_setters!(Opts);
