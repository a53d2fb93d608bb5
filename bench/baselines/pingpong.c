/* The floor of a 2-rank call on this machine: two threads passing a flag back and forth, each
 * storing its round number and waiting for the other's (a barrier on one cache line each).
 * Prints the time per round; run it before and after a benchmark to see which mode the machine's
 * cores are in (on the VM these figures were measured on: 48-54 ns in one, 188-212 ns in the
 * other, switching by the minute).
 *   cc -O2 -pthread bench/baselines/pingpong.c -o target/pingpong && target/pingpong [ROUNDS]
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static long rounds = 5000000;
static _Alignas(128) _Atomic long flag0;
static _Alignas(128) _Atomic long flag1;

static void *run(void *arg) {
    const long me = (long)arg;
    _Atomic long *mine = me ? &flag1 : &flag0, *peer = me ? &flag0 : &flag1;
    for (long i = 1; i <= rounds; i++) {
        atomic_store_explicit(mine, i, memory_order_release);
        while (atomic_load_explicit(peer, memory_order_acquire) < i) __builtin_ia32_pause();
    }
    return NULL;
}

int main(int argc, char **argv) {
    if (argc > 1) rounds = atol(argv[1]);
    struct timespec a, b;
    pthread_t other;
    clock_gettime(CLOCK_MONOTONIC, &a);
    pthread_create(&other, NULL, run, (void *)1);
    run((void *)0);
    pthread_join(other, NULL);
    clock_gettime(CLOCK_MONOTONIC, &b);
    const double ns = (double)(b.tv_sec - a.tv_sec) * 1e9 + (double)(b.tv_nsec - a.tv_nsec);
    printf("%.1f ns per round (two threads, one cache line each way)\n", ns / (double)rounds);
    return 0;
}
