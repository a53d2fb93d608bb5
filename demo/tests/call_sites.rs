//! Runtime errors of DSL collectives name the macro's own line and column (the generated call
//! carries the macro's span; the runtime reports its `#[track_caller]` location), and a user
//! kernel is named as written, with its `launch!` line.

use std::time::Duration;

use pld::World;
use pld_demo::call_sites;

const SOURCE: &str = include_str!("../src/lib.rs");

/// `demo/src/lib.rs:LINE:COL` of the first occurrence of `text` from the `call_sites` program
/// on, as the runtime reports it.
fn site(text: &str) -> String {
    let program = SOURCE.lines().position(|l| l.contains("pub mod call_sites")).expect("the program");
    let (line, column) = SOURCE
        .lines()
        .enumerate()
        .skip(program)
        .find_map(|(i, l)| l.find(text).map(|c| (i + 1, c + 1)))
        .unwrap_or_else(|| panic!("`{text}` is in demo/src/lib.rs"));
    format!("demo/src/lib.rs:{line}:{column}")
}

fn world() -> World {
    World::builder(2).timeout(Duration::from_millis(300)).local().unwrap()
}

fn assert_names(err: pld::Error, macro_call: &str) {
    let message = err.to_string();
    let at = site(macro_call);
    assert!(message.contains(&at), "expected `{at}` (the line of `{macro_call}`) in: {message}");
    assert!(!message.contains(&site("pub mod call_sites")), "names the program, not the call: {message}");
}

#[test]
fn every_collective_macro_reports_its_own_line() {
    let world = world();
    let program = call_sites::load(&world).unwrap();
    assert_names(program.all_reduce_too_many_ranks().unwrap_err(), "all_reduce!(data, mode = ring, nranks = 3)");
    assert_names(program.all_gather_short_target().unwrap_err(), "all_gather!(local, short)");
    assert_names(program.reduce_scatter_uneven().unwrap_err(), "reduce_scatter!(data, op = max)");
    assert_names(program.broadcast_root_out_of_range(7).unwrap_err(), "broadcast!(data, root = root)");
    assert_names(program.all_to_all_mismatched().unwrap_err(), "all_to_all!(input, target)");
    assert_names(program.all_to_all_v_count_too_large().unwrap_err(), "all_to_all_v!(input, target, send, recv)");
}

#[test]
fn a_hang_names_the_barrier_line_and_the_kernel_each_rank_is_in() {
    let world = world();
    let err = call_sites::load(&world).unwrap().barrier_with_a_rank_held().unwrap_err();
    let message = err.to_string();
    assert!(message.contains(&site("barrier!()")), "{message}");
    // Rank 1 is in the user's kernel, named as written and where it was launched.
    let launch = site("stuck(signal), device = 1");
    assert!(message.contains(&format!("kernel `stuck` at {launch}")), "{message}");
    assert!(!message.contains("pld_kernel_"), "no symbol names: {message}");
}

/// An access out of bounds reads like Rust's own index panic: the kernel's file and line, the
/// parameter as the user named it, its length and the range of the access.
#[test]
fn an_access_out_of_bounds_names_the_line_the_buffer_and_the_range() {
    let world = world();
    let err = call_sites::load(&world).unwrap().kernel_out_of_bounds().unwrap_err();
    let message = err.to_string();
    let line = site("let t = load(data, 4, 8);");
    let line = line.rsplit_once(':').unwrap().0; // file:line, no column
    assert!(matches!(&err, pld::Error::OutOfBounds { rank: 1, offset: 4, len: 8, limit: 10, .. }), "{message}");
    assert!(
        message
            .contains(&format!("index out of bounds at {line}: `data` holds 10 elements but the access covers 4..12")),
        "{message}"
    );
    assert!(message.contains(&format!("kernel `overrun` at {}", site("overrun(data), device = 1"))), "{message}");
}
