#!/usr/bin/env bash
# The results page from one command and one run: install what is missing, sweep (scripts/sweep.sh: builds Release
# shoal-bench, runs every workload at 1, 2, 4 and $(nproc) ranks), draw the figures (scripts/plot.py) and write the
# page (scripts/results_page.py):
#
#   docs/results.json        every record and the machine's description
#   docs/results/*.svg|png   one figure per workload and the summary of every row's ratio
#   docs/results.md          the page: the machine, this command, the figures and every row
#   build/report/sweep.log   the output of every shoal-bench run
#
#   scripts/report.sh                                  the default sweep (3 to 7 minutes on a shared 2-core machine)
#   scripts/report.sh --note "machine shared" -r 1,2   arguments go to scripts/sweep.sh (see scripts/sweep.sh --help;
#                                                      its paths are relative to the repository's root)
#   scripts/report.sh --docs /tmp/page ...             write results.json, results/ and results.md elsewhere
set -uo pipefail
{  # the whole script is read before it runs: editing it (or a git checkout) during a sweep is safe
if [ "${1:-}" = -h ] || [ "${1:-}" = --help ]; then
  sed -n '2,15s/^# \{0,1\}//p' "$0"
  exit 0
fi
source "$(dirname "$0")/shell_words.sh"
command="scripts/report.sh$(shell_words "$@")"
docs=docs
if [ "${1:-}" = --docs ]; then
  docs=${2:?--docs needs a directory}
  shift 2
fi
case $docs in /*) ;; *) docs=$PWD/$docs ;; esac
cd "$(dirname "$0")/.." || exit 1
docs=${docs#"$PWD"/}   # inside the repository: a relative path, as the page quotes it
scripts/install-deps.sh || exit 1
python=/usr/bin/python3   # Debian's python3-matplotlib is installed for this interpreter
[ -x "$python" ] || python=python3

mkdir -p "$docs/results"
scripts/sweep.sh -o "$docs/results.json" --log build/report/sweep.log "$@"
sweep_status=$?
case $sweep_status in
  0) ;;
  3) echo "report.sh: some runs failed; the page lists them" >&2 ;;
  *) echo "report.sh: the sweep failed (exit $sweep_status)" >&2; exit "$sweep_status" ;;
esac

rm -f "$docs"/results/*.svg "$docs"/results/*.png
"$python" scripts/plot.py "$docs/results.json" --out "$docs/results" >/dev/null || exit 1
"$python" scripts/results_page.py "$docs/results.json" --figures results --out "$docs/results.md" \
  --command "$command" >/dev/null || exit 1
echo "report.sh: wrote $docs/results.md, $docs/results.json and the figures in $docs/results/" >&2
exit "$sweep_status"
}
