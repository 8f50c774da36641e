#!/usr/bin/env bash
# The main program: install what is missing, build Release, run shoal-bench on 2 ranks (its built-in default runs
# every workload). Extra arguments go to shoal-bench, e.g. scripts/run.sh --workload core --json core.json
#   SHOAL_RANKS=4            rank count (default 2)
#   SHOAL_MPI=mpich          MPICH instead of Open MPI (a build of its own: build/release-mpich)
#   scripts/run.sh --hosts 2 ...   across 2 emulated hosts (network namespaces, scripts/multihost.sh; needs root):
#                            the ranks spread evenly over the hosts (default 2 ranks = 2 hosts x 1 rank); the
#                            hosts are removed again when the run ends
set -euo pipefail
cd "$(dirname "$0")/.."
hosts=1
if [ "${1:-}" = "--hosts" ]; then
  hosts=${2:?"--hosts needs a number of hosts (2..9)"}
  shift 2
fi
scripts/install-deps.sh
source scripts/env.sh
build=build/release
flags=()
mpiexec=mpirun
if [ "${SHOAL_MPI:-openmpi}" = mpich ]; then
  build=build/release-mpich
  mpiexec=/usr/bin/mpiexec.mpich
  flags=(-DMPI_C_COMPILER=/usr/bin/mpicc.mpich -DMPI_CXX_COMPILER=/usr/bin/mpicxx.mpich -DMPIEXEC_EXECUTABLE=$mpiexec)
elif [ "${SHOAL_MPI:-openmpi}" != openmpi ]; then
  echo "scripts/run.sh: SHOAL_MPI='${SHOAL_MPI}' is not understood; use openmpi or mpich" >&2
  exit 2
fi
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DSHOAL_BUILD_TESTS=OFF "${flags[@]}" >/dev/null
cmake --build "$build" -j"$jobs" --target shoal-bench >/dev/null
if [ "$hosts" -eq 1 ]; then
  exec "$mpiexec" -np "${SHOAL_RANKS:-2}" "$build/bench/shoal-bench" "$@"
fi
scripts/multihost.sh up "$hosts"
trap 'scripts/multihost.sh down' EXIT
SHOAL_HOSTS=$hosts scripts/multihost.sh run -n "${SHOAL_RANKS:-2}" "$mpiexec" "$PWD/$build/bench/shoal-bench" "$@"
