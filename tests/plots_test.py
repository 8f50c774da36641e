#!/usr/bin/python3
"""Tests of scripts/plot.py, scripts/results_page.py and scripts/sweep.sh (registered by tests/plots.cmake).

    plots_test.py render    FIXTURE WORKDIR   every workload of the fixture drawn (SVG + PNG), the page written
    plots_test.py malformed FIXTURE WORKDIR   broken inputs: exit 2, one clear line naming the file, no figures
    plots_test.py sweep     WORKDIR BENCH LAUNCHER   a 1-2 rank sweep of the smallest size, its file plotted

Exit status 0 pass, 1 fail, 77 skipped (matplotlib missing).
"""

import copy
import importlib.util
import json
import os
import shutil
import subprocess
import sys

SCRIPTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scripts")
sys.path.insert(0, SCRIPTS)
import plot  # noqa: E402

SKIP = 77


class Failure(Exception):
    pass


def check(condition, message):
    if not condition:
        raise Failure(message)


def fresh_dir(path):
    shutil.rmtree(path, ignore_errors=True)
    os.makedirs(path)
    return path


def run(args, **kwargs):
    return subprocess.run(args, capture_output=True, text=True, timeout=kwargs.pop("timeout", 60), **kwargs)


def run_script(name, *args):
    return run([sys.executable, os.path.join(SCRIPTS, name), *args])


def have_matplotlib():
    return importlib.util.find_spec("matplotlib") is not None


def require_matplotlib():
    if not have_matplotlib():
        print("skipped: matplotlib is missing (apt-get install python3-matplotlib)")
        sys.exit(SKIP)


# ---- render -----------------------------------------------------------------------------------------------------

def check_figure(path, *texts):
    check(os.path.isfile(path) and os.path.getsize(path) > 0, f"{path} not written")
    with open(path, "rb") as f:
        data = f.read()
    if path.endswith(".png"):
        check(data.startswith(b"\x89PNG\r\n\x1a\n"), f"{path} is not a PNG")
    else:
        check(b"<svg" in data, f"{path} is not an SVG")
        for text in texts:
            check(text.encode() in data, f"{path} does not say '{text}'")


def check_plots(results_path, out):
    """plot.py draws the summary and one figure per workload of results_path, in both formats."""
    result = run_script("plot.py", results_path, "--out", out)
    check(result.returncode == 0, f"plot.py {results_path} failed ({result.returncode}): {result.stderr}")
    rows = plot.load(results_path).rows
    workloads = {r.workload for r in rows}
    for workload in workloads:
        group = [r for r in rows if r.workload == workload]
        says = [workload] + [f"{'lower' if plot.lower_is_better(r) else 'higher'} is better" for r in group]
        says += [r.path for r in group if r.path]
        check_figure(os.path.join(out, plot.file_name(workload) + ".svg"), *says)
        check_figure(os.path.join(out, plot.file_name(workload) + ".png"))
    check_figure(os.path.join(out, "summary.svg"), "1.0", *sorted({f"{r.ranks} ranks" for r in rows}))
    check_figure(os.path.join(out, "summary.png"))
    written = {name for name in os.listdir(out)}
    check(len(written) == 2 * (len(workloads) + 1), f"unexpected files in {out}: {sorted(written)}")
    return rows, workloads


def check_orientation():
    base = dict(workload="w", variant="", ranks=1, value=1, baseline="b", baseline_value=1, ratio=1)
    cases = [("get latency", "us", True), ("contig total", "s", True), ("scatter time", "us/nnz", True),
             ("rank error mean", "elements", True), ("clock sync error bound", "ns", True),
             ("get rate", "Mops/s", False), ("insert N-N", "Mops/s", False), ("push/pop throughput", "kops/s", False)]
    for operation, unit, lower in cases:
        row = plot.Row(operation=operation, unit=unit, **base)
        check(plot.lower_is_better(row) == lower, f"{operation} [{unit}] should be {'lower' if lower else 'higher'}"
              " is better")


def check_paths():
    cases = [("shm-path/8 B", "shm-path", "8 B"), ("mpi-path", "mpi-path", ""), ("8 B", "", "8 B"),
             ("2-hosts/mpi-path/cross-host/8 B", "2-hosts/mpi-path/cross-host", "8 B"),
             ("3-hosts/mixed-hosts/8 B", "3-hosts/mixed-hosts", "8 B"), ("lock/excl ncand=2", "", "lock/excl ncand=2"),
             ("shm-path/lock-free/local-first ncand=2", "shm-path", "lock-free/local-first ncand=2")]
    for variant, path, rest in cases:
        check(plot.split_path(variant) == (path, rest), f"split_path({variant!r}) = {plot.split_path(variant)}, "
              f"expected {(path, rest)}")


def render(fixture, work):
    require_matplotlib()
    check_orientation()
    check_paths()
    rows, workloads = check_plots(fixture, fresh_dir(os.path.join(work, "figures")))
    check(any(r.path == "shm-path" for r in rows) and any(r.path == "mpi-path" for r in rows),
          "the fixture should carry both RMA paths")
    check(len({r.ranks for r in rows}) > 1 and len({r.size for r in rows}) > 1,
          "the fixture should span several rank counts and sizes")

    # The same records as plain shoal-bench --json output (a list, no machine) read the same.
    as_list = os.path.join(work, "as_list.json")
    with open(fixture) as f, open(as_list, "w") as g:
        json.dump([{k: v for k, v in r.items() if k != "size"} for r in json.load(f)["records"]], g)
    from_list = plot.load(as_list)
    check([r.workload for r in from_list.rows] == [r.workload for r in rows] and not from_list.machine,
          "shoal-bench --json output should read as the same rows")

    page = os.path.join(work, "results.md")
    result = run_script("results_page.py", fixture, "--figures", "figures", "--out", page, "--command", "test")
    check(result.returncode == 0, f"results_page.py failed: {result.stderr}")
    with open(page) as f:
        text = f.read()
    for name in ["summary"] + sorted(workloads):
        check(f"](figures/{plot.file_name(name)}.svg)" in text, f"the page does not embed {name}.svg")
        check(os.path.isfile(os.path.join(work, "figures", plot.file_name(name) + ".svg")),
              f"the page links a missing figure {name}.svg")
    check(text.count("\n| ") >= len(rows), "the page's tables miss rows")
    machine = json.load(open(fixture))["machine"]
    for key in ("mpi", "cores", "build_type", "date"):
        check(str(machine[key]) in text, f"the page does not show the machine's {key}")
    print(f"render: {len(workloads)} workloads, {len(rows)} rows drawn; page {page}")


# ---- malformed --------------------------------------------------------------------------------------------------

def malformed_cases(fixture):
    """(name, file content, what the message must say)."""
    with open(fixture) as f:
        good = json.load(f)

    def with_record(change):
        doc = copy.deepcopy(good)
        change(doc["records"][1])
        return json.dumps(doc)

    return [
        ("truncated", json.dumps(good)[:300], "not valid JSON: "),
        ("not_json", "workload,ranks\ncore,2\n", "not valid JSON: Expecting value (line 1, column 1)"),
        ("number", "42", "expected a list of records or an object with a 'records' list"),
        ("no_records_key", json.dumps({"machine": good["machine"]}), "without a 'records' list"),
        ("empty", "[]", "no records"),
        ("record_not_object", json.dumps([good["records"][0], "core"]), "record 2 of 2: expected an object"),
        ("missing_fields", with_record(lambda r: (r.pop("value"), r.pop("unit"))),
         "record 2 of {n} (workload {w}): missing field(s) 'value', 'unit'"),
        ("ranks_string", with_record(lambda r: r.update(ranks="2")), "field 'ranks' is \"2\", expected an integer"),
        ("value_null", with_record(lambda r: r.update(value=None)), "field 'value' is null, expected a number"),
        ("ranks_zero", with_record(lambda r: r.update(ranks=0)), "expected a positive integer"),
        ("value_nan", with_record(lambda r: r.update(value=float("nan"))), "expected a finite number"),
        ("machine_list", json.dumps(dict(good, machine=[])), "'machine' must be an object"),
        ("not_utf8", b"\xff\xfe[]", "not UTF-8 text"),
    ], {"w": good["records"][1]["workload"], "n": len(good["records"])}


def malformed(fixture, work):
    out = os.path.join(work, "figures")
    cases, names = malformed_cases(fixture)
    cases.append(("missing_file", None, "cannot read: No such file or directory"))
    for name, content, expected in cases:
        path = os.path.join(work, name + ".json")
        if content is not None:
            with open(path, "wb") as f:
                f.write(content.encode() if isinstance(content, str) else content)
        shutil.rmtree(out, ignore_errors=True)
        result = run_script("plot.py", path, "--out", out)
        message = result.stderr.strip()
        prefix, expected = f"plot.py: {path}: ", expected.format(**names)
        check(result.returncode == 2, f"{name}: exit {result.returncode}, expected 2 ({message})")
        check(message.startswith(prefix) and expected in message,
              f"{name}: message\n  {message}\ndoes not start with '{prefix}' and say '{expected}'")
        check("Traceback" not in message and "\n" not in message, f"{name}: not one clear line:\n{message}")
        check(not os.path.exists(out), f"{name}: figures written from a malformed file")
    print(f"malformed: {len(cases)} broken inputs rejected with a clear message")


# ---- sweep ------------------------------------------------------------------------------------------------------

def sweep(work, bench, launcher):
    output = os.path.join(work, "sweep.json")
    args = [os.path.join(SCRIPTS, "sweep.sh"), "--bench", bench, "--launcher", launcher, "-w", "bloom", "-r", "1,2",
            "-s", "1000", "--timeout", "60", "-o", output, "--note", "ctest sweep.small"]
    result = run(args, timeout=150)
    check(result.returncode == 0, f"sweep.sh failed ({result.returncode}):\n{result.stderr}")
    check("[2/2] bloom, 2 ranks, size 1000" in result.stderr, f"no progress shown:\n{result.stderr}")
    results = plot.load(output)
    check({r.ranks for r in results.rows} == {1, 2}, "records should come from 1 and 2 ranks")
    check({r.size for r in results.rows} == {"1000"} and {r.workload for r in results.rows} == {"bloom"},
          "records should be bloom at size 1000")
    check(not results.failures and len(results.sweep["runs"]) == 2, "expected two runs, none failed")
    for key in ("cores", "mpi", "build_type", "compiler", "date", "host"):
        check(results.machine.get(key) not in (None, ""), f"the machine description lacks '{key}'")
    check(results.machine["note"] == "ctest sweep.small", "the note is not recorded")
    print(f"sweep: {len(results.rows)} records, machine {json.dumps(results.machine)}")
    if have_matplotlib():
        check_plots(output, fresh_dir(os.path.join(work, "figures")))

    for args, message in [(["-w", "no_such_workload"], "unknown workload 'no_such_workload'"),
                          (["-s", "1000,1x"], "'1x' is not a size"), (["-r", "0"], "positive integers")]:
        bad = run([os.path.join(SCRIPTS, "sweep.sh"), "--bench", bench, "-o", output, *args])
        check(bad.returncode == 2 and message in bad.stderr, f"sweep.sh {' '.join(args)} should be refused with "
              f"'{message}', got exit {bad.returncode}: {bad.stderr}")


def main(argv):
    commands = {"render": (render, 2), "malformed": (malformed, 2), "sweep": (sweep, 3)}
    if len(argv) < 2 or argv[1] not in commands or len(argv) != 2 + commands[argv[1]][1]:
        print(__doc__, file=sys.stderr)
        return 2
    function, _ = commands[argv[1]]
    os.makedirs(argv[3] if argv[1] != "sweep" else argv[2], exist_ok=True)
    try:
        function(*argv[2:])
    except Failure as e:
        print(f"FAILED: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
