#!/usr/bin/env bash
# usage: bench/baselines/gate.sh LOG CMD...
# Runs CMD once this machine is close to idle (under 8% of its CPU time busy over 2 s, trying
# for up to 15 minutes), appending to LOG the busy fraction before and after and the wall time,
# so a published figure says how quiet the machine was. CMD's output goes to LOG too.
set -uo pipefail
log=$1
shift
busy_fraction() { # busy share of CPU time over 2 s, from /proc/stat
    read -r _ u1 n1 s1 i1 w1 q1 sq1 _ < /proc/stat
    sleep 2
    read -r _ u2 n2 s2 i2 w2 q2 sq2 _ < /proc/stat
    local busy=$(((u2 + n2 + s2 + q2 + sq2) - (u1 + n1 + s1 + q1 + sq1)))
    local total=$((busy + (i2 + w2) - (i1 + w1)))
    awk -v b="$busy" -v t="$total" 'BEGIN { printf "%.2f", (t > 0 ? b / t : 0) }'
}
for try in $(seq 1 150); do
    before=$(busy_fraction)
    awk -v f="$before" 'BEGIN { exit !(f < 0.08) }' && break
    sleep 4
done
start=$(date +%s.%N)
echo "### $(date +%T) pre-busy=$before (tries=$try) CMD: $*" >> "$log"
"$@" >> "$log" 2>&1
status=$?
end=$(date +%s.%N)
echo "### end $(date +%T) wall=$(awk -v s="$start" -v e="$end" 'BEGIN { printf "%.1f", e - s }')s post-busy=$(busy_fraction) status=$status" >> "$log"
exit $status
