/* The floor of pld's 2-rank LL calls on this machine: the same cache-line traffic with nothing
 * else around it. Two threads, 32 slots of one line each, a call number as the flag.
 *
 *   barrier  both threads post their call number into the other's inbox, then wait for the
 *            other's (a 2-rank LL barrier, all_reduce or all_gather); the post is a release store
 *            or, with `seq_cst`, a sequentially consistent one (what pld's LL post was before its
 *            look for a sleeping reader moved after the wait, pld_wakes_flush)
 *   stream   one writer, one reader (a 2-rank broadcast or scatter run back to back): the writer
 *            waits for room (the reader's `past`, read only when its known copy is short), writes
 *            8 bytes and the flag; the reader takes them and marks its progress; with `taken`
 *            the reader also marks the slot taken and the writer checks that mark before reusing
 *            the slot (pld's check of an unanswered message); WORK empty loop rounds of other
 *            work per call on each side (a host path); with `stores=N`, N stores a call on each
 *            side to lines of its own, which hit the cache (a host path's stores: pld's small
 *            call makes some 120), to see how a store that must take its line from the other
 *            core holds up the ones behind it
 *
 *   cc -O2 -pthread bench/baselines/ll_floor.c -o target/ll_floor
 *   target/ll_floor barrier [seq_cst]
 *   target/ll_floor stream [taken] [WORK] [stores=N]
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define SLOTS 32
#define TAKEN (1ull << 63)
#define ROUNDS 3000000

typedef struct {
    _Alignas(64) uint64_t seq;
    uint64_t data[7];
} slot;

static slot inbox[2][SLOTS];
static _Alignas(64) uint64_t past;
static _Alignas(64) uint64_t sink;
static int seq_cst, taken, work, stores;
/* Each side's own lines for `stores=N` (32 lines, 8 stores each). */
static _Alignas(64) uint64_t own_lines[2][256];

static void other_work(void) {
    for (volatile int i = 0; i < work; ++i) {
    }
}

/* `stores` stores to this side's own lines, each kept by the compiler. */
static void own_stores(int side) {
    for (int i = 0; i < stores; ++i) {
        __atomic_store_n(&own_lines[side][(i * 8) % 256], (uint64_t)i, __ATOMIC_RELAXED);
        __asm__ volatile("" ::: "memory");
    }
}

static void wait_for(const uint64_t *cell, uint64_t value) {
    while (__atomic_load_n(cell, __ATOMIC_ACQUIRE) != value) __builtin_ia32_pause();
}

static void *barrier(void *arg) {
    const int me = (int)(intptr_t)arg, peer = 1 - me;
    for (uint64_t s = 1; s <= ROUNDS; ++s) {
        uint64_t *out = &inbox[peer][s % SLOTS].seq;
        if (seq_cst)
            __atomic_store_n(out, s, __ATOMIC_SEQ_CST);
        else
            __atomic_store_n(out, s, __ATOMIC_RELEASE);
        wait_for(&inbox[me][s % SLOTS].seq, s);
    }
    return NULL;
}

static void *writer(void *arg) {
    (void)arg;
    uint64_t known_past = 0;
    for (uint64_t s = 1; s <= ROUNDS; ++s) {
        other_work();
        own_stores(0);
        if (s > SLOTS && known_past < s - SLOTS)
            while ((known_past = __atomic_load_n(&past, __ATOMIC_ACQUIRE)) < s - SLOTS) __builtin_ia32_pause();
        slot *out = &inbox[0][s % SLOTS];
        if (taken && s > SLOTS && __atomic_load_n(&out->seq, __ATOMIC_ACQUIRE) != ((s - SLOTS) | TAKEN)) {
            fprintf(stderr, "message %llu was not taken\n", (unsigned long long)(s - SLOTS));
            exit(1);
        }
        out->data[0] = s;
        __atomic_store_n(&out->seq, s, __ATOMIC_RELEASE);
    }
    return NULL;
}

static void *reader(void *arg) {
    (void)arg;
    for (uint64_t s = 1; s <= ROUNDS; ++s) {
        other_work();
        own_stores(1);
        slot *in = &inbox[0][s % SLOTS];
        wait_for(&in->seq, s);
        sink += in->data[0];
        if (taken) __atomic_store_n(&in->seq, s | TAKEN, __ATOMIC_RELAXED);
        __atomic_store_n(&past, s, __ATOMIC_RELEASE);
    }
    return NULL;
}

int main(int argc, char **argv) {
    const int stream = argc > 1 && strcmp(argv[1], "stream") == 0;
    if (argc < 2 || (!stream && strcmp(argv[1], "barrier") != 0)) {
        fprintf(stderr, "usage: %s barrier [seq_cst] | stream [taken] [WORK] [stores=N]\n", argv[0]);
        return 2;
    }
    for (int i = 2; i < argc; ++i) {
        if (strcmp(argv[i], "seq_cst") == 0)
            seq_cst = 1;
        else if (strcmp(argv[i], "taken") == 0)
            taken = 1;
        else if (strncmp(argv[i], "stores=", 7) == 0)
            stores = atoi(argv[i] + 7);
        else
            work = atoi(argv[i]);
    }
    struct timespec a, b;
    pthread_t t;
    clock_gettime(CLOCK_MONOTONIC, &a);
    if (stream) {
        pthread_create(&t, NULL, writer, NULL);
        reader(NULL);
    } else {
        pthread_create(&t, NULL, barrier, (void *)1);
        barrier((void *)0);
    }
    pthread_join(t, NULL);
    clock_gettime(CLOCK_MONOTONIC, &b);
    const double ns = ((double)(b.tv_sec - a.tv_sec) * 1e9 + (double)(b.tv_nsec - a.tv_nsec)) / ROUNDS;
    if (stream)
        printf("stream%s, %d rounds of other work and %d stores a call: %.1f ns a message\n", taken ? " taken" : "",
               work, stores, ns);
    else
        printf("barrier, %s posts: %.1f ns a call\n", seq_cst ? "seq_cst" : "release", ns);
    return 0;
}
