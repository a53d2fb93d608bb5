//! Constants of the C device ABI (`pld-backend/c/pld_device.h`).
//!
//! The header is the authority for the C side; this module is the authority for the Rust side,
//! and [`AbiLayout::FIELDS`] is how the two are checked against each other when a device binary
//! is loaded: the binary reports `sizeof`/`offsetof` for these fields and the runtime compares.

/// Version of the device ABI. Bump it whenever the header's structs or semantics change.
pub const ABI_VERSION: u32 = 17;

/// Bytes a kernel stages at once (`PLD_TILE_BYTES`); every kernel's scratch holds at least this.
pub const TILE_BYTES: usize = 65536;

/// The most messages in flight per direction of a point-to-point channel before a sender waits
/// for an acknowledgement (`PLD_P2P_DEPTH_MAX`); a world's depth is [`p2p_depth`].
pub const P2P_DEPTH_MAX: usize = 8;

/// The share of a window the point-to-point area may take: at most `1 / P2P_WINDOW_SHARE`.
pub const P2P_WINDOW_SHARE: usize = 16;

/// Bytes of the point-to-point area in every window of a world of `nranks` at `depth`
/// (`pld_p2p_area_bytes`): a doorbell line, then a descriptor and an acknowledgement slot of 64
/// bytes per peer and depth; nothing at depth 0.
pub const fn p2p_area_bytes(nranks: usize, depth: usize) -> usize {
    if depth == 0 { 0 } else { 64 + 2 * nranks * depth * 64 }
}

/// The point-to-point depth of a world of `nranks` on windows of `window_bytes`: the largest
/// power of two up to [`P2P_DEPTH_MAX`] whose area fits in `1 / P2P_WINDOW_SHARE` of the window,
/// 0 (no point-to-point) when not even depth 1 does. The area grows with the rank count (1 KiB
/// per rank at depth 8), so huge worlds on small windows get a shallower queue rather than a
/// window too small to start; every process derives the same depth from settings they share.
pub const fn p2p_depth(nranks: usize, window_bytes: usize) -> usize {
    let budget = window_bytes / P2P_WINDOW_SHARE;
    let mut depth = P2P_DEPTH_MAX;
    while depth > 0 && p2p_area_bytes(nranks, depth) > budget {
        depth /= 2;
    }
    depth
}

/// Status codes returned by every device primitive and kernel (`PLD_*` in the header).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(i32)]
pub enum DeviceStatus {
    /// Success.
    Ok = 0,
    /// A wait passed its deadline; the context's diagnosis says which cell.
    Timeout = 1,
    /// Another rank failed, so this one stopped waiting.
    Aborted = 2,
    /// An access fell outside the window.
    OutOfBounds = 3,
    /// An all_to_all_v count was negative or above the capacity of a peer block.
    BadCount = 4,
    /// A transport callback (remote put/get/accumulate) failed.
    Transport = 5,
    /// The operation is not available on this transport.
    Unsupported = 6,
    /// A user kernel reported failure.
    KernelFailed = 7,
    /// A peer published another call than this rank's (collective, op, dtype, count or root);
    /// the diagnosis holds the peer's fingerprint.
    Mismatch = 8,
}

impl DeviceStatus {
    /// Decodes a status returned across the ABI; unknown codes map to `None`.
    pub fn from_code(code: i32) -> Option<DeviceStatus> {
        Some(match code {
            0 => DeviceStatus::Ok,
            1 => DeviceStatus::Timeout,
            2 => DeviceStatus::Aborted,
            3 => DeviceStatus::OutOfBounds,
            4 => DeviceStatus::BadCount,
            5 => DeviceStatus::Transport,
            6 => DeviceStatus::Unsupported,
            7 => DeviceStatus::KernelFailed,
            8 => DeviceStatus::Mismatch,
            _ => return None,
        })
    }
}

/// How `notify` changes a remote signal cell.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(i32)]
pub enum NotifyOp {
    /// Overwrite the cell.
    Set = 0,
    /// Atomically add to the cell (the value may be negative).
    AtomicAdd = 1,
}

/// How `wait` compares the local signal cell with the expected value.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(i32)]
pub enum WaitCmp {
    /// Until the cell equals the value.
    Eq = 0,
    /// Until the cell is at least the value.
    Ge = 1,
}

impl WaitCmp {
    /// `==` or `>=`, for messages.
    pub const fn symbol(self) -> &'static str {
        match self {
            WaitCmp::Eq => "==",
            WaitCmp::Ge => ">=",
        }
    }
}

/// The struct fields whose offsets a device binary reports (`pld_abi_layout`), in order.
pub struct AbiLayout;

impl AbiLayout {
    /// `(struct, field)` pairs; the entry with an empty field is the struct's `sizeof`.
    pub const FIELDS: &'static [(&'static str, &'static str)] = &[
        ("pld_ctx", ""),
        ("pld_ctx", "abi_version"),
        ("pld_ctx", "rank"),
        ("pld_ctx", "nranks"),
        ("pld_ctx", "spin_limit"),
        ("pld_ctx", "yield_limit"),
        ("pld_ctx", "max_running"),
        ("pld_ctx", "peer_bases"),
        ("pld_ctx", "local_base"),
        ("pld_ctx", "window_bytes"),
        ("pld_ctx", "sleepers"),
        ("pld_ctx", "abort_flag"),
        ("pld_ctx", "running"),
        ("pld_ctx", "timeout_ns"),
        ("pld_ctx", "scratch"),
        ("pld_ctx", "scratch_bytes"),
        ("pld_ctx", "ops"),
        ("pld_ctx", "diag"),
        ("pld_ctx", "watch"),
        ("pld_ctx", "wakes_due"),
        ("pld_ctx", "wakes_off"),
        ("pld_watch", ""),
        ("pld_watch", "wait_ticks"),
        ("pld_watch", "spin_ticks_256"),
        ("pld_watch", "timed"),
        ("pld_watch", "ll"),
        ("pld_watch", "since_ns"),
        ("pld_watch", "cell_off"),
        ("pld_watch", "row_off"),
        ("pld_watch", "row_len"),
        ("pld_watch", "expected"),
        ("pld_watch", "cmp"),
        ("pld_watch", "peer"),
        ("pld_ops", ""),
        ("pld_ops", "data"),
        ("pld_ops", "sleep"),
        ("pld_ops", "wake"),
        ("pld_ops", "put"),
        ("pld_ops", "get"),
        ("pld_ops", "accumulate"),
        ("pld_diag", ""),
        ("pld_diag", "cell_off"),
        ("pld_diag", "row_off"),
        ("pld_diag", "row_len"),
        ("pld_diag", "expected"),
        ("pld_diag", "observed"),
        ("pld_diag", "cmp"),
        ("pld_diag", "index"),
        ("pld_diag", "value"),
        ("pld_diag", "limit"),
        ("pld_diag", "peer_call"),
        ("pld_fingerprint", ""),
        ("pld_fingerprint", "seq"),
        ("pld_fingerprint", "what"),
        ("pld_coll_args", ""),
        ("pld_coll_args", "target_off"),
        ("pld_coll_args", "input_off"),
        ("pld_coll_args", "count"),
        ("pld_coll_args", "row_bytes"),
        ("pld_coll_args", "signal_off"),
        ("pld_coll_args", "send_counts_off"),
        ("pld_coll_args", "recv_counts_off"),
        ("pld_coll_args", "max_rows"),
        ("pld_coll_args", "root"),
        ("pld_coll_args", "flags"),
        ("pld_coll_args", "board_off"),
        ("pld_coll_args", "call"),
        ("pld_coll_args", "ll_off"),
        ("pld_coll_args", "ll_stride"),
        ("pld_coll_args", "divisor"),
        ("pld_coll_args", "ll_slots"),
        ("pld_p2p_op", ""),
        ("pld_p2p_op", "what"),
        ("pld_p2p_op", "seq"),
        ("pld_p2p_op", "off"),
        ("pld_p2p_op", "bytes"),
        ("pld_p2p_op", "peer"),
        ("pld_p2p_op", "is_send"),
        ("pld_p2p_op", "state"),
        ("pld_p2p_op", "peer_what"),
        ("pld_p2p_args", ""),
        ("pld_p2p_args", "area_off"),
        ("pld_p2p_args", "nops"),
        ("pld_p2p_args", "depth"),
        ("pld_p2p_args", "ops"),
    ];
}

#[cfg(test)]
mod p2p_depth_tests {
    use super::*;

    #[test]
    fn the_depth_is_the_deepest_queue_that_fits_a_sixteenth_of_the_window() {
        // 8 ranks at depth 8: 64 + 2 * 8 * 8 * 64 = 8256 bytes, within 1 GiB / 16.
        assert_eq!(p2p_depth(8, 1 << 30), P2P_DEPTH_MAX);
        assert_eq!(p2p_area_bytes(8, 8), 8256);
        // 4 ranks on 16 KiB windows: 1 KiB of budget holds depth 1 (576 bytes), not 2 (1088).
        assert_eq!(p2p_depth(4, 16 << 10), 1);
        // Too small for even one slot per direction: no point-to-point, and no area.
        assert_eq!(p2p_depth(4, 4096), 0);
        assert_eq!(p2p_area_bytes(4, 0), 0);
        assert_eq!(p2p_depth(2049, 64 << 10), 0);
        for (nranks, window) in [(1, 1 << 20), (7, 3 << 20), (2049, 1 << 30)] {
            let depth = p2p_depth(nranks, window);
            assert!(depth.is_power_of_two() && depth <= P2P_DEPTH_MAX);
            assert!(p2p_area_bytes(nranks, depth) <= window / P2P_WINDOW_SHARE);
        }
    }
}
