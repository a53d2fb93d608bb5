//! A failed compile leaves nothing a later build can mistake for current: after `CC=/bin/false`
//! (or any compiler failure), the next good build compiles again and its binary reports the
//! content hash of the code it was built from.

use pld_backend::{DeviceCompiler, DeviceSource};

/// Whether the shared object at `path` carries `hash` (its `pld_content_hash` string).
fn carries(path: &std::path::Path, hash: &str) -> bool {
    let bytes = std::fs::read(path).unwrap();
    bytes.windows(hash.len()).any(|w| w == hash.as_bytes())
}

#[test]
fn a_failed_compile_leaves_no_binary_a_later_build_takes_for_current() {
    let dir = std::env::temp_dir().join(format!("pld-failed-compile-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let first = DeviceSource::new("int pld_first_kernel(void) { return 1; }\n".into());
    let second = DeviceSource::new("int pld_second_kernel(void) { return 2; }\n".into());

    let built = DeviceCompiler::new().compile(&first, &dir, "unit").unwrap();
    assert!(carries(&built.path, first.hash()));

    // The compiler fails (as with CC=/bin/false): an error, and no binary left behind.
    let broken = DeviceCompiler::new().compiler("/bin/false");
    assert!(broken.compile(&second, &dir, "unit").is_err());
    assert!(!built.path.exists(), "the failed compile left the first build's binary in place");

    // The good build that follows compiles the second source, not the first one's binary.
    let rebuilt = DeviceCompiler::new().compile(&second, &dir, "unit").unwrap();
    assert!(carries(&rebuilt.path, second.hash()), "the binary is stale");
    let _ = std::fs::remove_dir_all(&dir);
}
