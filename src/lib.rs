//! # pld
//!
//! Distributed programs over symmetric memory: ranks, windows that sit at the same offset on
//! every rank, signals, and collectives that are device kernels.
//!
//! Write host code in a [`macro@program`] module; each collective is one macro call, checked at
//! compile time:
//!
//! ```
//! #[pld::program]
//! mod quick {
//!     #[pld::host]
//!     pub fn sum_of_ranks() -> Vec<f32> {
//!         let data = window!(f32, [1, 256]);
//!         for r in ranks() {
//!             stage_in!(data, r, vec![r as f32; 256]);
//!         }
//!         all_reduce!(data, mode = ring, nranks = 4);  // signal allocated for you
//!         let mut out = vec![0.0; 256];
//!         stage_out!(data, 3, out);
//!         out
//!     }
//! }
//!
//! let world = pld::World::local(4)?;                   // 4 ranks as threads of this process
//! assert_eq!(quick::load(&world)?.sum_of_ranks()?, vec![6.0; 256]);
//! # Ok::<(), pld::Error>(())
//! ```
//!
//! The macros expand into the runtime API, which can also be used directly:
//!
//! ```
//! use pld::prelude::*;
//!
//! let world = World::local(4)?;
//! let host = world.host()?;                          // the single controller
//! let data = host.window::<f32>("data", [1, 256])?;  // symmetric, zeroed
//! for r in host.ranks() {
//!     host.write(&data, r, &vec![r as f32; 256])?;   // stage host data into rank r
//! }
//! host.all_reduce(&data, AllReduce::ring())?;        // queued on every rank
//! assert_eq!(host.read(&data, 3)?, vec![6.0; 256]);  // 0 + 1 + 2 + 3
//! # Ok::<(), pld::Error>(())
//! ```

#![cfg_attr(docsrs, feature(doc_cfg))]

pub use pld_core::{
    AllReduce, AllReduceMode, Broadcast, Common, DEFAULT_FLIGHT_RECORDER, DEFAULT_LL_BYTES, DEFAULT_NRANKS,
    DEFAULT_TIMEOUT_MS, DEFAULT_TRACE_EVENTS, DEFAULT_TWO_SHOT_BYTES, DEFAULT_TWO_SHOT_BYTES_2_RANKS,
    DEFAULT_WINDOW_BYTES, DType, DistributedTensor, Element, Error, F8E4M3, F8E5M2, Group, GroupSet, Groups, Host,
    LL_MAX_BYTES, MAX_FLIGHT_RECORDER, Mesh, NotifyOp, Opts, RecvFrom, Reduce, ReduceOp, ReduceScatter, Result, Rooted,
    SendTo, Shape, Tensor, WaitCmp, Window, World, WorldBuilder, bf16, f8e4m3, f8e5m2, f16,
};
pub use pld_macros::{
    all_gather, all_gather_v, all_reduce, all_to_all, all_to_all_v, barrier, broadcast, gather, host, kernel, launch,
    program, recv, reduce, reduce_scatter, scatter, send, signal, stage_in, stage_out, window,
};

// What generated code, the bench and hand-written device kernels reach for: public so they can,
// out of the documentation because a program never names them. `__private` is the one path
// generated code uses.
#[doc(hidden)]
pub use pld_core::{
    ABI_VERSION, Buffer, Collective, Contract, DeviceBinary, DeviceStatus, Kernel, KernelKind, KernelVariant,
    WindowRole, dsl,
};

#[doc(hidden)]
pub mod __private {
    pub use pld_core::dsl;
}

/// The names a pld program uses most: the types, `Error` and `Result`, and the DSL macros (so a
/// macro used outside a `#[pld::program]` module gets pld's own message, not "cannot find macro").
pub mod prelude {
    pub use pld_core::{
        AllReduce, AllReduceMode, Broadcast, DType, Element, Error, Group, Groups, Host, Opts, RecvFrom, Reduce,
        ReduceOp, ReduceScatter, Result, Rooted, SendTo, Tensor, Window, World, bf16, f8e4m3, f8e5m2, f16,
    };
    pub use pld_macros::{
        all_gather, all_gather_v, all_reduce, all_to_all, all_to_all_v, barrier, broadcast, gather, launch, recv,
        reduce, reduce_scatter, scatter, send, signal, stage_in, stage_out, window,
    };
}

/// The user guide's code blocks, compiled and run as doctests (English and Chinese pages).
#[cfg(doctest)]
mod guide {
    #[doc = include_str!("../docs/guide/model.md")]
    mod model {}
    #[doc = include_str!("../docs/guide/collectives.md")]
    mod collectives {}
    #[doc = include_str!("../docs/guide/groups.md")]
    mod groups {}
    #[doc = include_str!("../docs/guide/primitives.md")]
    mod primitives {}
    #[doc = include_str!("../docs/guide/running.md")]
    mod running {}
    #[doc = include_str!("../docs/guide/debugging.md")]
    mod debugging {}
    #[doc = include_str!("../docs/guide/tracing.md")]
    mod tracing {}
    #[doc = include_str!("../docs/guide/zh/model.md")]
    mod zh_model {}
    #[doc = include_str!("../docs/guide/zh/collectives.md")]
    mod zh_collectives {}
    #[doc = include_str!("../docs/guide/zh/groups.md")]
    mod zh_groups {}
    #[doc = include_str!("../docs/guide/zh/primitives.md")]
    mod zh_primitives {}
    #[doc = include_str!("../docs/guide/zh/running.md")]
    mod zh_running {}
    #[doc = include_str!("../docs/guide/zh/debugging.md")]
    mod zh_debugging {}
    #[doc = include_str!("../docs/guide/zh/tracing.md")]
    mod zh_tracing {}
}
