/* pld device ABI (sim target).
 *
 * Every kernel, builtin or user, is a function
 *     int32_t kernel(pld_ctx *ctx, const void *args);
 * written against this header only. The runtime fills the context for one rank and one call
 * (a kernel writes no field of it but wakes_due and wakes_off: the runtime keeps the context of
 * a rank's calls in the world and sets only its per-call fields for the next call);
 * peers' windows are reached through the primitives below, never by the kernel's own arithmetic,
 * so that a transport without load/store access to peers (MPI RMA) can serve the same kernels.
 *
 * All primitives return a PLD_* status; a kernel returns the first non-OK status it meets.
 * Signals are int32 cells inside windows: peers write them (notify), the owner reads them (wait).
 */
#ifndef PLD_DEVICE_H
#define PLD_DEVICE_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sched.h>
#include <time.h>

#define PLD_ABI_VERSION 17

/* Reduction loops are compiled twice on x86-64, for AVX2 and for the baseline, and the loader
 * picks one for the CPU it runs on (an ifunc): twice the vector width where the CPU has it,
 * without tying the device binary to the machine that built it, as -march=native would (an MPI
 * job may run it elsewhere). Empty where the compiler lacks the attribute, and off glibc (musl
 * has no ifunc). */
#if defined(__x86_64__) && defined(__GLIBC__) && defined(__has_attribute)
#if __has_attribute(target_clones)
#define PLD_VECTOR_CLONES __attribute__((target_clones("avx2", "default")))
#endif
#endif
#ifndef PLD_VECTOR_CLONES
#define PLD_VECTOR_CLONES
#endif

/* Bytes a kernel may stage at once when a peer is reached through ops (get into scratch). */
#define PLD_TILE_BYTES 65536ull

enum {
    PLD_OK = 0,
    PLD_TIMEOUT = 1,
    PLD_ABORTED = 2,
    PLD_OUT_OF_BOUNDS = 3,
    PLD_BAD_COUNT = 4,
    PLD_TRANSPORT = 5,
    PLD_UNSUPPORTED = 6,
    PLD_KERNEL_FAILED = 7,
    PLD_MISMATCH = 8,
};

enum { PLD_NOTIFY_SET = 0, PLD_NOTIFY_ADD = 1 };
enum { PLD_WAIT_EQ = 0, PLD_WAIT_GE = 1 };

/* What one collective call is: its call number on the rank (from 1) and three
 * words the runtime encodes (collective, op, dtype, root, count) and the device only compares.
 * A rank publishes its fingerprint on its call board before its first credit of the call; a peer
 * that is about to read its data compares it with its own (mismatched calls are caught before any
 * data moves). */
typedef struct pld_fingerprint {
    uint64_t seq;
    uint64_t what[3];
} pld_fingerprint;

/* What went wrong, filled by the primitive that failed. */
typedef struct pld_diag {
    uint64_t cell_off;  /* window offset of the cell waited on, or of the bad value */
    uint64_t row_off;   /* first cell of the signal row being waited on (missing-peer report) */
    int32_t row_len;    /* cells in that row; 0 if the wait was on a lone cell */
    int32_t expected;
    int32_t observed;
    int32_t cmp;
    int32_t index;      /* bad count: peer index */
    int32_t _pad;
    int64_t value;      /* bad count: the value found */
    int64_t limit;      /* bad count: the capacity */
    pld_fingerprint peer_call; /* mismatch: the call the peer `index` published */
} pld_diag;

/* Services of the runtime. sleep/wake are the futex behind every wait; put/get/accumulate serve
 * peers whose base pointer is NULL (not load/store addressable). */
typedef struct pld_ops {
    void *data;
    /* Sleep while *cell == observed, at most timeout_ns. Spurious returns are fine. With
     * timeout_ns 0 it does not sleep: a wait in its yield phase calls it so now and then, so a
     * transport whose updates land only while it progresses (MPI across nodes) gets to. */
    void (*sleep)(void *data, const int32_t *cell, int32_t observed, uint64_t timeout_ns);
    /* Wake every waiter sleeping on cell (a cell of peer's window). */
    void (*wake)(void *data, int32_t peer, const int32_t *cell);
    int32_t (*put)(void *data, int32_t peer, uint64_t dst_off, const void *src, uint64_t bytes);
    int32_t (*get)(void *data, int32_t peer, void *dst, uint64_t src_off, uint64_t bytes);
    int32_t (*accumulate)(void *data, int32_t peer, uint64_t cell_off, int32_t value, int32_t op);
} pld_ops;

/* What a rank's calls show its runtime while they run (the flight recorder and traces): written
 * by the rank, read by the runtime after the call and, for a hang report, by other threads (so
 * the fields of a wait in progress are stored atomically). */
typedef struct pld_watch {
    uint64_t wait_ticks;  /* with `timed`: pld_ticks() spent in waits that did not end at their
                           * first look, summed over the call (the runtime zeroes it) */
    uint64_t spin_ticks_256; /* what 256 polls of a wait's spin phase take, in ticks (measured
                              * by the runtime): a wait that ends while spinning is counted by
                              * its polls, without reading the clock */
    int32_t timed;        /* nonzero: count wait_ticks (a trace is being recorded) */
    int32_t ll;           /* with `timed`: set when the call sent or received an LL message */
    /* The wait in progress once it left its spin phase (since_ns nonzero), for hang reports. */
    uint64_t since_ns;    /* CLOCK_MONOTONIC when it left the spin phase; 0: none */
    uint64_t cell_off;    /* the cell waited on */
    uint64_t row_off;     /* its signal row (row_len 0: a lone cell) */
    int32_t row_len;
    int32_t expected;
    int32_t cmp;
    int32_t peer;         /* the member waited for, when the wait knows it; -1 otherwise */
} pld_watch;

/* One rank's view of the world during one call. */
typedef struct pld_ctx {
    uint32_t abi_version;
    int32_t rank;
    int32_t nranks;
    int32_t spin_limit;          /* polls before yielding (small when ranks outnumber cores) */
    int32_t yield_limit;         /* sched_yield rounds before sleeping on the futex */
    int32_t max_running;         /* with `running`: the cores the ranks of this node share */
    uint8_t *const *peer_bases;  /* [nranks] window bases; NULL: reach that peer through ops (the
                                  * own rank's too when only the transport may update its window) */
    uint8_t *local_base;         /* the own window, read directly; never NULL */
    uint64_t window_bytes;       /* size of every rank's window */
    int32_t *const *sleepers;    /* [nranks] each rank's count of waiters asleep (shared cells) */
    const int32_t *abort_flag;   /* non-zero: another rank failed, stop waiting */
    int32_t *running;            /* ranks of this node inside a kernel and awake, or NULL: a long
                                  * spin phase ends early once they outnumber max_running (another
                                  * group started and needs the cores); a wait that sleeps on the
                                  * futex leaves the count while it sleeps */
    uint64_t timeout_ns;         /* the deadline of every wait, from the moment it leaves its spin
                                  * phase (a wait that never does never reads the clock: that read
                                  * was a tenth of a small collective) */
    uint8_t *scratch;            /* private to this rank */
    uint64_t scratch_bytes;
    const pld_ops *ops;
    pld_diag *diag;
    pld_watch *watch;            /* never NULL */
    uint64_t wakes_due;          /* peers (a bit each, peers 0..63) sent an LL message this call
                                  * whose sleepers were not looked at yet (pld_wakes_flush); the
                                  * runtime zeroes it */
    uint64_t wakes_off;          /* the slot those messages were written to (the same offset in
                                  * every peer's window) */
} pld_ctx;

/* Arguments of the builtin collectives (window offsets in bytes; see each kernel). */
typedef struct pld_coll_args {
    uint64_t target_off;
    uint64_t input_off;
    uint64_t count;            /* elements (reducing kernels) or bytes (movement kernels) */
    uint64_t row_bytes;        /* bytes of one row (gather, all_to_all, all_to_all_v) */
    uint64_t signal_off;       /* first cell of the [nranks] signal */
    uint64_t send_counts_off;  /* all_to_all_v: int32 [nranks] */
    uint64_t recv_counts_off;  /* all_to_all_v: int32 [nranks] */
    int64_t max_rows;          /* all_to_all_v: rows per peer block */
    int32_t root;
    int32_t flags;             /* PLD_CHECK_CALLS: publish and compare fingerprints */
    uint64_t board_off;        /* the call board: two pld_fingerprint slots per rank (seq parity) */
    pld_fingerprint call;      /* this call's fingerprint (its seq is the call number, from 1) */
    uint64_t ll_off;           /* the LL message area (see "LL messages"); */
    uint64_t ll_stride;        /* bytes of one inbox slot; 0: no LL messages on this transport */
    uint64_t divisor;          /* fp8 op = avg: the one rounding divides by this first (0: none) */
    uint64_t ll_slots;         /* slots per sender in every LL inbox, a power of two */
} pld_coll_args;

enum { PLD_CHECK_CALLS = 1 };

typedef int32_t (*pld_kernel_fn)(pld_ctx *ctx, const void *args);

/* Every device binary defines this (pld-backend writes it right after this header, before the
 * kernels); the runtime calls it after a kernel that left LL wakes due (pld_ctx.wakes_due), see
 * pld_wakes_flush. */
void pld_end_call(pld_ctx *c);

/* ---------------------------------------------------------------- time and status */

static inline uint64_t pld_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* A cheap clock for wait accounting: the time-stamp counter where there is one (the runtime
 * converts ticks to time), else nanoseconds. */
#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#include <x86intrin.h>
static inline uint64_t pld_ticks(void) { return __rdtsc(); }
#else
static inline uint64_t pld_ticks(void) { return pld_now_ns(); }
#endif

static inline int pld_aborted(const pld_ctx *c) {
    return __atomic_load_n(c->abort_flag, __ATOMIC_RELAXED) != 0;
}

#define PLD_TRY(expr)                          \
    do {                                       \
        int32_t pld_status_ = (expr);          \
        if (pld_status_ != PLD_OK) return pld_status_; \
    } while (0)

static inline void pld_cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

static inline int pld_in_window(const pld_ctx *c, uint64_t off, uint64_t bytes) {
    return off <= c->window_bytes && bytes <= c->window_bytes - off;
}

/* Address of a peer's window byte, or NULL when that peer is reached through ops. */
static inline uint8_t *pld_peer_ptr(const pld_ctx *c, int32_t peer, uint64_t off) {
    uint8_t *base = c->peer_bases[peer];
    return base ? base + off : NULL;
}

/* ---------------------------------------------------------------- signals */

/* notify: set or atomically add value into the cell at cell_off of peer's window. */
static inline int32_t pld_notify(pld_ctx *c, int32_t peer, uint64_t cell_off, int32_t value,
                                 int32_t op) {
    if (peer < 0 || peer >= c->nranks || cell_off % 4 != 0 || !pld_in_window(c, cell_off, 4))
        return PLD_OUT_OF_BOUNDS;
    uint8_t *base = c->peer_bases[peer];
    if (!base) return c->ops->accumulate(c->ops->data, peer, cell_off, value, op);
    int32_t *cell = (int32_t *)(base + cell_off);
    if (op == PLD_NOTIFY_ADD)
        __atomic_fetch_add(cell, value, __ATOMIC_SEQ_CST);
    else
        __atomic_store_n(cell, value, __ATOMIC_SEQ_CST);
    /* Dekker pairing with pld_wait: the cell write above and the sleepers increment there are
     * both sequentially consistent, so either the waiter sees the new value or we see it asleep. */
    if (__atomic_load_n(c->sleepers[peer], __ATOMIC_SEQ_CST) > 0)
        c->ops->wake(c->ops->data, peer, cell);
    return PLD_OK;
}

static inline int pld_cmp_holds(int32_t value, int32_t expected, int32_t cmp) {
    return cmp == PLD_WAIT_EQ ? value == expected : value >= expected;
}

/* An access of a user kernel outside one of its buffers, stopped before it happened: the
 * diagnosis holds the kernel's source line (`expected`), the buffer (`index`: its parameter, or
 * -1 for a tile), the access's first element (`value`) and element count (`cell_off`), and the
 * buffer's length in elements (`limit`); the runtime words it as Rust's own index panic does. */
static inline int32_t pld_out_of_bounds(pld_ctx *c, int32_t line, int32_t buffer, int64_t offset, int64_t len,
                                        int64_t limit) {
    c->diag->expected = line;
    c->diag->index = buffer;
    c->diag->value = offset;
    c->diag->cell_off = (uint64_t)len;
    c->diag->limit = limit;
    return PLD_OUT_OF_BOUNDS;
}

/* Fills the diagnosis of a wait that passed its deadline. */
static inline int32_t pld_timed_out(pld_ctx *c, uint64_t cell_off, int32_t expected, int32_t observed,
                                    int32_t cmp, uint64_t row_off, int32_t row_len) {
    pld_diag *d = c->diag;
    d->cell_off = cell_off;
    d->row_off = row_off;
    d->row_len = row_len;
    d->expected = expected;
    d->observed = observed;
    d->cmp = cmp;
    return PLD_TIMEOUT;
}

/* How often a wait's yield phase lets the transport progress and looks at its deadline (see
 * pld_backoff_step). */
#define PLD_YIELDS_PER_PROGRESS 16

/* The slow phases of every wait, one step per call: spin_limit polls, then yield_limit yields,
 * then sleeps on the futex of `cell` (while it still reads `observed`) in slices of at most 4 ms.
 * The deadline runs from the first step past the spin phase (one clock read, beside that step's
 * system call); an abort is noticed at every step, the deadline every PLD_YIELDS_PER_PROGRESS
 * yields (each as long as another thread's time slice at worst) and at every sleep slice, so
 * within a few milliseconds. With `cell` NULL (a cell of a peer's window, which this rank is not
 * woken for) it sleeps 50 us instead. Returns PLD_OK to poll again, PLD_ABORTED, or PLD_TIMEOUT
 * (the caller fills the diagnosis). */
typedef struct pld_backoff {
    int32_t spins;
    int32_t yields;
    uint64_t deadline_ns; /* CLOCK_MONOTONIC; 0 while this wait spins: each wait has its own */
    uint64_t started;     /* timed calls: pld_ticks() when the wait left its spin phase, less
                           * the spin phase's estimate; 0 while it spins */
} pld_backoff;

#define PLD_BACKOFF_INIT {0, 0, 0, 0}

/* Tells the runtime what a wait that left its spin phase waits for (once per wait: a hang
 * report names it). Called before every step; only the step that ends the spin phase stores. */
static inline void pld_backoff_watch(pld_ctx *c, const pld_backoff *b, uint64_t cell_off, uint64_t row_off,
                                     int32_t row_len, int32_t expected, int32_t cmp, int32_t peer) {
    if (b->spins != c->spin_limit || b->yields != 0) return;
    pld_watch *w = c->watch;
    __atomic_store_n(&w->cell_off, cell_off, __ATOMIC_RELAXED);
    __atomic_store_n(&w->row_off, row_off, __ATOMIC_RELAXED);
    __atomic_store_n(&w->row_len, row_len, __ATOMIC_RELAXED);
    __atomic_store_n(&w->expected, expected, __ATOMIC_RELAXED);
    __atomic_store_n(&w->cmp, cmp, __ATOMIC_RELAXED);
    __atomic_store_n(&w->peer, peer, __ATOMIC_RELAXED);
    __atomic_store_n(&w->since_ns, pld_now_ns(), __ATOMIC_RELEASE);
}

/* The ticks `spins` polls take, by the runtime's measure. */
static inline uint64_t pld_spin_ticks(const pld_ctx *c, int32_t spins) {
    return ((uint64_t)(spins > 0 ? spins : 0) * c->watch->spin_ticks_256) >> 8;
}

/* Timed calls: the clock starts when a wait leaves its spin phase, backdated by the polls it
 * made (a wait that never leaves it reads no clock at all). */
static inline void pld_backoff_leave_spin(pld_ctx *c, pld_backoff *b) {
    if (b->started == 0 && c->watch->timed) b->started = pld_ticks() - pld_spin_ticks(c, b->spins);
}

/* A wait ended well: if it stepped, its time counted (timed calls) and its record cleared (a
 * wait whose first look succeeded did neither, and costs nothing here). */
static inline void pld_backoff_done(pld_ctx *c, const pld_backoff *b) {
    if (b->spins == 0) return;
    if (c->watch->timed)
        c->watch->wait_ticks += b->started ? pld_ticks() - b->started : pld_spin_ticks(c, b->spins);
    if (b->spins >= c->spin_limit) __atomic_store_n(&c->watch->since_ns, 0, __ATOMIC_RELAXED);
}

static inline int pld_backoff_spinning(const pld_ctx *c, const pld_backoff *b) {
    return b->spins < c->spin_limit;
}

/* `now` plus the wait's timeout, saturating. */
static inline uint64_t pld_deadline_ns(const pld_ctx *c, uint64_t now) {
    return now + c->timeout_ns < now ? UINT64_MAX : now + c->timeout_ns;
}

/* Wakes peer p if it sleeps on the LL message at `slot_off` of its window (after the fence that
 * orders this rank's posts before the look). */
static inline void pld_wake_if_asleep(const pld_ctx *c, int32_t p, uint64_t slot_off) {
    if (__atomic_load_n(c->sleepers[p], __ATOMIC_RELAXED) > 0)
        c->ops->wake(c->ops->data, p, (const int32_t *)(c->peer_bases[p] + slot_off));
}

/* Looks for sleeping readers of the LL messages this rank sent and has not looked at yet (see
 * pld_ll_post), waking each one found asleep. One fence for all of them, then a look at each
 * reader's sleepers: the Dekker pairing with a reader going to sleep (pld_backoff_step's
 * sequentially consistent increment, then its look at the message) holds however long after the
 * store the fence comes, and a reader asleep waits at most until this rank's own wait leaves its
 * spin phase or its kernel returns (the two places that call this: pld_backoff_step, and the
 * runtime through pld_end_call after a kernel that left wakes due). */
static inline void pld_wakes_flush(pld_ctx *c) {
    uint64_t due = c->wakes_due;
    if (!due) return;
    c->wakes_due = 0;
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    do {
        pld_wake_if_asleep(c, __builtin_ctzll(due), c->wakes_off);
        due &= due - 1;
    } while (due);
}

static inline int32_t pld_backoff_step(pld_ctx *c, pld_backoff *b, const int32_t *cell, int32_t observed) {
    if (b->spins < c->spin_limit) {
        ++b->spins;
        if ((b->spins & 255) == 0 && c->running && __atomic_load_n(c->running, __ATOMIC_RELAXED) > c->max_running) {
            pld_backoff_leave_spin(c, b);
            b->spins = c->spin_limit;
        }
        pld_cpu_relax();
        return PLD_OK;
    }
    pld_backoff_leave_spin(c, b);
    pld_wakes_flush(c); /* before this rank yields or sleeps, no reader of its may sleep unwoken */
    if (pld_aborted(c)) return PLD_ABORTED;
    /* The deadline runs from the wait's first step past its spin phase: a yield phase can be
     * long (across nodes) and each yield as long as another thread's time slice. */
    if (b->deadline_ns == 0) b->deadline_ns = pld_deadline_ns(c, pld_now_ns());
    if (b->yields < c->yield_limit) {
        ++b->yields;
        /* Every PLD_YIELDS_PER_PROGRESS yields the deadline is looked at and the transport
         * progresses (the first time where a wait of that many yields would have gone to
         * sleep, and a sleep slice let it progress). */
        if (b->yields % PLD_YIELDS_PER_PROGRESS == 0) {
            if (pld_now_ns() >= b->deadline_ns) return PLD_TIMEOUT;
            if (cell) c->ops->sleep(c->ops->data, cell, observed, 0);
        }
        sched_yield();
        return PLD_OK;
    }
    uint64_t now = pld_now_ns();
    if (now >= b->deadline_ns) return PLD_TIMEOUT;
    uint64_t slice = b->deadline_ns - now;
    if (slice > 4000000ull) slice = 4000000ull;
    if (!cell) {
        struct timespec pause = {0, 50000};
        nanosleep(&pause, NULL);
        return PLD_OK;
    }
    int32_t *sleepers = c->sleepers[c->rank];
    /* Dekker pairing with the notifier: both sides are sequentially consistent, so either the
     * notifier sees this rank asleep or this rank sees the new value. */
    __atomic_fetch_add(sleepers, 1, __ATOMIC_SEQ_CST);
    if (__atomic_load_n(cell, __ATOMIC_SEQ_CST) == observed) {
        if (c->running) __atomic_fetch_sub(c->running, 1, __ATOMIC_RELAXED);
        c->ops->sleep(c->ops->data, cell, observed, slice);
        if (c->running) __atomic_fetch_add(c->running, 1, __ATOMIC_RELAXED);
    }
    __atomic_fetch_sub(sleepers, 1, __ATOMIC_SEQ_CST);
    return PLD_OK;
}

static inline int32_t pld_probe_peer(pld_ctx *c, const pld_coll_args *a, int32_t peer);

/* wait: until the local cell at cell_off == / >= expected, or the deadline, or an abort, backing
 * off as pld_backoff_step does. row_off/row_len name the signal row this cell belongs to, for the
 * missing-peer report on timeout. With `probe` set, a slow wait for `peer`'s first credit of a
 * call also looks at that peer's call board: a peer in another collective would never credit. */
static inline int32_t pld_wait_probed(pld_ctx *c, uint64_t cell_off, int32_t expected, int32_t cmp,
                                      uint64_t row_off, int32_t row_len, const pld_coll_args *probe,
                                      int32_t peer) {
    if (cell_off % 4 != 0 || !pld_in_window(c, cell_off, 4)) return PLD_OUT_OF_BOUNDS;
    int32_t *cell = (int32_t *)(c->local_base + cell_off);
    pld_backoff b = PLD_BACKOFF_INIT;
    for (;;) {
        const int32_t v = __atomic_load_n(cell, __ATOMIC_ACQUIRE);
        if (pld_cmp_holds(v, expected, cmp)) {
            pld_backoff_done(c, &b);
            return PLD_OK;
        }
        if (probe && !pld_backoff_spinning(c, &b)) PLD_TRY(pld_probe_peer(c, probe, peer));
        pld_backoff_watch(c, &b, cell_off, row_off, row_len, expected, cmp, probe ? peer : -1);
        const int32_t status = pld_backoff_step(c, &b, cell, v);
        if (status == PLD_TIMEOUT) return pld_timed_out(c, cell_off, expected, v, cmp, row_off, row_len);
        if (status != PLD_OK) return status;
    }
}

static inline int32_t pld_wait_in_row(pld_ctx *c, uint64_t cell_off, int32_t expected, int32_t cmp,
                                      uint64_t row_off, int32_t row_len) {
    return pld_wait_probed(c, cell_off, expected, cmp, row_off, row_len, NULL, 0);
}

static inline int32_t pld_wait(pld_ctx *c, uint64_t cell_off, int32_t expected, int32_t cmp) {
    return pld_wait_in_row(c, cell_off, expected, cmp, cell_off, 0);
}

/* ---------------------------------------------------------------- data */

/* Copies at least this large stream to memory with non-temporal stores: a copy that does not fit
 * the caches would otherwise read every destination line before overwriting it (a third more
 * memory traffic), and evict the data the next step reads. Override with -DPLD_NT_BYTES=... */
#ifndef PLD_NT_BYTES
#define PLD_NT_BYTES (4ull << 20)
#endif

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

/* memcpy, streaming large copies past the caches. The stores are fenced before returning, so a
 * release that follows (a credit, a flag) orders them like ordinary stores. */
static inline void pld_copy(void *dst, const void *src, uint64_t bytes) {
#if defined(__SSE2__)
    if (bytes >= PLD_NT_BYTES) {
        uint8_t *d = (uint8_t *)dst;
        const uint8_t *s = (const uint8_t *)src;
        const uint64_t head = (16 - ((uintptr_t)d & 15)) & 15;
        memcpy(d, s, head);
        d += head, s += head, bytes -= head;
        const uint64_t blocks = bytes / 64;
        for (uint64_t i = 0; i < blocks; ++i, d += 64, s += 64) {
            const __m128i x0 = _mm_loadu_si128((const __m128i *)s);
            const __m128i x1 = _mm_loadu_si128((const __m128i *)(s + 16));
            const __m128i x2 = _mm_loadu_si128((const __m128i *)(s + 32));
            const __m128i x3 = _mm_loadu_si128((const __m128i *)(s + 48));
            _mm_stream_si128((__m128i *)d, x0);
            _mm_stream_si128((__m128i *)(d + 16), x1);
            _mm_stream_si128((__m128i *)(d + 32), x2);
            _mm_stream_si128((__m128i *)(d + 48), x3);
        }
        memcpy(d, s, bytes % 64);
        _mm_sfence();
        return;
    }
#endif
    memcpy(dst, src, bytes);
}

/* put: copy bytes from local memory into peer's window at dst_off. */
static inline int32_t pld_put(pld_ctx *c, int32_t peer, uint64_t dst_off, const void *src,
                              uint64_t bytes) {
    if (peer < 0 || peer >= c->nranks || !pld_in_window(c, dst_off, bytes)) return PLD_OUT_OF_BOUNDS;
    uint8_t *dst = pld_peer_ptr(c, peer, dst_off);
    if (!dst) return c->ops->put(c->ops->data, peer, dst_off, src, bytes);
    pld_copy(dst, src, bytes);
    return PLD_OK;
}

/* get: copy bytes from peer's window at src_off into local memory. */
static inline int32_t pld_get(pld_ctx *c, int32_t peer, void *dst, uint64_t src_off,
                              uint64_t bytes) {
    if (peer < 0 || peer >= c->nranks || !pld_in_window(c, src_off, bytes)) return PLD_OUT_OF_BOUNDS;
    const uint8_t *src = pld_peer_ptr(c, peer, src_off);
    if (!src) return c->ops->get(c->ops->data, peer, dst, src_off, bytes);
    pld_copy(dst, src, bytes);
    return PLD_OK;
}

/* remote_load: a readable pointer to `bytes` of peer's window at off. Direct when the peer is
 * addressable, else fetched into `staging` (which must hold `bytes`). */
static inline int32_t pld_remote_load(pld_ctx *c, int32_t peer, uint64_t off, uint64_t bytes,
                                      void *staging, const void **out) {
    if (peer < 0 || peer >= c->nranks || !pld_in_window(c, off, bytes)) return PLD_OUT_OF_BOUNDS;
    const uint8_t *src = pld_peer_ptr(c, peer, off);
    if (src) {
        *out = src;
        return PLD_OK;
    }
    *out = staging;
    return c->ops->get(c->ops->data, peer, staging, off, bytes);
}

/* remote_store: write a tile into peer's window; with PLD_NOTIFY_ADD it adds int32 elements
 * atomically instead (the atomic flavour is defined for int32 tiles, which is what protocols
 * built from primitives accumulate), waking the peer as notify does. */
static inline int32_t pld_remote_store(pld_ctx *c, int32_t peer, uint64_t off, const void *src,
                                       uint64_t bytes, int32_t op) {
    if (op == PLD_NOTIFY_SET) return pld_put(c, peer, off, src, bytes);
    if (bytes % 4 != 0) return PLD_UNSUPPORTED;
    const int32_t *values = (const int32_t *)src;
    for (uint64_t i = 0; i < bytes / 4; ++i)
        PLD_TRY(pld_notify(c, peer, off + 4 * i, values[i], PLD_NOTIFY_ADD));
    return PLD_OK;
}

/* ---------------------------------------------------------------- credit barriers
 *
 * The self-clearing credit protocol. A signal is nranks int32 cells per rank; cell [p] of rank r
 * counts the rounds peer p has completed towards r in the current call. A round: add 1 to cell
 * [rank] of each partner, then wait until own cell [partner] >= round number (>=, never ==: a
 * fast partner may already be crediting its next call). At the end each rank subtracts the
 * rounds it received from its own cells; subtraction commutes with a fast partner's next-call
 * credit, where Set(0) would erase it. After every call the signal is all zero again. */

static inline uint64_t pld_cell(const pld_coll_args *a, int32_t peer) {
    return a->signal_off + 4ull * (uint64_t)peer;
}

static inline int32_t pld_credit(pld_ctx *c, const pld_coll_args *a, int32_t peer) {
    return pld_notify(c, peer, pld_cell(a, c->rank), 1, PLD_NOTIFY_ADD);
}

/* Wait for one partner; a timeout reports that partner's cell alone. */
static inline int32_t pld_await(pld_ctx *c, const pld_coll_args *a, int32_t peer, int32_t round) {
    return pld_wait_in_row(c, pld_cell(a, peer), round, PLD_WAIT_GE, pld_cell(a, peer), 1);
}

/* Wait for one peer in a round with every peer; a timeout reports every peer still short. */
static inline int32_t pld_await_in_round(pld_ctx *c, const pld_coll_args *a, int32_t peer,
                                         int32_t round) {
    return pld_wait_in_row(c, pld_cell(a, peer), round, PLD_WAIT_GE, a->signal_off, c->nranks);
}

static inline int32_t pld_settle(pld_ctx *c, const pld_coll_args *a, int32_t peer, int32_t rounds) {
    return pld_notify(c, c->rank, pld_cell(a, peer), -rounds, PLD_NOTIFY_ADD);
}

/* One round with every peer. */
static inline int32_t pld_round_all(pld_ctx *c, const pld_coll_args *a, int32_t round) {
    for (int32_t i = 1; i < c->nranks; ++i) PLD_TRY(pld_credit(c, a, (c->rank + i) % c->nranks));
    for (int32_t i = 1; i < c->nranks; ++i)
        PLD_TRY(pld_await_in_round(c, a, (c->rank + i) % c->nranks, round));
    return PLD_OK;
}

static inline int32_t pld_settle_all(pld_ctx *c, const pld_coll_args *a, int32_t rounds) {
    for (int32_t p = 0; p < c->nranks; ++p)
        if (p != c->rank) PLD_TRY(pld_settle(c, a, p, rounds));
    return PLD_OK;
}

/* ---------------------------------------------------------------- call board
 *
 * Mismatched calls (a different collective, op, dtype, count or root on some rank) are caught
 * before data moves: each rank publishes its call's fingerprint in slot (seq & 1) of its board,
 * then credits; a rank compares the fingerprint of every peer whose data it is about to touch,
 * right after that peer's first credit of the call. The relation is symmetric (a rank checks
 * exactly the peers that check it), which is what makes a peer that has already moved past this
 * call proof of a match: it completed the call, so it compared against us and agreed. */

static inline pld_fingerprint *pld_board_slot(pld_ctx *c, const pld_coll_args *a, uint64_t seq) {
    return (pld_fingerprint *)(c->local_base + a->board_off) + (seq & 1);
}

/* Writer side of a seqlock: seq 0 while the words change, the call number once they are set. */
static inline int32_t pld_publish(pld_ctx *c, const pld_coll_args *a) {
    if (!(a->flags & PLD_CHECK_CALLS)) return PLD_OK;
    if (a->board_off % 8 != 0 || !pld_in_window(c, a->board_off, 2 * sizeof(pld_fingerprint)))
        return PLD_OUT_OF_BOUNDS;
    if (!c->peer_bases[c->rank]) {
        /* Even the own window is updated through the transport: a torn read of the two puts
         * is caught by the reader's double read. */
        const uint64_t off = a->board_off + (a->call.seq & 1) * sizeof(pld_fingerprint);
        pld_fingerprint blank = a->call;
        blank.seq = 0;
        PLD_TRY(pld_put(c, c->rank, off, &blank, sizeof blank));
        return pld_put(c, c->rank, off, &a->call, sizeof a->call);
    }
    pld_fingerprint *slot = pld_board_slot(c, a, a->call.seq);
    __atomic_store_n(&slot->seq, 0, __ATOMIC_RELAXED);
    __atomic_thread_fence(__ATOMIC_RELEASE);
    for (int i = 0; i < 3; ++i) __atomic_store_n(&slot->what[i], a->call.what[i], __ATOMIC_RELAXED);
    __atomic_store_n(&slot->seq, a->call.seq, __ATOMIC_RELEASE);
    return PLD_OK;
}

/* A consistent copy of one of peer's slots: two reads that agree with a non-zero call number
 * (call numbers only grow, so agreeing reads saw no rewrite between them). A slot still zero
 * after the retries was never written. */
static inline int32_t pld_read_slot(pld_ctx *c, int32_t peer, uint64_t off, pld_fingerprint *out) {
    pld_fingerprint again;
    for (int tries = 0; tries < 1000; ++tries) {
        PLD_TRY(pld_get(c, peer, out, off, sizeof *out));
        __atomic_thread_fence(__ATOMIC_ACQUIRE);
        PLD_TRY(pld_get(c, peer, &again, off, sizeof again));
        if (out->seq != 0 && memcmp(out, &again, sizeof again) == 0) return PLD_OK;
        pld_cpu_relax();
    }
    return PLD_OK;
}

/* After peer's first credit of this call: PLD_MISMATCH (with the peer's call in the diagnosis)
 * unless peer published the same fingerprint or already moved past this call. */
static inline int32_t pld_check_peer(pld_ctx *c, const pld_coll_args *a, int32_t peer) {
    const uint64_t seq = a->call.seq;
    if (!(a->flags & PLD_CHECK_CALLS)) return PLD_OK;
    pld_fingerprint slot[2];
    PLD_TRY(pld_read_slot(c, peer, a->board_off + (seq & 1) * sizeof(pld_fingerprint), &slot[0]));
    if (slot[0].seq == seq) {
        if (memcmp(&slot[0], &a->call, sizeof slot[0]) == 0) return PLD_OK;
    } else {
        PLD_TRY(pld_read_slot(c, peer, a->board_off + ((seq + 1) & 1) * sizeof(pld_fingerprint), &slot[1]));
        if (slot[0].seq > seq || slot[1].seq > seq) return PLD_OK;
        if (slot[1].seq > slot[0].seq) slot[0] = slot[1];
    }
    c->diag->index = peer;
    c->diag->peer_call = slot[0];
    return PLD_MISMATCH;
}

/* The slow path of a wait for peer's first word of a call: if peer's board shows this very call
 * number with another fingerprint, peer is in another collective and would never answer. One
 * double read, no retries: a slot being rewritten is looked at again at the next step. */
static inline int32_t pld_probe_peer(pld_ctx *c, const pld_coll_args *a, int32_t peer) {
    if (!(a->flags & PLD_CHECK_CALLS)) return PLD_OK;
    const uint64_t off = a->board_off + (a->call.seq & 1) * sizeof(pld_fingerprint);
    pld_fingerprint first, again;
    PLD_TRY(pld_get(c, peer, &first, off, sizeof first));
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
    PLD_TRY(pld_get(c, peer, &again, off, sizeof again));
    if (first.seq != a->call.seq || memcmp(&first, &again, sizeof first) != 0) return PLD_OK;
    if (memcmp(&first, &a->call, sizeof first) == 0) return PLD_OK;
    c->diag->index = peer;
    c->diag->peer_call = first;
    return PLD_MISMATCH;
}

/* Wait for peer's first credit of the call, probing its board while the wait is slow. */
static inline int32_t pld_await_first(pld_ctx *c, const pld_coll_args *a, int32_t peer, uint64_t row_off,
                                      int32_t row_len) {
    return pld_wait_probed(c, pld_cell(a, peer), 1, PLD_WAIT_GE, row_off, row_len, a, peer);
}

/* The first round of a call with every peer: publish, credit, then await and check each peer. */
static inline int32_t pld_ready_round(pld_ctx *c, const pld_coll_args *a) {
    PLD_TRY(pld_publish(c, a));
    for (int32_t i = 1; i < c->nranks; ++i) PLD_TRY(pld_credit(c, a, (c->rank + i) % c->nranks));
    for (int32_t i = 1; i < c->nranks; ++i) {
        const int32_t p = (c->rank + i) % c->nranks;
        PLD_TRY(pld_await_first(c, a, p, a->signal_off, c->nranks));
        PLD_TRY(pld_check_peer(c, a, p));
    }
    return PLD_OK;
}

/* ---------------------------------------------------------------- LL messages
 *
 * Small payloads travel with their flag, as NCCL's LL protocol does: rank r writes its data into
 * its slot for this call in every peer's inbox, then the slot's header (the call's fingerprint,
 * the call number last, with release); the peer polls the call number of that slot in its own
 * window. One cache line moves each way and nobody waits for an acknowledgement: there are
 * ll_slots slots per sender (32 to 128, as the runtime's layout gives), picked by call number,
 * and a slot is rewritten only once its reader is past the call that last used it. Each rank's `past` cell (the number of the last call
 * it finished or gave up, stored by the runtime) tells its writers, who cache what they saw.
 * A header carries the fingerprint, so a mismatched call is caught on arrival.
 *
 * A message that gets no reply (a broadcast's or a scatter's, from the root) is posted
 * unanswered: its reader marks the slot taken (the call number with PLD_LL_TAKEN), and the
 * writer, when it next uses the slot, finds the mark there or reports a mismatch: a reader
 * past the call that never took the message did not wait for it (it took itself for the root,
 * or called another collective that needs nothing of this rank). The runtime makes the same
 * check at a world-wide sync, so no call is left unchecked at the end of a program.
 *
 * Layout at ll_off in every window: [0, 64) `past` (u64, read by peers); the private tables
 * last_sent[nranks][ll_slots] and known_past[nranks] (u64); then the inbox, slot
 * [sender][call % ll_slots] of ll_stride bytes each: a pld_fingerprint header, then data. */

#define PLD_LL_HEADER 32ull
/* A slot's call number once its reader took an unanswered message. */
#define PLD_LL_TAKEN (1ull << 63)
/* In last_sent: the message in that slot is unanswered, its reader marks it taken. */
#define PLD_LL_UNANSWERED (1ull << 62)
#define PLD_LL_SEQ(v) ((v) & ~(PLD_LL_TAKEN | PLD_LL_UNANSWERED))

static inline uint64_t pld_ll_tables_bytes(int32_t nranks, uint64_t slots) {
    return (8ull * (uint64_t)nranks * (slots + 1) + 63) & ~63ull;
}

/* The slot of call `seq` among a sender's (a mask: the count is a power of two). */
static inline uint64_t pld_ll_slot_of(const pld_coll_args *a, uint64_t seq) {
    return seq & (a->ll_slots - 1);
}

/* The offset of the slot `sender` writes call `seq`'s message to (in every inbox). */
static inline uint64_t pld_ll_slot_off_at(const pld_ctx *c, const pld_coll_args *a, int32_t sender, uint64_t seq) {
    const uint64_t slot = (uint64_t)sender * a->ll_slots + pld_ll_slot_of(a, seq);
    return a->ll_off + 64 + pld_ll_tables_bytes(c->nranks, a->ll_slots) + slot * a->ll_stride;
}

static inline uint64_t pld_ll_slot_off(const pld_ctx *c, const pld_coll_args *a, int32_t sender) {
    return pld_ll_slot_off_at(c, a, sender, a->call.seq);
}

/* Whether `bytes` per rank can travel as LL messages: every peer addressable, a slot holds them. */
static inline int pld_ll_fits(const pld_ctx *c, const pld_coll_args *a, uint64_t bytes) {
    if (a->ll_stride < PLD_LL_HEADER || bytes > a->ll_stride - PLD_LL_HEADER) return 0;
    if (a->ll_slots == 0 || (a->ll_slots & (a->ll_slots - 1)) != 0) return 0;
    for (int32_t p = 0; p < c->nranks; ++p)
        if (!c->peer_bases[p]) return 0;
    const uint64_t area =
        64 + pld_ll_tables_bytes(c->nranks, a->ll_slots) + (uint64_t)c->nranks * a->ll_slots * a->ll_stride;
    return pld_in_window(c, a->ll_off, area);
}

/* Peer p finished call `last` without taking this rank's unanswered message of it (in the
 * slot at `slot_off` of p's window): a mismatch, reported with p's call where its board still
 * holds it, the message's slot (`cell_off`) and its call number (`value`, never 0 otherwise). */
static inline int32_t pld_ll_untaken(pld_ctx *c, const pld_coll_args *a, int32_t p, uint64_t last, uint64_t slot_off) {
    pld_fingerprint board;
    PLD_TRY(pld_read_slot(c, p, a->board_off + (last & 1) * sizeof(pld_fingerprint), &board));
    if (board.seq != last) memset(&board, 0, sizeof board);
    c->diag->index = p;
    c->diag->value = (int64_t)last;
    c->diag->cell_off = slot_off;
    c->diag->peer_call = board;
    return PLD_MISMATCH;
}

/* This rank's `last_sent` entry for `p`'s slot of call `seq` (its private LL tables). */
static inline uint64_t *pld_ll_sent_at(const pld_ctx *c, const pld_coll_args *a, int32_t p, uint64_t seq) {
    return (uint64_t *)(c->local_base + a->ll_off + 64) + (uint64_t)p * a->ll_slots + pld_ll_slot_of(a, seq);
}

/* This rank's `last_sent` entry for `p`'s slot of this call (its private LL tables). */
static inline uint64_t *pld_ll_sent(const pld_ctx *c, const pld_coll_args *a, int32_t p) {
    return pld_ll_sent_at(c, a, p, a->call.seq);
}

/* This rank's known_past table: each peer's `past` as this rank last read it. */
static inline uint64_t *pld_ll_known_past(const pld_ctx *c, const pld_coll_args *a) {
    return (uint64_t *)(c->local_base + a->ll_off + 64) + (uint64_t)c->nranks * a->ll_slots;
}

/* Waits until `p`'s inbox has room for this call's message: its reader is past the call that
 * last used the slot. */
static inline int32_t pld_ll_room(pld_ctx *c, const pld_coll_args *a, int32_t p) {
    uint64_t *known_past = pld_ll_known_past(c, a);
    const uint64_t last = PLD_LL_SEQ(*pld_ll_sent(c, a, p));
    if (known_past[p] < last) {
        const uint64_t *past = (const uint64_t *)(c->peer_bases[p] + a->ll_off);
        pld_backoff b = PLD_BACKOFF_INIT;
        uint32_t quiet = 1;
        while ((known_past[p] = __atomic_load_n(past, __ATOMIC_ACQUIRE)) < last) {
            /* A writer this far ahead waits for a reader that is busy: polling its `past` line
             * back to back would take that line from the reader at every store it makes there
             * (measured: a 2-rank broadcast at 0.24 us a call instead of 0.12), so the polls
             * thin out, up to one per 64 pauses; the pauses count against the spin phase, which
             * so lasts as long as any wait's. */
            if (pld_backoff_spinning(c, &b)) {
                /* Never past the spin phase's last poll: the step below ends the phase exactly
                 * there, where pld_backoff_watch records what this wait waits for. */
                int32_t extra = (int32_t)quiet - 1;
                if (extra > c->spin_limit - 1 - b.spins) extra = c->spin_limit - 1 - b.spins;
                for (int32_t i = 0; i < extra; ++i) pld_cpu_relax();
                b.spins += extra;
                if (quiet < 64) quiet *= 2;
            }
            pld_backoff_watch(c, &b, a->ll_off, a->ll_off, 0, (int32_t)last, PLD_WAIT_GE, p);
            const int32_t status = pld_backoff_step(c, &b, NULL, 0);
            if (status == PLD_TIMEOUT) {
                c->diag->index = p;
                return pld_timed_out(c, a->ll_off, (int32_t)last, (int32_t)known_past[p], PLD_WAIT_GE, a->ll_off, 0);
            }
            if (status != PLD_OK) return status;
        }
        pld_backoff_done(c, &b);
    }
    return PLD_OK;
}

/* Notes that peer p's reader may sleep on the LL message just written to the slot at `slot_off`
 * of its window, to be looked at by pld_wakes_flush. Where the note cannot hold it (a peer past
 * 63, another slot noted already) the look is made now. */
static inline void pld_wakes_due(pld_ctx *c, int32_t p, uint64_t slot_off) {
    if (c->wakes_due && c->wakes_off != slot_off) pld_wakes_flush(c);
    if (p < 64) {
        c->wakes_due |= 1ull << p;
        c->wakes_off = slot_off;
        return;
    }
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    pld_wake_if_asleep(c, p, slot_off);
}

/* Sends `bytes` at `src` to `peer` as this call's message (pld_ll_fits must hold; the call is
 * published on the board first, by pld_ll_send or the caller). `flags`: PLD_LL_UNANSWERED for
 * a message that gets no reply (its reader marks it taken with pld_ll_take), else 0. The look
 * for a sleeping reader is left due (pld_wakes_due): the runtime runs it after every kernel that
 * left one due (the binary's pld_end_call), so a kernel need not, whichever way it returns. */
static inline int32_t pld_ll_post(pld_ctx *c, const pld_coll_args *a, int32_t p, const void *src, uint64_t bytes,
                                  uint64_t flags) {
    PLD_TRY(pld_ll_room(c, a, p));
    const uint64_t seq = a->call.seq;
    uint64_t *sent = pld_ll_sent(c, a, p);
    const uint64_t last = PLD_LL_SEQ(*sent);
    if (c->watch->timed) c->watch->ll = 1;
    const uint64_t slot_off = pld_ll_slot_off(c, a, c->rank);
    uint8_t *slot = c->peer_bases[p] + slot_off;
    pld_fingerprint *header = (pld_fingerprint *)slot;
    /* The reader is past the call that last used the slot: an unanswered message must be taken. */
    if ((*sent & PLD_LL_UNANSWERED) && __atomic_load_n(&header->seq, __ATOMIC_ACQUIRE) != (last | PLD_LL_TAKEN))
        return pld_ll_untaken(c, a, p, last, slot_off);
    if (bytes) memcpy(slot + PLD_LL_HEADER, src, bytes);
    for (int k = 0; k < 3; ++k) __atomic_store_n(&header->what[k], a->call.what[k], __ATOMIC_RELAXED);
    /* Release of the data and the words above. The look for a reader asleep on the call
     * number's low half comes later, by pld_wakes_flush: its fence waits until this store has
     * taken the line from the reader, and a sequentially consistent store here did that at once
     * (a quarter of a 2-rank barrier's time, before the rank could even poll for its peer's
     * message, whose line can cross meanwhile; a writer to several peers waited for each line
     * in turn). */
    __atomic_store_n(&header->seq, seq, __ATOMIC_RELEASE);
    *sent = seq | flags;
    pld_wakes_due(c, p, slot_off);
    return PLD_OK;
}

/* Asks for the lines of [addr, addr + bytes) (addr at the start of a line) to be brought in to be
 * read: x86's PREFETCHT0, written as an instruction, because GCC takes a function whose only
 * effect is a __builtin_prefetch for one without effects and drops its calls where it does not
 * inline them (pld_ll_look_ahead measured as if it were not there). Elsewhere a hint. */
static inline void pld_prefetch_to_read(const uint8_t *addr, uint64_t bytes) {
    for (uint64_t o = 0; o < bytes; o += 64) {
#if defined(__x86_64__) || defined(__i386__)
        __asm__ volatile("prefetcht0 %0" : : "m"(addr[o]));
#else
        __builtin_prefetch(addr + o, 0, 3);
#endif
    }
}

/* Asks for the lines of [addr, addr + bytes) (addr at the start of a line) to be
 * brought in ready to be written: x86's PREFETCHW (a read prefetch on cores without it), written
 * as an instruction, because GCC 12 without -mprfchw makes __builtin_prefetch(.., 1, ..) a read
 * prefetch, and takes a function whose only effect is a __builtin_prefetch for one without
 * effects and drops its calls (found at the eighteenth stop: the "for writing" prefetches tried
 * before it were read prefetches, or none). Elsewhere a hint the compiler may drop. */
static inline void pld_prefetch_to_write(const uint8_t *addr, uint64_t bytes) {
#if defined(__x86_64__) || defined(__i386__)
    /* Whether this core has it (CPUID 0x80000001, ECX bit 8; Intel from Broadwell, AMD long
     * before): asked once, a read prefetch where it has not. */
    static int has_prefetchw = -1;
    int has = __atomic_load_n(&has_prefetchw, __ATOMIC_RELAXED);
    if (has < 0) {
        unsigned eax, ebx, ecx, edx;
        has = __get_cpuid(0x80000001u, &eax, &ebx, &ecx, &edx) && (ecx & (1u << 8)) != 0;
        __atomic_store_n(&has_prefetchw, has, __ATOMIC_RELAXED);
    }
    if (!has) {
        pld_prefetch_to_read(addr, bytes);
        return;
    }
    for (uint64_t o = 0; o < bytes; o += 64) __asm__ volatile("prefetchw %0" : : "m"(addr[o]));
#else
    for (uint64_t o = 0; o < bytes; o += 64) __builtin_prefetch(addr + o, 1, 3);
#endif
}

/* Asks for every line of this rank's slot for the next call in `p`'s inbox, as far as `bytes`
 * of data reach (a next message as long as this one), for writing, where `p` is known to be
 * past the call that last used that slot: the next post there reads the slot's taken mark and
 * writes the data and the header, and those lines, last written or read by the reader, would
 * otherwise cross between the cores right then, one after another, with the whole host path of
 * the next call between this post and that one left to hide them. Never while the reader may
 * still read the slot's message (its `past`, as this rank last saw it, is short of that call):
 * the lines would be taken from under it. */
static inline void pld_ll_claim_next(pld_ctx *c, const pld_coll_args *a, int32_t p, uint64_t bytes) {
    const uint64_t next = a->call.seq + 1;
    if (pld_ll_known_past(c, a)[p] >= PLD_LL_SEQ(*pld_ll_sent_at(c, a, p, next)))
        pld_prefetch_to_write(c->peer_bases[p] + pld_ll_slot_off_at(c, a, c->rank, next), PLD_LL_HEADER + bytes);
}

/* Posts this call's message to every peer (first + i) % nranks, i in 1..nranks: `bytes` at
 * src + p * stride for peer p (stride 0: the same bytes to all), `flags` as pld_ll_post's. Room
 * in every inbox first, then every message: for a root whose messages get no reply (broadcast,
 * scatter), which runs ahead of its readers, no post then waits for a slow reader's room while
 * the others' messages could already be on their way. Then the next call's slots are claimed
 * (pld_ll_claim_next): a writer's next call is most likely another post to the same peers.
 * Measured side by side (the same binary, the claim switched, best of 4-5 alternating runs, 2
 * ranks): with the header's line claimed, broadcast and scatter of 8-32 B 1.1x-1.2x faster;
 * with every line, a broadcast of 512 B-4 KiB 1.4x-2.4x more, a scatter of 128 B-2 KiB
 * 1.5x-1.8x, all_reduce at 512 B 1.35x, the other answered calls (each rank writing to each)
 * unchanged. (Earlier stops found no gain in such claims: written as __builtin_prefetch they
 * were read prefetches or nothing. The reader claiming the line of the message it is about to
 * poll, for its taken mark: 0.90x-0.96x.) */
static inline int32_t pld_ll_post_all(pld_ctx *c, const pld_coll_args *a, int32_t first, const uint8_t *src,
                                      uint64_t stride, uint64_t bytes, uint64_t flags) {
    for (int32_t i = 1; i < c->nranks; ++i) PLD_TRY(pld_ll_room(c, a, (first + i) % c->nranks));
    for (int32_t i = 1; i < c->nranks; ++i) {
        const int32_t p = (first + i) % c->nranks;
        PLD_TRY(pld_ll_post(c, a, p, src ? src + stride * (uint64_t)p : NULL, bytes, flags));
    }
    for (int32_t i = 1; i < c->nranks; ++i) pld_ll_claim_next(c, a, (first + i) % c->nranks, bytes);
    return PLD_OK;
}

/* The flags of a message that gets no reply: checked for being taken where calls are checked. */
static inline uint64_t pld_ll_unanswered(const pld_coll_args *a) {
    return (a->flags & PLD_CHECK_CALLS) ? PLD_LL_UNANSWERED : 0;
}

/* Sends `bytes` at `src` to `peer` as this call's message, which its reader answers (or which
 * the reader's own message of the call makes moot: every rank receives from every peer), then
 * claims the next call's slot there (pld_ll_claim_next). */
static inline int32_t pld_ll_send_to(pld_ctx *c, const pld_coll_args *a, int32_t p, const void *src, uint64_t bytes) {
    PLD_TRY(pld_ll_post(c, a, p, src, bytes, 0));
    pld_ll_claim_next(c, a, p, bytes);
    return PLD_OK;
}

/* Sends `bytes` at `src` to every peer as this call's message (pld_ll_fits must hold). */
static inline int32_t pld_ll_send(pld_ctx *c, const pld_coll_args *a, const void *src, uint64_t bytes) {
    PLD_TRY(pld_publish(c, a)); /* for peers in another collective, which probe the board */
    return pld_ll_post_all(c, a, c->rank, src, 0, bytes, 0);
}

/* Sends each peer p its own row of `row` bytes, src + p * row, as this call's message (the rows
 * must fit an LL slot): all_to_all's and reduce_scatter's LL form. */
static inline int32_t pld_ll_send_rows(pld_ctx *c, const pld_coll_args *a, const uint8_t *src, uint64_t row) {
    PLD_TRY(pld_publish(c, a)); /* for peers in another collective, which probe the board */
    return pld_ll_post_all(c, a, c->rank, src, row, row, 0);
}

/* Waits for peer's message of this call; `data` points at its payload in this rank's inbox.
 * `waited`, where not NULL, tells whether the message was not there at the first poll. */
static inline int32_t pld_ll_await(pld_ctx *c, const pld_coll_args *a, int32_t peer, const void **data, int *waited) {
    const uint64_t seq = a->call.seq, off = pld_ll_slot_off(c, a, peer);
    pld_fingerprint *header = (pld_fingerprint *)(c->local_base + off);
    pld_backoff b = PLD_BACKOFF_INIT;
    uint64_t v = __atomic_load_n(&header->seq, __ATOMIC_ACQUIRE);
    if (waited) *waited = v != seq;
    for (; v != seq; v = __atomic_load_n(&header->seq, __ATOMIC_ACQUIRE)) {
        if (!pld_backoff_spinning(c, &b)) PLD_TRY(pld_probe_peer(c, a, peer));
        pld_backoff_watch(c, &b, off, off, 0, (int32_t)seq, PLD_WAIT_EQ, peer);
        const int32_t status = pld_backoff_step(c, &b, (const int32_t *)&header->seq, (int32_t)v);
        if (status == PLD_TIMEOUT) {
            c->diag->index = peer;
            return pld_timed_out(c, off, (int32_t)seq, (int32_t)v, PLD_WAIT_EQ, off, 0);
        }
        if (status != PLD_OK) return status;
    }
    pld_backoff_done(c, &b);
    if (c->watch->timed) c->watch->ll = 1;
    if ((a->flags & PLD_CHECK_CALLS) && memcmp(header->what, a->call.what, sizeof header->what) != 0) {
        c->diag->index = peer;
        c->diag->peer_call = *header;
        return PLD_MISMATCH;
    }
    *data = (const uint8_t *)header + PLD_LL_HEADER;
    return PLD_OK;
}

/* Waits for peer's message of this call; `data` points at its payload in this rank's inbox. */
static inline int32_t pld_ll_receive(pld_ctx *c, const pld_coll_args *a, int32_t peer, const void **data) {
    return pld_ll_await(c, a, peer, data, NULL);
}

/* Asks for every line of `peer`'s message of the next call in this rank's inbox, as far as
 * `bytes` of data reach (a next message as long as this one), from a rank whose writer waits for
 * nobody: a broadcast's or scatter's root, a gather's or reduce's non-root ranks. Such a writer
 * runs ahead of its reader until the slots are full, so its next message is most likely written
 * already, and its lines cross between the cores while this call ends and the host prepares the
 * next, not one after another at the next call's polls. Measured with the writer's claim
 * (pld_ll_claim_next), the same binary with the look switched, 2 ranks: a broadcast or scatter
 * of 128 B-1 KiB 1.2x-2.1x faster than with the header's line alone, a gather of 8 B-2 KiB
 * 1.4x-2.6x and a reduce 1.1x-2.2x faster than with none. (Every line was 0.69x-0.97x at 256
 * B-2 KiB at an earlier stop, before the writer claimed them: the reader took them from under
 * a writer that was still writing. Not for answered messages: their writers keep step with
 * their readers, and a line fetched while its writer fills it has to go back for the writer's
 * last store: all_reduce at 2 ranks measured up to 2x slower with the header's in every receive.) */
static inline void pld_ll_look_ahead(pld_ctx *c, const pld_coll_args *a, int32_t peer, uint64_t bytes) {
    pld_prefetch_to_read(c->local_base + pld_ll_slot_off_at(c, a, peer, a->call.seq + 1), PLD_LL_HEADER + bytes);
}

/* pld_ll_look_ahead at every peer but `root`: a root that receives from all. */
static inline void pld_ll_look_ahead_all(pld_ctx *c, const pld_coll_args *a, int32_t root, uint64_t bytes) {
    for (int32_t i = 1; i < c->nranks; ++i) pld_ll_look_ahead(c, a, (root + i) % c->nranks, bytes);
}

/* Marks peer's unanswered message of this call taken (after pld_ll_await and the copy out: the
 * writer rewrites the slot only once this rank is past the call), then looks ahead at its next
 * (pld_ll_look_ahead; `bytes`, this message's length) where this one was there at the first
 * poll (`waited` 0): a reader that had to wait has caught up with its writer, whose next message
 * is then most likely not written yet, and asking for its lines would take them from under the
 * writer's claim. Measured in one binary, the look switched, 2 ranks: a broadcast of 8-128 B
 * 1.10x-1.18x faster, a scatter 1.04x-1.14x, 512 B-2 KiB and 4 ranks unchanged. (A gather's or
 * reduce's root skipping it the same way after a wait: 0.94x-1.0x, so they look ahead always.) */
static inline void pld_ll_take(pld_ctx *c, const pld_coll_args *a, int32_t peer, uint64_t bytes, int waited) {
    pld_fingerprint *header = (pld_fingerprint *)(c->local_base + pld_ll_slot_off(c, a, peer));
    __atomic_store_n(&header->seq, a->call.seq | PLD_LL_TAKEN, __ATOMIC_RELAXED);
    if (!waited) pld_ll_look_ahead(c, a, peer, bytes);
}

/* ---------------------------------------------------------------- point-to-point
 *
 * send!/recv!: a message from rank s to rank d is the k-th of that direction on both sides (k
 * from 1, numbered by each side's host), so the k-th send of s to d meets the k-th receive of d
 * from s, as MPI matches messages in order. A host hands each rank its consecutive sends and
 * receives as one batch (pld_p2p_args), which this kernel progresses in any order: a sender
 * posts a descriptor (its fingerprint words, the offset and size of its buffer) in the
 * receiver's inbox without waiting; the receiver compares the words with its own, pulls the
 * bytes from the sender's window and acknowledges with its own words and a status; the send is
 * done when the acknowledgement is in. Nobody waits before posting everything it can, so a batch
 * in which every rank sends before it receives cannot deadlock. A mismatch (another count or
 * dtype) is reported on both sides with both sides' words; no data moves then.
 *
 * Layout at area_off in every window: [0, 64) the doorbell (int32, bumped by every write a peer
 * makes here: the one cell a batch sleeps on); then the inbox, descriptor [src][k % depth]; then
 * the acknowledgements, [dst][k % depth]; 64 bytes each, the message number first (stored last,
 * with release). A sender reuses a slot only once the acknowledgement of the message depth
 * before is in, so a slot is never rewritten under its reader. */

#define PLD_P2P_DEPTH_MAX 8ull

typedef struct pld_p2p_op {
    uint64_t what[3];      /* the message's fingerprint words: equal on both sides when they match */
    uint64_t seq;          /* its number in its direction, from 1 */
    uint64_t off;          /* window offset of the buffer sent, or received into */
    uint64_t bytes;
    int32_t peer;          /* the receiver of a send, the sender of a receive */
    int32_t is_send;
    int32_t state;         /* out: 0 waiting to post, 1 posted (a send), 2 done, 3 failed */
    int32_t _pad;
    uint64_t peer_what[3]; /* out, on a mismatch: the peer's words */
} pld_p2p_op;

typedef struct pld_p2p_args {
    uint64_t area_off;
    uint64_t nops;
    uint64_t depth;        /* slots per direction: a power of two, 1 to PLD_P2P_DEPTH_MAX */
    pld_p2p_op *ops;
} pld_p2p_args;

static inline uint64_t pld_p2p_area_bytes(int32_t nranks, uint64_t depth) {
    return depth ? 64 + 2ull * (uint64_t)nranks * depth * 64 : 0;
}

static inline uint64_t pld_p2p_desc_off(const pld_p2p_args *a, int32_t src, uint64_t seq) {
    return a->area_off + 64 + ((uint64_t)src * a->depth + seq % a->depth) * 64;
}

static inline uint64_t pld_p2p_ack_off(const pld_ctx *c, const pld_p2p_args *a, int32_t dst, uint64_t seq) {
    return a->area_off + 64 + (((uint64_t)c->nranks + (uint64_t)dst) * a->depth + seq % a->depth) * 64;
}

/* Writes `n` words at off in peer's window, words[0] (the message number) last with release,
 * then rings peer's doorbell. */
static inline int32_t pld_p2p_write(pld_ctx *c, uint64_t area, int32_t peer, uint64_t off, const uint64_t *words,
                                    uint64_t n) {
    uint8_t *dst = pld_peer_ptr(c, peer, off);
    if (dst) {
        memcpy(dst + 8, words + 1, 8 * (n - 1));
        __atomic_store_n((uint64_t *)dst, words[0], __ATOMIC_RELEASE);
    } else {
        PLD_TRY(pld_put(c, peer, off + 8, words + 1, 8 * (n - 1)));
        PLD_TRY(pld_put(c, peer, off, words, 8));
    }
    return pld_notify(c, peer, area, 1, PLD_NOTIFY_ADD);
}

/* The message number at off in this rank's own window (acquire: the words after it are read next). */
static inline uint64_t pld_p2p_seen(const pld_ctx *c, uint64_t off) {
    return __atomic_load_n((const uint64_t *)(c->local_base + off), __ATOMIC_ACQUIRE);
}

/* ---------------------------------------------------------------- f16 / bf16 */

static inline float pld_f32_from_bits(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }
static inline uint32_t pld_f32_bits(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }

static inline float pld_bf16_to_f32(uint16_t h) { return pld_f32_from_bits((uint32_t)h << 16); }

static inline uint16_t pld_f32_to_bf16(float f) {
    uint32_t u = pld_f32_bits(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x0040u); /* quiet NaN */
    u += 0x7fffu + ((u >> 16) & 1u); /* round to nearest even */
    return (uint16_t)(u >> 16);
}

static inline float pld_f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t man = h & 0x3ffu;
    if (exp == 0) {
        float mag = (float)man * 5.9604644775390625e-8f; /* man * 2^-24 */
        return sign ? -mag : mag;
    }
    if (exp == 31) return pld_f32_from_bits(sign | 0x7f800000u | (man << 13));
    return pld_f32_from_bits(sign | ((exp + 112u) << 23) | (man << 13));
}

static inline uint16_t pld_f32_to_f16(float f) {
    uint32_t u = pld_f32_bits(f);
    uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
    uint32_t abs = u & 0x7fffffffu;
    if (abs > 0x7f800000u) return sign | 0x7e00u;          /* NaN */
    if (abs >= 0x477ff000u) return sign | 0x7c00u;         /* overflow (after rounding) -> inf */
    if (abs < 0x38800000u) {                               /* subnormal or zero in f16 */
        if (abs < 0x33000000u) return sign;                /* below half the smallest subnormal */
        uint32_t exp = abs >> 23;
        uint32_t man = (abs & 0x7fffffu) | 0x800000u;
        uint32_t shift = 126u - exp;                       /* 14..24 */
        uint32_t half_bits = man >> shift;
        uint32_t rem = man & ((1u << shift) - 1u);
        uint32_t halfway = 1u << (shift - 1u);
        if (rem > halfway || (rem == halfway && (half_bits & 1u))) half_bits += 1u;
        return sign | (uint16_t)half_bits;
    }
    uint32_t r = abs + 0xfffu + ((abs >> 13) & 1u);        /* round to nearest even */
    return sign | (uint16_t)((r - 0x38000000u) >> 13);
}

/* ---------------------------------------------------------------- fp8 (e4m3, e5m2) */

/* The OCP 8-bit floats with NVIDIA's conversions (cuda_fp8.hpp), bit for bit as the float8
 * crate has them: narrowing goes through double, rounds to nearest even and saturates to the
 * largest finite value (no infinity out of a conversion); e4m3 has no infinity and one NaN
 * (0x7f, with its sign); widening is exact (through the f16 bits). */
static inline uint8_t pld_f64_to_fp8(double x, int e5m2) {
    uint64_t xbits;
    memcpy(&xbits, &x, 8);
    const uint8_t maxnorm = e5m2 ? 0x7B : 0x7E, mantissa_mask = e5m2 ? 0x3 : 0x7;
    const uint16_t bias = e5m2 ? 15 : 7;
    const uint64_t significand_bits = e5m2 ? 3 : 4;
    const uint64_t mindenorm_o2 = e5m2 ? 0x3EE0000000000000ull : 0x3F50000000000000ull;
    const uint64_t overflow_threshold = e5m2 ? 0x40EE000000000000ull - 1 : 0x407D000000000000ull;
    const uint64_t minnorm = e5m2 ? 0x3F10000000000000ull : 0x3F90000000000000ull;
    const uint64_t half_ulp = 1ull << (53 - significand_bits - 1);
    const uint8_t sign = (uint8_t)((xbits >> 63) << 7);
    const uint8_t exp = (uint8_t)(uint16_t)((uint16_t)((xbits >> 52) & 0x7FF) - 1023 + bias);
    const uint8_t mantissa = (uint8_t)((xbits >> (53 - significand_bits)) & mantissa_mask);
    const uint64_t absx = xbits & 0x7FFFFFFFFFFFFFFFull;
    uint8_t res;
    if (absx <= mindenorm_o2) {
        res = 0;
    } else if (absx > 0x7FF0000000000000ull) {
        res = e5m2 ? (uint8_t)(0x7E | mantissa) : 0x7F;
    } else if (absx > overflow_threshold) {
        res = maxnorm;
    } else if (absx >= minnorm) {
        res = (uint8_t)((uint8_t)(exp << (significand_bits - 1)) | mantissa);
        const uint64_t round = xbits & ((half_ulp << 1) - 1);
        if (round > half_ulp || (round == half_ulp && (mantissa & 1))) res = (uint8_t)(res + 1);
    } else {
        const uint8_t shift = (uint8_t)(1 - exp);
        res = (uint8_t)((mantissa | (1u << (significand_bits - 1))) >> shift);
        const uint64_t round = (xbits | (1ull << 52)) & ((half_ulp << (shift + 1)) - 1);
        if (round > (half_ulp << shift) || (round == (half_ulp << shift) && (res & 1))) res = (uint8_t)(res + 1);
    }
    return (uint8_t)(res | sign);
}

static inline uint16_t pld_fp8_to_f16_bits(uint8_t x, int e5m2) {
    uint16_t ur = (uint16_t)((uint16_t)x << 8);
    if (e5m2) return (ur & 0x7FFF) > 0x7C00 ? 0x7FFF : ur;
    const uint16_t sign = ur & 0x8000;
    uint16_t exponent = (uint16_t)(((ur & 0x7800) >> 1) + 0x2000);
    uint16_t mantissa = (uint16_t)((ur & 0x0700) >> 1);
    if ((x & 0x7F) == 0x7F) return 0x7FFF;
    if (exponent == 0x2000) {
        if (mantissa) {
            mantissa = (uint16_t)(mantissa << 1);
            while ((mantissa & 0x0400) == 0) {
                mantissa = (uint16_t)(mantissa << 1);
                exponent = (uint16_t)(exponent - 0x0400);
            }
            mantissa &= 0x03FF;
        } else {
            exponent = 0;
        }
    }
    return (uint16_t)(sign | exponent | mantissa);
}

static inline float pld_f8e4m3_to_f32(uint8_t x) { return pld_f16_to_f32(pld_fp8_to_f16_bits(x, 0)); }
static inline float pld_f8e5m2_to_f32(uint8_t x) { return pld_f16_to_f32(pld_fp8_to_f16_bits(x, 1)); }
static inline uint8_t pld_f32_to_f8e4m3(float f) { return pld_f64_to_fp8((double)f, 0); }
static inline uint8_t pld_f32_to_f8e5m2(float f) { return pld_f64_to_fp8((double)f, 1); }

/* ---------------------------------------------------------------- kernel-language arithmetic */

/* Integers compute in int64_t and wrap like Rust's wrapping ops (through uint64_t). */
static inline int64_t pld_wrap_i(uint64_t v) { int64_t r; memcpy(&r, &v, 8); return r; }
/* Division and remainder; the caller has excluded a zero divisor. */
static inline int64_t pld_idiv(int64_t a, int64_t b) { return b == -1 ? pld_wrap_i(0 - (uint64_t)a) : a / b; }
static inline int64_t pld_irem(int64_t a, int64_t b) { return b == -1 ? 0 : a % b; }
static inline int64_t pld_max_i(int64_t a, int64_t b) { return a > b ? a : b; }
static inline int64_t pld_min_i(int64_t a, int64_t b) { return a < b ? a : b; }
/* Float max/min propagate NaN, like the builtin reductions. */
static inline double pld_max_d(double a, double b) { return (a > b || a != a) ? a : b; }
static inline double pld_min_d(double a, double b) { return (a < b || a != a) ? a : b; }
/* Float to integer as Rust's `as` does it: saturating, NaN to 0. */
static inline int64_t pld_f2i(double v, int bits, int is_unsigned) {
    if (v != v) return 0;
    double lo = is_unsigned ? 0.0 : (bits == 32 ? -2147483648.0 : -9223372036854775808.0);
    double hi = is_unsigned ? (bits == 32 ? 4294967295.0 : 18446744073709551615.0)
                            : (bits == 32 ? 2147483647.0 : 9223372036854775807.0);
    if (v <= lo) return is_unsigned ? 0 : (bits == 32 ? INT32_MIN : INT64_MIN);
    if (v >= hi) return is_unsigned ? (bits == 32 ? (int64_t)UINT32_MAX : -1) : (bits == 32 ? INT32_MAX : INT64_MAX);
    return is_unsigned ? (int64_t)(uint64_t)v : (int64_t)v;
}

#endif /* PLD_DEVICE_H */
