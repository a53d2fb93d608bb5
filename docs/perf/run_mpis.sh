#!/usr/bin/env bash
# Regenerates docs/perf/mpis: every collective at 2 and 4 ranks against every installed MPI
# (pld-bench --baseline all: Open MPI 4, Open MPI 5 and MPICH, each in its fastest settings, the
# ratio against the best at each size), and every collective at 8 ranks (8 B to 8 MiB in x16 steps:
# 8 ranks share the 2 cores, so a ladder of six sizes keeps the run under half an hour; all_reduce
# and broadcast also at the issue's two sizes, 8 B and 128 KiB). Each run waits
# for an idle machine (bench/baselines/gate.sh; its log is docs/perf/mpis/gate.log).
# PERFORMANCE.md's section of tables is then rewritten from them (docs/perf/mpis_section.py).
# Run from the repository root:
#   bash bench/baselines/install-mpis.sh && bash docs/perf/run_mpis.sh [REPEAT] [SECONDS]
set -euo pipefail
cd "$(dirname "$0")/../.."
repeat=${1:-3}
seconds=${2:-0.25}
cargo build --release -p pld-bench
bench=target/release/pld-bench
out=docs/perf/mpis
mkdir -p "$out"
# shellcheck source=docs/perf/lib.sh
source docs/perf/lib.sh
run() { PLOT=1 against_mpis "$out" "$@"; } # name, args...
# MPICH is left out where ranks outnumber the cores (lib.sh's mpis_for says why).
for n in 2 4; do
    # shellcheck disable=SC2046
    for coll in "${COLLECTIVES[@]}"; do
        case $coll in
            barrier) run "${coll}_n$n" "$coll" -n "$n" $(mpis_for "$n") ;;
            all_to_all_v) run "${coll}_n$n" "$coll" -b 8 -e 16M -f 4 -n "$n" $(mpis_for "$n") ;;
            *) run "${coll}_n$n" "$coll" -b 8 -e 64M -f 4 -n "$n" $(mpis_for "$n") ;;
        esac
    done
done
# 64 MiB, off the x4 ladder from 8 B: one size a table.
for n in 2 4; do
    for coll in all_reduce broadcast all_gather reduce_scatter all_to_all reduce gather scatter all_gather_v sendrecv; do
        # shellcheck disable=SC2046
        run "${coll}_n${n}_64M" "$coll" -b 64M -e 64M -n "$n" $(mpis_for "$n")
    done
done
# Every collective at 8 ranks, a ladder of its own (the *_n8_ladder tables).
# shellcheck disable=SC2046
for coll in "${COLLECTIVES[@]}"; do
    case $coll in
        barrier) run "${coll}_n8_ladder" "$coll" -n 8 $(mpis_for 8) ;;
        *) run "${coll}_n8_ladder" "$coll" -b 8 -e 8M -f 16 -n 8 $(mpis_for 8) ;;
    esac
done
# shellcheck disable=SC2046
run all_reduce_n8 all_reduce -b 8 -e 128K -f 16384 -n 8 $(mpis_for 8)
# shellcheck disable=SC2046
run broadcast_n8 broadcast -b 8 -e 128K -f 16384 -n 8 $(mpis_for 8)
# PERFORMANCE.md's summary, tables and verdict lines, from the runs just made (and why.txt).
python3 docs/perf/mpis_section.py
