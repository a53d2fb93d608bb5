#!/usr/bin/env bash
# Regenerates docs/perf: every collective at 2 and 4 ranks, Open MPI side by side (collbench.c,
# or bench/baselines/collbench_extra.c for reduce_scatter and all_to_all_v; each time the best
# of 3 runs, pld and Open MPI alternating).
# Run from the repository root on an idle machine:
#   bash docs/perf/run.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
cargo build --release -p pld-bench
bench=target/release/pld-bench
out=docs/perf
gate=bench/baselines/gate.sh
run() { # name, args...
    local name=$1; shift
    local cmd=("$bench" "$@" --csv "$out/$name.csv" --plot "$out/$name.svg")
    echo "\$ pld-bench $*" > "$out/$name.txt"
    if [ -x "$gate" ] || [ -f "$gate" ]; then
        bash "$gate" "$out/gate.log" "${cmd[@]}" >/dev/null
        # gate.sh appends the command's output to its log; keep this run's table only
        awk '/^### [0-9:]+ pre-busy/{buf=""} {buf=buf $0 "\n"} END{printf "%s", buf}' "$out/gate.log" | grep -v '^### end' >> "$out/$name.txt"
    else
        "${cmd[@]}" >> "$out/$name.txt"
    fi
    cat "$out/$name.txt"
}
rm -f "$out/gate.log"
for n in 2 4; do
    run all_reduce_n$n all_reduce -b 8 -e 64M -f 4 -n $n --baseline mpi
    run all_gather_n$n all_gather -b 1K -e 64M -f 4 -n $n --baseline mpi
    run all_to_all_n$n all_to_all -b 1K -e 64M -f 4 -n $n --baseline mpi
    run broadcast_n$n broadcast -b 8 -e 64M -f 4 -n $n --baseline mpi
    run reduce_scatter_n$n reduce_scatter -b 1K -e 64M -f 4 -n $n --baseline mpi
    run all_to_all_v_n$n all_to_all_v -b 1K -e 16M -f 4 -n $n --baseline mpi
done
run all_reduce_ring_n2 all_reduce -b 8 -e 64M -f 4 -n 2 --mode ring --baseline mpi
# One host thread driving both ranks through their device workers (World::host), for comparison
# with the default, a host thread per rank (World::spmd, as MPI runs a process per rank).
run all_reduce_n2_one_host all_reduce -b 8 -e 64M -f 4 -n 2 --hosts one --baseline mpi
run barrier_n2 barrier -n 2 --baseline mpi
run barrier_n4 barrier -n 4 --baseline mpi
gcc -O3 -mavx2 -pthread -o /tmp/pld-membw ../shared/baselines/membw.c && /tmp/pld-membw > "$out/membw.txt" 2>&1 || true
cat "$out/membw.txt"
