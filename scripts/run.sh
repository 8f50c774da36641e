#!/usr/bin/env bash
# The main program: install what is missing, build Release, run shoal-bench on 2 ranks (its built-in default runs
# every workload). Extra arguments go to shoal-bench, e.g. scripts/run.sh --workload core --json core.json
# Ranks: SHOAL_RANKS (default 2).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
source scripts/env.sh
cmake -S . -B build/release -DCMAKE_BUILD_TYPE=Release -DSHOAL_BUILD_TESTS=OFF >/dev/null
cmake --build build/release -j"$jobs" --target shoal-bench >/dev/null
exec mpirun -np "${SHOAL_RANKS:-2}" build/release/bench/shoal-bench "$@"
