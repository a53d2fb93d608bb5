//! A wait's slow phases, driven through the header's own `pld_wait_probed` in a small C
//! program: whatever its yield phase (across nodes it is 1024 yields, and a yield can last a
//! whole time slice of another thread), a wait ends at its deadline, and while it yields the
//! transport gets to progress (its `sleep` called with no time) without sleeping.

mod header_program;

/// A wait on a cell nobody changes, with a yield phase of `i32::MAX` yields and a 50 ms
/// deadline; prints the status, the milliseconds it took, and how often `sleep` was called with
/// no time and with some.
const PROGRAM: &str = r#"
#include <stdio.h>
#include <stdint.h>
#include <time.h>
#include "pld_device.h"
#include "test_ctx.h"

static long progress_calls, sleeps;
static void on_sleep(void *data, const int32_t *cell, int32_t observed, uint64_t timeout_ns) {
    (void)data; (void)cell; (void)observed;
    if (timeout_ns == 0) ++progress_calls; else ++sleeps;
}
static void on_wake(void *data, int32_t peer, const int32_t *cell) { (void)data; (void)peer; (void)cell; }

int main(void) {
    static uint8_t window[4096];
    static int32_t asleep;
    int32_t *sleepers[1] = {&asleep};
    uint8_t *bases[1] = {window};
    pld_ops ops = {0};
    ops.sleep = on_sleep;
    ops.wake = on_wake;
    pld_ctx c = test_ctx(0, 1, bases, sleepers, sizeof window, &ops, 4, 2147483647, 50000000);
    const uint64_t start = pld_now_ns();
    const int32_t status = pld_wait_probed(&c, 64, 1, PLD_WAIT_EQ, 64, 1, NULL, -1);
    printf("%d %llu %ld %ld\n", status, (unsigned long long)((pld_now_ns() - start) / 1000000), progress_calls, sleeps);
    return 0;
}
"#;

#[test]
fn a_wait_with_a_long_yield_phase_ends_at_its_deadline_and_lets_the_transport_progress() {
    // Bounded from outside too (the helper's time limit): before the deadline ran from the
    // first yield, this wait yielded 2^31 times first (minutes).
    let output = header_program::compile_and_run("wait-deadline", PROGRAM);
    let out = String::from_utf8(output.stdout).unwrap();
    let fields: Vec<i64> = out.split_whitespace().filter_map(|f| f.parse().ok()).collect();
    assert_eq!(fields.len(), 4, "the wait program printed {out:?} (status {:?})", output.status);
    let (status, ms, progress_calls, sleeps) = (fields[0], fields[1], fields[2], fields[3]);
    assert_eq!(status, 1, "PLD_TIMEOUT expected: {out}");
    assert!((50..5000).contains(&ms), "the 50 ms deadline ended the wait after {ms} ms");
    assert!(progress_calls > 0, "the yield phase never let the transport progress: {out}");
    assert_eq!(sleeps, 0, "the wait slept during its yield phase: {out}");
}
