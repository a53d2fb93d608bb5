//! Constants of the C device ABI (`pld-backend/c/pld_device.h`).
//!
//! The header is the authority for the C side; this module is the authority for the Rust side,
//! and [`AbiLayout::FIELDS`] is how the two are checked against each other when a device binary
//! is loaded: the binary reports `sizeof`/`offsetof` for these fields and the runtime compares.

/// Version of the device ABI. Bump it whenever the header's structs or semantics change.
pub const ABI_VERSION: u32 = 8;

/// Bytes a kernel stages at once (`PLD_TILE_BYTES`); every kernel's scratch holds at least this.
pub const TILE_BYTES: usize = 65536;

/// Messages in flight per direction of a point-to-point channel before a sender waits for an
/// acknowledgement (`PLD_P2P_DEPTH`).
pub const P2P_DEPTH: usize = 8;

/// Bytes of the point-to-point area in every window of a world of `nranks`
/// (`pld_p2p_area_bytes`): a doorbell line, then a descriptor and an acknowledgement slot of 64
/// bytes per peer and depth.
pub const fn p2p_area_bytes(nranks: usize) -> usize {
    64 + 2 * nranks * P2P_DEPTH * 64
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
        ("pld_p2p_args", "ops"),
    ];
}
