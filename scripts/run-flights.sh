#!/usr/bin/env bash
# The live-flights application: install what is missing, build shoal-flights (Release), run it on 2 ranks and print
# the URL to open. Extra arguments go to shoal-flights, e.g. scripts/run-flights.sh --speedup 300 --consistency none
# Ranks: SHOAL_RANKS (default 2). Port: --port (default 8080; --port 0 picks a free one). Stop with Ctrl-C.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
source scripts/env.sh
cmake -S . -B build/release -DCMAKE_BUILD_TYPE=Release -DSHOAL_BUILD_TESTS=OFF >/dev/null
cmake --build build/release -j"$jobs" --target shoal-flights >/dev/null
echo "shoal-flights: starting on ${SHOAL_RANKS:-2} ranks; open the URL it prints below in a browser"
exec mpirun -np "${SHOAL_RANKS:-2}" build/release/apps/flights/shoal-flights "$@"
