//! `#[pld::kernel]` functions: the kernel language, checked and typed into a [`KernelIr`].
//!
//! The language is a Rust subset. Parameters: `&Tensor<T>` / `&mut Tensor<T>` (one rank's host
//! data), `&DistributedTensor<T>` / `&mut DistributedTensor<T>` (a window), integer and float
//! scalars. Statements: `let [mut]`, assignment (also `+=` ...), `for i in a..b`, `if`/`else`,
//! `return;`, primitive calls. Expressions: literals, arithmetic, comparisons, `&&`, `||`, `!`,
//! casts with `as`, element access `t[i]`, `rank()`, `nranks()`, `len(t)`. Tiles (private
//! buffers): `load(src, offset, len)`, `remote_load(window, peer, offset, len)`,
//! `add/sub/mul/div/max/min(a, b)`, `fill(dst, value)`, `store(dst, offset, tile)`,
//! `remote_store(window, peer, offset, tile[, AtomicAdd])`. Bulk copies:
//! `put(window, peer, dst_offset, src, src_offset, len)`,
//! `get(dst, dst_offset, window, peer, src_offset, len)`. Signals:
//! `notify(signal, peer, cell, value, Set|AtomicAdd)`, `wait(signal, cell, value, Eq|Ge)`.
//! Offsets and lengths count elements.

mod check;
mod ir;

pub use check::{check_kernel, check_signature};
pub use ir::*;

/// A content hash of a program's kernels (their typed IR), which the program macro and the
/// build script compute alike: a device binary built from other kernels is refused at load.
pub fn kernels_hash<'a>(kernels: impl IntoIterator<Item = &'a KernelIr>) -> String {
    let texts: Vec<String> = kernels.into_iter().map(|kernel| format!("{kernel:?}")).collect();
    pld_model::fnv1a64(texts.iter().map(String::as_bytes))
}
