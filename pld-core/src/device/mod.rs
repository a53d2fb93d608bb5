//! The device side of the runtime: the ABI structs shared with C, device binaries, and the
//! services (futex sleep and wake) the runtime lends to kernels.

pub(crate) mod abi;
mod binary;
pub(crate) mod services;

pub use binary::{DeviceBinary, Kernel};
pub(crate) use binary::{KernelSource, builtins};
pub(crate) use services::LOCAL_OPS;
