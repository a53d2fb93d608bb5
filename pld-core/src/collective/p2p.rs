//! Point-to-point: `Host::send` and `Host::recv`. The k-th send from rank s to rank d meets the
//! k-th receive of d from s (messages are numbered per direction, as MPI matches them in order);
//! both sides carry the message's fingerprint (dtype, count, the two ranks), so a send and a
//! receive that disagree fail on both ranks, naming both, and move nothing.
//!
//! A host does not queue a send or a receive at once: it collects its consecutive ones (up to
//! its next other call, read or sync) and queues them as one batch per rank, which the device
//! progresses in whatever order the peers' messages come (`pld_builtin_send_recv`). So a ring
//! exchange in which every rank sends before it receives cannot deadlock, as NCCL's grouped
//! calls cannot: the grouping is implicit here.

use std::panic::Location;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use pld_model::{DType, Element, KernelKind, KernelVariant};

use crate::call::{CallWhat, Label};
use crate::device::abi::{P2pArgs, P2pOp};
use crate::device::builtins;
use crate::error::{Error, Result};
use crate::fingerprint::{Fingerprint, describe_words};
use crate::group::{Group, GroupSet};
use crate::host::{Host, foreign_window};
use crate::memory::{Allocation, Window};
use crate::rank::RankState;

/// Options of [`Host::send`]: `SendTo::rank(1)`, and `.from(0)` for a host that drives more than
/// one rank.
#[derive(Clone, Copy, Default)]
pub struct SendTo<'a> {
    ends: Ends<'a>,
}

/// Options of [`Host::recv`]: `RecvFrom::rank(0)`, and `.to(1)` for a host that drives more
/// than one rank.
#[derive(Clone, Copy, Default)]
pub struct RecvFrom<'a> {
    ends: Ends<'a>,
}

/// The two ends of a message as a call gives them: the peer, and the rank the call runs on.
#[derive(Clone, Copy, Default)]
struct Ends<'a> {
    peer: i64,
    own: Option<i64>,
    nranks: Option<usize>,
    groups: Option<&'a [Group]>,
}

macro_rules! p2p_setters {
    ($ty:ident, $own:ident, $own_doc:literal) => {
        impl<'a> $ty<'a> {
            #[doc = $own_doc]
            pub fn $own(mut self, rank: i64) -> Self {
                self.ends.own = Some(rank);
                self
            }

            /// Declares the rank count this call is written for; checked against the world (or
            /// the group).
            pub fn nranks(mut self, nranks: usize) -> Self {
                self.ends.nranks = Some(nranks);
                self
            }

            /// Ranks are of `group` (a [`Group`], or [`Groups`](crate::Groups): then one message
            /// in each of them, between the same group ranks).
            pub fn group(mut self, group: &'a impl GroupSet) -> Self {
                self.ends.groups = Some(group.group_list());
                self
            }
        }
    };
}

impl SendTo<'_> {
    /// A send to rank `peer`.
    pub fn rank(peer: i64) -> Self {
        SendTo { ends: Ends { peer, ..Ends::default() } }
    }
}

impl RecvFrom<'_> {
    /// A receive from rank `peer`.
    pub fn rank(peer: i64) -> Self {
        RecvFrom { ends: Ends { peer, ..Ends::default() } }
    }
}

p2p_setters!(
    SendTo,
    from,
    "The sending rank: the send runs there when this host drives it, and is skipped on a host \
     that does not (so one SPMD program says `from = 0, to = 1` on every rank). Without it, the \
     host's own rank (a host of `World::spmd` or MPI)."
);
p2p_setters!(
    RecvFrom,
    to,
    "The receiving rank: the receive runs there when this host drives it, and is skipped on a \
     host that does not. Without it, the host's own rank (a host of `World::spmd` or MPI)."
);

/// The sends and receives a host collected, not yet queued. Each window and group is held
/// once, and an op names its own by index: a message loop holding a reference per message would
/// bounce the window's count between the cores of its ranks at every send! and recv!.
#[derive(Default)]
pub(crate) struct Collected {
    ops: Vec<Pending>,
    /// Held until the batch is past (a peer reads a send's window).
    windows: Vec<Arc<Allocation>>,
    groups: Vec<Arc<[usize]>>,
}

impl Collected {
    pub(crate) fn is_empty(&self) -> bool {
        self.ops.is_empty()
    }

    /// The ops collected so far, leaving room for as many (a loop of messages between two
    /// other calls usually collects the same number each time).
    pub(crate) fn take(&mut self) -> Collected {
        let room = self.ops.len();
        std::mem::replace(self, Collected { ops: Vec::with_capacity(room), ..Collected::default() })
    }

    /// Collects `op` (inline: the op is read whole here, and out of line it was read back wider
    /// than its caller had stored it).
    #[inline(always)]
    fn push(
        &mut self,
        op: P2pOp,
        rank: usize,
        location: &'static Location<'static>,
        dtype: DType,
        window: &Arc<Allocation>,
        group: Option<&Arc<[usize]>>,
    ) {
        let window = index_of(&mut self.windows, window);
        let group = group.map(|g| index_of(&mut self.groups, g));
        self.ops.push(Pending { rank, op, location, dtype, window, group });
    }
}

/// The index of `item` in `held` (compared by address), held there if it was not.
fn index_of<T: ?Sized>(held: &mut Vec<Arc<T>>, item: &Arc<T>) -> u32 {
    let found = held.iter().rposition(|h| Arc::ptr_eq(h, item));
    found.unwrap_or_else(|| {
        held.push(Arc::clone(item));
        held.len() - 1
    }) as u32
}

/// One send or receive a host collected.
struct Pending {
    /// The world rank it runs on.
    rank: usize,
    op: P2pOp,
    location: &'static Location<'static>,
    dtype: DType,
    /// Its window and group (the group it was addressed in, for messages), in [`Collected`].
    window: u32,
    group: Option<u32>,
}

impl Pending {
    /// `send! of `w` (f32 x 8) to rank 1 at src/main.rs:10:5`.
    fn describe(&self, batch: &Collected) -> String {
        let is_send = self.op.is_send != 0;
        let (verb, dir) = if is_send { ("send!", "to") } else { ("recv!", "from") };
        let count = self.op.bytes as usize / self.dtype.size().max(1);
        let group = match self.group {
            Some(g) => format!(" in group {:?}", batch.groups[g as usize]),
            None => String::new(),
        };
        let at = self.location;
        format!(
            "{verb} of `{}` ({} x {count}) {dir} rank {}{group} (message #{} of that direction) at {}:{}:{}",
            batch.windows[self.window as usize].name(),
            self.dtype,
            self.op.peer,
            self.op.seq,
            at.file(),
            at.line(),
            at.column()
        )
    }
}

impl Host<'_> {
    /// Sends `window` to rank `to` (world or group rank): the matching [`Host::recv`] there (the
    /// same number of elements of the same dtype) receives its bytes. Returns once queued; the
    /// send is done when the receiver has taken the bytes, and this rank's next other call
    /// waits for that.
    #[track_caller]
    pub fn send<T: Element>(&self, window: &Window<'_, T>, to: SendTo<'_>) -> Result<()> {
        self.point_to_point(window, to.ends, true, Location::caller())
    }

    /// Receives into `window` from rank `from` (world or group rank) the bytes of its matching
    /// [`Host::send`]: the same number of elements of the same dtype, or an error on both
    /// ranks and nothing moved.
    #[track_caller]
    pub fn recv<T: Element>(&self, window: &Window<'_, T>, from: RecvFrom<'_>) -> Result<()> {
        self.point_to_point(window, from.ends, false, Location::caller())
    }

    fn point_to_point<T: Element>(
        &self,
        window: &Window<'_, T>,
        ends: Ends<'_>,
        is_send: bool,
        location: &'static Location<'static>,
    ) -> Result<()> {
        self.check_healthy()?;
        let what = if is_send { "send!" } else { "recv!" };
        let call = || {
            format!("{what} of `{}` at {}:{}:{}", window.name(), location.file(), location.line(), location.column())
        };
        let shared = self.world().shared();
        if !window.belongs_to(shared.heap()) {
            return Err(foreign_window(call(), if is_send { "window" } else { "target" }, window.name()));
        }
        if shared.p2p_depth == 0 {
            let needed = pld_model::P2P_WINDOW_SHARE * pld_model::p2p_area_bytes(self.nranks(), 1);
            return Err(Error::InvalidSetting {
                setting: "PLD_WINDOW_BYTES (or WorldBuilder::window_bytes)".into(),
                value: shared.heap().capacity().to_string(),
                expected: format!(
                    "at least {needed} bytes for {}: the point-to-point area takes 128 bytes per rank and may use \
                     1/{} of a window, and this world's {} ranks do not fit in that",
                    call(),
                    pld_model::P2P_WINDOW_SHARE,
                    self.nranks()
                ),
            });
        }
        let n = self.nranks();
        // One message in the world, or one in each group (a closure, not a list of spaces: a
        // send! or recv! is a call a loop makes thousands of times, and allocates nothing).
        let in_space = |group: Option<&Group>| -> Result<()> {
            let size = group.map_or(n, Group::size);
            let to_world = |r: usize| group.map_or(r, |g| g.members()[r]);
            if let Some(declared) = ends.nranks
                && declared != size
            {
                return Err(Error::NranksMismatch { call: call(), declared, world: size });
            }
            let rank_in_range = |rank: i64, role: &str| -> Result<usize> {
                usize::try_from(rank).ok().filter(|&r| r < size).ok_or_else(|| Error::RankOutOfRange {
                    what: format!("{} ({role})", call()),
                    rank: rank.max(0) as usize,
                    nranks: size,
                })
            };
            let peer = to_world(rank_in_range(ends.peer, if is_send { "to" } else { "from" })?);
            let own = match ends.own {
                Some(own) => to_world(rank_in_range(own, if is_send { "from" } else { "to" })?),
                None => match self.rank() {
                    Some(own) => {
                        if group.is_some_and(|g| g.rank_of(own).is_none()) {
                            return Ok(()); // this host's rank is not in this group
                        }
                        own
                    }
                    None => {
                        return Err(Error::InvalidSetting {
                            setting: format!("{} ({})", call(), if is_send { "from" } else { "to" }),
                            value: "none".into(),
                            expected: format!(
                                "the rank it runs on: this host drives ranks {:?}, so say `{} = r`",
                                self.ranks(),
                                if is_send { "from" } else { "to" }
                            ),
                        });
                    }
                },
            };
            if !self.ranks().contains(&own) {
                return Ok(()); // another host's rank: its host runs this call
            }
            let (src, dst) = if is_send { (own, peer) } else { (peer, own) };
            let progress = &shared.ranks[own];
            let counter = if is_send { progress.sent.of(dst) } else { progress.received.of(src) };
            // One writer per counter (the host of `own`): a load and a store.
            let seq = counter.load(Ordering::Relaxed) + 1;
            counter.store(seq, Ordering::Relaxed);
            let fingerprint = Fingerprint {
                seq,
                kind: KernelKind::SendRecv,
                op: None,
                dtype: Some(T::DTYPE),
                root: src as i32,
                count: window.len() as u64,
                row_len: dst as u64,
            };
            let op = P2pOp {
                what: fingerprint.words().what,
                seq,
                off: window.offset() as u64,
                bytes: window.bytes() as u64,
                peer: peer as i32,
                is_send: i32::from(is_send),
                ..P2pOp::default()
            };
            let members = group.map(|g| &g.comm.members);
            self.collected_p2p().push(op, own, location, T::DTYPE, window.allocation_ref(), members);
            Ok(())
        };
        match ends.groups {
            None => in_space(None),
            Some(groups) => groups.iter().try_for_each(|g| in_space(Some(g))),
        }
    }

    /// Queues the collected sends and receives: one batch per rank, in the order they were
    /// called.
    pub(crate) fn queue_p2p(&self, batch: Collected) {
        let shared = self.world().shared();
        let kernel = match builtins() {
            Ok(builtins) => builtins.kernel(KernelVariant::movement(KernelKind::SendRecv)),
            Err(error) => {
                for rank in self.ranks() {
                    shared.record_failure(rank, error.clone(), None);
                }
                return;
            }
        };
        // One run of indices per rank, in the order the kernel wants: each direction's messages
        // together, in message order (a stable sort keeps each direction's call order, which
        // is its numbering). Indices, not the ops: they are large, and stay where they are.
        let ops = &batch.ops;
        let mut order: Vec<u32> = (0..ops.len() as u32).collect();
        order.sort_by_key(|&i| {
            let p = &ops[i as usize];
            (p.rank, p.op.peer, p.op.is_send)
        });
        let runs: Vec<Vec<u32>> =
            order.chunk_by(|&a, &b| ops[a as usize].rank == ops[b as usize].rank).map(<[u32]>::to_vec).collect();
        let batch = Arc::new(batch);
        for order in runs {
            let ops = &batch.ops;
            let rank = ops[order[0] as usize].rank;
            let words: Vec<P2pOp> = order.iter().map(|&i| ops[i as usize].op).collect();
            let sends = words.iter().filter(|w| w.is_send != 0).count() as u32;
            let what = CallWhat::SendRecv { sends, receives: words.len() as u32 - sends };
            let mut label = Label::Call(what, ops[order[0] as usize].location, 0);
            if shared.tracer.timed {
                let windows = order
                    .iter()
                    .map(|&i| {
                        let p = &ops[i as usize];
                        let direction = if p.op.is_send != 0 { "to" } else { "from" };
                        format!("`{}` {direction} rank {}", batch.windows[p.window as usize].name(), p.op.peer)
                    })
                    .collect::<Vec<_>>()
                    .join(", ");
                let bytes = words.iter().map(|w| w.bytes).sum();
                label = label.traced(windows, bytes, "direct");
            }
            let task = &shared.ranks[rank].issued.0;
            let seq = task.load(Ordering::Relaxed) + 1;
            task.store(seq, Ordering::Relaxed);
            let held = Arc::clone(&batch);
            let queued = self.submit(
                rank,
                &label,
                seq,
                None,
                Box::new(move |state: &mut RankState| run_batch(state, kernel, words, &order, &held)),
            );
            if queued || shared.fabric.agree_on_allocation.is_some() {
                self.hold_in_flight(seq, batch.windows.iter().cloned());
            }
        }
    }
}

/// Runs one rank's batch (`words`: its ops' words, in kernel order; `order`: where each is in
/// `batch`) and words a failure after the op that failed.
fn run_batch(
    state: &mut RankState,
    kernel: crate::device::abi::KernelFn,
    mut words: Vec<P2pOp>,
    order: &[u32],
    batch: &Collected,
) -> Result<()> {
    let shared = state.shared();
    let args = P2pArgs {
        area_off: shared.p2p_off as u64,
        nops: words.len() as u64,
        depth: shared.p2p_depth as u64,
        ops: words.as_mut_ptr(),
    };
    let world = Arc::clone(&shared.world);
    let status = state.invoke(kernel, (&raw const args).cast(), 0, &world);
    if status == pld_model::DeviceStatus::Ok as i32 {
        return Ok(());
    }
    // The batch's failure is told by its operations' states; the diagnosis is left zero.
    let _ = state.take_diag();
    Err(batch_failure(state, status, &words, order, batch))
}

/// The error of a failed batch, in terms of its sends and receives (`words` as the kernel left
/// them, `order` where each is in `batch`).
fn batch_failure(state: &RankState, status: i32, words: &[P2pOp], order: &[u32], batch: &Collected) -> Error {
    use pld_model::DeviceStatus;
    let shared = state.shared();
    let rank = state.rank;
    let failed = words.iter().position(|w| w.state == P2pOp::FAILED);
    let pending = words.iter().position(|w| w.state < P2pOp::DONE);
    let Some(k) = failed.or(pending).or((!words.is_empty()).then_some(0)) else {
        return Error::KernelFailed {
            rank,
            call: "an empty send!/recv! batch".into(),
            reason: format!("status {status}"),
        };
    };
    let op = &words[k];
    let call = batch.ops[order[k] as usize].describe(batch);
    let peer = op.peer as usize;
    match DeviceStatus::from_code(status) {
        Some(DeviceStatus::Mismatch) => {
            let (own_verb, peer_verb) = if op.is_send != 0 { ("send!", "recv!") } else { ("recv!", "send!") };
            let words = |what| crate::device::abi::FingerprintWords { seq: op.seq, what };
            Error::MismatchedCall {
                rank,
                call,
                peer,
                peer_call: format!("{peer_verb} of {}", describe_words(words(op.peer_what))),
                own_call: format!("{own_verb} of {}", describe_words(words(op.what))),
                ranks: shared.progress_report(),
            }
        }
        Some(DeviceStatus::Timeout) => {
            let mut waiting: Vec<String> = words
                .iter()
                .filter(|w| w.state < P2pOp::DONE)
                .map(|w| match (w.is_send != 0, w.state) {
                    (true, 0) => format!(
                        "rank {} has not taken the {} messages before message #{} from rank {rank}",
                        w.peer, shared.p2p_depth, w.seq
                    ),
                    (true, _) => format!(
                        "rank {} never received message #{} from rank {rank} (no matching recv! from rank {rank} there)",
                        w.peer, w.seq
                    ),
                    (false, _) => format!(
                        "rank {} never sent message #{} to rank {rank} (no matching send! to rank {rank} there)",
                        w.peer, w.seq
                    ),
                })
                .collect();
            waiting.dedup();
            Error::Unmatched {
                rank,
                call,
                peer,
                waiting: waiting.join("; "),
                timeout_ms: shared.settings.timeout.as_millis() as u64,
                ranks: shared.progress_report(),
            }
        }
        Some(DeviceStatus::Aborted) => Error::Aborted { rank, call },
        _ => Error::KernelFailed {
            rank,
            call,
            reason: format!("status {status} (an operand outside the window, or a transport failure)"),
        },
    }
}
