# Shared by the docs/perf scripts (sourced from the repository root).

# gated OUT NAME HEADER CMD...: runs CMD once this machine is close to idle
# (bench/baselines/gate.sh, logging to OUT/gate.log); OUT/NAME.txt gets HEADER and this run's
# part of the log (the gate appends each command's output to it), and is printed.
gated() {
    local out=$1 name=$2 header=$3
    shift 3
    echo "$header" > "$out/$name.txt"
    bash bench/baselines/gate.sh "$out/gate.log" "$@" || true
    awk '/^### [0-9:]+ pre-busy/{buf=""} {buf=buf $0 "\n"} END{printf "%s", buf}' "$out/gate.log" >> "$out/$name.txt"
    cat "$out/$name.txt"
}

# build_base_bench COMMIT: prints the path of pld-bench built from COMMIT's own tree (git archive:
# nothing outside the repository), building it the first time.
build_base_bench() {
    local base=$1
    local bench=target/base-$base/release/pld-bench
    if [ ! -x "$bench" ]; then
        rm -rf "target/base-$base-src" && mkdir -p "target/base-$base-src"
        git archive "$base" | tar -x -C "target/base-$base-src"
        (cd "target/base-$base-src" && CARGO_TARGET_DIR="../base-$base" cargo build -q --release -p pld-bench) >&2
    fi
    echo "$bench"
}

# against_mpis OUT NAME ARGS...: `pld-bench ARGS --baseline all` (with the caller's $bench,
# $repeat and $seconds), gated, its table in OUT/NAME.txt and its CSV (and with PLOT=1 its SVG)
# beside it; skipped unless NAME matches ONLY=<regex> where that is set (to redo some tables).
against_mpis() {
    local out=$1 name=$2
    shift 2
    if [ -n "${ONLY:-}" ] && ! [[ $name =~ $ONLY ]]; then return; fi
    local extra=(--csv "$out/$name.csv")
    if [ "${PLOT:-0}" = 1 ]; then extra+=(--plot "$out/$name.svg"); fi
    gated "$out" "$name" "\$ pld-bench $* --baseline all --repeat $repeat --time $seconds" \
        "$bench" "$@" --baseline all --repeat "$repeat" --time "$seconds" "${extra[@]}"
}

# The collectives the bench measures, in the order the tables list them.
COLLECTIVES=(all_reduce broadcast barrier all_gather reduce_scatter all_to_all all_to_all_v reduce gather scatter
    all_gather_v sendrecv)

# mpis_for N: the `--mpis` a run of N ranks takes. With more ranks than cores MPICH has no mode
# that yields: a small call takes 0.8-2 ms (4 ranks on 2 cores, broadcast of 8 B: 2088 us, 1876
# us bound to cores, 862 us with its progress throttled), a thousand times the others, and its
# large sizes take minutes a run; there it is left out, the Open MPIs (which yield when idle) stay.
mpis_for() { if [ "$1" -gt "$(nproc)" ]; then echo "--mpis openmpi4,openmpi5"; fi; }

# against_base OUT BASE: makes OUT and builds this tree's pld-bench (target/release) and BASE's
# (build_base_bench); prints the path of BASE's.
against_base() {
    mkdir -p "$1"
    cargo build -q --release -p pld-bench >&2
    build_base_bench "$2"
}
