//! pld's backend: the C device ABI, generation of device code, and compilation of device
//! binaries for the `sim` target.
//!
//! The runtime (`pld-core`) runs this backend from its build script to produce the builtin
//! collective library it embeds; user programs will run it from their own `build.rs`.
//! Generation ([`DeviceSource`]) is separate from running the C compiler ([`DeviceCompiler`]), so
//! generated code can be checked against golden files without a compiler.

mod abi;
mod build;
mod builtins;
mod compile;
mod error;
#[doc(hidden)]
pub mod fuzzing;
mod lower;
mod source;
mod wide;

pub use abi::{HEADER, HEADER_NAME};
pub use build::Build;
pub use builtins::{builtin_kernel, builtin_source};
pub use compile::{DeviceArtifact, DeviceCompiler};
pub use error::BackendError;
pub use lower::{kernel_symbol, lower_kernel};
pub use source::DeviceSource;
