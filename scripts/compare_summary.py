#!/usr/bin/env python3
"""The figures #33's targets are stated in, from repeated blq-bench runs.

    scripts/compare_summary.py FILE...

FILE: the output of several `blq-bench --compare ...` runs, one after
another (a run starts at its "# blq-bench:" line). DESIGN.md: this host
swings 2-5x between quiet and busy periods, so every figure is a median
of per-run ratios (systems compared within one run), never a ratio of
medians; the spread is slowest/fastest run of blq alone.

Prints, per workload found:
  W1, W1-NOISY, W1-MANY: blq's ns/item (median, min-max, slowest/fastest),
    the median per-run ratio of each other system's ns/item to blq's, and
    blq's and pairs' ratio to the floor (min-max); W1-MANY also blq's own
    w1_ratio (its paired W1 rounds, blq-bench prints it).
  W1-BATCH: floor_ratio of blq and of pairs (median, min-max).
  W3: each system's p50/p99/p999 medians.
Exit 2 when a file cannot be read or holds no BENCH line.
"""
import re
import statistics
import sys


def fail(why):
    print("compare_summary: " + why, file=sys.stderr)
    sys.exit(2)


def runs_of(paths):
    runs = []
    for path in paths:
        try:
            text = open(path, encoding="utf-8").read()
        except OSError as e:
            fail(f"{path}: {e.strerror}")
        for line in text.splitlines():
            if line.startswith("# blq-bench:") or not runs:
                runs.append({})
            m = re.match(r"BENCH (\S+) (\S+) (.*)", line)
            if m:
                fields = dict(kv.split("=", 1) for kv in m.group(3).split() if "=" in kv)
                runs[-1][(m.group(1), m.group(2))] = {k: float(v) for k, v in fields.items()}
    runs = [r for r in runs if r]
    if not runs:
        fail("no BENCH line in " + " ".join(paths))
    return runs


def fmt(xs, digits=2):
    return f"{statistics.median(xs):.{digits}f} ({min(xs):.{digits}f}-{max(xs):.{digits}f})"


def ratios(runs, w, num, den, field="ns_per_item"):
    out = []
    for r in runs:
        if (w, num) in r and (w, den) in r and r[(w, den)][field] > 0:
            out.append(r[(w, num)][field] / r[(w, den)][field])
    return out


def throughput(runs, w):
    blq = [r[(w, "blq")]["ns_per_item"] for r in runs if (w, "blq") in r]
    if not blq:
        return
    print(f"{w}: {len(blq)} runs; blq {fmt(blq, 1)} ns/item, slowest/fastest {max(blq) / min(blq):.2f}")
    for other in ("glib", "mutex", "ckring", "pairs"):
        xs = ratios(runs, w, other, "blq")
        if xs:
            print(f"  {other}/blq {fmt(xs)}")
    # W1-MANY's floor is W1's (the same items, task and workers).
    for sys_ in ("blq", "pairs"):
        xs = ratios(runs, w, sys_, "floor")
        if xs:
            print(f"  {sys_}/floor {fmt(xs)}")
    own = [r[(w, "blq")]["w1_ratio"] for r in runs if "w1_ratio" in r.get((w, "blq"), {})]
    if own:
        print(f"  blq/its W1 {fmt(own)}")


def batch(runs, w="W1-BATCH"):
    for sys_ in ("blq", "pairs"):
        xs = [r[(w, sys_)]["floor_ratio"] for r in runs if "floor_ratio" in r.get((w, sys_), {})]
        if xs:
            print(f"{w} {sys_}/floor {fmt(xs)} over {len(xs)} runs")


def latency(runs, w="W3"):
    systems = sorted({s for r in runs for (wl, s) in r if wl == w})
    for s in systems:
        got = [r[(w, s)] for r in runs if (w, s) in r and "p50_us" in r[(w, s)]]
        if got:
            p = {k: statistics.median(g[k] for g in got) for k in ("p50_us", "p99_us", "p999_us")}
            print(f"{w} {s}: p50 {p['p50_us']:.1f} p99 {p['p99_us']:.1f} "
                  f"p999 {p['p999_us']:.1f} us (medians of {len(got)} runs)")


def main():
    if len(sys.argv) < 2:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        sys.exit(2)
    runs = runs_of(sys.argv[1:])
    # Ratios to W1's floor need the floor line of W1 itself.
    for r in runs:
        if ("W1", "floor") in r:
            r[("W1-MANY", "floor")] = r.get(("W1-MANY", "floor"), r[("W1", "floor")])
    for w in ("W1", "W1-NOISY", "W1-MANY"):
        throughput(runs, w)
    batch(runs)
    latency(runs)


if __name__ == "__main__":
    main()
