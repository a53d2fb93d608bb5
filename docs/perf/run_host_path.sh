#!/usr/bin/env bash
# Regenerates docs/perf/host_path: a small call's cost against an earlier commit's build (BASE,
# default 7416b22, the commit before the host path was cut), side by side in one run
# (`pld-bench --baseline bench:<its pld-bench>`, alternating, each keeping its best), each run
# gated on an idle machine (bench/baselines/gate.sh; its log is docs/perf/host_path/gate.log).
# At 1 rank a collective waits for no one: its time is the host path alone.
# Run from the repository root:  bash docs/perf/run_host_path.sh [REPEAT] [SECONDS]
set -euo pipefail
cd "$(dirname "$0")/../.."
repeat=${1:-7}
seconds=${2:-0.2}
base=${BASE:-7416b22}
out=docs/perf/host_path
# shellcheck source=docs/perf/lib.sh
source docs/perf/lib.sh
base_bench=$(against_base "$out" "$base")
for n in 1 2 4; do
    for coll in barrier broadcast all_reduce reduce gather scatter; do
        args=("$coll" -b 8 -e 8 -n "$n" --baseline "bench:$base_bench" --repeat "$repeat" --time "$seconds")
        gated "$out" "${coll}_n$n" "\$ pld-bench ${args[*]}" target/release/pld-bench "${args[@]}" --csv "$out/${coll}_n$n.csv"
    done
done
