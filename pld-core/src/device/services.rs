//! What the local runtime lends to kernels through `pld_ops`: a futex to sleep on (shared, not
//! process-private, so the same code works when windows live in memory shared by processes),
//! and transport calls that the local launcher never needs (every peer is addressable).

use std::ffi::c_void;
use std::sync::atomic::AtomicU32;

use pld_model::DeviceStatus;
use rustix::thread::futex;

use super::abi::Ops;

/// The services of the local (threads) launcher.
pub(crate) static LOCAL_OPS: Ops = Ops {
    data: std::ptr::null_mut(),
    sleep: futex_sleep,
    wake: futex_wake,
    put: unsupported_put,
    get: unsupported_get,
    accumulate: unsupported_accumulate,
};

/// Sleeps while `*cell == observed`, at most `timeout_ns`; 0: returns at once (a yielding
/// wait's call, for transports that progress; shared memory has nothing to do).
pub(crate) unsafe extern "C" fn futex_sleep(_: *mut c_void, cell: *const i32, observed: i32, timeout_ns: u64) {
    if timeout_ns == 0 {
        return;
    }
    // SAFETY: the kernel passes a pointer to a live, aligned i32 cell of a window; AtomicU32 has
    // the same size and alignment, and the cell is only ever accessed atomically.
    let word = unsafe { &*cell.cast::<AtomicU32>() };
    let timeout =
        futex::Timespec { tv_sec: (timeout_ns / 1_000_000_000) as _, tv_nsec: (timeout_ns % 1_000_000_000) as _ };
    // EAGAIN (the value already changed), EINTR and ETIMEDOUT all mean "look again".
    let _ = futex::wait(word, futex::Flags::empty(), observed as u32, Some(&timeout));
}

/// Wakes every waiter sleeping on `cell`.
pub(crate) unsafe extern "C" fn futex_wake(_: *mut c_void, _peer: i32, cell: *const i32) {
    // SAFETY: as in `futex_sleep`.
    let word = unsafe { &*cell.cast::<AtomicU32>() };
    let _ = futex::wake(word, futex::Flags::empty(), i32::MAX as u32);
}

unsafe extern "C" fn unsupported_put(_: *mut c_void, _: i32, _: u64, _: *const c_void, _: u64) -> i32 {
    DeviceStatus::Unsupported as i32
}

unsafe extern "C" fn unsupported_get(_: *mut c_void, _: i32, _: *mut c_void, _: u64, _: u64) -> i32 {
    DeviceStatus::Unsupported as i32
}

unsafe extern "C" fn unsupported_accumulate(_: *mut c_void, _: i32, _: u64, _: i32, _: i32) -> i32 {
    DeviceStatus::Unsupported as i32
}
