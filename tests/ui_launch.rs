//! `launch!` arguments are checked by rustc against the kernel's parameters. These cases need
//! a device binary to compile at all (see `tests/ui/kernel/missing_build_script.rs` for what
//! happens without one), so this separate test process points `PLD_DEVICE_BINARY` at a stand-in
//! file: type checking never opens it.

#[rustversion::attr(
    not(stable(1.95)),
    ignore = "the .stderr files are exact for rustc 1.95; other compilers word their errors differently"
)]
#[test]
fn launch_argument_types() {
    let stand_in = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/ui/launch_types/README.md");
    // SAFETY: this test binary runs this one test; nothing else reads the environment meanwhile.
    unsafe { std::env::set_var("PLD_DEVICE_BINARY", stand_in) };
    trybuild::TestCases::new().compile_fail("tests/ui/launch_types/*.rs");
}
