//! An LL message's reader asleep on it is woken, though the writer looks for sleepers only
//! after its posts (`pld_wakes_flush`): driven through the header's own functions in a small C
//! program, rank 0 of 3 posts to an awake peer and to a sleeping one and checks that exactly the
//! sleeping one is woken, on the cell of the message, at each place the look is made: a
//! kernel's end (the flush the runtime runs after every kernel that left one due, through the
//! binary's `pld_end_call`), and a wait of the writer's
//! own that leaves its spin phase (the writer must not yield or sleep while a reader of its
//! sleeps unwoken). And where the note cannot hold a post (a post to another slot while some are
//! due, a peer past 63) the look is made at once.

mod header_program;

const PROGRAM: &str = r#"
#include <stdio.h>
#include <stdint.h>
#include "pld_device.h"
#include "test_ctx.h"

#define WINDOW 65536
#define RANKS 65
static uint8_t windows[RANKS][WINDOW] __attribute__((aligned(64)));
static int32_t asleep[RANKS];
static int32_t woken_peer = -1, wakes;
static const int32_t *woken_cell;

static void on_sleep(void *data, const int32_t *cell, int32_t observed, uint64_t timeout_ns) {
    (void)data; (void)cell; (void)observed; (void)timeout_ns;
}
static void on_wake(void *data, int32_t peer, const int32_t *cell) {
    (void)data;
    woken_peer = peer;
    woken_cell = cell;
    ++wakes;
}

int main(void) {
    int32_t *sleepers[RANKS];
    uint8_t *bases[RANKS];
    for (int r = 0; r < RANKS; ++r) {
        sleepers[r] = &asleep[r];
        bases[r] = windows[r];
    }
    pld_ops ops = {0};
    ops.sleep = on_sleep;
    ops.wake = on_wake;
    pld_ctx c = test_ctx(0, 3, bases, sleepers, WINDOW, &ops, 2, 4, 1000000000ull);
    pld_coll_args a = {0};
    a.ll_off = 0;
    a.ll_stride = 4160;
    a.ll_slots = 4;
    a.call.seq = 1;
    const uint64_t value = 42;
    asleep[2] = 1; /* peer 2 sleeps, peer 1 does not */

    /* 1: posts, then the kernel's end. */
    if (pld_ll_post(&c, &a, 1, &value, sizeof value, 0) != PLD_OK) return 10;
    if (pld_ll_post(&c, &a, 2, &value, sizeof value, 0) != PLD_OK) return 11;
    const int32_t before_flush = wakes;
    pld_wakes_flush(&c);
    const uint8_t *cell = windows[2] + pld_ll_slot_off(&c, &a, 0);
    printf("%d %d %d %d\n", before_flush, wakes, woken_peer, woken_cell == (const int32_t *)cell);
    pld_wakes_flush(&c); /* nothing left to look at */
    printf("%d\n", wakes);

    /* 2: the next call's posts, then a wait of the writer's own on a cell nobody sets. */
    a.call.seq = 2;
    wakes = 0;
    woken_peer = -1;
    if (pld_ll_post_all(&c, &a, 0, (const uint8_t *)&value, 0, sizeof value, 0) != PLD_OK) return 12;
    pld_backoff b = PLD_BACKOFF_INIT;
    int32_t spinning_wakes = -1;
    for (int i = 0; i < 3; ++i) {
        if (!pld_backoff_spinning(&c, &b) && spinning_wakes < 0) spinning_wakes = wakes;
        if (pld_backoff_step(&c, &b, NULL, 0) != PLD_OK) return 13;
    }
    cell = windows[2] + pld_ll_slot_off(&c, &a, 0);
    printf("%d %d %d %d\n", spinning_wakes, wakes, woken_peer, woken_cell == (const int32_t *)cell);

    /* 3: a post to another slot (the next call's) while one is due: the due one is looked at
     * first, at that post. */
    wakes = 0;
    woken_peer = -1;
    a.call.seq = 3;
    if (pld_ll_post(&c, &a, 2, &value, sizeof value, 0) != PLD_OK) return 14;
    cell = windows[2] + pld_ll_slot_off(&c, &a, 0);
    a.call.seq = 4;
    if (pld_ll_post(&c, &a, 1, &value, sizeof value, 0) != PLD_OK) return 15;
    printf("%d %d %d\n", wakes, woken_peer, woken_cell == (const int32_t *)cell);
    pld_wakes_flush(&c); /* peer 1 is awake: nothing more */
    printf("%d\n", wakes);

    /* 4: a peer past 63 is looked at as its message goes. */
    pld_ctx wide = test_ctx(0, RANKS, bases, sleepers, WINDOW, &ops, 2, 4, 1000000000ull);
    wakes = 0;
    woken_peer = -1;
    asleep[RANKS - 1] = 1;
    a.call.seq = 1;
    if (pld_ll_post(&wide, &a, RANKS - 1, &value, sizeof value, 0) != PLD_OK) return 16;
    cell = windows[RANKS - 1] + pld_ll_slot_off(&wide, &a, 0);
    printf("%d %d %d %llu\n", wakes, woken_peer, woken_cell == (const int32_t *)cell, (unsigned long long)wide.wakes_due);
    return 0;
}
"#;

#[test]
fn a_sleeping_reader_of_an_ll_message_is_woken_once_at_the_kernels_end_or_the_writers_first_slow_wait() {
    let output = header_program::compile_and_run("ll-wakes", PROGRAM);
    let out = String::from_utf8(output.stdout).unwrap();
    assert!(output.status.success(), "the wakes program failed ({:?}): {out}", output.status);
    let lines: Vec<&str> = out.lines().collect();
    // Deferred past the posts, then one wake, for peer 2, on its message's cell.
    assert_eq!(lines.first(), Some(&"0 1 2 1"), "posts then the kernel's end: {out}");
    assert_eq!(lines.get(1), Some(&"1"), "a second flush with nothing due woke again: {out}");
    // None while the writer's wait spins; one, for peer 2, at its first step past the spin phase.
    assert_eq!(lines.get(2), Some(&"0 1 2 1"), "posts then a wait of the writer's: {out}");
    // The next call's post looks at the one due before it; its own reader is awake.
    assert_eq!(lines.get(3), Some(&"1 2 1"), "a post to another slot: {out}");
    assert_eq!(lines.get(4), Some(&"1"), "the awake reader was woken: {out}");
    // Peer 64: woken at once, nothing left due.
    assert_eq!(lines.get(5), Some(&"1 64 1 0"), "a peer past 63: {out}");
}
