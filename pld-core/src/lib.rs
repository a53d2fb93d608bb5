//! pld's model and runtime: a [`World`] of ranks, each a device worker with an in-order task
//! queue; symmetric windows ([`Window`]) allocated by the single [`Host`] controller; device
//! binaries loaded and checked against the ABI; and the collectives, every one of them a
//! device kernel from the builtin library this crate embeds.
//!
//! ```
//! use pld_core::{AllReduce, ReduceOp, World};
//!
//! let world = World::local(4)?;
//! let host = world.host()?;
//! let data = host.window::<f32>("data", [1, 8])?;
//! for r in 0..4 {
//!     host.write(&data, r, &[r as f32; 8])?;
//! }
//! host.all_reduce(&data, AllReduce::ring().op(ReduceOp::Max))?;
//! assert_eq!(host.read(&data, 0)?, vec![3.0; 8]);
//! # Ok::<(), pld_core::Error>(())
//! ```

#![cfg_attr(docsrs, feature(doc_cfg))]

// The modules, from the bottom up: each imports only modules above it in this list.
mod call;
mod collective;
mod comm;
mod config;
mod cpus;
mod device;
pub mod dsl;
mod error;
mod fingerprint;
mod group;
mod host;
mod memory;
mod progress;
mod rank;
mod section;
mod shared;
mod spmd;
mod tensor;
mod trace;
mod transport;
mod untaken;
mod world;

pub use collective::{AllReduce, Broadcast, Common, Opts, RecvFrom, Reduce, ReduceScatter, Rooted, SendTo};
pub use config::{
    DEFAULT_FLIGHT_RECORDER, DEFAULT_LL_BYTES, DEFAULT_NRANKS, DEFAULT_TIMEOUT_MS, DEFAULT_TRACE_EVENTS,
    DEFAULT_TWO_SHOT_BYTES, DEFAULT_TWO_SHOT_BYTES_2_RANKS, DEFAULT_WINDOW_BYTES, MAX_FLIGHT_RECORDER, WorldBuilder,
};
pub use device::{DeviceBinary, Kernel};
pub use error::{Error, Result};
pub use group::{Group, GroupSet, Groups, Mesh};
pub use host::Host;
pub use memory::{Buffer, Shape, Window};
pub use pld_model::{
    ABI_VERSION, AllReduceMode, Collective, Contract, DType, DeviceStatus, Element, KernelKind, KernelVariant,
    LL_MAX_BYTES, NotifyOp, ReduceOp, WaitCmp, WindowRole,
};
pub use tensor::Tensor;
pub use world::World;

/// A window as kernels see it: the name kernel signatures use for `Window`.
pub type DistributedTensor<'h, T> = Window<'h, T>;

/// f16 and bf16, the element types of `half`.
pub use half::{bf16, f16};

/// The 8-bit floats of the `float8` crate (OCP FP8, NVIDIA's conversions).
pub use float8::{F8E4M3, F8E5M2};

/// dtype `f8e4m3`: [`F8E4M3`], spelled as pld spells its dtypes (like `f16` and `bf16`).
#[allow(non_camel_case_types)]
pub type f8e4m3 = float8::F8E4M3;

/// dtype `f8e5m2`: [`F8E5M2`], spelled as pld spells its dtypes.
#[allow(non_camel_case_types)]
pub type f8e5m2 = float8::F8E5M2;
