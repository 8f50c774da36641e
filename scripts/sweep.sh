#!/usr/bin/env bash
# Runs shoal-bench workloads at several rank counts and sizes and writes ONE JSON file: the machine's description,
# the sweep's parameters and every record (each shoal-bench row plus the size it ran at). scripts/plot.py draws it.
#
#   scripts/sweep.sh                                   every workload at 1, 2, 4 and $(nproc) ranks, default sizes
#   scripts/sweep.sh -w core,bloom -r 1,2 -s 1000,default -o sweep.json
#   scripts/sweep.sh -w hash_map -s hash_map=1000,100000 -- --heap 2G     (arguments after -- go to shoal-bench)
set -euo pipefail
{  # the whole script is read before it runs: editing it (or a git checkout) during a sweep is safe

usage() {
  cat <<'EOF'
usage: scripts/sweep.sh [options] [-- shoal-bench arguments]

Runs each chosen workload once per rank count and size (one shoal-bench run each, under mpirun) and writes one JSON
file: {"machine": {...}, "sweep": {...}, "records": [...], "failures": [...]}. Progress goes to stderr; the output
of every shoal-bench run goes to a log file (--log).

options:
  -w, --workloads LIST  comma-separated workloads (default: all that `shoal-bench --list` shows)
  -r, --ranks LIST      comma-separated rank counts (default: 1,2,4 and the machine's core count, deduplicated)
  -s, --sizes SPEC      --size values for shoal-bench, comma-separated; `default` means the workload's own default.
                        SPEC is LIST (every workload) or WORKLOAD=LIST (that workload only); repeatable.
                        Default: default
  -o, --output FILE     the JSON file to write (default: sweep.json)
      --log FILE        the output of every shoal-bench run (default: OUTPUT with .json replaced by .log)
      --mpi NAME        openmpi (default) or mpich: the launcher, and the build directory of the default binary
      --bench PATH      the shoal-bench binary (default: build/release/bench/shoal-bench, or
                        build/release-mpich/... with --mpi mpich; built in Release, brought up to date first)
      --launcher PATH   the MPI launcher (default: that of the MPI shoal-bench links, mpirun.openmpi or
                        mpiexec.mpich)
      --timeout SEC     give up on one shoal-bench run after SEC seconds (default: 3600; 0 = never)
      --note TEXT       a note stored in the machine description (e.g. "shared with two parallel builds")
  -h, --help            this help

Exit status: 0 if every run succeeded, 3 if some failed (their records are missing, listed under "failures";
the file is still written), 2 on bad arguments, 1 on other errors.
EOF
}

die() { echo "sweep.sh: $*" >&2; exit 2; }

workloads=""
ranks=""
size_specs=()
output=sweep.json
log=""
mpi=openmpi
bench=""
launcher=""
run_timeout=3600
note=""
bench_args=()
source "$(dirname "$0")/shell_words.sh"
invocation="scripts/sweep.sh$(shell_words "$@")"

while [ $# -gt 0 ]; do
  case $1 in
    -w|--workloads) workloads=${2:?$1 needs a value}; shift 2 ;;
    -r|--ranks) ranks=${2:?$1 needs a value}; shift 2 ;;
    -s|--sizes) size_specs+=("${2:?$1 needs a value}"); shift 2 ;;
    -o|--output) output=${2:?$1 needs a value}; shift 2 ;;
    --log) log=${2:?$1 needs a value}; shift 2 ;;
    --mpi) mpi=${2:?$1 needs a value}; shift 2 ;;
    --bench) bench=${2:?$1 needs a value}; shift 2 ;;
    --launcher) launcher=${2:?$1 needs a value}; shift 2 ;;
    --timeout) run_timeout=${2:?$1 needs a value}; shift 2 ;;
    --note) note=${2?$1 needs a value}; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    --) shift; bench_args=("$@"); break ;;
    *) usage >&2; die "unknown argument '$1'" ;;
  esac
done

absolute() { case $1 in /*) echo "$1" ;; *) echo "$PWD/$1" ;; esac; }
output=$(absolute "$output")
log=$(absolute "${log:-${output%.json}.log}")
[ -z "$bench" ] || bench=$(absolute "$bench")
cd "$(dirname "$0")/.."
source scripts/env.sh

case $mpi in
  openmpi) build_dir=build/release; default_launcher=mpirun.openmpi; cmake_mpi=() ;;
  mpich) build_dir=build/release-mpich; default_launcher=mpiexec.mpich
         cmake_mpi=(-DMPI_C_COMPILER=/usr/bin/mpicc.mpich -DMPI_CXX_COMPILER=/usr/bin/mpicxx.mpich
                    -DMPIEXEC_EXECUTABLE=/usr/bin/mpiexec.mpich) ;;
  *) die "--mpi must be openmpi or mpich, not '$mpi'" ;;
esac
[[ $run_timeout =~ ^[0-9]+$ ]] || die "--timeout must be a number of seconds"

if [ -z "$bench" ]; then
  bench=$build_dir/bench/shoal-bench
  # Always brought up to date (a no-op when it is): the records name the checkout's commit, so a binary left from
  # an older checkout must not run under that name.
  echo "sweep.sh: building $bench (Release, $mpi; up to date with the checkout)" >&2
  cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE=Release -DSHOAL_BUILD_TESTS=OFF -DSHOAL_BUILD_BENCH=ON \
    "${cmake_mpi[@]}" >/dev/null
  cmake --build "$build_dir" -j"$jobs" --target shoal-bench >/dev/null
fi
[ -x "$bench" ] || die "no shoal-bench at '$bench'"
bench=$(realpath "$bench")
if [ -z "$launcher" ]; then
  case $(ldd "$bench" 2>/dev/null) in
    *libmpich*) launcher=mpiexec.mpich ;;
    *libmpi.so*) launcher=mpirun.openmpi ;;
    *) launcher=$default_launcher ;;
  esac
fi
command -v "$launcher" >/dev/null || die "MPI launcher '$launcher' not found"

# ---- what to run ------------------------------------------------------------------------------------------------

known=$("$bench" --list | awk '{print $1}')   # --list runs as a singleton MPI process
if [ -z "$workloads" ]; then
  workloads=$(echo "$known" | paste -sd,)
fi
IFS=, read -ra workload_list <<<"$workloads"
for w in "${workload_list[@]}"; do
  grep -qx -- "$w" <<<"$known" || die "unknown workload '$w' (known: $(echo "$known" | paste -sd' '))"
done

if [ -z "$ranks" ]; then
  ranks=$(printf '%s\n' 1 2 4 "$(nproc)" | sort -nu | paste -sd,)
fi
IFS=, read -ra rank_list <<<"$ranks"
for n in "${rank_list[@]}"; do
  [[ $n =~ ^[1-9][0-9]*$ ]] || die "rank counts must be positive integers, not '$n'"
done

sizes_for() {  # workload -> its comma-separated sizes (the last matching spec wins; WORKLOAD=LIST beats LIST)
  local w=$1 all=default own="" spec
  for spec in "${size_specs[@]+"${size_specs[@]}"}"; do
    if [[ $spec == *=* ]]; then
      [ "${spec%%=*}" = "$w" ] && own=${spec#*=}
    else
      all=$spec
    fi
  done
  echo "${own:-$all}"
}
for spec in "${size_specs[@]+"${size_specs[@]}"}"; do
  if [[ $spec == *=* ]]; then
    grep -qx -- "${spec%%=*}" <<<"$known" || die "--sizes names unknown workload '${spec%%=*}'"
  fi
  IFS=, read -ra s <<<"${spec#*=}"
  for size in "${s[@]}"; do
    [[ $size =~ ^([0-9]+([KMGTkmgt](i?[Bb])?|[Bb])?|default)$ ]] ||
      die "'$size' is not a size (e.g. 1000, 64K, 1M or default)"
  done
done

# ---- the machine ------------------------------------------------------------------------------------------------

cmake_cache_value() {  # variable -> its value in the CMakeCache.txt of the build tree holding $bench
  local dir cache
  dir=$(dirname "$bench")
  while [ "$dir" != / ]; do
    cache=$dir/CMakeCache.txt
    if [ -f "$cache" ]; then
      sed -n "s/^$1:[A-Z]*=//p" "$cache" | head -1
      return
    fi
    dir=$(dirname "$dir")
  done
}

mpi_version() {
  local text
  text=$("$launcher" --version 2>&1 || true)
  if grep -qE "\((Open MPI|OpenRTE)\)" <<<"$text"; then
    echo "Open MPI $(head -1 <<<"$text" | awk '{print $NF}')"
  elif grep -q "HYDRA" <<<"$text"; then
    echo "MPICH $(sed -n 's/^ *Version: *//p' <<<"$text" | head -1)"
  else
    head -1 <<<"$text"
  fi
}

describe_machine() {  # key<TAB>value lines, read by the merge below
  local compiler
  compiler=$(cmake_cache_value CMAKE_CXX_COMPILER)
  printf 'cores\t%s\n' "$(nproc)"
  printf 'memory\t%s\n' "$(free -g | awk '/^Mem:/ {print $2 " GiB"}')"
  printf 'os\t%s\n' "$(. /etc/os-release && echo "$PRETTY_NAME")"
  printf 'host\t%s\n' "$(hostname)"
  printf 'mpi\t%s\n' "$(mpi_version)"
  printf 'mpi_library\t%s\n' "$(ldd "$bench" | awk '/libmpi/ {print $1}' | paste -sd' ')"
  printf 'build_type\t%s\n' "$(cmake_cache_value CMAKE_BUILD_TYPE)"
  printf 'compiler\t%s\n' "$(if [ -n "$compiler" ]; then "$compiler" --version | head -1; fi)"
  printf 'commit\t%s\n' "$(git describe --always --dirty)"
  printf 'note\t%s\n' "$note"
}

stamp() {  # start|end -> the time and the load average, as key<TAB>value lines
  printf '%s\t%s\n' "$([ "$1" = start ] && echo date || echo date_end)" "$(date -Iseconds)"
  printf 'load_average_%s\t%s\n' "$1" "$(cut -d' ' -f1-3 /proc/loadavg)"
}

# ---- the runs ---------------------------------------------------------------------------------------------------

mkdir -p "$(dirname "$output")"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
{ describe_machine; stamp start; } >"$work/machine" 2>/dev/null
printf '%s\t%s\n' command "$invocation" launcher "$launcher" bench "$bench" \
  bench_args "${bench_args[*]+"${bench_args[*]}"}" workloads "$workloads" ranks "$ranks" >"$work/sweep"
mkdir -p "$(dirname "$log")"
: >"$log"
total=0
for w in "${workload_list[@]}"; do
  IFS=, read -ra s <<<"$(sizes_for "$w")"
  total=$((total + ${#s[@]} * ${#rank_list[@]}))
done

echo "sweep.sh: $total runs of $bench ($(mpi_version), $(cmake_cache_value CMAKE_BUILD_TYPE)) -> $output;" \
  "log in $log" >&2
elapsed() { awk -v a="$1" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }'; }
i=0
failed=0
: >"$work/index"
for w in "${workload_list[@]}"; do
  IFS=, read -ra sizes <<<"$(sizes_for "$w")"
  for size in "${sizes[@]}"; do
    size_arg=()
    [ "$size" = default ] || size_arg=(--size "$size")
    for n in "${rank_list[@]}"; do
      i=$((i + 1))
      out=$work/run$i.json
      printf 'sweep.sh: [%d/%d] %s, %s ranks, size %s ... ' "$i" "$total" "$w" "$n" "$size" >&2
      cmd=("$launcher" -np "$n" "$bench" --workload "$w" "${size_arg[@]+"${size_arg[@]}"}" --json "$out"
           "${bench_args[@]+"${bench_args[@]}"}")
      [ "$run_timeout" -gt 0 ] && cmd=(timeout "$run_timeout" "${cmd[@]}")
      echo "\$ ${cmd[*]}" >>"$log"
      t0=$EPOCHREALTIME
      if "${cmd[@]}" >>"$log" 2>&1 </dev/null && [ -s "$out" ]; then
        status=ok
        echo "$(elapsed "$t0") s" >&2
      else
        status=$?
        if [ "$run_timeout" -gt 0 ] && [ "$status" -eq 124 ]; then status="timed out"; else status="exit $status"; fi
        failed=$((failed + 1))
        echo "FAILED after $(elapsed "$t0") s (see $log)" >&2
      fi
      printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$out" "$w" "$n" "$size" "$status" "$(elapsed "$t0")" >>"$work/index"
    done
  done
done

stamp end >>"$work/machine"

# ---- one JSON file ----------------------------------------------------------------------------------------------

python3 - "$work" "$output" <<'EOF'
import json, sys

work, output = sys.argv[1], sys.argv[2]


def key_values(name):
    with open(f"{work}/{name}") as f:
        return dict(line.rstrip("\n").split("\t", 1) for line in f)


machine = key_values("machine")
machine["cores"] = int(machine["cores"])
sweep = key_values("sweep")
sweep.update(workloads=sweep["workloads"].split(","), ranks=[int(n) for n in sweep["ranks"].split(",")], runs=[])
records, failures = [], []
with open(f"{work}/index") as f:
    for line in f:
        path, workload, ranks, size, status, seconds = line.rstrip("\n").split("\t")
        run = {"workload": workload, "ranks": int(ranks), "size": None if size == "default" else size,
               "status": status, "seconds": float(seconds)}
        sweep["runs"].append(run)
        if status != "ok":
            failures.append(run)
            continue
        with open(path) as rows:
            for row in json.load(rows):
                row["size"] = run["size"]
                records.append(row)
with open(output, "w") as f:
    json.dump({"machine": machine, "sweep": sweep, "records": records, "failures": failures}, f, indent=1)
    f.write("\n")
print(f"sweep.sh: {len(records)} records from {len(sweep['runs'])} runs ({len(failures)} failed) in {output}",
      file=sys.stderr)
EOF

[ "$failed" -eq 0 ] || exit 3
exit
}
