//! Shared by the tests that drive the device header's own functions from a small C program:
//! the header and the program written to a folder of their own, compiled, run under a time limit.
//! A program may include `test_ctx.h` (after `pld_device.h`) for [`TEST_CTX`]'s context maker.

use std::path::PathBuf;
use std::process::{Command, Output};

/// `test_ctx.h`: `test_ctx(...)`, a rank's context over windows and sleeper cells the program
/// owns, with its own diagnosis, watch and abort flag, so that a test sets only what it is about.
pub const TEST_CTX: &str = r#"
static pld_diag test_diag;
static pld_watch test_watch;
static int32_t test_abort;

static pld_ctx test_ctx(int32_t rank, int32_t nranks, uint8_t *const *bases, int32_t *const *sleepers,
                        uint64_t window_bytes, const pld_ops *ops, int32_t spin_limit, int32_t yield_limit,
                        uint64_t timeout_ns) {
    pld_ctx c = {0};
    c.rank = rank;
    c.nranks = nranks;
    c.spin_limit = spin_limit;
    c.yield_limit = yield_limit;
    c.peer_bases = bases;
    c.local_base = bases[rank];
    c.window_bytes = window_bytes;
    c.sleepers = sleepers;
    c.abort_flag = &test_abort;
    c.timeout_ns = timeout_ns;
    c.ops = ops;
    c.diag = &test_diag;
    c.watch = &test_watch;
    return c;
}
"#;

/// Compiles `program` (C that includes `pld_device.h`) with `-O2` and runs it (at most 60 s,
/// bounded from outside too); the folder is removed either way. Panics naming `name` when the
/// program does not compile.
pub fn compile_and_run(name: &str, program: &str) -> Output {
    let dir: PathBuf = std::env::temp_dir().join(format!("pld-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join(pld_backend::HEADER_NAME), pld_backend::HEADER).unwrap();
    std::fs::write(dir.join("test_ctx.h"), TEST_CTX).unwrap();
    let source = dir.join(format!("{name}.c"));
    std::fs::write(&source, program).unwrap();
    let exe = dir.join(name);
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let status = Command::new(cc).arg("-O2").arg("-I").arg(&dir).arg("-o").arg(&exe).arg(&source).status().unwrap();
    if !status.success() {
        let _ = std::fs::remove_dir_all(&dir);
        panic!("compiling the {name} program failed");
    }
    let output = Command::new("timeout").arg("60").arg(&exe).output().unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    output
}
