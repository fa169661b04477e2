#!/usr/bin/env bash
# A/B speed of two blq-bench binaries (say, the commit before a change and
# the change), side by side on this host: runs them alternately (A B, then
# B A, ...) so a host that speeds up or slows down during the measurement
# weighs on both alike, and reports per workload the medians of each one's
# ns/item and the median of the per-run ratios B/A (DESIGN.md: this host
# swings 2-5x, so only paired ratios mean anything).
#
#   scripts/ab_bench.sh A/blq-bench B/blq-bench RUNS [WORKLOAD...] [-- blq-bench args]
#   e.g. scripts/ab_bench.sh /tmp/base/bench/blq-bench build/rel/bench/blq-bench 9 W1 W1-QOS RETRY W1-PROM
#
# Ratio < 1: B is faster. Latency workloads (W3) also get their p50, p90
# and p99 compared the same way. A warning on stderr when the two builds
# are configured differently (their CMakeCache.txt). Exit 2 on bad
# arguments.
set -euo pipefail
if [ $# -lt 3 ] || [ ! -x "$1" ] || [ ! -x "$2" ] || ! [[ "$3" =~ ^[0-9]+$ ]] || [ "$3" -lt 1 ]; then
	echo "usage: $0 A-blq-bench B-blq-bench RUNS [WORKLOAD...] [-- blq-bench args]" >&2
	exit 2
fi
a=$1 b=$2 runs=$3
shift 3
workloads=() extra=(--rounds 3)
while [ $# -gt 0 ]; do
	if [ "$1" = "--" ]; then shift; extra=("$@"); break; fi
	workloads+=("$1"); shift
done
[ ${#workloads[@]} -gt 0 ] || workloads=(W1)
# The two builds' configurations must match: the same code built with and
# without hiredis (a larger binary, other addresses for the hot loops)
# measured W1 0.908 B/A over 9 runs, as far from 1 as most changes this
# script is asked about (docs/benchmarks.md, "What an A/B can tell").
# A binary at BUILD/bench/blq-bench has BUILD/CMakeCache.txt.
config() {
	grep -E '^(CMAKE_BUILD_TYPE|CMAKE_C_FLAGS[A-Z_]*|CMAKE_C_COMPILER|BLQ_WITH_REDIS|BLQ_SANITIZE):' \
		"$(dirname "$(dirname "$1")")/CMakeCache.txt" 2>/dev/null | sort
}
ca=$(config "$a") cb=$(config "$b")
if [ -z "$ca" ] || [ -z "$cb" ]; then
	echo "ab_bench: warning: no CMakeCache.txt beside one binary: cannot check that both builds are configured alike" >&2
elif [ "$ca" != "$cb" ]; then
	echo "ab_bench: warning: the two builds are configured differently (the ratios then include the layout):" >&2
	diff <(echo "$ca") <(echo "$cb") | grep '^[<>]' | sed 's/^/  /' >&2 || true # diff: 1
fi
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
for ((i = 1; i <= runs; i++)); do
	if ((i % 2)); then order="a b"; else order="b a"; fi
	for side in $order; do
		bin=$a; [ "$side" = b ] && bin=$b
		"$bin" "${extra[@]}" "${workloads[@]}" | grep '^BENCH ' | sed "s/^/RUN $i $side /" >>"$out/all"
	done
	echo "run $i/$runs done" >&2
done
python3 - "$out/all" "${workloads[@]}" <<'PY'
import re, statistics, sys
rows = {}
for line in open(sys.argv[1]):
    f = line.split()
    run, side, wl = int(f[1]), f[2], f[4]
    if f[5] != 'blq':
        continue
    for key in ('ns_per_item', 'p50_us', 'p90_us', 'p99_us'):
        m = re.search(r'\b' + key + r'=([0-9.]+)', line)
        if m:
            rows.setdefault((wl, key), {}).setdefault(run, {})[side] = float(m.group(1))
print(f"{'workload':<16} {'A':>10} {'B':>10} {'B/A median':>11} {'runs':>5}  per-run B/A")
for wl in sys.argv[2:]:
    for key in ('ns_per_item', 'p50_us', 'p90_us', 'p99_us'):
        runs = rows.get((wl, key), {})
        pairs = [(r['a'], r['b']) for r in runs.values() if 'a' in r and 'b' in r]
        if not pairs:
            if key == 'ns_per_item':
                print(f"{wl:<16} no figures")
            continue
        ratios = [bb / aa for aa, bb in pairs if aa > 0]
        name = wl if key == 'ns_per_item' else f"{wl} {key}"
        print(f"{name:<16} {statistics.median(p[0] for p in pairs):>10.1f} "
              f"{statistics.median(p[1] for p in pairs):>10.1f} {statistics.median(ratios):>11.3f} "
              f"{len(pairs):>5}  " + " ".join(f"{r:.2f}" for r in ratios))
PY
