//! Symmetric memory: the heap every window lives in, the windows and views users hold, and the
//! runtime's own areas in every window (the LL inbox).

mod heap;
mod ll;
mod mapping;
mod window;

pub(crate) use heap::{ALIGN, SymmetricHeap};
pub(crate) use ll::LlArea;
pub(crate) use mapping::Mapping;
pub(crate) use window::{Allocation, Operand, new_view_id};
pub use window::{Buffer, Shape, Window};
