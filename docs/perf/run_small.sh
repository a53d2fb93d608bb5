#!/usr/bin/env bash
# Regenerates docs/perf/small: every collective from 8 B to 2 KiB (where a call's fixed cost
# decides) at 2 and 4 ranks, and all_reduce and broadcast at 8 ranks at 8 B and 128 KiB (what
# issue 19 asks of 8 ranks on 2 cores), against every installed
# MPI (pld-bench --baseline all), each run gated on an idle machine (bench/baselines/gate.sh;
# its log is docs/perf/small/gate.log). The full ladder to 64 MiB is docs/perf/run_mpis.sh.
# Run from the repository root:
#   bash bench/baselines/install-mpis.sh && bash docs/perf/run_small.sh [REPEAT] [SECONDS]
set -euo pipefail
cd "$(dirname "$0")/../.."
repeat=${1:-3}
seconds=${2:-0.15}
cargo build -q --release -p pld-bench
bench=target/release/pld-bench
out=docs/perf/small
mkdir -p "$out"
# shellcheck source=docs/perf/lib.sh
source docs/perf/lib.sh
run() { PLOT=0 against_mpis "$out" "$@"; } # name, args...
# MPICH is left out where ranks outnumber the cores (lib.sh's mpis_for says why).
for n in 2 4; do
    for coll in "${COLLECTIVES[@]}"; do
        # shellcheck disable=SC2046
        case $coll in
            barrier) run "${coll}_n$n" "$coll" -n "$n" $(mpis_for "$n") ;;
            *) run "${coll}_n$n" "$coll" -b 8 -e 2K -f 4 -n "$n" $(mpis_for "$n") ;;
        esac
    done
done
for coll in all_reduce broadcast; do
    # shellcheck disable=SC2046
    run "${coll}_n8" "$coll" -b 8 -e 128K -f 16384 -n 8 $(mpis_for 8)
done
