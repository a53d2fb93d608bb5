//! The vocabulary shared by every pld crate: element types, reduce operations, the collective
//! contract table and the constants of the device ABI.
//!
//! It sits below both the runtime (`pld-core`) and the code generator (`pld-backend`) so that the
//! generator can run in `pld-core`'s build script while both read the same tables: a collective's
//! rules are written down once, here, and the macros, the backend and the runtime all obey them.

mod abi;
mod contract;
mod dtype;
mod hash;
mod ll;
mod op;

pub use abi::{
    ABI_VERSION, AbiLayout, DeviceStatus, NotifyOp, P2P_DEPTH_MAX, P2P_WINDOW_SHARE, TILE_BYTES, WaitCmp,
    p2p_area_bytes, p2p_depth,
};
pub use contract::{AllReduceMode, Collective, Contract, KernelKind, KernelVariant, WindowRole};
pub use dtype::{DType, Element};
pub use hash::fnv1a64;
pub use ll::{
    LL_DEEP_SLOTS, LL_DEEP_WINDOW_SHARE, LL_HEADER, LL_INBOX_BUDGET, LL_MAX_BYTES, LL_SLOTS, LL_TAKEN, LL_UNANSWERED,
    LlLayout,
};
pub use op::ReduceOp;
