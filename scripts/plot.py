#!/usr/bin/python3
"""Figures from shoal-bench records.

    scripts/plot.py results.json --out DIR

results.json is what scripts/sweep.sh writes ({"machine": ..., "records": [...]}) or what `shoal-bench --json`
writes (a list of records). For every workload, DIR/<workload>.svg and .png: shoal's value against the rank count
beside its same-run baseline, one panel per operation (and per RMA path where the rows carry one), the value axis
saying whether lower (times, latencies, errors) or higher is better; and DIR/summary.svg and .png: one bar per row
of its ratio to the baseline (higher is better for shoal), the 1.0 line marked. Needs only the standard library and
Debian's python3-matplotlib (hence /usr/bin/python3 above).
Exit status: 0 done, 2 unusable input (the message names the file and what is wrong) or no matplotlib.
"""

import argparse
import itertools
import json
import math
import os
import re
import sys
from collections import OrderedDict
from dataclasses import dataclass
from typing import Optional

# Leading variant components naming where a row ran (shoal-bench adds them): the RMA path, the number of hosts, and
# whether the target was on the same host. Rows are split into panels by them.
PATH_COMPONENT = re.compile(r"shm-path|mpi-path|same-host|cross-host|mixed-hosts|[0-9]+-hosts")
TIME_UNITS = {"ns", "us", "µs", "ms", "s", "sec", "min"}
LOWER_IS_BETTER_WORDS = ("latency", "time", "error", "round trip", "seconds", "elapsed")
FIELDS = OrderedDict([("workload", str), ("operation", str), ("variant", str), ("ranks", int), ("value", float),
                      ("unit", str), ("baseline", str), ("baseline_value", float), ("ratio", float)])
TYPE_NAMES = {str: "a string", int: "an integer", float: "a number"}
FORMATS = ("svg", "png")


class PlotError(Exception):
    """plot.py cannot go on; the message says why."""


class InputError(PlotError):
    """The input file cannot be used; the message says which file and why."""


@dataclass(frozen=True)
class Row:
    workload: str
    operation: str
    variant: str
    ranks: int
    value: float
    unit: str
    baseline: str
    baseline_value: float
    ratio: float
    size: Optional[str] = None

    @property
    def path(self):
        return split_path(self.variant)[0]

    @property
    def rest(self):
        return split_path(self.variant)[1]

    @property
    def has_baseline(self):
        return self.baseline_value > 0 and self.baseline not in ("", "-")

    @property
    def has_ratio(self):
        return self.has_baseline and self.value > 0 and self.ratio > 0


# ---- reading ----------------------------------------------------------------------------------------------------

def split_path(variant):
    """'shm-path/8 B' -> ('shm-path', '8 B'); '2-hosts/mpi-path/cross-host/8 B' -> ('2-hosts/mpi-path/cross-host',
    '8 B'); a variant without such components -> ('', variant)."""
    parts = variant.split("/")
    n = 0
    while n < len(parts) and PATH_COMPONENT.fullmatch(parts[n]):
        n += 1
    return "/".join(parts[:n]), "/".join(parts[n:])


def check_field(where, record, name, kind):
    """record[name] if it is of `kind` (an int is a number too; a bool is neither); else InputError."""
    value = record[name]
    if isinstance(value, bool) or not isinstance(value, (int, float) if kind is float else kind):
        raise InputError(f"{where}: field '{name}' is {json.dumps(value)}, expected {TYPE_NAMES[kind]}")
    if kind is float and not math.isfinite(value):
        raise InputError(f"{where}: field '{name}' is {value}, expected a finite number")
    return float(value) if kind is float else value


def parse_record(path, index, count, record):
    where = f"{path}: record {index + 1} of {count}"
    if not isinstance(record, dict):
        raise InputError(f"{where}: expected an object, got {json.dumps(record)[:60]}")
    if isinstance(record.get("workload"), str):
        where += f" (workload {record['workload']})"
    missing = [name for name in FIELDS if name not in record]
    if missing:
        raise InputError(f"{where}: missing field(s) {', '.join(repr(m) for m in missing)}")
    values = {name: check_field(where, record, name, kind) for name, kind in FIELDS.items()}
    if values["ranks"] < 1:
        raise InputError(f"{where}: field 'ranks' is {values['ranks']}, expected a positive integer")
    if not values["workload"]:
        raise InputError(f"{where}: field 'workload' is empty")
    size = record.get("size")
    if size is not None and not isinstance(size, (str, int)):
        raise InputError(f"{where}: field 'size' is {json.dumps(size)}, expected a string, an integer or null")
    return Row(**values, size=None if size is None else str(size))


@dataclass
class Results:
    machine: dict  # the machine's description ({} for plain shoal-bench output)
    sweep: dict  # the sweep's parameters and runs ({} likewise)
    failures: list  # the sweep's runs that produced no rows
    rows: list  # [Row]


def load(path):
    """Reads shoal-bench --json or scripts/sweep.sh output into Results; raises InputError."""
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except OSError as e:
        raise InputError(f"{path}: cannot read: {e.strerror}") from None
    except UnicodeDecodeError as e:
        raise InputError(f"{path}: not UTF-8 text: {e.reason}") from None
    except json.JSONDecodeError as e:
        raise InputError(f"{path}: not valid JSON: {e.msg} (line {e.lineno}, column {e.colno})") from None
    document = {}
    if isinstance(data, dict):
        if not isinstance(data.get("records"), list):
            raise InputError(f"{path}: an object without a 'records' list (expected shoal-bench --json output "
                             "or scripts/sweep.sh output)")
        document, data = data, data["records"]
        for key, kind in (("machine", dict), ("sweep", dict), ("failures", list)):
            if not isinstance(document.get(key, kind()), kind):
                raise InputError(f"{path}: '{key}' must be {'an object' if kind is dict else 'a list'}")
    elif not isinstance(data, list):
        raise InputError(f"{path}: expected a list of records or an object with a 'records' list, "
                         f"got {type(data).__name__}")
    if not data:
        raise InputError(f"{path}: no records")
    rows = [parse_record(path, i, len(data), r) for i, r in enumerate(data)]
    return Results(document.get("machine", {}), document.get("sweep", {}), document.get("failures", []), rows)


# ---- what a row means -------------------------------------------------------------------------------------------

def lower_is_better(row):
    """Times, latencies and errors: smaller values are better (judged from the unit and the operation's name)."""
    unit = row.unit.split("/")[0].strip()
    operation = row.operation.lower()
    return unit in TIME_UNITS or any(word in operation for word in LOWER_IS_BETTER_WORDS)


def axis_label(row):
    return f"{row.unit} ({'lower' if lower_is_better(row) else 'higher'} is better)"


def size_label(size):
    return "default size" if size is None else f"size {size}"


def grouped(items, key):
    """OrderedDict key -> [items], in order of first appearance."""
    groups = OrderedDict()
    for item in items:
        groups.setdefault(key(item), []).append(item)
    return groups


def file_name(name):
    return re.sub(r"[^A-Za-z0-9_.-]", "_", name)


# ---- figures ----------------------------------------------------------------------------------------------------

def pyplot():
    try:
        import matplotlib
    except ImportError:
        raise PlotError("matplotlib is missing: apt-get install python3-matplotlib (scripts/install-deps.sh)") \
            from None
    matplotlib.use("Agg")
    matplotlib.rcParams["svg.fonttype"] = "none"  # text stays text: smaller files, searchable figures
    matplotlib.rcParams["svg.hashsalt"] = "shoal"  # the same input gives the same SVG (no random ids)
    import matplotlib.pyplot as plt
    return plt


def series_values(rows, attribute):
    """{ranks: value} of one series (rows of one variant and size)."""
    return {r.ranks: getattr(r, attribute) for r in rows}


def draw_line(ax, values, **style):
    ranks = sorted(values)
    ax.plot(ranks, [values[n] for n in ranks], **style)


def baseline_lines(rows, several_sizes):
    """[(label, {ranks: value}, (variant or None, size))]: one line per baseline and size, or per variant too when
    their values differ."""
    lines = []
    for (baseline, size), group in grouped([r for r in rows if r.has_baseline], lambda r: (r.baseline, r.size)).items():
        by_variant = {v: series_values(g, "baseline_value") for v, g in grouped(group, lambda r: r.rest).items()}
        suffix = f", {size_label(size)}" if several_sizes else ""
        distinct = {tuple(sorted(v.items())) for v in by_variant.values()}
        if len(distinct) == 1:  # one line; in its variant's color when it has only one
            only = next(iter(by_variant)) if len(by_variant) == 1 else None
            lines.append((f"{baseline}{suffix}", next(iter(by_variant.values())), (only, size)))
        else:
            lines += [(f"{baseline} ({variant}{suffix})", values, (variant, size))
                      for variant, values in by_variant.items()]
    return lines


def palette(count=0):
    """An endless cycle of colors for `count` lines: matplotlib's default ten, or twenty when more are needed."""
    import matplotlib
    if count > 10:
        return itertools.cycle(matplotlib.colormaps["tab20"].colors)
    return itertools.cycle(matplotlib.rcParams["axes.prop_cycle"].by_key()["color"])


def measured(operation):
    """Whose time a row's value is: shoal's, unless the operation names a hand-written version ("plain MPI range
    ops", "kv replay 1 x 1, plain MPI": a baseline shown against another baseline)."""
    return "plain MPI" if "plain MPI" in operation else "shoal"


def draw_panel(ax, rows, several_sizes, ranks):
    colors = {}  # (variant, size) -> color of shoal's line; a baseline drawn once per size takes (None, size)
    series = grouped(rows, lambda r: (r.rest, r.size))
    who = measured(rows[0].operation)  # a panel is one operation
    for ((variant, size), group), color in zip(series.items(), palette(len(series))):
        colors[variant, size] = color
        colors[None, size] = "black" if (None, size) in colors else color
        label = who + (f" {variant}" if variant else "") + (f", {size_label(size)}" if several_sizes else "")
        draw_line(ax, series_values(group, "value"), color=color, marker="o", label=label)
    for label, values, key in baseline_lines(rows, several_sizes):
        color = colors.get(key, "black")
        draw_line(ax, values, color=color, marker="x", linestyle="--", alpha=0.8, label=label)
    ax.set_xscale("log", base=2)
    ax.set_xticks(ranks, [str(n) for n in ranks])
    ax.set_xlim(ranks[0] / 1.25, ranks[-1] * 1.25)
    ax.minorticks_off()
    ax.set_xlabel("ranks")
    ax.set_ylabel(axis_label(rows[0]), fontsize=8)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=6, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0)


def set_value_scale(ax, rows):
    """Log scale when the values of one operation span more than two decades; else linear from 0. (The panels of
    one operation share their y axis, so the paths compare at a glance.)"""
    values = [v for r in rows for v in (r.value, r.baseline_value) if v > 0]
    if values and all(r.value > 0 for r in rows) and max(values) / min(values) > 100:
        ax.set_yscale("log")
    else:
        ax.set_ylim(0, max(values, default=1) * 1.08)


def caption(machine):
    keys = ("host", "cores", "mpi", "build_type", "date")
    parts = [f"{k}: {machine[k]}" for k in keys if machine.get(k) not in (None, "")]
    return "; ".join(parts)


def save(fig, out_dir, name):
    paths = []
    for fmt in FORMATS:
        path = f"{out_dir}/{name}.{fmt}"
        fig.savefig(path, dpi=110, metadata={"Date": None} if fmt == "svg" else None)
        paths.append(path)
    return paths


def panel_grid(panels):
    """{(operation, unit, path): (row, column)}: one row per operation and one column per path when rows carry
    paths (a row's panels then share their y axis), else the operations two to a row."""
    operations = list(OrderedDict.fromkeys((op, unit) for op, unit, _ in panels))
    paths = list(OrderedDict.fromkeys(path for _, _, path in panels))
    if len(paths) > 1:
        return {key: (operations.index(key[:2]), paths.index(key[2])) for key in panels}, len(paths), True
    columns = min(2, len(panels))
    return {key: divmod(k, columns) for k, key in enumerate(panels)}, columns, False


def workload_figure(plt, workload, rows, machine):
    panels = grouped(rows, lambda r: (r.operation, r.unit, r.path))
    grid, columns, by_path = panel_grid(panels)
    nrows = max(i for i, _ in grid.values()) + 1
    several_sizes = len({r.size for r in rows}) > 1
    ranks = sorted({r.ranks for r in rows})  # every panel of the workload on the same rank axis
    fig, axes = plt.subplots(nrows, columns, squeeze=False, layout="constrained", sharey="row" if by_path else False,
                             figsize=(7.5 * columns, 2.6 * nrows + 0.6))
    for ax in axes.flat:
        ax.set_visible(False)
    for (operation, unit, path), panel in panels.items():
        i, j = grid[operation, unit, path]
        axes[i][j].set_visible(True)
        draw_panel(axes[i][j], panel, several_sizes, ranks)
        axes[i][j].set_title(operation + (f" [{path}]" if path else ""), fontsize=9)
    scaled = set()  # once all is drawn (a row's panels share the y axis when they are one operation's paths)
    for (operation, unit, path), (i, j) in grid.items():
        if (i if by_path else (i, j)) not in scaled:
            scaled.add(i if by_path else (i, j))
            set_value_scale(axes[i][j], [r for r in rows if (r.operation, r.unit) == (operation, unit)
                                         and (by_path or r.path == path)])
    fig.suptitle(f"{workload}: shoal (solid) and its same-run baseline (dashed) by rank count\n{caption(machine)}",
                 fontsize=10)
    return fig


def summary_figure(plt, rows, machine):
    """One bar per row (rows differing only in rank count side by side): its ratio to the baseline, drawn from the
    1.0 line (to the right: shoal is better), log scale."""
    groups = grouped(rows, lambda r: (r.workload, r.operation, r.variant, r.baseline, r.size))
    ranks = sorted({r.ranks for r in rows})
    sized = {w for w, g in grouped(rows, lambda r: r.workload).items() if len({r.size for r in g}) > 1}
    pitch = max(1.0, 0.45 * len(ranks))
    fig, ax = plt.subplots(figsize=(11, 1.8 + 0.13 * pitch * len(groups)), layout="constrained")
    colors = dict(zip(ranks, palette()))
    bar = 0.8 * pitch / len(ranks)
    ratios = [r.ratio for r in rows if r.has_ratio]
    low, high = (min(ratios + [1.0]) / 2, max(ratios + [1.0]) * 2)
    labels = []
    for g, ((workload, operation, variant, baseline, size), group) in enumerate(groups.items()):
        y = g * pitch
        against = "(no baseline)" if baseline in ("", "-") else f"vs {baseline}"
        without = [str(r.ranks) for r in group if not r.has_ratio]
        labels.append(f"{workload} · {operation} · {variant or '-'} {against}"
                      + (f" ({size_label(size)})" if workload in sized else "")
                      + (f" [no ratio at {', '.join(without)} ranks]" if without else ""))
        for row in group:
            if row.has_ratio:
                offset = (ranks.index(row.ranks) - (len(ranks) - 1) / 2) * bar
                ax.barh(y + offset, row.ratio - 1.0, left=1.0, height=bar, color=colors[row.ranks])
    shade_workloads(ax, [key[0] for key in groups], pitch)
    ax.set_xscale("log")
    ax.set_xlim(low, high)
    ax.axvline(1.0, color="red", linewidth=1.2, label="1.0: as fast as the baseline")
    ax.set_yticks([g * pitch for g in range(len(groups))], labels, fontsize=6)
    ax.set_ylim(len(groups) * pitch - pitch / 2, -pitch / 2)
    ax.set_xlabel("ratio to the baseline: higher is better for shoal (log scale; bars start at 1.0)")
    ax.xaxis.set_ticks_position("both")
    ax.tick_params(axis="x", labeltop=True)
    handles = [plt.Rectangle((0, 0), 1, 1, color=colors[n]) for n in ranks]
    ax.legend(handles + [ax.lines[-1]], [f"{n} ranks" for n in ranks] + ["1.0: as fast as the baseline"],
              fontsize=7, loc="lower right")
    ax.set_title(f"Every row's ratio to its same-run baseline (no ratio: no baseline, or a value of 0)\n"
                 f"{caption(machine)}", fontsize=10)
    return fig


def shade_workloads(ax, workloads, pitch):
    """Alternating bands behind the rows of each workload."""
    for k, (workload, members) in enumerate(grouped(range(len(workloads)), lambda g: workloads[g]).items()):
        if k % 2:
            ax.axhspan(members[0] * pitch - pitch / 2, members[-1] * pitch + pitch / 2, color="0.93", zorder=0)


def draw_all(rows, machine, out_dir):
    """Writes every figure; returns {name: [paths]} with 'summary' and one entry per workload."""
    plt = pyplot()
    os.makedirs(out_dir, exist_ok=True)
    written = OrderedDict()
    figures = [("summary", lambda: summary_figure(plt, rows, machine))]
    for workload, group in grouped(rows, lambda r: r.workload).items():
        figures.append((workload, lambda w=workload, g=group: workload_figure(plt, w, g, machine)))
    for name, make in figures:
        fig = make()
        written[name] = save(fig, out_dir, file_name(name))
        plt.close(fig)
    return written


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog=__doc__.split("\n\n", 1)[1])
    parser.add_argument("results", help="JSON from scripts/sweep.sh or shoal-bench --json")
    parser.add_argument("--out", required=True, help="directory for the figures (created if missing)")
    args = parser.parse_args(argv)
    try:
        results = load(args.results)
        written = draw_all(results.rows, results.machine, args.out)
    except PlotError as e:
        print(f"plot.py: {e}", file=sys.stderr)
        return 2
    except OSError as e:
        print(f"plot.py: cannot write the figures to {args.out}: {e.strerror} ({e.filename})", file=sys.stderr)
        return 1
    for paths in written.values():
        print("\n".join(paths))
    return 0


if __name__ == "__main__":
    sys.exit(main())
