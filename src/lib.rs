//! # pld
//!
//! Distributed programs over symmetric memory: ranks, windows that sit at the same offset on
//! every rank, signals, and collectives that are device kernels.
//!
//! This crate is the facade users depend on. Today it exposes the runtime API that the
//! `#[pld::program]` macros expand into:
//!
//! ```
//! use pld::prelude::*;
//!
//! let world = World::local(4)?;                      // 4 ranks as threads of this process
//! let host = world.host()?;                          // the single controller
//! let data = host.window::<f32>("data", [1, 256])?;  // symmetric, zeroed
//! for r in 0..host.nranks() {
//!     host.write(&data, r, &vec![r as f32; 256])?;   // stage host data into rank r
//! }
//! host.all_reduce(&data, AllReduce::ring())?;        // signal allocated for the call
//! assert_eq!(host.read(&data, 3)?, vec![6.0; 256]);  // 0 + 1 + 2 + 3
//! # Ok::<(), pld::Error>(())
//! ```

pub use pld_core::*;

/// The names a pld program uses most.
pub mod prelude {
    pub use pld_core::{
        AllReduce, AllReduceMode, Broadcast, DType, Element, Host, Opts, ReduceOp, ReduceScatter,
        Tensor, Window, World, bf16, f16,
    };
}
