//! Rust mirrors of the structs in `pld_device.h`. Their layout is checked against every device
//! binary at load ([`rust_layout`] vs the binary's `pld_abi_layout`).

use std::ffi::c_void;
use std::mem::{offset_of, size_of};
use std::sync::atomic::{AtomicI32, AtomicU64};

use pld_model::AbiLayout;

/// `pld_diag`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Diag {
    pub cell_off: u64,
    pub row_off: u64,
    pub row_len: i32,
    pub expected: i32,
    pub observed: i32,
    pub cmp: i32,
    pub index: i32,
    pub _pad: i32,
    pub value: i64,
    pub limit: i64,
    pub peer_call: FingerprintWords,
}

/// `pld_fingerprint`: a call's number and the three words describing it
/// (the `fingerprint` module encodes and decodes them).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct FingerprintWords {
    pub seq: u64,
    pub what: [u64; 3],
}

/// `pld_ops`.
#[repr(C)]
pub(crate) struct Ops {
    pub data: *mut c_void,
    pub sleep: unsafe extern "C" fn(*mut c_void, *const i32, i32, u64),
    pub wake: unsafe extern "C" fn(*mut c_void, i32, *const i32),
    pub put: unsafe extern "C" fn(*mut c_void, i32, u64, *const c_void, u64) -> i32,
    pub get: unsafe extern "C" fn(*mut c_void, i32, *mut c_void, u64, u64) -> i32,
    pub accumulate: unsafe extern "C" fn(*mut c_void, i32, u64, i32, i32) -> i32,
}

// SAFETY: `data` is null for the local transport and the functions are thread-safe.
unsafe impl Sync for Ops {}

/// `pld_ctx`.
#[repr(C)]
pub(crate) struct Ctx {
    pub abi_version: u32,
    pub rank: i32,
    pub nranks: i32,
    pub spin_limit: i32,
    pub yield_limit: i32,
    pub max_running: i32,
    pub peer_bases: *const *mut u8,
    pub local_base: *mut u8,
    pub window_bytes: u64,
    pub sleepers: *const *mut i32,
    pub abort_flag: *const i32,
    pub running: *mut i32,
    pub timeout_ns: u64,
    pub scratch: *mut u8,
    pub scratch_bytes: u64,
    pub ops: *const Ops,
    pub diag: *mut Diag,
    pub watch: *const Watch,
    /// Peers sent an LL message this call whose sleep was not looked at yet (the kernel's own
    /// state: zero when it starts).
    pub wakes_due: u64,
    /// The slot of those messages.
    pub wakes_off: u64,
}

/// `pld_watch`: what a rank's call shows the runtime while it runs (its wait time when traced,
/// whether it used LL messages, the wait it is in). Atomics: other threads read the wait in
/// progress for hang reports.
#[repr(C)]
#[derive(Debug, Default)]
pub(crate) struct Watch {
    pub wait_ticks: AtomicU64,
    pub spin_ticks_256: AtomicU64,
    pub timed: AtomicI32,
    pub ll: AtomicI32,
    pub since_ns: AtomicU64,
    pub cell_off: AtomicU64,
    pub row_off: AtomicU64,
    pub row_len: AtomicI32,
    pub expected: AtomicI32,
    pub cmp: AtomicI32,
    pub peer: AtomicI32,
}

/// `pld_coll_args`: the arguments of every builtin collective kernel.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct CollArgs {
    pub target_off: u64,
    pub input_off: u64,
    pub count: u64,
    pub row_bytes: u64,
    pub signal_off: u64,
    pub send_counts_off: u64,
    pub recv_counts_off: u64,
    pub max_rows: i64,
    pub root: i32,
    /// [`CollArgs::CHECK_CALLS`] or 0.
    pub flags: i32,
    pub board_off: u64,
    pub call: FingerprintWords,
    /// The LL message area; `ll_stride` 0: none.
    pub ll_off: u64,
    pub ll_stride: u64,
    /// fp8 `op = avg`: the kernel's one rounding divides by this first (0: no division).
    pub divisor: u64,
    /// Slots per sender in every LL inbox (a power of two).
    pub ll_slots: u64,
}

impl CollArgs {
    /// `PLD_CHECK_CALLS`: publish and compare fingerprints.
    pub const CHECK_CALLS: i32 = 1;
}

/// `pld_p2p_op`: one send or receive of a point-to-point batch.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct P2pOp {
    pub what: [u64; 3],
    pub seq: u64,
    pub off: u64,
    pub bytes: u64,
    pub peer: i32,
    pub is_send: i32,
    /// Out: 0 waiting to post, 1 posted, 2 done, 3 failed.
    pub state: i32,
    pub _pad: i32,
    /// Out, on a mismatch: the peer's words.
    pub peer_what: [u64; 3],
}

impl P2pOp {
    /// `state` of an op that finished.
    pub const DONE: i32 = 2;
    /// `state` of the op that failed the batch.
    pub const FAILED: i32 = 3;
}

/// `pld_p2p_args`: the arguments of the point-to-point kernel.
#[repr(C)]
#[derive(Debug)]
pub(crate) struct P2pArgs {
    pub area_off: u64,
    pub nops: u64,
    pub depth: u64,
    pub ops: *mut P2pOp,
}

/// `pld_kernel_fn`.
pub(crate) type KernelFn = unsafe extern "C" fn(*mut Ctx, *const c_void) -> i32;

/// `pld_end_call`: what the runtime runs after a kernel that left LL wakes due.
pub(crate) type EndCallFn = unsafe extern "C" fn(*mut Ctx);

/// `sizeof`/`offsetof` of [`AbiLayout::FIELDS`] on the Rust side, in the same order.
pub(crate) fn rust_layout() -> Vec<u64> {
    AbiLayout::FIELDS
        .iter()
        .map(|&(strukt, field)| {
            let v = match (strukt, field) {
                ("pld_ctx", "") => size_of::<Ctx>(),
                ("pld_ctx", "abi_version") => offset_of!(Ctx, abi_version),
                ("pld_ctx", "rank") => offset_of!(Ctx, rank),
                ("pld_ctx", "nranks") => offset_of!(Ctx, nranks),
                ("pld_ctx", "spin_limit") => offset_of!(Ctx, spin_limit),
                ("pld_ctx", "yield_limit") => offset_of!(Ctx, yield_limit),
                ("pld_ctx", "max_running") => offset_of!(Ctx, max_running),
                ("pld_ctx", "peer_bases") => offset_of!(Ctx, peer_bases),
                ("pld_ctx", "local_base") => offset_of!(Ctx, local_base),
                ("pld_ctx", "window_bytes") => offset_of!(Ctx, window_bytes),
                ("pld_ctx", "sleepers") => offset_of!(Ctx, sleepers),
                ("pld_ctx", "abort_flag") => offset_of!(Ctx, abort_flag),
                ("pld_ctx", "running") => offset_of!(Ctx, running),
                ("pld_ctx", "timeout_ns") => offset_of!(Ctx, timeout_ns),
                ("pld_ctx", "scratch") => offset_of!(Ctx, scratch),
                ("pld_ctx", "scratch_bytes") => offset_of!(Ctx, scratch_bytes),
                ("pld_ctx", "ops") => offset_of!(Ctx, ops),
                ("pld_ctx", "diag") => offset_of!(Ctx, diag),
                ("pld_ctx", "watch") => offset_of!(Ctx, watch),
                ("pld_ctx", "wakes_due") => offset_of!(Ctx, wakes_due),
                ("pld_ctx", "wakes_off") => offset_of!(Ctx, wakes_off),
                ("pld_watch", "") => size_of::<Watch>(),
                ("pld_watch", "wait_ticks") => offset_of!(Watch, wait_ticks),
                ("pld_watch", "spin_ticks_256") => offset_of!(Watch, spin_ticks_256),
                ("pld_watch", "timed") => offset_of!(Watch, timed),
                ("pld_watch", "ll") => offset_of!(Watch, ll),
                ("pld_watch", "since_ns") => offset_of!(Watch, since_ns),
                ("pld_watch", "cell_off") => offset_of!(Watch, cell_off),
                ("pld_watch", "row_off") => offset_of!(Watch, row_off),
                ("pld_watch", "row_len") => offset_of!(Watch, row_len),
                ("pld_watch", "expected") => offset_of!(Watch, expected),
                ("pld_watch", "cmp") => offset_of!(Watch, cmp),
                ("pld_watch", "peer") => offset_of!(Watch, peer),
                ("pld_ops", "") => size_of::<Ops>(),
                ("pld_ops", "data") => offset_of!(Ops, data),
                ("pld_ops", "sleep") => offset_of!(Ops, sleep),
                ("pld_ops", "wake") => offset_of!(Ops, wake),
                ("pld_ops", "put") => offset_of!(Ops, put),
                ("pld_ops", "get") => offset_of!(Ops, get),
                ("pld_ops", "accumulate") => offset_of!(Ops, accumulate),
                ("pld_diag", "") => size_of::<Diag>(),
                ("pld_diag", "cell_off") => offset_of!(Diag, cell_off),
                ("pld_diag", "row_off") => offset_of!(Diag, row_off),
                ("pld_diag", "row_len") => offset_of!(Diag, row_len),
                ("pld_diag", "expected") => offset_of!(Diag, expected),
                ("pld_diag", "observed") => offset_of!(Diag, observed),
                ("pld_diag", "cmp") => offset_of!(Diag, cmp),
                ("pld_diag", "index") => offset_of!(Diag, index),
                ("pld_diag", "value") => offset_of!(Diag, value),
                ("pld_diag", "limit") => offset_of!(Diag, limit),
                ("pld_diag", "peer_call") => offset_of!(Diag, peer_call),
                ("pld_fingerprint", "") => size_of::<FingerprintWords>(),
                ("pld_fingerprint", "seq") => offset_of!(FingerprintWords, seq),
                ("pld_fingerprint", "what") => offset_of!(FingerprintWords, what),
                ("pld_coll_args", "") => size_of::<CollArgs>(),
                ("pld_coll_args", "target_off") => offset_of!(CollArgs, target_off),
                ("pld_coll_args", "input_off") => offset_of!(CollArgs, input_off),
                ("pld_coll_args", "count") => offset_of!(CollArgs, count),
                ("pld_coll_args", "row_bytes") => offset_of!(CollArgs, row_bytes),
                ("pld_coll_args", "signal_off") => offset_of!(CollArgs, signal_off),
                ("pld_coll_args", "send_counts_off") => offset_of!(CollArgs, send_counts_off),
                ("pld_coll_args", "recv_counts_off") => offset_of!(CollArgs, recv_counts_off),
                ("pld_coll_args", "max_rows") => offset_of!(CollArgs, max_rows),
                ("pld_coll_args", "root") => offset_of!(CollArgs, root),
                ("pld_coll_args", "flags") => offset_of!(CollArgs, flags),
                ("pld_coll_args", "board_off") => offset_of!(CollArgs, board_off),
                ("pld_coll_args", "call") => offset_of!(CollArgs, call),
                ("pld_coll_args", "ll_off") => offset_of!(CollArgs, ll_off),
                ("pld_coll_args", "ll_stride") => offset_of!(CollArgs, ll_stride),
                ("pld_coll_args", "divisor") => offset_of!(CollArgs, divisor),
                ("pld_coll_args", "ll_slots") => offset_of!(CollArgs, ll_slots),
                ("pld_p2p_op", "") => size_of::<P2pOp>(),
                ("pld_p2p_op", "what") => offset_of!(P2pOp, what),
                ("pld_p2p_op", "seq") => offset_of!(P2pOp, seq),
                ("pld_p2p_op", "off") => offset_of!(P2pOp, off),
                ("pld_p2p_op", "bytes") => offset_of!(P2pOp, bytes),
                ("pld_p2p_op", "peer") => offset_of!(P2pOp, peer),
                ("pld_p2p_op", "is_send") => offset_of!(P2pOp, is_send),
                ("pld_p2p_op", "state") => offset_of!(P2pOp, state),
                ("pld_p2p_op", "peer_what") => offset_of!(P2pOp, peer_what),
                ("pld_p2p_args", "") => size_of::<P2pArgs>(),
                ("pld_p2p_args", "area_off") => offset_of!(P2pArgs, area_off),
                ("pld_p2p_args", "nops") => offset_of!(P2pArgs, nops),
                ("pld_p2p_args", "depth") => offset_of!(P2pArgs, depth),
                ("pld_p2p_args", "ops") => offset_of!(P2pArgs, ops),
                other => {
                    unreachable!("AbiLayout::FIELDS names {other:?}, which has no Rust mirror")
                }
            };
            v as u64
        })
        .collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_layout_field_has_a_mirror() {
        assert_eq!(super::rust_layout().len(), pld_model::AbiLayout::FIELDS.len());
    }
}
