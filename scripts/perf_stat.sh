#!/usr/bin/env bash
# What a workload costs the machine beyond its wall time: perf stat's
# task-clock (CPU time of every thread of the process, spinning and
# yielding included) and context switches, per item, around blq-bench
# running one system on one workload. A queue that spins or yields on a
# busy host shows there even when its ns/item looks fine (issue #33).
#
#   scripts/perf_stat.sh BLQ_BENCH RUNS WORKLOAD...
#   e.g. scripts/perf_stat.sh build/rel/bench/blq-bench 7 W1 W1-NOISY W3
#   SYSTEM=glib scripts/perf_stat.sh build/rel/bench/blq-bench 7 W1
#
# Environment: SYSTEM (blq, the default; glib, mutex, ckring, pairs, floor: passed
# as blq-bench --only), ROUNDS (blq-bench --rounds, default 3), ITEMS
# (blq-bench --items; default each workload's own count).
# Each run is one process per workload (perf stat counts a whole process);
# the runs alternate the workloads (W1 W3, W1 W3, ...). Printed per run
# and as medians over the runs: context switches per million items and
# task-clock ns per item (items: every item the process ran, so W1-MANY's
# blq counts its paired W1 runs too). The counts include the process's
# start (calibration ~10 ms, thread and queue creation): under 2% of a W1
# run. W1-NOISY's noise threads are taken off (blq-bench prints what they
# used); cpu-migrations are printed as counted.
set -euo pipefail
if [ $# -lt 3 ] || [ ! -x "$1" ] || ! [[ "$2" =~ ^[0-9]+$ ]] || [ "$2" -lt 1 ]; then
	echo "usage: $0 BLQ_BENCH RUNS WORKLOAD...  (env SYSTEM, ROUNDS, ITEMS)" >&2
	exit 2
fi
bench=$1 runs=$2
shift 2
system=${SYSTEM:-blq} rounds=${ROUNDS:-3}
command -v perf >/dev/null || { echo "$0: perf not found" >&2; exit 1; }
# The software events; on a host where perf cannot read one, go on with
# the others and say so (a VM without a PMU still has these: they are the
# kernel's own counts).
events=()
for e in task-clock context-switches cpu-migrations; do
	if perf stat -x, -e "$e" true 2>&1 >/dev/null | grep -q "^[0-9.]*,[^,]*,$e"; then
		events+=("$e")
	else
		echo "# perf stat cannot read $e here: left out" >&2
	fi
done
[ ${#events[@]} -gt 0 ] || { echo "$0: perf stat reads none of the events here (perf_event_paranoid?)" >&2; exit 1; }
evlist=$(IFS=,; echo "${events[*]}")
args=(--only "$system" --rounds "$rounds")
[ -n "${ITEMS:-}" ] && args+=(--items "$ITEMS")
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
echo "# perf stat -x, -e $evlist -- $bench ${args[*]} WORKLOAD; $runs runs; $(uptime)"
for ((i = 1; i <= runs; i++)); do
	for wl in "$@"; do
		f=$out/$i.$wl
		perf stat -x, -e "$evlist" -o "$f.perf" -- "$bench" "${args[@]}" "$wl" >"$f.out"
	done
	echo "run $i/$runs done" >&2
done
python3 - "$out" "$runs" "$system" "${ITEMS:-}" "$@" <<'PY'
import os, re, statistics, sys
d, runs, system, items_env, wls = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5:]

def per_round(wl):
    if items_env:
        n = int(items_env)
        n -= n % 2
        return n - n % 64 if wl == 'W1-MANY' else n
    return {'W3': 200000, 'W4': 20000}.get(wl, 2000000)

med = {}
print(f"{'run':>3} {'workload':<10} {'system':<7} {'items':>9} {'ctx_sw':>9} {'cs_per_Mitem':>12} "
      f"{'task_ms':>9} {'task_ns_item':>12} {'migr':>6} {'bench_ns_item':>13}")
for i in range(1, runs + 1):
    for wl in wls:
        f = os.path.join(d, f"{i}.{wl}")
        ev = {}
        for line in open(f + '.perf'):
            p = line.strip().split(',')
            if len(p) > 2 and re.match(r'^[0-9.]+$', p[0]):
                ev[p[2]] = float(p[0])
        items, bench_ns, noise_ns, noise_cs = 0, None, 0.0, 0.0
        for line in open(f + '.out'):
            m = re.match(r'# W1-NOISY noise threads: task_clock_ns=(\d+) context_switches=(\d+)', line)
            if m:
                noise_ns, noise_cs = float(m.group(1)), float(m.group(2))
            fl = line.split()
            if not fl or fl[0] != 'BENCH':
                continue
            r = int(re.search(r'\brounds=(\d+)', line).group(1))
            # A paired line (w1_ratio=) ran W1 beside each of its rounds.
            items += r * per_round(wl) * (2 if 'w1_ratio=' in line else 1)
            if fl[1] == wl and fl[2] == system and bench_ns is None:
                bench_ns = float(re.search(r'ns_per_item=([0-9.]+)', line).group(1))
        if items == 0:
            print(f"{i:>3} {wl:<10} {system:<7} no BENCH line (see blq-bench --only)")
            continue
        cs = ev.get('context-switches')
        tc = ev.get('task-clock')  # msec
        cs = None if cs is None else cs - noise_cs
        tc = None if tc is None else tc - noise_ns / 1e6
        row = {'cs': None if cs is None else cs / items * 1e6,
               'tn': None if tc is None else tc * 1e6 / items,
               'mg': ev.get('cpu-migrations'), 'bn': bench_ns}
        for k, v in row.items():
            if v is not None:
                med.setdefault(wl, {}).setdefault(k, []).append(v)
        fmt = lambda v, w, p: f"{v:>{w}.{p}f}" if v is not None else f"{'-':>{w}}"
        print(f"{i:>3} {wl:<10} {system:<7} {items:>9} {fmt(cs, 9, 0)} {fmt(row['cs'], 12, 1)} "
              f"{fmt(tc, 9, 1)} {fmt(row['tn'], 12, 1)} {fmt(row['mg'], 6, 0)} {fmt(bench_ns, 13, 1)}")
print()
print(f"medians over {runs} runs ({system}):")
for wl in wls:
    m = med.get(wl, {})
    g = lambda k, p: f"{statistics.median(m[k]):.{p}f}" if k in m else '-'
    print(f"PERF {wl} {system} cs_per_Mitem={g('cs', 1)} task_ns_per_item={g('tn', 1)} "
          f"migrations={g('mg', 0)} bench_ns_per_item={g('bn', 1)} runs={len(m.get('tn', m.get('cs', [])))}")
PY
