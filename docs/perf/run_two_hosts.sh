#!/usr/bin/env bash
# pld against MPI across two hosts (issue 21): `.ci/two-hosts` (two network namespaces, 2
# processes each), the same sizes, alternating pld-bench and the MPI harness (MPI_Allreduce,
# MPI_Allgather, MPI_Bcast; each in every setting below) REPEAT times and keeping each side's
# best per size (sizes 8 B to MAXBYTES by 8, and MAXBYTES); a table per
# collective with the ratio MPI time / pld time (above 1: pld is faster). Both sides' times are
# their slowest process's (pld-bench reports the slowest rank; the harness's `max` column), so a
# rooted collective's root, which returns once its data is out, does not pull one side's figure
# down. Gated like every benchmark here (bench/baselines/gate.sh). As root. COLLS picks the
# collectives (default: all_reduce all_gather broadcast), OUT the folder (docs/perf/two_hosts).
#
#   bash docs/perf/run_two_hosts.sh [REPEAT] [SECONDS] [MAXBYTES]
set -euo pipefail
cd "$(dirname "$0")/../.."
repeat=${1:-3}
seconds=${2:-0.1}
max=${3:-64M}
out=${OUT:-docs/perf/two_hosts}
mkdir -p "$out" target/two-hosts
cargo build -q --release -p pld-bench --features mpi
mpicc -O3 -o target/two-hosts/mpibench bench/baselines/mpibench.c
trap '.ci/two-hosts down' EXIT
.ci/two-hosts up
settings=("--mca mpi_yield_when_idle 0" "--mca mpi_yield_when_idle 1"
    "--bind-to none --mca mpi_yield_when_idle 0" "--bind-to none --mca mpi_yield_when_idle 1")
run() { bash bench/baselines/gate.sh >/dev/null 2>&1 || true; timeout 1200 .ci/two-hosts mpirun -np 4 "$@"; }
for coll in ${COLLS:-all_reduce all_gather broadcast}; do
    case $coll in all_reduce) mpi=allreduce ;; all_gather) mpi=allgather ;; broadcast) mpi=bcast ;; esac
    rm -f "$out/$coll.pld.raw" "$out/$coll.mpi.raw"
    for i in $(seq "$repeat"); do
        # Both sides in the same settings, each size keeping its best: 4 processes share 2
        # cores, so how they are placed and whether MPI yields when idle decide small calls.
        # mpirun binds each host's 2 processes to cores 0 and 1 (both hosts onto the same two),
        # or not at all (--bind-to none).
        # pld-bench's sweep steps by 8 from 8 B; the largest size runs on its own.
        for setting in "${settings[@]}"; do
            # shellcheck disable=SC2086
            run $setting "$PWD/target/release/pld-bench" "$coll" -b 8 -e "$max" -f 8 --time "$seconds" >> "$out/$coll.pld.raw"
            # shellcheck disable=SC2086
            run $setting "$PWD/target/release/pld-bench" "$coll" -b "$max" -e "$max" --time "$seconds" >> "$out/$coll.pld.raw"
        done
        for setting in "${settings[@]}"; do
            # shellcheck disable=SC2086
            run $setting "$PWD/target/two-hosts/mpibench" "$mpi" 8 "$(numfmt --from=iec "$max")" 8 "$seconds" \
                >> "$out/$coll.mpi.raw"
        done
    done
    # pld-bench: size(B) count type redop root time(us) ... #wrong; mpibench: size(B) count iters
    # avg(us) min(us) max(us) ... #wrong: pld's time and MPI's max, both in column 6.
    {
        printf '# %s, 2 hosts x 2 processes (.ci/two-hosts), best of %s alternating runs each\n' "$coll" "$repeat"
        printf '%12s %12s %12s %10s %8s %8s\n' "size(B)" "pld(us)" "mpi(us)" "mpi/pld" "pld#wr" "mpi#wr"
        awk '
            /^ *[0-9]/ {
                size = $1; first = (FILENAME == ARGV[1]); t = $6; wrong = $NF
                if (first) { if (!(size in pld) || t < pld[size]) pld[size] = t; pw[size] += wrong }
                else { if (!(size in mpi) || t < mpi[size]) mpi[size] = t; mw[size] += wrong }
                sizes[size] = 1
            }
            END {
                for (s in sizes) {
                    ratio = ((s in pld) && (s in mpi) && pld[s] > 0) ? sprintf("%.3f", mpi[s] / pld[s]) : "-"
                    printf "%12d %12.2f %12.2f %10s %8d %8d\n", s, pld[s], mpi[s], ratio, pw[s], mw[s]
                }
            }' "$out/$coll.pld.raw" "$out/$coll.mpi.raw" | sort -n
    } | tee "$out/$coll.txt"
done
