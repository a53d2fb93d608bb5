//! Compile-time checks of the host DSL: every misuse visible in the source is one error on the
//! offending token (`tests/ui/<category>/*.rs` with their `.stderr`), and every accepted form
//! compiles and runs (`tests/ui/pass`). Regenerate the `.stderr` files with
//! `TRYBUILD=overwrite cargo test --test ui` after reading the diff.

#[rustversion::attr(
    not(stable(1.95)),
    ignore = "the .stderr files are exact for rustc 1.95; other compilers word their errors differently"
)]
#[test]
fn ui() {
    let cases = trybuild::TestCases::new();
    for category in ["keyword", "value", "arity", "aliasing", "types", "placement", "kernel"] {
        cases.compile_fail(format!("tests/ui/{category}/*.rs"));
    }
    cases.pass("tests/ui/pass/*.rs");
}
