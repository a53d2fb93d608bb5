#!/usr/bin/env bash
# Side by side, both ways round, two pairs per collective and rank count: N (this build's
# pld-bench) against B (an earlier build's), each as `--baseline bench:` of the other.
# usage: N=target/release/pld-bench B=<earlier pld-bench> bash docs/perf/host_path/side_by_side.sh
N=${N:?this build's pld-bench}; B=${B:?an earlier build's pld-bench}
for n in 1 2; do for c in barrier broadcast all_reduce reduce gather scatter; do for r in 1 2; do
  a=$($N $c -b 8 -e 8 -n $n --baseline bench:$B --repeat 7 --time 0.1 | grep -v '^#' | awk '{print $6, $(NF-2), $NF}')
  b=$($B $c -b 8 -e 8 -n $n --baseline bench:$N --repeat 7 --time 0.1 | grep -v '^#' | awk '{print $6, $(NF-2), $NF}')
  echo "$c n=$n round $r | new-run: new $a | base-run: base $b"
done; done; done
