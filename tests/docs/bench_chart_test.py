#!/usr/bin/env python3
"""Tests scripts/bench_chart.py, the benchmark chart of docs/benchmarks.md.

Usage: bench_chart_test.py [CHECKOUT]   (ctest `bench_chart`; default: the
checkout this file is in)

It runs the script on tests/fixtures/bench_sample.txt (three hand-made
runs of blq-bench output) and parses the SVG: there must be one bar per
workload and system whose median, min, max and run count are the ones
worked out by hand from the fixture, a value label with the median, the
groups in the order of the input, and the IDLE line skipped with a note.
Then it feeds the script inputs of its own (written to a temporary folder):
item sizes charted apart, an even number of runs, --workloads; and bad
input, which must exit non-zero with a message naming the problem: no
BENCH line, a BENCH line too short, a value that is not a number, a word
that is not key=value, a file that does not exist.
Each check prints "ok: ..." or "FAIL: ..."; the exit status is 1 if any
failed.
"""

import os
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

ROOT = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else
                       os.path.join(os.path.dirname(__file__), "..", ".."))
SCRIPT = os.path.join(ROOT, "scripts", "bench_chart.py")
FIXTURE = os.path.join(ROOT, "tests", "fixtures", "bench_sample.txt")
SVG = "{http://www.w3.org/2000/svg}"
failures = 0


def check(ok, what):
    global failures
    print(("ok: " if ok else "FAIL: ") + what)
    if not ok:
        failures += 1


def run(*args):
    return subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True,
                          timeout=30)


def bars(svg_text):
    """{(workload, system): (median, min, max, runs, label)} and the groups' order."""
    root = ET.fromstring(svg_text)
    labels = {(t.get("data-workload"), t.get("data-system")): t.text
              for t in root.iter(SVG + "text") if t.get("class") == "value"}
    out = {}
    for r in root.iter(SVG + "rect"):
        if r.get("class") != "bar":
            continue
        key = (r.get("data-workload"), r.get("data-system"))
        out[key] = (float(r.get("data-median")), float(r.get("data-min")),
                    float(r.get("data-max")), int(r.get("data-runs")), labels.get(key))
    groups = [t.text for t in root.iter(SVG + "text") if t.get("class") == "workload"]
    return out, groups


# --- the fixture: three runs of W1, W1-NOISY, W1-BATCH --------------------
with tempfile.TemporaryDirectory() as tmp:
    out_svg = os.path.join(tmp, "chart.svg")
    p = run(FIXTURE, "-o", out_svg, "--title", "sample")
    check(p.returncode == 0, f"the fixture is drawn (exit {p.returncode}: {p.stderr.strip()})")
    check("skipped 1 BENCH line(s) without ns_per_item" in p.stderr,
          "the IDLE line is skipped with a note")
    got, groups = bars(open(out_svg, encoding="utf-8").read()) if p.returncode == 0 else ({}, [])
    want = {
        ("W1", "blq"): (100, 90, 320, 3, "100"),
        ("W1", "glib"): (140, 130, 150, 3, "140"),
        ("W1", "mutex"): (210, 200, 220, 3, "210"),
        ("W1", "ckring"): (190, 180, 200, 3, "190"),
        ("W1", "floor"): (28, 25, 30, 3, "28.0"),
        ("W1-NOISY", "blq"): (250, 140, 300, 3, "250"),
        ("W1-NOISY", "glib"): (160, 150, 170, 3, "160"),
        ("W1-NOISY", "mutex"): (470, 450, 480, 3, "470"),
        ("W1-NOISY", "ckring"): (740, 700, 750, 3, "740"),
        ("W1-BATCH", "blq"): (145, 140, 150, 3, "145"),
    }
    check(set(got) == set(want), f"one bar per workload and system: {sorted(got)}")
    for key, w in want.items():
        check(got.get(key) == w, f"{key[0]} {key[1]}: median, min, max, runs, label {w} "
                                 f"(got {got.get(key)})")
    check(groups == ["W1", "W1-NOISY", "W1-BATCH"], f"groups in input order: {groups}")

    # --- inputs of its own ------------------------------------------------
    def write(name, text):
        path = os.path.join(tmp, name)
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        return path

    sizes = write("sizes.txt",
                  "BENCH DUMP-FS blq ns_per_item=80.0 items_per_s=1 allocs_per_item=0 "
                  "item_bytes=64 mb_per_s=800.0 rounds=3\n"
                  "BENCH DUMP-FS blq ns_per_item=1100.0 items_per_s=1 allocs_per_item=0 "
                  "item_bytes=1024 mb_per_s=931.0 rounds=3\n"
                  "BENCH W1 blq ns_per_item=10.0 rounds=1\n"
                  "BENCH W1 blq ns_per_item=20.0 rounds=1\n")
    p = run(sizes)
    got, groups = bars(p.stdout) if p.returncode == 0 else ({}, [])
    check(groups == ["DUMP-FS 64 B", "DUMP-FS 1024 B", "W1"],
          f"item sizes are charted apart, to stdout without -o: {groups}")
    check(got.get(("W1", "blq")) == (15, 10, 20, 2, "15.0"),
          f"the median of two runs is their mean: {got.get(('W1', 'blq'))}")
    p = run(sizes, "--workloads", "W1,DUMP-FS 64 B")
    got, groups = bars(p.stdout) if p.returncode == 0 else ({}, [])
    check(groups == ["W1", "DUMP-FS 64 B"], f"--workloads picks and orders the groups: {groups}")
    p = run(sizes, "--workloads", "W9")
    check(p.returncode == 1 and "--workloads: no BENCH line for W9" in p.stderr,
          f"--workloads with an unknown group is refused: {p.stderr.strip()}")

    bad = [
        ("empty.txt", "# blq-bench: nothing measured\n", "no BENCH line with ns_per_item in"),
        ("short.txt", "# run 1\nBENCH W1 blq\n", "short.txt:2: malformed BENCH line"),
        ("nan.txt", "BENCH W1 blq ns_per_item=fast items_per_s=1\n",
         "nan.txt:1: ns_per_item='fast' is not a number"),
        ("zero.txt", "BENCH W1 blq ns_per_item=0 items_per_s=1\n",
         "zero.txt:1: ns_per_item='0' must be a positive number"),
        ("nokv.txt", "BENCH W1 blq ns_per_item=1.0 rounds\n",
         "nokv.txt:1: malformed BENCH line: 'rounds' is not key=value"),
        ("order.txt", "BENCH W1 ns_per_item=1.0 items_per_s=1\n",
         "order.txt:1: malformed BENCH line (workload and system come before"),
    ]
    for name, text, message in bad:
        p = run(write(name, text), "-o", os.path.join(tmp, "bad.svg"))
        check(p.returncode == 1 and message in p.stderr,
              f"{name} is refused naming the problem (exit {p.returncode}: {p.stderr.strip()})")
    check(not os.path.exists(os.path.join(tmp, "bad.svg")), "bad input writes no chart")
    p = run(os.path.join(tmp, "missing.txt"))
    check(p.returncode == 2 and "cannot read" in p.stderr and "missing.txt" in p.stderr,
          f"a missing file is named (exit {p.returncode}: {p.stderr.strip()})")

print(f"bench_chart_test: {failures} failed")
sys.exit(1 if failures else 0)
