#!/usr/bin/env bash
# usage: bash docs/perf/count_instructions.sh [COLLECTIVE...]   (default: barrier broadcast all_reduce)
#
# Counts the instructions of one small call's host path: pld-bench runs the collective at 1 rank,
# 8 B, under callgrind, and each line gives `Host::<collective>`'s inclusive instruction count over
# its calls. At 1 rank a collective waits for no one and its kernel is a handful of instructions,
# so the count is the host path's, and unlike a time it does not move with the machine (this
# repository's VMs change their cross-core latency by the minute; see PERFORMANCE.md, "A small
# call counted in instructions"). With PLD_TRACE set (e.g. PLD_TRACE=/dev/null) it counts a
# traced call.
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
    valgrind --tool=callgrind --callgrind-out-file="$profile" \
        "$out/release/pld-bench" "$coll" -b 8 -e 8 -n 1 --time 0.1 > /dev/null 2>&1
    callgrind_annotate --tree=calling --inclusive=yes "$profile" 2> /dev/null | awk -v coll="$coll" '
        # The function line of Host::<coll> gives its inclusive count; a caller line naming it
        # gives its call count, "(N x)".
        $0 ~ "\\*  .*Host>::" coll " " && !total { total = $1; gsub(",", "", total) }
        $0 ~ "Host>::" coll " \\(" && !calls { calls = $0; sub(/.*\(/, "", calls); sub(/x\).*/, "", calls); gsub(",", "", calls) }
        END {
            if (!total || !calls) { print coll ": no calls of Host::" coll " in the profile"; exit 1 }
            printf "%-16s %6d instructions a call (%d calls)\n", coll, total / calls, calls
        }'
done
