//! Settings: every `PLD_*` variable is parsed in one place and validated (the forms people
//! type are accepted, anything else is an error naming the variable, the value and the accepted
//! form), and every layout a setting shapes is computed with checked arithmetic, so an
//! impossible size is an error, never a hang or a crash.
//!
//! The environment is the process's: each case runs this test binary again as a child with the
//! variable set (`config_child`), so no test changes the environment of another.

use std::process::Command;
use std::sync::mpsc;
use std::time::Duration;

use pld::{Error, World};

/// What the child prints: `ok timeout_ms=.. window_bytes=.. ll_bytes=..` or `err <message>`.
fn child(vars: &[(&str, &str)]) -> String {
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.args(["--exact", "config_child", "--nocapture", "--test-threads=1"]).env("PLD_CONFIG_CHILD", "1");
    let settings =
        ["PLD_TIMEOUT_MS", "PLD_WINDOW_BYTES", "PLD_LL_BYTES", "PLD_TWO_SHOT_BYTES", "PLD_INLINE", "PLD_PIN"];
    let recording = ["PLD_FLIGHT_RECORDER", "PLD_TRACE", "PLD_TRACE_ON_ERROR"];
    for var in settings.into_iter().chain(recording) {
        cmd.env_remove(var);
    }
    for (name, value) in vars {
        cmd.env(name, value);
    }
    let out = cmd.output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let line = stdout.lines().find_map(|l| l.split_once("pld-outcome: ")).map(|(_, outcome)| outcome.to_owned());
    line.unwrap_or_else(|| {
        panic!("the child printed no outcome ({}):\n{stdout}\n{}", out.status, String::from_utf8_lossy(&out.stderr))
    })
}

/// The child's side: start a world from the environment and report what it runs with.
#[test]
fn config_child() {
    if std::env::var_os("PLD_CONFIG_CHILD").is_none() {
        return;
    }
    match World::builder(2).local() {
        Ok(world) => println!(
            "\npld-outcome: ok timeout_ms={} window_bytes={} ll_bytes={} two_shot_bytes={}",
            world.timeout().as_millis(),
            world.window_bytes(),
            world.ll_bytes(),
            world.two_shot_bytes()
        ),
        Err(e) => println!("\npld-outcome: err {e}"),
    }
}

fn assert_rejected(var: &str, value: &str, form: &str) {
    let line = child(&[(var, value)]);
    assert!(line.starts_with("err "), "{var}={value} was accepted: {line}");
    assert!(line.contains(var) && line.contains(value) && line.contains(form), "{var}={value}: {line}");
}

#[test]
fn a_zero_negative_or_garbage_timeout_is_an_error_naming_the_variable() {
    for value in ["0", "garbage", "-5", "5 parsecs", "99999999999999999999999"] {
        assert_rejected("PLD_TIMEOUT_MS", value, "ms");
    }
}

#[test]
fn timeouts_take_milliseconds_or_seconds() {
    assert!(child(&[("PLD_TIMEOUT_MS", "1500")]).contains("timeout_ms=1500"));
    assert!(child(&[("PLD_TIMEOUT_MS", "250ms")]).contains("timeout_ms=250"));
    assert!(child(&[("PLD_TIMEOUT_MS", "2s")]).contains("timeout_ms=2000"));
    assert!(child(&[]).contains("timeout_ms=60000"));
}

#[test]
fn sizes_take_binary_suffixes() {
    assert!(child(&[("PLD_WINDOW_BYTES", "1M")]).contains("window_bytes=1048576"));
    assert!(child(&[("PLD_WINDOW_BYTES", "4MiB")]).contains("window_bytes=4194304"));
    assert!(child(&[("PLD_WINDOW_BYTES", "2G")]).contains("window_bytes=2147483648"));
    assert!(child(&[("PLD_WINDOW_BYTES", "3 MiB")]).contains("window_bytes=3145728"));
    assert!(child(&[("PLD_LL_BYTES", "2k")]).contains("ll_bytes=2048"));
    assert!(child(&[("PLD_LL_BYTES", "0")]).contains("ll_bytes=0"));
}

#[test]
fn a_malformed_or_impossible_size_is_an_error_naming_the_variable() {
    for value in ["abc", "1Q", "-1", "18446744073709551615", "16E"] {
        assert_rejected("PLD_WINDOW_BYTES", value, "KiB");
    }
    // The LL payload shapes every window's layout: a size no slot can hold is refused, not
    // multiplied into a wrapped area (it crashed with SIGSEGV in release).
    for value in ["1152921504606846976", "4611686018427387904", "9223372036854775808"] {
        assert_rejected("PLD_LL_BYTES", value, "at most");
    }
    assert_rejected("PLD_INLINE", "maybe", "0 or 1");
}

#[test]
fn recording_settings_that_cannot_be_meant_are_errors_naming_the_variable() {
    assert_rejected("PLD_FLIGHT_RECORDER", "lots", "whole number of calls");
    assert_rejected("PLD_TRACE", "/no/such/folder/trace.json", "a file this process can create");
    assert_rejected("PLD_TRACE_ON_ERROR", "/no/such/folder/dump.json", "a folder that exists");
    assert_rejected("PLD_TRACE_EVENTS", "0", "a positive whole number");
    assert_rejected("PLD_TRACE_EVENTS", "many", "a positive whole number");
    assert!(child(&[("PLD_FLIGHT_RECORDER", "0")]).starts_with("ok "));
    // A ring that long is no flight recorder (and its size overflowed, leaving it empty).
    for value in ["1048577", "18446744073709551615"] {
        assert_rejected("PLD_FLIGHT_RECORDER", value, "at most 1048576");
    }
    assert!(child(&[("PLD_FLIGHT_RECORDER", "1048576")]).starts_with("ok "));
}

#[test]
fn a_flight_recorder_too_long_from_the_builder_is_an_error_naming_the_setting() {
    let err = World::builder(2).flight_recorder(usize::MAX - 1).local().unwrap_err();
    assert!(matches!(err, Error::InvalidSetting { .. }), "{err}");
    assert!(err.to_string().contains("flight_recorder"), "{err}");
    assert!(World::builder(1).flight_recorder(pld::MAX_FLIGHT_RECORDER).local().is_ok());
}

#[test]
fn an_impossible_ll_payload_from_the_builder_is_an_error_naming_the_setting() {
    let err = World::builder(2).ll_bytes(1 << 60).local().unwrap_err();
    assert!(matches!(err, Error::InvalidSetting { .. }), "{err}");
    assert!(err.to_string().contains("ll_bytes"), "{err}");
}

/// Runs `start` on a thread of its own and gives up after a minute: a layout that never
/// finishes computing fails the test instead of hanging it.
fn within_a_minute(start: impl FnOnce() -> pld::Result<World> + Send + 'static) -> pld::Result<World> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(start());
    });
    rx.recv_timeout(Duration::from_secs(60)).expect("starting the world never returned")
}

#[test]
fn a_world_of_more_than_2048_ranks_starts() {
    let world = within_a_minute(|| World::builder(2049).window_bytes(64 << 10).local()).unwrap();
    assert_eq!(world.nranks(), 2049);
    // No LL slot fits the inbox budget at this scale: small messages take the rounds.
    assert_eq!(world.ll_bytes(), 0);
    let world = within_a_minute(|| World::builder(2049).window_bytes(64 << 10).ll_bytes(0).local()).unwrap();
    assert_eq!(world.nranks(), 2049);
}

#[test]
fn a_window_larger_than_the_heap_reports_the_real_free_figure() {
    let world = World::builder(2).window_bytes(1 << 20).local().unwrap();
    let host = world.host().unwrap();
    let err = host.window::<u8>("too_big", [2 << 20]).unwrap_err();
    let Error::OutOfWindowMemory { available, capacity, .. } = &err else { panic!("{err}") };
    assert_eq!(*capacity, 1 << 20);
    // Everything but the runtime's own areas (call board, LL inbox) is free.
    assert_eq!(*available, capacity - (world.window_bytes() - world.free_window_bytes()), "{err}");
    assert!(*available > 0, "{err}");
}
