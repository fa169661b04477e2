#!/usr/bin/env bash
# Per-producer lanes (as built, commit d556b66) against per-CPU lanes
# (per-cpu-lanes.patch on the same commit: the lane chosen by
# sched_getcpu(), a CAS on its tail), side by side on this host
# (docs/benchmarks.md, "Per-CPU lanes, measured"). The variant is a
# measurement, not the library: the patch is never committed into queue/.
#
#   bench/variants/per_cpu_lanes.sh [RUNS [WORKLOAD...]]
#   default: 7 W1 W1-NOISY W1-MANY
#
# Makes two worktrees of BASE (default d556b66) in a temporary directory,
# applies the patch to one, builds blq-bench Release in both (-j$JOBS,
# default 2), then runs scripts/ab_bench.sh A=per-producer B=per-CPU
# (ratio B/A < 1: per-CPU faster). PERF_RUNS=N also runs
# scripts/perf_stat.sh N times on W1 for each. HOME_CPU=1 also applies
# per-cpu-lanes-home.patch to B: a worker starts its look at the lane of
# the CPU it runs on (sched_getcpu()) instead of its index's. ORDER=1 also builds and
# runs percpu_order.c against each (a migrating producer's order: 0
# inversions with per-producer lanes, some with per-CPU; and the front
# leak's victim: the leaker's own oldest, or another producer's; needs 2
# CPUs).
# The worktrees are removed
# on exit, whatever happens (KEEP=1 keeps them and prints where).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(git -C "$here" rev-parse --show-toplevel)
patch=$here/per-cpu-lanes.patch
base=${BASE:-d556b66} jobs=${JOBS:-2}
runs=${1:-7}
shift || true
workloads=("$@")
[ ${#workloads[@]} -gt 0 ] || workloads=(W1 W1-NOISY W1-MANY)
[ -f "$patch" ] || { echo "$0: no $patch" >&2; exit 1; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/blq-percpu.XXXXXX")
cleanup() {
	if [ "${KEEP:-0}" = 1 ]; then
		echo "# kept: $tmp/per-producer $tmp/per-cpu (git -C $repo worktree remove ...)" >&2
		return
	fi
	for w in per-producer per-cpu; do
		[ -d "$tmp/$w" ] && git -C "$repo" worktree remove --force "$tmp/$w" || true
	done
	git -C "$repo" worktree prune || true
	rm -rf "$tmp"
}
trap cleanup EXIT

git -C "$repo" worktree add --detach "$tmp/per-producer" "$base" >/dev/null
git -C "$repo" worktree add --detach "$tmp/per-cpu" "$base" >/dev/null
git -C "$tmp/per-cpu" apply "$patch"
bname=per-CPU
if [ "${HOME_CPU:-0}" = 1 ]; then
	git -C "$tmp/per-cpu" apply "$here/per-cpu-lanes-home.patch"
	bname="per-CPU, workers' home lane by CPU"
fi
for w in per-producer per-cpu; do
	echo "# building $w" >&2
	cmake -S "$tmp/$w" -B "$tmp/$w/build/rel" -DCMAKE_BUILD_TYPE=Release >/dev/null
	cmake --build "$tmp/$w/build/rel" -j"$jobs" --target blq-bench >/dev/null
done
if [ "${ORDER:-0}" = 1 ]; then
	for w in per-producer per-cpu; do
		cc -O2 -I "$tmp/$w/include" "$here/percpu_order.c" "$tmp/$w/build/rel/libblq.a" \
			-lpthread -lm -o "$tmp/$w/percpu_order"
		echo "# $w: $("$tmp/$w/percpu_order" || true)"
	done
fi
a=$tmp/per-producer/build/rel/bench/blq-bench
b=$tmp/per-cpu/build/rel/bench/blq-bench

echo "# $(date -u +%FT%TZ) base $base, A per-producer, B $bname; before: $(uptime)"
"$tmp/per-producer/scripts/ab_bench.sh" "$a" "$b" "$runs" "${workloads[@]}"
echo "# after: $(uptime)"
if [ -n "${PERF_RUNS:-}" ]; then
	# One perf_stat.sh run at a time, the sides alternated (A B, B A, ...)
	# as ab_bench.sh does; then per side the medians, and the median of
	# the per-run ratios B/A.
	for ((i = 1; i <= PERF_RUNS; i++)); do
		if ((i % 2)); then order="a b"; else order="b a"; fi
		for side in $order; do
			bin=$a; [ $side = b ] && bin=$b
			"$tmp/per-producer/scripts/perf_stat.sh" "$bin" 1 W1 2>/dev/null |
				grep '^PERF ' | sed "s/^/RUN $i $side /" >>"$tmp/perf"
		done
	done
	python3 - "$tmp/perf" "$bname" <<'PY'
import re, statistics, sys
runs = {}
for line in open(sys.argv[1]):
    f = line.split()
    v = {k: float(x) for k, x in re.findall(r'(\w+)=([0-9.]+)', line)}
    runs.setdefault(int(f[1]), {})[f[2]] = v
keys = ('task_ns_per_item', 'cs_per_Mitem', 'bench_ns_per_item', 'migrations')
print(f"perf_stat W1, {len(runs)} runs alternated: A per-producer, B {sys.argv[2]}")
print(f"{'':<18} {'A median':>9} {'B median':>9} {'B/A median':>11}  per-run B/A")
for k in keys:
    pairs = [(r['a'][k], r['b'][k]) for r in runs.values() if 'a' in r and 'b' in r]
    ratios = [b / a for a, b in pairs if a > 0]
    print(f"{k:<18} {statistics.median(p[0] for p in pairs):>9.1f} {statistics.median(p[1] for p in pairs):>9.1f} "
          f"{(statistics.median(ratios) if ratios else float('nan')):>11.3f}  " + " ".join(f"{x:.2f}" for x in ratios))
PY
	echo "# after perf: $(uptime)"
fi
