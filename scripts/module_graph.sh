#!/usr/bin/env bash
# Prints the library's module include graph from the sources: for each
# module folder, which other modules' headers its files include, and
# through which headers. Run it in any checkout (also an old one, where
# modules reached each other through "../x/y.h" paths):
#   scripts/module_graph.sh [checkout]        (default: this one)
# docs/modules.md says which edges are allowed; the build enforces them
# (blq_module in cmake/blq_helpers.cmake).
set -euo pipefail
root=${1:-$(cd "$(dirname "$0")/.." && pwd)}
python3 - "$root" <<'PY'
import os, re, sys
root = sys.argv[1]
modules = ["util", "schedule", "queue", "qos", "dlq", "workers", "metrics"]
inc = re.compile(r'^\s*#\s*include\s*"([^"]+)"')
# Where each header lives (a module folder or its shared/ subfolder).
where = {}
for m in modules:
    for d, _, files in os.walk(os.path.join(root, m)):
        for f in files:
            if f.endswith(".h"):
                where.setdefault(f, []).append(os.path.relpath(os.path.join(d, f), root))
def owner(path):
    return path.split(os.sep)[0]
edges = {}
for m in modules:
    for d, _, files in os.walk(os.path.join(root, m)):
        for f in files:
            if not f.endswith((".c", ".h")):
                continue
            src = os.path.join(d, f)
            for line in open(src, errors="replace"):
                mm = inc.match(line)
                if not mm:
                    continue
                name = mm.group(1)
                local = os.path.normpath(os.path.join(d, name))
                if os.path.exists(local):
                    target = os.path.relpath(local, root)
                elif os.path.basename(name) in where:
                    cands = where[os.path.basename(name)]
                    own = [c for c in cands if owner(c) == m]
                    target = (own or cands)[0]
                else:
                    continue
                if owner(target) != m:
                    edges.setdefault((m, owner(target)), set()).add(target)
for m in modules:
    outs = sorted((t, hs) for (s, t), hs in edges.items() if s == m)
    if not outs:
        print(f"{m:<9} -> (public headers only)")
    for t, hs in outs:
        print(f"{m:<9} -> {t:<9} {' '.join(sorted(hs))}")
PY
