//! Bad input gets a clear error with context, never a panic or a hang; a failure on one rank
//! ends the call on every rank, and the world stays usable afterwards.

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use pld::{AllReduce, Broadcast, DeviceBinary, Error, Kernel, Opts, WaitCmp, Window, World};

#[test]
fn a_view_larger_than_its_allocation() {
    let world = World::local(2).unwrap();
    let host = world.host().unwrap();
    let buf = host.alloc("buf", 16).unwrap();
    assert!(buf.view::<f32>([4]).is_ok());
    let err = buf.view::<f32>([2, 3]).unwrap_err();
    assert_eq!(
        err,
        Error::ViewOutOfBounds {
            buffer: "buf".into(),
            dtype: pld::DType::F32,
            shape: vec![2, 3],
            view_bytes: 24,
            alloc_bytes: 16
        }
    );
    assert!(err.to_string().contains("`buf`"), "{err}");
}

#[test]
fn the_same_window_as_input_and_target() {
    let world = World::local(2).unwrap();
    let host = world.host().unwrap();
    let w = host.window::<f32>("w", [2, 8]).unwrap();
    let err = host.all_to_all(&w, &w, Opts::new()).unwrap_err();
    let Error::AliasedWindows { buffer, first, second, call } = &err else { panic!("{err}") };
    assert_eq!((buffer.as_str(), *first, *second), ("w", "input", "target"));
    assert!(call.starts_with("all_to_all(dtype = f32) at tests/errors.rs:"), "{call}");

    let row = host.window::<f32>("row", [8]).unwrap();
    let view_of_w = host.alloc("other", 64).unwrap().view::<f32>([16]).unwrap();
    assert!(host.all_gather(&row, &view_of_w, Opts::new()).is_ok());
    // A target used as its own signal is aliasing too.
    let sig_like = host.window::<i32>("s", [2]).unwrap();
    let err = host.all_reduce(&sig_like, AllReduce::mesh().signal(&sig_like)).unwrap_err();
    assert!(matches!(err, Error::AliasedWindows { first: "target", second: "signal", .. }), "{err}");
    host.sync().unwrap();
}

#[test]
fn a_signal_of_the_wrong_shape_or_dtype() {
    let world = World::local(4).unwrap();
    let host = world.host().unwrap();
    let data = host.window::<f32>("data", [64]).unwrap();
    let short = host.window::<i32>("short", [3]).unwrap();
    let err = host.all_reduce(&data, AllReduce::ring().signal(&short)).unwrap_err();
    assert_eq!(
        err,
        Error::BadOperand {
            call: err_call(&err),
            role: "signal",
            buffer: "short".into(),
            expected: "i32 [4] (one cell per rank)".into(),
            found: "i32 [3]".into(),
        }
    );
    let floats = host.window::<f32>("floats", [4]).unwrap();
    let err = host.barrier(Opts::new().signal(&floats)).unwrap_err();
    assert!(matches!(&err, Error::BadOperand { role: "signal", found, .. } if found == "f32 [4]"), "{err}");
    assert!(err.to_string().contains("barrier() at tests/errors.rs:"), "{err}");
}

fn err_call(err: &Error) -> String {
    match err {
        Error::BadOperand { call, .. } => call.clone(),
        other => panic!("{other}"),
    }
}

type A2avWindows<'h> = (Window<'h, f32>, Window<'h, f32>, Window<'h, i32>, Window<'h, i32>, Window<'h, i32>);

/// input, target, send and recv counts and a signal for an all_to_all_v over 3 ranks.
fn a2av_windows<'h>(host: &'h pld::Host<'_>) -> A2avWindows<'h> {
    let input = host.window::<f32>("input", [3 * 2, 4]).unwrap();
    let target = host.window::<f32>("target", [3 * 2, 4]).unwrap();
    let send = host.window::<i32>("send_counts", [3]).unwrap();
    let recv = host.window::<i32>("recv_counts", [3]).unwrap();
    (input, target, send, recv, host.signal("sig").unwrap())
}

fn a2av_with_counts(counts_on_rank_1: Vec<i32>) -> Error {
    let world = World::local(3).unwrap();
    let host = world.host().unwrap();
    let (input, target, send, recv, signal) = a2av_windows(&host);
    for r in 0..3 {
        let counts = if r == 1 { counts_on_rank_1.clone() } else { vec![1, 2, 0] };
        host.write(&send, r, &counts).unwrap();
    }
    let err = host.all_to_all_v(&input, &target, &send, &recv, Opts::new().signal(&signal)).map(|_| host.sync());
    let err = match err {
        Ok(Err(e)) | Err(e) => e,
        Ok(Ok(())) => panic!("bad counts accepted"),
    };
    // The host that met the failure keeps reporting it; a new host finds the world as good as new.
    assert_eq!(host.sync().unwrap_err(), err, "the failure sticks to its host");
    drop(host);
    let host = world.host().unwrap();
    let (input, target, send, recv, signal) = a2av_windows(&host);
    for r in 0..3 {
        host.write(&send, r, &[1, 1, 1]).unwrap();
    }
    host.all_to_all_v(&input, &target, &send, &recv, Opts::new().signal(&signal)).unwrap();
    assert_eq!(host.read(&recv, 2).unwrap(), vec![1, 1, 1]);
    common::assert_signal_clear(&host, &signal, "after a failed all_to_all_v");
    err
}

#[test]
fn all_to_all_v_with_a_negative_count() {
    let err = a2av_with_counts(vec![1, -1, 0]);
    let Error::InvalidCount { rank, buffer, peer, value, capacity, .. } = &err else { panic!("{err}") };
    assert_eq!((*rank, buffer.as_str(), *peer, *value, *capacity), (1, "send_counts", 1, -1, 2));
}

#[test]
fn all_to_all_v_with_a_count_above_capacity() {
    let err = a2av_with_counts(vec![0, 0, 3]);
    assert!(matches!(err, Error::InvalidCount { rank: 1, peer: 2, value: 3, capacity: 2, .. }), "{err}");
    assert!(err.to_string().contains("outside 0..=2"), "{err}");
}

#[test]
fn a_root_out_of_range() {
    let world = World::local(4).unwrap();
    let host = world.host().unwrap();
    let data = host.window::<u8>("data", [10]).unwrap();
    for root in [-1, 4, 100] {
        let err = host.broadcast(&data, Broadcast::root(root)).unwrap_err();
        assert!(matches!(err, Error::RootOutOfRange { root: r, nranks: 4, .. } if r == root), "{err}");
    }
}

#[test]
fn a_declared_rank_count_that_is_not_the_worlds() {
    let world = World::local(4).unwrap();
    let host = world.host().unwrap();
    let data = host.window::<f32>("data", [10]).unwrap();
    let err = host.all_reduce(&data, AllReduce::ring().nranks(3)).unwrap_err();
    assert!(matches!(err, Error::NranksMismatch { declared: 3, world: 4, .. }), "{err}");
}

#[test]
fn operands_of_the_wrong_size() {
    let world = World::local(4).unwrap();
    let host = world.host().unwrap();
    let local = host.window::<f32>("local", [8]).unwrap();
    let target = host.window::<f32>("target", [3, 8]).unwrap();
    let err = host.all_gather(&local, &target, Opts::new()).unwrap_err();
    assert!(matches!(&err, Error::BadOperand { role: "target", buffer, .. } if buffer == "target"), "{err}");
    let err = host.write(&local, 0, &[1.0; 7]).unwrap_err();
    assert!(matches!(err, Error::StagingSize { expected: 8, found: 7, rank: 0, .. }), "{err}");
    let err = host.write(&local, 4, &[1.0; 8]).unwrap_err();
    assert!(matches!(err, Error::RankOutOfRange { rank: 4, nranks: 4, .. }), "{err}");
}

#[test]
fn windows_beyond_the_heap_and_a_second_host() {
    assert!(matches!(World::local(0), Err(Error::NoRanks { requested: 0 })));
    let world = World::builder(2).window_bytes(1 << 20).local().unwrap();
    let host = world.host().unwrap();
    assert!(matches!(world.host(), Err(Error::WorldBusy)));
    let err = host.window::<f64>("big", [1 << 18]).unwrap_err();
    assert!(matches!(&err, Error::OutOfWindowMemory { name, requested: 2097152, .. } if name == "big"), "{err}");
    // The message says where the rest of the heap went: pld's own reservations, by size.
    let Error::OutOfWindowMemory { reserved, .. } = &err else { unreachable!() };
    assert!(*reserved > 0 && err.to_string().contains(&format!("pld reserves {reserved} of them")), "{err}");
    drop(host);
    assert!(world.host().is_ok(), "the world is free again once the scope ends");
}

/// A heap too small for what pld reserves in it is a setting to change, named with the bytes
/// reserved and the least that works, not a window the user never made.
#[test]
fn a_heap_too_small_for_pld_s_reservations_names_the_setting() {
    let err = World::builder(4).window_bytes(4096).local().unwrap_err();
    let message = err.to_string();
    assert!(matches!(&err, Error::InvalidSetting { setting, .. } if setting.contains("PLD_WINDOW_BYTES")), "{message}");
    assert!(message.contains("pld reserves") && message.contains("small messages"), "{message}");
    assert!(!message.contains("__"), "no internal names: {message}");
    // Without small messages the same heap is enough.
    World::builder(4).window_bytes(4096).ll_bytes(0).local().unwrap();
}

/// `fn main() -> pld::Result<()>` prints an error's `Debug` form: it is the readable message.
#[test]
fn an_error_s_debug_form_is_its_message() {
    let err = World::local(0).unwrap_err();
    assert_eq!(format!("{err:?}"), "a world needs at least one rank, but 0 were requested");
    assert_eq!(format!("{err:?}"), err.to_string());
}

/// Test kernels written against the device ABI, compiled once here with pld-backend.
fn test_kernels() -> Arc<DeviceBinary> {
    static KERNELS: std::sync::OnceLock<Arc<DeviceBinary>> = std::sync::OnceLock::new();
    Arc::clone(KERNELS.get_or_init(compile_test_kernels))
}

fn compile_test_kernels() -> Arc<DeviceBinary> {
    const SOURCE: &str = r#"
#include <errno.h>
#include <stdio.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

/* args: [signal offset, rank that misbehaves] */
static pld_coll_args signal_of(const void *args) {
    pld_coll_args a = {0};
    a.signal_off = ((const uint64_t *)args)[0];
    return a;
}

/* A barrier in which one rank never notifies anyone. */
int32_t barrier_without(pld_ctx *c, const void *args) {
    pld_coll_args a = signal_of(args);
    if (c->rank != (int32_t)((const uint64_t *)args)[1])
        for (int32_t p = 0; p < c->nranks; ++p)
            if (p != c->rank) PLD_TRY(pld_credit(c, &a, p));
    for (int32_t p = 0; p < c->nranks; ++p)
        if (p != c->rank) PLD_TRY(pld_await(c, &a, p, 1));
    return pld_settle_all(c, &a, 1);
}

/* args: [cell offset]. A hand-written LL-style post to a sleeping reader that leaves the look
 * for it due, as pld_ll_post does, and returns without running it: the runtime must. Rank 1
 * sleeps on cell 0 as a waiting reader does (counted in its sleepers), each sleep up to 20 s,
 * and fails if one runs out; it publishes its thread id in cell 1 first. Rank 0 sets cell 0 only
 * once the kernel sees rank 1 asleep (its thread in state S, which nothing else on its way to
 * the futex is), so the test cannot pass without a wake; it gives up after 10 s. */
static int pld_test_thread_sleeps(int32_t tid) {
    char path[64], stat[512];
    snprintf(path, sizeof path, "/proc/self/task/%d/stat", (int)tid);
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    const size_t n = fread(stat, 1, sizeof stat - 1, f);
    fclose(f);
    stat[n] = 0;
    const char *state = strrchr(stat, ')'); /* "pid (comm) S ...": the state follows the name */
    return state && state[1] == ' ' && state[2] == 'S';
}

int32_t post_to_a_sleeper(pld_ctx *c, const void *args) {
    const uint64_t off = ((const uint64_t *)args)[0];
    if (c->rank == 1) {
        int32_t *cell = (int32_t *)(c->local_base + off);
        int32_t status = PLD_OK;
        __atomic_store_n(cell + 1, (int32_t)syscall(SYS_gettid), __ATOMIC_RELEASE);
        __atomic_fetch_add(c->sleepers[1], 1, __ATOMIC_SEQ_CST);
        while (__atomic_load_n(cell, __ATOMIC_SEQ_CST) == 0) {
            struct timespec most = {20, 0};
            if (syscall(SYS_futex, cell, FUTEX_WAIT, 0, &most, NULL, 0) == -1 && errno == ETIMEDOUT) {
                status = PLD_KERNEL_FAILED;
                break;
            }
        }
        __atomic_fetch_sub(c->sleepers[1], 1, __ATOMIC_SEQ_CST);
        return status;
    }
    if (c->rank == 0) {
        int32_t *cell = (int32_t *)(c->peer_bases[1] + off);
        const uint64_t give_up = pld_now_ns() + 10000000000ull;
        for (;;) {
            const int32_t tid = __atomic_load_n(cell + 1, __ATOMIC_ACQUIRE);
            if (tid && __atomic_load_n(c->sleepers[1], __ATOMIC_SEQ_CST) && pld_test_thread_sleeps(tid)) break;
            if (pld_aborted(c) || pld_now_ns() > give_up) return PLD_KERNEL_FAILED;
            sched_yield();
        }
        __atomic_store_n(cell, 1, __ATOMIC_RELEASE);
        pld_wakes_due(c, 1, off);
    }
    return PLD_OK;
}

/* A barrier that one rank fails before joining. */
int32_t fail_on(pld_ctx *c, const void *args) {
    if (c->rank == (int32_t)((const uint64_t *)args)[1]) return PLD_KERNEL_FAILED;
    pld_coll_args a = signal_of(args);
    PLD_TRY(pld_round_all(c, &a, 1));
    return pld_settle_all(c, &a, 1);
}
"#;
    let dir = std::env::temp_dir().join(format!("pld-test-kernels-{}", std::process::id()));
    let source = pld_backend::DeviceSource::new(SOURCE.into());
    let artifact = pld_backend::DeviceCompiler::new().opt_level(1).compile(&source, &dir, "test_kernels").unwrap();
    // SAFETY: built just above by pld-backend.
    let binary = unsafe { DeviceBinary::open(&artifact.path, Some(source.hash())) }.unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    Arc::new(binary)
}

#[test]
fn a_kernel_that_never_notifies_times_out_with_a_diagnosis() {
    let kernels = test_kernels();
    let kernel = Kernel::new(&kernels, "barrier_without").unwrap();
    let timeout = Duration::from_millis(300);
    let world = World::builder(4).timeout(timeout).local().unwrap();
    let host = world.host().unwrap();
    let signal = host.signal("sig").unwrap();
    let started = Instant::now();
    for r in 0..4 {
        // SAFETY: the kernel takes [signal offset, rank]; the signal is live.
        unsafe { host.launch(&kernel, r, &[signal.offset() as u64, 2]) }.unwrap();
    }
    let err = host.sync().unwrap_err();
    let elapsed = started.elapsed();
    let Error::Timeout { rank, signal: name, cell, cmp, expected, observed, missing, timeout_ms, call, .. } = &err
    else {
        panic!("{err}")
    };
    assert_ne!(*rank, 2, "rank 2 was credited by everyone and finished");
    assert_eq!((name.as_str(), *cell, *cmp, *expected, *observed), ("sig", 2, WaitCmp::Ge, 1, 0));
    assert_eq!(missing.as_ref(), [2]);
    assert_eq!(*timeout_ms, 300);
    assert!(call.contains("barrier_without"), "{call}");
    assert!(elapsed >= timeout && elapsed < timeout * 20, "took {elapsed:?}");
    let message = err.to_string();
    assert!(message.contains("peers that never arrived: [2]"), "{message}");

    // The failure sticks to the host that met it; the world is usable afterwards.
    assert!(host.barrier(Opts::new()).is_err(), "a failed host takes no more calls");
    drop(host);
    let host = world.host().unwrap();
    let fresh = host.signal("fresh").unwrap();
    host.barrier(Opts::new().signal(&fresh)).unwrap();
    host.sync().unwrap();
}

/// A kernel's LL posts leave the look for sleeping readers to the end of the call: the runtime
/// runs it after every kernel that left one due, so a kernel written by hand that returns
/// without it does not leave its reader asleep (here a sleep of 20 s, which fails the kernel).
#[test]
fn a_reader_asleep_on_a_kernels_message_is_woken_when_the_kernel_leaves_the_look_to_the_runtime() {
    let kernel = Kernel::new(&test_kernels(), "post_to_a_sleeper").unwrap();
    let world = World::builder(2).timeout(Duration::from_secs(60)).local().unwrap();
    let host = world.host().unwrap();
    let cell = host.signal("cell").unwrap();
    for r in 0..2 {
        // SAFETY: the kernel takes [cell offset]; the signal is live, its row is zero and has a
        // cell per rank (two).
        unsafe { host.launch(&kernel, r, &[cell.offset() as u64]) }.unwrap();
    }
    host.sync().unwrap();
}

#[test]
fn a_kernel_that_fails_on_one_rank_fails_the_call_everywhere() {
    let kernels = test_kernels();
    let kernel = Kernel::new(&kernels, "fail_on").unwrap();
    let world = World::builder(4).timeout(Duration::from_secs(60)).local().unwrap();
    let host = world.host().unwrap();
    let signal = host.signal("sig").unwrap();
    let started = Instant::now();
    for r in 0..4 {
        // SAFETY: the kernel takes [signal offset, rank]; the signal is live.
        unsafe { host.launch(&kernel, r, &[signal.offset() as u64, 1]) }.unwrap();
    }
    // Work queued behind the failure is skipped, not run against a broken protocol.
    host.barrier(Opts::new()).unwrap();
    let err = host.sync().unwrap_err();
    assert!(matches!(&err, Error::KernelFailed { rank: 1, call, .. } if call.contains("fail_on")), "{err}");
    assert_eq!(err.rank(), Some(1));
    assert!(started.elapsed() < Duration::from_secs(30), "the other ranks were left waiting");
    assert_eq!(host.sync().unwrap_err(), err, "the failure sticks to its host");
    drop(host);
    let host = world.host().unwrap();
    let fresh = host.signal("fresh").unwrap();
    host.barrier(Opts::new().signal(&fresh)).unwrap();
    host.sync().unwrap();
}

#[test]
#[allow(clippy::undocumented_unsafe_blocks)] // pld-backend binaries, or a file that is none and is refused
fn a_stale_or_foreign_binary_is_refused() {
    let dir = std::env::temp_dir().join(format!("pld-stale-{}", std::process::id()));
    let source =
        pld_backend::DeviceSource::new("int32_t k(pld_ctx *c, const void *a) { (void)c; (void)a; return 0; }".into());
    let artifact = pld_backend::DeviceCompiler::new().opt_level(0).compile(&source, &dir, "stale").unwrap();
    let err = unsafe { DeviceBinary::open(&artifact.path, Some("fnv1a64:0000000000000000")) }.unwrap_err();
    assert!(err.to_string().contains("stale binary") && err.to_string().contains("cargo build"), "{err}");
    let binary = Arc::new(unsafe { DeviceBinary::open(&artifact.path, None) }.unwrap());
    assert!(Kernel::new(&binary, "nope").unwrap_err().to_string().contains("has no kernel `nope`"));
    let err = unsafe { DeviceBinary::open(&dir.join("stale.c"), None) }.unwrap_err();
    assert!(matches!(err, Error::DeviceBinary { .. }), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A binary without the runtime's entry point after a kernel (`pld_end_call`, which every
/// pld-backend binary of this ABI defines) is refused on load, naming it: the runtime would
/// otherwise have no way to wake a reader asleep on a message the kernel posted.
#[test]
#[allow(clippy::undocumented_unsafe_blocks)] // a pld-backend binary with one definition renamed, refused on load
fn a_binary_without_pld_end_call_is_refused() {
    let dir = std::env::temp_dir().join(format!("pld-no-end-call-{}", std::process::id()));
    let source =
        pld_backend::DeviceSource::new("int32_t k(pld_ctx *c, const void *a) { (void)c; (void)a; return 0; }".into());
    let artifact = pld_backend::DeviceCompiler::new().opt_level(0).compile(&source, &dir, "whole").unwrap();
    unsafe { DeviceBinary::open(&artifact.path, Some(source.hash())) }.unwrap();
    // The same C with the definition renamed, built as pld-backend builds it.
    let c = std::fs::read_to_string(dir.join("whole.c")).unwrap();
    let definition = "void pld_end_call(pld_ctx *c) {";
    assert_eq!(c.matches(definition).count(), 1, "{c}");
    std::fs::write(dir.join("gone.c"), c.replace(definition, "void pld_end_call_gone(pld_ctx *c) {")).unwrap();
    let so = dir.join("libgone.so");
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into()); // as pld-backend's own C tests
    let status = std::process::Command::new(cc)
        .args(["-std=gnu11", "-shared", "-fPIC", "-O0", "-I"])
        .arg(&dir)
        .arg("-o")
        .arg(&so)
        .arg(dir.join("gone.c"))
        .status()
        .unwrap();
    assert!(status.success());
    let err = unsafe { DeviceBinary::open(&so, None) }.unwrap_err();
    let message = err.to_string();
    assert!(matches!(err, Error::DeviceBinary { .. }), "{message}");
    assert!(message.contains("has no `pld_end_call`"), "{message}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Real device binaries, compiled by pld-backend, that an older or different header would
/// produce: one whose `pld_abi_version` is another number, one whose `pld_ctx` has its fields at
/// other offsets. Both are refused on load, with what differs, before any kernel runs.
#[test]
#[allow(clippy::undocumented_unsafe_blocks)] // pld-backend binaries, refused before any kernel runs
fn a_real_binary_of_another_abi_version_or_struct_layout_is_refused() {
    let dir = std::env::temp_dir().join(format!("pld-abi-{}", std::process::id()));
    let kernel = "int32_t k(pld_ctx *c, const void *a) { (void)c; (void)a; return 0; }\n";
    let compile = |name: &str, prelude: String| {
        let source = pld_backend::DeviceSource::new(format!("{prelude}{kernel}"));
        let artifact = pld_backend::DeviceCompiler::new().opt_level(0).compile(&source, &dir, name).unwrap();
        unsafe { DeviceBinary::open(&artifact.path, Some(source.hash())) }.map(drop)
    };
    // The identity block after the kernels reads PLD_ABI_VERSION: an older header's number.
    let older = pld::ABI_VERSION - 1;
    let err = compile("old_abi", format!("#undef PLD_ABI_VERSION\n#define PLD_ABI_VERSION {older}\n")).unwrap_err();
    let message = err.to_string();
    assert!(matches!(err, Error::DeviceBinary { .. }), "{message}");
    assert!(
        message.contains(&format!("was built for device ABI {older}, this runtime speaks {}", pld::ABI_VERSION)),
        "{message}"
    );

    // A header whose pld_ctx has every field one word further on (and 8-byte wide): the binary
    // reports its own sizeof/offsetof, which no longer match the runtime's.
    let fields: Vec<&str> = pld_model::AbiLayout::FIELDS
        .iter()
        .filter(|(s, f)| *s == "pld_ctx" && !f.is_empty())
        .map(|(_, f)| *f)
        .collect();
    assert!(fields.len() > 4, "pld_ctx has its fields in the layout table");
    let moved = format!(
        "typedef struct {{ uint64_t moved_by_one_word; {} }} pld_ctx_moved;\n#define pld_ctx pld_ctx_moved\n",
        fields.iter().map(|f| format!("uint64_t {f};")).collect::<String>()
    );
    let err = compile("old_layout", moved).unwrap_err();
    let message = err.to_string();
    assert!(matches!(err, Error::DeviceBinary { .. }), "{message}");
    assert!(message.contains("lays out the ABI structs as") && message.contains("different header"), "{message}");

    // The same kernel against the real header loads.
    compile("current", String::new()).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn absurd_sizes_and_foreign_windows_are_errors_not_crashes() {
    let world = World::builder(2).window_bytes(1 << 20).local().unwrap();
    let host = world.host().unwrap();
    assert!(matches!(host.alloc("huge", usize::MAX), Err(Error::OutOfWindowMemory { .. })));
    assert!(matches!(host.window::<f64>("huge", [usize::MAX, 2]), Err(Error::OutOfWindowMemory { .. })));
    let other = World::local(2).unwrap();
    let other_host = other.host().unwrap();
    let foreign = other_host.window::<f32>("foreign", [4]).unwrap();
    let err = host.write(&foreign, 0, &[0.0; 4]).unwrap_err();
    assert!(matches!(&err, Error::BadOperand { found, .. } if found == "a window of another world"), "{err}");
    assert!(host.read(&foreign, 0).is_err());
    // An empty all_to_all_v is fine, not a division by zero.
    let input = host.window::<f32>("input", [0, 3]).unwrap();
    let target = host.window::<f32>("target", [0, 3]).unwrap();
    let send = host.window::<i32>("send", [2]).unwrap();
    let recv = host.window::<i32>("recv", [2]).unwrap();
    host.all_to_all_v(&input, &target, &send, &recv, Opts::new()).unwrap();
    host.sync().unwrap();
}
