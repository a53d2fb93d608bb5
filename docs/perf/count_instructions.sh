#!/usr/bin/env bash
# usage: bash docs/perf/count_instructions.sh [COLLECTIVE...]   (default: barrier broadcast all_reduce)
#
# Counts the instructions of one small call's host path: pld-bench runs the collective at 1 rank,
# 8 B, under callgrind, collecting only inside the bench's timed loop (`time_per_call`), and each
# line gives that loop's instructions over its calls (one `RankState::run_kernel_now` a call: the
# host path, the kernel and the loop's own few instructions). At 1 rank a collective waits for no
# one and its kernel is a handful of instructions, so the count is the host path's, and unlike a
# time it does not move with the machine (this repository's VMs change their cross-core latency
# by the minute; see PERFORMANCE.md, "A small call counted in instructions"). With PLD_TRACE set
# (e.g. PLD_TRACE=/dev/null) it counts a traced call. (Until the thirteenth stop the count was
# `Host::<collective>`'s inclusive one, which is gone where the compiler inlines the method into
# its caller, as it does since planned call sites made it small: counts before that stop are
# that method's, about 60-100 fewer than the loop's.) The loop includes the bench's warm-up
# rounds (a window, a sync and an all_reduce each), spread over however many calls fit in the
# time, so a count moves by up to a tenth with the machine's load: count two builds back to back
# on a quiet machine (the thirteenth stop's scatter: 521 quiet, 625 beside a CI run).
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
        # The total is the timed loop alone; a caller line naming the kernel runner gives the calls.
        /PROGRAM TOTALS/ && !total { total = $1; gsub(",", "", total) }
        /RankState::run_kernel_now \(/ && !calls { calls = $0; sub(/.*run_kernel_now \(/, "", calls); sub(/x\).*/, "", calls); gsub(",", "", calls) }
        END {
            if (!total || !calls) { print coll ": no collective calls in the profile"; exit 1 }
            printf "%-16s %6d instructions a call (%d calls)\n", coll, total / calls, calls
        }'
done
