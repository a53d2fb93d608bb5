#!/usr/bin/env bash
# Regenerates docs/perf/tracing: what the flight recorder and traces cost (issue 20), each run
# gated on an idle machine (bench/baselines/gate.sh; its log is docs/perf/tracing/gate.log).
#  - cost_n2.txt, cost_n4.txt: `pld-bench all_reduce --baseline tracing` at 8 B and 1 MiB: no
#    flight recorder, the default one, and a trace of every call, alternating in one run;
#  - off_vs_main.txt: this build with the flight recorder off (PLD_FLIGHT_RECORDER=0) against
#    pld-bench built from the commit before recording existed (BASE, default 2b81f2d), alternating.
# Run from the repository root:  bash docs/perf/run_tracing.sh [REPEAT] [SECONDS]
set -euo pipefail
cd "$(dirname "$0")/../.."
repeat=${1:-7}
seconds=${2:-0.2}
base=${BASE:-2b81f2d}
out=docs/perf/tracing
# shellcheck source=docs/perf/lib.sh
source docs/perf/lib.sh
base_bench=$(against_base "$out" "$base")
run() { # name, command...
    local name=$1
    shift
    gated "$out" "$name" "\$ $*" "$@"
}
for n in 2 4; do
    run "cost_n$n" target/release/pld-bench all_reduce -b 8 -e 1M -f 131072 -n "$n" \
        --baseline tracing --repeat "$repeat" --time "$seconds"
done
run off_vs_main env PLD_FLIGHT_RECORDER=0 target/release/pld-bench all_reduce -b 8 -e 1M -f 131072 -n 2 \
    --baseline "bench:$base_bench" --repeat "$repeat" --time "$seconds"
