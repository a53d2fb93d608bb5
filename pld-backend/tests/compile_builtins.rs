//! The builtin library compiles warning-free with the system C compiler.

#[test]
fn builtin_library_compiles_cleanly() {
    let dir = std::env::temp_dir().join(format!("pld-backend-test-{}", std::process::id()));
    let source = pld_backend::builtin_source();
    let artifact = pld_backend::DeviceCompiler::new()
        .opt_level(1)
        .compile(&source, &dir, "pld_builtins_test")
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(artifact.path.exists());
    assert_eq!(artifact.hash, source.hash());
    let _ = std::fs::remove_dir_all(&dir);
}
