#!/usr/bin/env bash
# The whole test suite: install what is missing, then build and run every test (1, 2, 3 and 4 ranks) three times:
# with Open MPI (Debug, range checks on), with MPICH, and with AddressSanitizer + UBSan; finally install shoal and
# build a consumer project against the installed tree with find_package(shoal), with GCC and with clang.
# Then the multi-host configurations: the .np2 and .np4 tests again, spread over two emulated hosts (network
# namespaces joined by a veth link, scripts/multihost.sh): 2 hosts x 1 rank and 2 hosts x 2 ranks, with Open MPI
# (its default one-sided components) and with MPICH.
# Choose a subset with SHOAL_TEST_CONFIGS="openmpi mpich asan consumer multihost-openmpi multihost-mpich".
# Not in the default set (CI time): "mpich-asan", the sanitizer build with MPICH (about 37 minutes to build and 10 to
# run on 2 cores), run by hand so that the sanitizers are clean on both MPIs.
set -uo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh || exit 1
source scripts/env.sh

mkdir -p build
configs=${SHOAL_TEST_CONFIGS:-"openmpi mpich asan consumer multihost-openmpi multihost-mpich"}
mpich_flags=(-DMPI_C_COMPILER=/usr/bin/mpicc.mpich -DMPI_CXX_COMPILER=/usr/bin/mpicxx.mpich
             -DMPIEXEC_EXECUTABLE=/usr/bin/mpiexec.mpich)
passed=0
failed=0
failures=()

build_suite() {  # name, cmake flags...
  local name=$1; shift
  local dir=build/test-$name
  echo "=== $name: configure and build ==="
  if ! cmake -S . -B "$dir" -DSHOAL_BUILD_BENCH=ON "$@" >"$dir.configure.log" 2>&1; then
    cat "$dir.configure.log"; failed=$((failed + 1)); failures+=("$name: configure"); return 1
  fi
  if ! cmake --build "$dir" -j"$jobs" >"$dir.build.log" 2>&1; then
    grep -E "error|Error" "$dir.build.log" | head -40; failed=$((failed + 1)); failures+=("$name: build"); return 1
  fi
}

ctest_suite() {  # label, build dir, ctest arguments...
  local label=$1 dir=$2; shift 2
  echo "=== $label: ctest ==="
  # SHOAL_TEST_JOBS: the tests ctest runs at once share the cores, which the tests' iteration counts take into account
  # (tests/shoal_test.hpp, oversubscribed()).
  (cd "$dir" && SHOAL_TEST_JOBS=$jobs ctest -j"$jobs" --output-on-failure --timeout 300 "$@") | tee "$dir.$label.ctest.log"
  local p f
  p=$(grep -cE "Test +#[0-9]+: .* Passed" "$dir.$label.ctest.log")
  # A skipped test (***Skipped: a browser or matplotlib missing) is neither passed nor failed.
  f=$(grep -E "Test +#[0-9]+: " "$dir.$label.ctest.log" | grep -vc -E " Passed|\*\*\*Skipped")
  passed=$((passed + p)); failed=$((failed + f))
  [ "$f" -eq 0 ] || failures+=("$label: $f test(s)")
}

run_suite() {  # name, cmake flags...
  local name=$1
  build_suite "$@" && ctest_suite "$name" "build/test-$name"
}

# multihost NAME SUITE cmake flags...: the .np2 / .np4 tests of SUITE's build, launched across 2 emulated hosts.
multihost() {
  local name=$1 suite=$2; shift 2
  if ! scripts/multihost.sh check; then
    echo "=== $name: SKIPPED: this machine cannot create network namespaces (needs root or CAP_NET_ADMIN and" \
         "iproute2), so no hosts can be emulated ==="
    return
  fi
  build_suite "$suite" "$@" || return
  if ! scripts/multihost.sh up 2; then failed=$((failed + 1)); failures+=("$name: emulated hosts"); return; fi
  trap 'scripts/multihost.sh down' EXIT
  trap 'scripts/multihost.sh down; exit 130' INT TERM
  export SHOAL_TEST_HOSTS=2
  ctest_suite "$name" "build/test-$suite" -R '[.]np[24]$'
  unset SHOAL_TEST_HOSTS
  scripts/multihost.sh down
  trap - EXIT INT TERM
}

# consumer_project NAME cmake-flags...: examples/consumer configured against the installed tree, built and run.
consumer_project() {
  local name=$1; shift
  if cmake -S examples/consumer -B "build/$name" -DCMAKE_PREFIX_PATH="$PWD/build/install" "$@" >/dev/null &&
     cmake --build "build/$name" >/dev/null &&
     mpirun -np 2 "build/$name/shoal_consumer"; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1)); failures+=("$name")
  fi
}

consumer() {
  echo "=== consumer: install and find_package(shoal) ==="
  if ! { cmake -S . -B build/consumer-lib -DCMAKE_BUILD_TYPE=Release -DSHOAL_BUILD_TESTS=OFF -DSHOAL_BUILD_BENCH=OFF \
           -DCMAKE_INSTALL_PREFIX="$PWD/build/install" >/dev/null &&
         cmake --build build/consumer-lib >/dev/null && cmake --install build/consumer-lib >/dev/null; }; then
    failed=$((failed + 1)); failures+=("consumer: install"); return
  fi
  consumer_project consumer
  # The same project compiled by clang, warnings as errors: every public header (shoal.hpp) parsed by a second
  # compiler. (The library's own tests are GCC's: clang 14 cannot compile GCC 12's std::views::iota, which am_test
  # and the bench use — docs/am.md, session 46.)
  echo "=== consumer: the same with clang++ ==="
  consumer_project consumer-clang -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_CXX_FLAGS="-Wall -Wextra -Werror"
}

for c in $configs; do
  case $c in
    openmpi)  run_suite openmpi -DCMAKE_BUILD_TYPE=Debug ;;
    mpich)    run_suite mpich -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSHOAL_CHECKS=2 "${mpich_flags[@]}" ;;
    asan)     run_suite asan -DCMAKE_BUILD_TYPE=Debug -DSHOAL_SANITIZE=ON ;;
    mpich-asan)
      run_suite mpich-asan -DCMAKE_BUILD_TYPE=Debug -DSHOAL_SANITIZE=ON "${mpich_flags[@]}" ;;
    consumer) consumer ;;
    multihost-openmpi) multihost multihost-openmpi openmpi -DCMAKE_BUILD_TYPE=Debug ;;
    multihost-mpich) multihost multihost-mpich mpich -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSHOAL_CHECKS=2 "${mpich_flags[@]}" ;;
    *) echo "unknown configuration '$c' in SHOAL_TEST_CONFIGS"; exit 2 ;;
  esac
done

for f in "${failures[@]}"; do echo "FAILED: $f"; done
echo "shoal: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
