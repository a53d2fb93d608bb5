#!/usr/bin/env bash
# usage: bash docs/perf/count_instructions.sh [COLLECTIVE...]   (default: barrier broadcast all_reduce)
#
# Counts the instructions of one small call's host path: pld-bench runs the collective at 1 rank,
# 8 B, under callgrind, collecting only inside the bench's timed loop (`time_per_call`), and each
# line gives the inclusive count of the loop's call closure (the bench's `call()`: the user's
# call, its host path and kernel) over that closure's calls. At 1 rank a collective waits for no
# one and its kernel is a handful of instructions, so the count is the host path's, and unlike a
# time it does not move with the machine (this repository's VMs change their cross-core latency
# by the minute; see PERFORMANCE.md, "A small call counted in instructions"). With PLD_TRACE set
# (e.g. PLD_TRACE=/dev/null) it counts a traced call; with PLD_FLIGHT_RECORDER=0 a call without
# the flight recorder. The count is exact: two runs of one build give the same figure to the
# half instruction. (Until the seventeenth stop the figure was the whole timed loop over every
# kernel run in it, the bench's syncs and the windows of its calibration rounds included, which
# moved by up to a tenth with the machine's load and counted about 100 fewer a call: compare
# figures of one method only. Until the thirteenth stop it was `Host::<collective>`'s inclusive
# count, which is gone where the compiler inlines the method into its caller.)
#
# Needs valgrind (apt-get install valgrind). Builds into target/callgrind: a release build with
# line tables (for `callgrind_annotate --auto=yes`, to see the count per source line) and rustix on
# libc (rustix's own vDSO lookup crashes under valgrind). The profiles stay in target/callgrind.
# Compare counts only between builds made in the same folder: the target folder's path changes
# the compiler's choices (the same source: a barrier 677 instructions built here, 715 built in
# another folder). To compare two commits, check each out in turn and run this script.
set -euo pipefail
cd "$(dirname "$0")/../.."
command -v valgrind > /dev/null || { echo "valgrind is not installed (apt-get install valgrind)" >&2; exit 1; }
out=target/callgrind
CARGO_PROFILE_RELEASE_DEBUG=line-tables-only RUSTFLAGS="--cfg=rustix_use_libc" \
    cargo build -q --release -p pld-bench --target-dir "$out"
collectives=("$@")
[ ${#collectives[@]} -gt 0 ] || collectives=(barrier broadcast all_reduce)
for coll in "${collectives[@]}"; do
    profile="$out/$coll.callgrind"
    valgrind --tool=callgrind --callgrind-out-file="$profile" --toggle-collect='*measure::time_per_call*' \
        "$out/release/pld-bench" "$coll" -b 8 -e 8 -n 1 --time 0.1 > /dev/null 2>&1
    callgrind_annotate --tree=calling --inclusive=yes "$profile" 2> /dev/null | awk -v coll="$coll" '
        # In the block of `time_per_call` (a line starting "*"), the line of the call closure it
        # calls (">"): that closure'"'"'s inclusive count and its number of calls.
        /^ *[0-9,]+ .*\*  .*measure::time_per_call / { inside = 1; next }
        /^ *[0-9,]+ .*\*  / { inside = 0 }
        inside && !calls && />   .*measure::sweep_on::\{\{closure\}\} \(/ {
            total = $1; gsub(",", "", total)
            calls = $0; sub(/.*\{\{closure\}\} \(/, "", calls); sub(/x\).*/, "", calls); gsub(",", "", calls)
        }
        END {
            if (!total || !calls) { print coll ": no collective calls in the profile"; exit 1 }
            printf "%-16s %6.1f instructions a call (%d calls)\n", coll, total / calls, calls
        }'
done
