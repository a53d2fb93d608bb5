// collbench_extra.c - the Open MPI baseline of the collectives shared/baselines/collbench.c
// does not measure: reduce_scatter (MPI_Reduce_scatter_block) and alltoallv (MPI_Alltoallv,
// the same count to every peer, as pld-bench sends). Float32, sum. Same method and output
// columns as collbench.c, so pld-bench reads both alike: warm up, grow a batch to 20 ms to
// estimate, run target_sec worth, report the mean over ranks; then a fresh exact pattern and
// a count of wrong elements over all ranks.
// usage: mpirun -np N ./collbench_extra <reduce_scatter|alltoallv> [minB] [maxB] [factor] [target_sec]
// minB/maxB: bytes of one rank's whole input (nranks blocks), as pld-bench sizes them.
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank, nranks;
enum { RS, A2AV };
static int *counts, *displs;

static void run(int c, float *s, float *r, size_t cnt) { // cnt: elements per block
    if (c == RS) {
        MPI_Reduce_scatter_block(s, r, (int)cnt, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    } else {
        MPI_Alltoallv(s, counts, displs, MPI_FLOAT, r, counts, displs, MPI_FLOAT, MPI_COMM_WORLD);
    }
}

// Exact-integer patterns (every value below 2^24, so any reduction order gives the same sum).
static void init(int c, float *s, float *r, size_t cnt) {
    for (size_t i = 0; i < cnt * nranks; i++) {
        if (c == RS) s[i] = (float)((rank + 1) * ((i % 1024) + 1));
        else { size_t d = i / cnt, j = i % cnt; s[i] = (float)(((rank * 16 + d) * 1024) + (j % 1024)); }
    }
    size_t rn = c == RS ? cnt : cnt * nranks;
    for (size_t i = 0; i < rn; i++) r[i] = -7.0f;
}

static long long check(int c, const float *r, size_t cnt) {
    long long bad = 0;
    double n = nranks;
    if (c == RS) {
        for (size_t j = 0; j < cnt; j++)
            if (r[j] != (float)(n * (n + 1) / 2 * (((rank * cnt + j) % 1024) + 1))) bad++;
    } else {
        for (size_t i = 0; i < cnt * nranks; i++) {
            size_t src = i / cnt, j = i % cnt;
            if (r[i] != (float)(((src * 16 + rank) * 1024) + (j % 1024))) bad++;
        }
    }
    return bad;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    const char *cn = argc > 1 ? argv[1] : "reduce_scatter";
    int c = !strcmp(cn, "alltoallv") ? A2AV : RS;
    size_t minb = argc > 2 ? atol(argv[2]) : 1024, maxb = argc > 3 ? atol(argv[3]) : (64 << 20);
    int fac = argc > 4 ? atoi(argv[4]) : 4;
    double target = argc > 5 ? atof(argv[5]) : 0.25;
    size_t maxcnt = maxb / 4 + nranks;
    size_t alloc = ((maxcnt * 4 + 4095) / 4096) * 4096;
    float *s = aligned_alloc(4096, alloc), *r = aligned_alloc(4096, alloc);
    counts = malloc(sizeof(int) * nranks);
    displs = malloc(sizeof(int) * nranks);
    memset(s, 0, alloc);
    memset(r, 0, alloc);
    if (rank == 0) {
        printf("# %s nranks=%d float32 sum\n", cn, nranks);
        printf("# %10s %10s %6s %10s %10s %10s %9s %9s %7s\n", "size(B)", "count", "iters", "avg(us)", "min(us)",
               "max(us)", "algbw", "busbw", "#wrong");
    }
    size_t sizes[64];
    int ns = 0;
    for (size_t b = minb; b <= maxb && ns < 63; b *= fac) sizes[ns++] = b;
    if (ns == 0 || sizes[ns - 1] != maxb) sizes[ns++] = maxb;
    for (int k = 0; k < ns; k++) {
        size_t cnt = sizes[k] / 4 / nranks;
        if (!cnt) cnt = 1;
        size_t bytes = cnt * 4 * nranks;
        for (int p = 0; p < nranks; p++) counts[p] = (int)cnt, displs[p] = (int)(p * cnt);
        init(c, s, r, cnt);
        run(c, s, r, cnt); // warmup
        double t0, t1;
        long nb = 1;
        for (;;) {
            MPI_Barrier(MPI_COMM_WORLD);
            t0 = MPI_Wtime();
            for (long q = 0; q < nb; q++) run(c, s, r, cnt);
            t1 = MPI_Wtime() - t0;
            MPI_Allreduce(MPI_IN_PLACE, &t1, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
            if (t1 >= 0.02 || nb >= (1 << 20)) break;
            nb *= 4;
        }
        t1 /= nb;
        int iters = (int)(target / (t1 > 1e-9 ? t1 : 1e-9));
        if (iters < 5) iters = 5;
        if (iters > 2000000) iters = 2000000;
        for (int w = 0; w < iters / 10 && w < 100; w++) run(c, s, r, cnt); // extra warmup
        MPI_Barrier(MPI_COMM_WORLD);
        t0 = MPI_Wtime();
        for (int it = 0; it < iters; it++) run(c, s, r, cnt);
        double dt = (MPI_Wtime() - t0) / iters, tavg, tmin, tmax;
        MPI_Allreduce(&dt, &tavg, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        tavg /= nranks;
        MPI_Allreduce(&dt, &tmin, 1, MPI_DOUBLE, MPI_MIN, MPI_COMM_WORLD);
        MPI_Allreduce(&dt, &tmax, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        init(c, s, r, cnt);
        run(c, s, r, cnt);
        long long bad = check(c, r, cnt);
        MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
        double algbw = bytes / tavg / 1e9, busbw = algbw * (nranks - 1) / nranks;
        if (rank == 0)
            printf("  %10zu %10zu %6d %10.2f %10.2f %10.2f %9.3f %9.3f %7lld\n", bytes, cnt, iters, tavg * 1e6,
                   tmin * 1e6, tmax * 1e6, algbw, busbw, bad);
        fflush(stdout);
    }
    free(counts);
    free(displs);
    free(s);
    free(r);
    MPI_Finalize();
    return 0;
}
