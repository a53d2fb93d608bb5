// mpibench.c - pld-bench's MPI baseline: every collective pld has, through the MPI call a user
// would otherwise make (MPI_Allreduce, MPI_Allgather, MPI_Reduce_scatter_block, MPI_Bcast,
// MPI_Alltoall, MPI_Alltoallv with the same count to every peer, MPI_Barrier, and the rooted
// MPI_Reduce, MPI_Gather and MPI_Scatter with root 0, MPI_Allgatherv with the same count from
// every rank, and MPI_Sendrecv around the ring: each rank sends to the next and receives from
// the previous). Float32, sum.
// Per size: warm up, grow a batch to 20 ms to estimate, run target_sec worth, report the mean
// over ranks; then a fresh exact pattern and a count of wrong elements over all ranks.
// usage: mpirun -np N ./mpibench <allreduce|allgather|reduce_scatter|bcast|alltoall|alltoallv|barrier|
//                                 reduce|gather|scatter|allgatherv|sendrecv>
//        [minB] [maxB] [factor] [target_sec]
// Sizes as pld-bench gives them: all_reduce, broadcast and reduce the whole buffer; all_gather,
// reduce_scatter, all_to_all, all_to_all_v, gather and scatter one rank's whole input or output
// (nranks blocks; gather's and scatter's at the root).
// To see what pld's own MPI setting costs MPI's calls: MPIBENCH_THREADS=multiple starts MPI with
// MPI_THREAD_MULTIPLE (as pld does), MPIBENCH_WINDOW=1 keeps a 1 MiB RMA window open in a
// lock_all epoch while it measures (as pld's windows are).
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank, nranks;
enum { AR, AG, RS, BC, A2A, A2AV, BAR, RD, GA, SC, AGV, SR, LAST = SR };
static const char *NAMES[] = {"allreduce", "allgather", "reduce_scatter", "bcast", "alltoall",   "alltoallv",
                              "barrier",   "reduce",    "gather",         "scatter", "allgatherv", "sendrecv"};
static int *counts, *displs;

// cnt: elements of the buffer (allreduce, bcast) or of one block (the others).
static void run(int c, float *s, float *r, size_t cnt) {
    switch (c) {
    case AR: MPI_Allreduce(s, r, (int)cnt, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD); break;
    case AG: MPI_Allgather(s, (int)cnt, MPI_FLOAT, r, (int)cnt, MPI_FLOAT, MPI_COMM_WORLD); break;
    case RS: MPI_Reduce_scatter_block(s, r, (int)cnt, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD); break;
    case BC: MPI_Bcast(s, (int)cnt, MPI_FLOAT, 0, MPI_COMM_WORLD); break;
    case A2A: MPI_Alltoall(s, (int)cnt, MPI_FLOAT, r, (int)cnt, MPI_FLOAT, MPI_COMM_WORLD); break;
    case A2AV: MPI_Alltoallv(s, counts, displs, MPI_FLOAT, r, counts, displs, MPI_FLOAT, MPI_COMM_WORLD); break;
    case RD: MPI_Reduce(s, r, (int)cnt, MPI_FLOAT, MPI_SUM, 0, MPI_COMM_WORLD); break;
    case GA: MPI_Gather(s, (int)cnt, MPI_FLOAT, r, (int)cnt, MPI_FLOAT, 0, MPI_COMM_WORLD); break;
    case SC: MPI_Scatter(s, (int)cnt, MPI_FLOAT, r, (int)cnt, MPI_FLOAT, 0, MPI_COMM_WORLD); break;
    case AGV: MPI_Allgatherv(s, (int)cnt, MPI_FLOAT, r, counts, displs, MPI_FLOAT, MPI_COMM_WORLD); break;
    case SR:
        MPI_Sendrecv(s, (int)cnt, MPI_FLOAT, (rank + 1) % nranks, 0, r, (int)cnt, MPI_FLOAT,
                     (rank + nranks - 1) % nranks, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        break;
    default: MPI_Barrier(MPI_COMM_WORLD); break;
    }
}

// Elements of the send and receive buffers.
static size_t send_len(int c, size_t cnt) { return (c == RS || c == A2A || c == A2AV || c == SC) ? cnt * nranks : cnt; }
static size_t recv_len(int c, size_t cnt) {
    return (c == AG || c == A2A || c == A2AV || c == GA || c == AGV) ? cnt * nranks : cnt;
}

// Exact-integer patterns (every value below 2^24, so any reduction order gives the same sum).
static void init(int c, float *s, float *r, size_t cnt) {
    for (size_t i = 0; i < send_len(c, cnt); i++) {
        if (c == AR || c == RS || c == RD) s[i] = (float)((rank + 1) * ((i % 1024) + 1));
        else if (c == AG || c == GA || c == AGV || c == SR) s[i] = (float)(rank * 4096 + (i % 4096));
        else if (c == SC) s[i] = rank == 0 ? (float)((i / cnt) * 4096 + ((i % cnt) % 4096)) : -7.0f;
        else if (c == BC) s[i] = rank == 0 ? (float)(i % 65536) + 0.5f : -7.0f;
        else { size_t d = i / cnt, j = i % cnt; s[i] = (float)(((rank * 16 + d) * 1024) + (j % 1024)); }
    }
    for (size_t i = 0; i < recv_len(c, cnt); i++) r[i] = -7.0f;
}

static long long check(int c, const float *s, const float *r, size_t cnt) {
    long long bad = 0;
    double n = nranks;
    if (c == AR || (c == RD && rank == 0)) {
        for (size_t i = 0; i < cnt; i++)
            if (r[i] != (float)(n * (n + 1) / 2 * ((i % 1024) + 1))) bad++;
    } else if (c == RD || (c == GA && rank != 0)) {
        return 0; // only the root receives
    } else if (c == SC) {
        for (size_t j = 0; j < cnt; j++)
            if (r[j] != (float)(rank * 4096 + (j % 4096))) bad++;
    } else if (c == AG || c == GA || c == AGV) {
        for (size_t i = 0; i < cnt * nranks; i++)
            if (r[i] != (float)((i / cnt) * 4096 + ((i % cnt) % 4096))) bad++;
    } else if (c == BC) {
        for (size_t i = 0; i < cnt; i++)
            if (s[i] != (float)(i % 65536) + 0.5f) bad++;
    } else if (c == BAR) {
        return 0;
    } else if (c == SR) {
        for (size_t i = 0; i < cnt; i++)
            if (r[i] != (float)(((rank + nranks - 1) % nranks) * 4096 + (i % 4096))) bad++;
    } else if (c == RS) {
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
    const char *threads = getenv("MPIBENCH_THREADS");
    if (threads && !strcmp(threads, "multiple")) {
        int provided;
        MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    } else {
        MPI_Init(&argc, &argv);
    }
    MPI_Win window = MPI_WIN_NULL;
    void *window_base;
    if (getenv("MPIBENCH_WINDOW")) {
        MPI_Win_allocate(1 << 20, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &window_base, &window);
        MPI_Win_lock_all(0, window);
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    const char *cn = argc > 1 ? argv[1] : "allreduce";
    int c = -1;
    for (int i = 0; i <= LAST; i++)
        if (!strcmp(cn, NAMES[i])) c = i;
    if (c < 0) {
        if (rank == 0) fprintf(stderr, "mpibench: unknown collective `%s`\n", cn);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
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
        const char *yield = getenv("OMPI_MCA_mpi_yield_when_idle");
        printf("# %s nranks=%d float32 sum (OMPI_MCA_mpi_yield_when_idle=%s)\n", cn, nranks, yield ? yield : "unset");
        printf("# %10s %10s %6s %10s %10s %10s %9s %9s %7s\n", "size(B)", "count", "iters", "avg(us)", "min(us)",
               "max(us)", "algbw", "busbw", "#wrong");
    }
    size_t sizes[64];
    int ns = 0;
    for (size_t b = minb; b <= maxb && ns < 63; b *= fac) sizes[ns++] = b;
    if (ns == 0 || sizes[ns - 1] != maxb) sizes[ns++] = maxb;
    for (int k = 0; k < ns; k++) {
        int blocks = (c == AR || c == BC || c == BAR || c == RD || c == SR) ? 1 : nranks;
        size_t cnt = sizes[k] / 4 / blocks;
        if (!cnt && c != BAR) cnt = 1;
        size_t bytes = cnt * 4 * blocks;
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
        // A measured run shorter than the calibration's 20 ms (the calibration met slower calls
        // than this run did) is run again, 4x longer: so short a run can end before a queue
        // fills (an eager broadcast's socket buffers across hosts), timing a burst instead of
        // the steady state. pld-bench keeps the same rule.
        double dt, tavg, tmin, tmax;
        for (;;) {
            MPI_Barrier(MPI_COMM_WORLD);
            t0 = MPI_Wtime();
            for (int it = 0; it < iters; it++) run(c, s, r, cnt);
            dt = MPI_Wtime() - t0;
            double slowest;
            MPI_Allreduce(&dt, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
            if (slowest >= 0.02 || iters >= 2000000) break;
            iters = iters * 4 > 2000000 ? 2000000 : iters * 4;
        }
        dt /= iters;
        MPI_Allreduce(&dt, &tavg, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        tavg /= nranks;
        MPI_Allreduce(&dt, &tmin, 1, MPI_DOUBLE, MPI_MIN, MPI_COMM_WORLD);
        MPI_Allreduce(&dt, &tmax, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        init(c, s, r, cnt);
        run(c, s, r, cnt);
        long long bad = check(c, s, r, cnt);
        MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
        // nccl-tests' bus factors: all_reduce 2(n-1)/n, broadcast and reduce 1, the block
        // collectives (n-1)/n.
        double factor = c == AR ? 2.0 * (nranks - 1) / nranks
                        : (c == BC || c == RD || c == SR) ? 1.0
                        : c == BAR ? 0.0 : (double)(nranks - 1) / nranks;
        double algbw = bytes / tavg / 1e9, busbw = algbw * factor;
        if (rank == 0)
            printf("  %10zu %10zu %6d %10.2f %10.2f %10.2f %9.3f %9.3f %7lld\n", bytes, cnt, iters, tavg * 1e6,
                   tmin * 1e6, tmax * 1e6, algbw, busbw, bad);
        fflush(stdout);
    }
    free(counts);
    free(displs);
    free(s);
    free(r);
    if (window != MPI_WIN_NULL) {
        MPI_Win_unlock_all(window);
        MPI_Win_free(&window);
    }
    MPI_Finalize();
    return 0;
}
