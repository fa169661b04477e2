#!/usr/bin/env bash
# The README's demo command: from nothing, install what the build needs,
# build blq-demo, start it, and show the queue balancing and leaking for
# SECONDS (default and least 60: the dump file is flushed, and so
# restorable, 30 s after its first leak): the original's demo100k_dump scenario
# (demo/requests/demo100k_dump.json: a leaky queue of 100,000, 2..20
# workers of 300 us, producers of 0.5 ms, leaks dumped to files and
# restored), its producers taken from 4 to 44 and back. One status line a
# second saying what happens (the pool grows, the queue fills and leaks,
# the pool shrinks, the dump is restored), then a graceful stop with the
# final accounting, then SIGTERM to the daemon. The dashboard's address
# comes first: open it to watch. The daemon's log and the dump are kept in
# a /tmp/blq-demo.* directory, named on the last line with the command
# that removes them. Usage: scripts/demo.sh [SECONDS]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
seconds=${1:-60}
[[ $seconds =~ ^[1-9][0-9]*$ ]] && ((seconds >= 60)) ||
	{ echo "usage: scripts/demo.sh [SECONDS] (60 or more: the dump is flushed 30 s after its first leak)" >&2; exit 2; }

missing=()
for p in build-essential cmake pkg-config libck-dev libhiredis-dev libmicrohttpd-dev \
	libjansson-dev curl jq; do
	dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
	echo "== installing ${missing[*]}"
	[ "$(id -u)" -eq 0 ] || { echo "scripts/demo.sh: run as root or install: ${missing[*]}" >&2; exit 1; }
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq >/dev/null
	apt-get install -y -qq "${missing[@]}" >/dev/null
fi

echo "== building blq-demo"
mkdir -p build
cmake -S . -B build/demo -DCMAKE_BUILD_TYPE=Release -DBLQ_BUILD_TESTS=OFF -DBLQ_BUILD_BENCH=OFF \
	-DBLQ_BUILD_EXAMPLES=OFF -DBLQ_BUILD_DEMO=ON >build/demo.log 2>&1 || { cat build/demo.log; exit 1; }
cmake --build build/demo -j "$(nproc)" --target blq-demo >>build/demo.log 2>&1 ||
	{ cat build/demo.log; exit 1; }

# The original's ports when free, else the next free ones.
free_port() {
	local p=$1
	while (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; do p=$((p + 1)); done
	echo "$p"
}
api=$(free_port 8080)
met=$(free_port $((api + 1)))
work=$(mktemp -d /tmp/blq-demo.XXXXXX)
build/demo/demo/blq-demo --listen "127.0.0.1:$api" --metrics-listen "127.0.0.1:$met" \
	--dump-dir "$work/dump" 2>"$work/daemon.log" &
pid=$!
# The log and the dump stay when the script ends, however it ends (they are
# what to read when something went wrong); the last line says where they
# are and how to remove them.
# shellcheck disable=SC2317 # called by the EXIT trap
kept() {
	kill -9 "$pid" 2>/dev/null || true
	echo "== kept: the daemon's log $work/daemon.log and the dump $work/dump; remove both with: rm -rf $work"
}
trap kept EXIT
url=http://127.0.0.1:$api/api/v1
for _ in $(seq 50); do curl -sf "$url/ping" >/dev/null 2>&1 && break; sleep 0.1; done
echo "== blq-demo: dashboard http://127.0.0.1:$api/ (open it in a browser), api $url, metrics http://127.0.0.1:$met/metrics, log $work/daemon.log"

# The scenario scripts' requests (demo/requests/lib.sh): blq_call ACTION
# prints the reply and fails, naming the action and the HTTP code, on
# anything but 200.
# shellcheck disable=SC2034 # read by lib.sh
BLQ_KEY=demo100k_dump BLQ_STEP=4 BLQ_DEMO_URL=http://127.0.0.1:$api
# shellcheck source=demo/requests/lib.sh
. demo/requests/lib.sh

# The load: 4 producers, then up 4 at a time to 44 (they then make ~88,000
# items/s, more than 20 workers of 300 us can take: the balancer grows the
# pool to its max, the queue of 100,000 fills and leaks into the dump),
# then back to 4 (the pool shrinks; the restorer feeds the dump back while
# the queue has room), then a quiet tail for the restore to finish.
peak=44
steps=$(((peak - 4) / BLQ_STEP))
up_from=$((seconds / 10))
up_to=$((seconds * 2 / 5))
down_from=$((seconds / 2))
down_to=$((seconds * 7 / 10))
echo "== init demo100k_dump (demo/requests/demo100k_dump.json): a leaky queue of 100,000,"
echo "   2..20 workers of 300 us, producers of 0.5 ms, leaks dumped to $work/dump and restored"
echo "   producers: 4, up to $peak over ${up_from}-${up_to} s, back to 4 over ${down_from}-${down_to} s, of ${seconds} s"
blq_call init >/dev/null
printf '%4s %7s %7s %4s %7s %7s %7s %8s %8s  %s\n' t size "act/slp" prod "in/s" "out/s" \
	"leak/s" dumped restored "what happens"
ups=0
downs=0
prev=""
for ((t = 1; t <= seconds; t++)); do
	while ((ups < steps && t >= up_from + (ups + 1) * (up_to - up_from) / steps)); do
		blq_call up >/dev/null
		ups=$((ups + 1))
	done
	while ((downs < ups && t >= down_from + (downs + 1) * (down_to - down_from) / steps)); do
		blq_call down >/dev/null
		downs=$((downs + 1))
	done
	sleep 1
	# Counters now: size active asleep producers in out leaked dumped restored.
	cur=$(blq_call status | jq -r '.message | fromjson |
		[.queue.size, .queue.workers.active, .queue.workers.asleep, .producers_active,
		 .queue.in, .queue.processed + .queue.failed + .queue.expired, .queue.leaked,
		 (.dump.written // 0), (.restore.restored // 0)] | @tsv')
	read -r size act slp prod in out leak dumped restored <<<"$cur"
	if [ -n "$prev" ]; then
		read -r _ pact _ _ pin pout pleak _ prestored <<<"$prev"
		what=()
		((act > pact)) && what+=("pool grows")
		((act < pact)) && what+=("pool shrinks")
		((size >= 99000)) && what+=("full")
		((leak > pleak)) && what+=("leaking to the dump")
		((restored > prestored)) && what+=("restoring")
		printf '%3ss %7s %7s %4s %7s %7s %7s %8s %8s  %s\n' "$t" "$size" "$act/$slp" "$prod" \
			$((in - pin)) $((out - pout)) $((leak - pleak)) "$dumped" "$restored" \
			"$(IFS=,; echo "${what[*]}" | sed 's/,/, /g')"
	fi
	prev=$cur
done

echo "== graceful stop: producers stop, the queue drains; final accounting"
blq_call stop | jq -r '.final |
	"in \(.in) = processed \(.processed) + failed \(.failed) + leaked \(.leaked) + expired \(.expired) + lost \(.lost): \(if .balanced then "balanced" else "NOT BALANCED" end)",
	"dump: \(.dump.in // 0) leaked items taken, \(.dump.written // 0) written; restore: \(.restore.restored // 0) fed back, \(.restore.lost // 0) lost"'
kill -TERM "$pid"
rc=0
wait "$pid" || rc=$?
echo "== blq-demo exited $rc: $(tail -n 1 "$work/daemon.log")"
exit "$rc"
