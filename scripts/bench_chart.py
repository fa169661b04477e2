#!/usr/bin/env python3
"""Draws blq-bench's side-by-side figures as an SVG bar chart.

What it is for: docs/benchmarks.svg, the chart on docs/benchmarks.md, made
from raw blq-bench output kept in the tree (several whole runs of e.g.
`blq-bench --compare --rounds 3 W1 W1-NOISY W1-BATCH`, concatenated).

How it works: it reads every line of the input files that starts with
"BENCH" (blq-bench's machine-readable lines, bench/blq_bench.c):

    BENCH <workload> <system> ns_per_item=<x> [key=value ...]

and ignores every other line (blq-bench's "#" comments, a shell prompt).
Lines of one workload and system from several runs are one bar: its
height is the median ns/item over those lines, its whisker spans their
minimum and maximum, and its label is the median. A line with item_bytes=
(DUMP-*) is charted per item size ("DUMP-FS 64 B"). BENCH lines without
ns_per_item (IDLE-*: cpu_pct=) have nothing to chart and are skipped, with
a note on stderr. Groups (workloads) and bars (systems) come in the order
they first appear, unless --workloads names the groups to draw.

Bad input stops it with a message naming the file and line: a BENCH line
that is not "BENCH <workload> <system> key=value ...", a value that is not
a positive number, or no BENCH line with ns_per_item at all. Exit status:
0 written, 1 bad input, 2 bad usage or unreadable file.

Python 3 standard library only. Usage:
    scripts/bench_chart.py [-o OUT.svg] [--title TEXT] [--workloads W1,W1-NOISY] FILE...
"""

import argparse
import math
import statistics
import sys
from xml.sax.saxutils import escape

COLOURS = {
    "blq": "#1f77b4",
    "glib": "#ff7f0e",
    "mutex": "#2ca02c",
    "ckring": "#d62728",
    "pairs": "#17becf",
    "floor": "#7f7f7f",
    "redis-benchmark": "#9467bd",
}
SPARE_COLOURS = ["#8c564b", "#e377c2", "#bcbd22", "#aec7e8"]


class BadInput(Exception):
    """Input that cannot be charted; the message names where and why."""


def parse_number(text, where, key):
    try:
        v = float(text)
    except ValueError:
        raise BadInput(f"{where}: {key}={text!r} is not a number") from None
    if not math.isfinite(v) or v <= 0:
        raise BadInput(f"{where}: {key}={text!r} must be a positive number")
    return v


def read_lines(paths):
    """Yields (where, line) for every line of every file."""
    for path in paths:
        try:
            with open(path, encoding="utf-8") as f:
                lines = f.read().splitlines()
        except (OSError, UnicodeDecodeError) as e:
            raise OSError(f"cannot read {path}: {e}") from None
        for n, line in enumerate(lines, 1):
            yield f"{path}:{n}", line


def parse(paths):
    """Returns ({(group, system): [ns_per_item, ...]} in order of first
    appearance, the number of BENCH lines skipped for lack of ns_per_item)."""
    series = {}
    skipped = 0
    for where, line in read_lines(paths):
        words = line.split()
        if not words or words[0] != "BENCH":
            continue
        if len(words) < 4:
            raise BadInput(f"{where}: malformed BENCH line (want 'BENCH <workload> "
                           f"<system> key=value ...'): {line.strip()}")
        workload, system = words[1], words[2]
        if "=" in workload or "=" in system:
            raise BadInput(f"{where}: malformed BENCH line (workload and system come "
                           f"before the key=value pairs): {line.strip()}")
        kv = {}
        for w in words[3:]:
            key, eq, value = w.partition("=")
            if not eq or not key or not value:
                raise BadInput(f"{where}: malformed BENCH line: {w!r} is not key=value: "
                               f"{line.strip()}")
            kv[key] = value
        if "ns_per_item" not in kv:
            skipped += 1
            continue
        ns = parse_number(kv["ns_per_item"], where, "ns_per_item")
        group = workload
        if "item_bytes" in kv:
            size = parse_number(kv["item_bytes"], where, "item_bytes")
            group = f"{workload} {size:g} B"
        series.setdefault((group, system), []).append(ns)
    return series, skipped


def fmt(v):
    """A bar's label: whole numbers from 100 up, one decimal below."""
    return f"{v:.0f}" if v >= 100 else f"{v:.1f}"


def nice_ceiling(v):
    """The smallest round step (1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6 or 8 times a
    power of ten) that is >= v: finer than 1-2-5, so the tallest bar does
    not end halfway up the chart."""
    p = 10 ** math.floor(math.log10(v))
    for m in (1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10):
        if m * p >= v:
            return m * p
    return 10 * p


def draw(series, title, sources):
    groups, systems = [], []
    for g, s in series:
        if g not in groups:
            groups.append(g)
        if s not in systems:
            systems.append(s)
    colours = dict(COLOURS)
    spare = iter(SPARE_COLOURS * (len(systems) // len(SPARE_COLOURS) + 1))
    for s in systems:
        colours.setdefault(s, next(spare))

    bar_w, bar_gap, group_gap = 34, 6, 36
    left, right, top, bottom = 70, 20, 56, 70
    plot_h = 300
    per_group = {g: [s for s in systems if (g, s) in series] for g in groups}
    group_w = {g: len(per_group[g]) * (bar_w + bar_gap) - bar_gap for g in groups}
    plot_w = sum(group_w.values()) + group_gap * (len(groups) + 1)
    legend_h = 22
    subtitle = ("ns per item (lower is better): median bar, min-max whisker, "
                "over the runs in the input")
    # Room for the title (15 px bold) and the subtitle (12 px) on one line.
    right = max(right, int(max(len(title) * 8.6, len(subtitle) * 6.6) + 20) - left - plot_w)
    width = left + plot_w + right
    height = top + plot_h + bottom + legend_h
    y_max = nice_ceiling(max(max(v) for v in series.values()) * 1.08)

    def y(v):
        return top + plot_h - v / y_max * plot_h

    out = []
    out.append(f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
               f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="12">')
    note = f"Drawn by scripts/bench_chart.py from {', '.join(sources)}; redraw it rather " \
           f"than edit it (docs/benchmarks.md, The chart)."
    out.append(f'<!-- {escape(note).replace("--", "- -")} -->')
    out.append(f'<rect width="{width}" height="{height}" fill="#ffffff"/>')
    out.append(f'<text class="title" x="{width / 2:.1f}" y="22" text-anchor="middle" '
               f'font-size="15" font-weight="bold">{escape(title)}</text>')
    out.append(f'<text class="subtitle" x="{width / 2:.1f}" y="40" text-anchor="middle" '
               f'fill="#555555">{subtitle}</text>')
    # Axis and grid: five steps of y_max / 5.
    for i in range(6):
        v = y_max * i / 5
        yy = y(v)
        out.append(f'<line x1="{left}" y1="{yy:.1f}" x2="{left + plot_w}" y2="{yy:.1f}" '
                   f'stroke="#dddddd"/>')
        out.append(f'<text class="tick" x="{left - 6}" y="{yy + 4:.1f}" '
                   f'text-anchor="end">{v:g}</text>')
    out.append(f'<line x1="{left}" y1="{top}" x2="{left}" y2="{top + plot_h}" stroke="#333333"/>')
    out.append(f'<text x="16" y="{top + plot_h / 2:.1f}" text-anchor="middle" '
               f'transform="rotate(-90 16 {top + plot_h / 2:.1f})">ns/item</text>')
    x = left + group_gap
    for g in groups:
        out.append(f'<g class="group" data-workload="{escape(g)}">')
        for s in per_group[g]:
            vals = series[(g, s)]
            med, lo, hi = statistics.median(vals), min(vals), max(vals)
            yt = y(med)
            out.append(f'<rect class="bar" data-workload="{escape(g)}" data-system="{escape(s)}" '
                       f'data-median="{med:g}" data-min="{lo:g}" data-max="{hi:g}" '
                       f'data-runs="{len(vals)}" x="{x}" y="{yt:.1f}" width="{bar_w}" '
                       f'height="{top + plot_h - yt:.1f}" fill="{colours[s]}">'
                       f'<title>{escape(g)} {escape(s)}: median {fmt(med)} ns/item, '
                       f'min {fmt(lo)}, max {fmt(hi)}, {len(vals)} runs</title></rect>')
            cx = x + bar_w / 2
            if hi > lo:
                out.append(f'<g class="whisker" stroke="#000000">'
                           f'<line x1="{cx:.1f}" y1="{y(hi):.1f}" x2="{cx:.1f}" y2="{y(lo):.1f}"/>'
                           f'<line x1="{cx - 6:.1f}" y1="{y(hi):.1f}" x2="{cx + 6:.1f}" y2="{y(hi):.1f}"/>'
                           f'<line x1="{cx - 6:.1f}" y1="{y(lo):.1f}" x2="{cx + 6:.1f}" y2="{y(lo):.1f}"/>'
                           f'</g>')
            label_y = min(yt, y(hi)) - 4
            out.append(f'<text class="value" data-workload="{escape(g)}" data-system="{escape(s)}" '
                       f'x="{cx:.1f}" y="{label_y:.1f}" text-anchor="middle" '
                       f'font-size="10">{fmt(med)}</text>')
            x += bar_w + bar_gap
        x -= bar_gap
        gx = x - group_w[g] / 2
        out.append(f'<text class="workload" x="{gx:.1f}" y="{top + plot_h + 18}" '
                   f'text-anchor="middle" font-weight="bold">{escape(g)}</text>')
        out.append('</g>')
        x += group_gap
    # Legend.
    lx, ly = left, top + plot_h + 44
    for s in systems:
        out.append(f'<rect x="{lx}" y="{ly - 10}" width="12" height="12" fill="{colours[s]}"/>')
        out.append(f'<text class="legend" x="{lx + 16}" y="{ly}">{escape(s)}</text>')
        lx += 28 + 8 * len(s)
    out.append('</svg>')
    return "\n".join(out) + "\n"


def main(argv):
    ap = argparse.ArgumentParser(
        description="Draw blq-bench output (BENCH lines) as an SVG bar chart: per workload "
                    "and system the median ns/item over the runs, with min-max whiskers.")
    ap.add_argument("files", nargs="+", metavar="FILE", help="blq-bench output, one or more runs")
    ap.add_argument("-o", "--output", metavar="OUT.svg", help="where to write (default: stdout)")
    ap.add_argument("--title", help="the chart's title (default: the input files' names)")
    ap.add_argument("--workloads", metavar="W1,W1-NOISY",
                    help="draw only these groups, in this order (a DUMP-* group is named "
                         "with its size, e.g. 'DUMP-FS 64 B')")
    args = ap.parse_args(argv)
    try:
        series, skipped = parse(args.files)
    except OSError as e:
        print(f"bench_chart.py: {e}", file=sys.stderr)
        return 2
    except BadInput as e:
        print(f"bench_chart.py: {e}", file=sys.stderr)
        return 1
    if not series:
        print(f"bench_chart.py: no BENCH line with ns_per_item in {', '.join(args.files)} "
              f"(blq-bench prints 'BENCH <workload> <system> ns_per_item=...')", file=sys.stderr)
        return 1
    if args.workloads:
        want = [w.strip() for w in args.workloads.split(",") if w.strip()]
        have = {g for g, _ in series}
        missing = [w for w in want if w not in have]
        if missing:
            print(f"bench_chart.py: --workloads: no BENCH line for {', '.join(missing)} "
                  f"(the input has {', '.join(sorted(have))})", file=sys.stderr)
            return 1
        series = {(g, s): v for w in want for (g, s), v in series.items() if g == w}
    if skipped:
        print(f"bench_chart.py: skipped {skipped} BENCH line(s) without ns_per_item "
              f"(IDLE-*)", file=sys.stderr)
    svg = draw(series, args.title or ", ".join(args.files), args.files)
    if args.output:
        try:
            with open(args.output, "w", encoding="utf-8") as f:
                f.write(svg)
        except OSError as e:
            print(f"bench_chart.py: cannot write {args.output}: {e}", file=sys.stderr)
            return 2
    else:
        sys.stdout.write(svg)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
