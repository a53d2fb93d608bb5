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
mkdir -p "$out"
cargo build -q --release -p pld-bench
# The earlier commit's bench, built from its own tree (git archive: nothing outside the repository).
base_bench=target/base-$base/release/pld-bench
if [ ! -x "$base_bench" ]; then
    rm -rf "target/base-$base-src" && mkdir -p "target/base-$base-src"
    git archive "$base" | tar -x -C "target/base-$base-src"
    (cd "target/base-$base-src" && CARGO_TARGET_DIR="../base-$base" cargo build -q --release -p pld-bench)
fi
: > "$out/costs.txt"
for n in 1 2 4; do
    for coll in barrier broadcast all_reduce reduce gather scatter; do
        name="${coll}_n$n"
        echo "\$ pld-bench $coll -b 8 -e 8 -n $n --baseline bench:$base_bench --repeat $repeat --time $seconds" > "$out/$name.txt"
        bash bench/baselines/gate.sh "$out/gate.log" target/release/pld-bench "$coll" -b 8 -e 8 -n "$n" \
            --baseline "bench:$base_bench" --repeat "$repeat" --time "$seconds" --csv "$out/$name.csv" || true
        awk '/^### [0-9:]+ pre-busy/{buf=""} {buf=buf $0 "\n"} END{printf "%s", buf}' "$out/gate.log" >> "$out/$name.txt"
        cat "$out/$name.txt"
    done
done
