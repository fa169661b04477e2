#!/usr/bin/env bash
# The README's demo command: from nothing, install what the build needs,
# build blq-demo, start it, and run the original's 100k scenario
# (demo/requests/demo100k.json: a leaky queue of 100,000, 2..32 workers of
# 300 us, 4..20 producers of 5 ms) for SECONDS (default 30): producers go
# 4 -> 20 over the first 40% and back to 4 over the second half. One status
# line a second, then a graceful stop with the final accounting, then
# SIGTERM to the daemon. Usage: scripts/demo.sh [SECONDS]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
seconds=${1:-30}
[[ $seconds =~ ^[1-9][0-9]*$ ]] || { echo "usage: scripts/demo.sh [SECONDS]" >&2; exit 2; }

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
trap 'kill -9 $pid 2>/dev/null || true; rm -rf "$work"' EXIT
url=http://127.0.0.1:$api/api/v1
for _ in $(seq 50); do curl -sf "$url/ping" >/dev/null 2>&1 && break; sleep 0.1; done
echo "== blq-demo: dashboard http://127.0.0.1:$api/ (open it in a browser), api $url, metrics http://127.0.0.1:$met/metrics, log $work/daemon.log"

# The scenario scripts' requests (demo/requests/lib.sh): blq_call ACTION
# prints the reply and fails, naming the action and the HTTP code, on
# anything but 200.
# shellcheck disable=SC2034 # read by lib.sh
BLQ_KEY=demo100k BLQ_STEP=4 BLQ_DEMO_URL=http://127.0.0.1:$api
# shellcheck source=demo/requests/lib.sh
. demo/requests/lib.sh

echo "== init demo100k (demo/requests/demo100k.json); producers 4 -> 20 -> 4 over ${seconds} s"
echo "   (2 workers of 300 us serve about 5,500 items/s, more than 20 producers of 5 ms make,"
echo "   so the balancer keeps workers_min; demo/requests/demo100k_dump.sh run overloads it)"
blq_call init >/dev/null
printf '%4s %7s %9s %5s %9s %9s %9s %9s\n' t size "workers" prod "in/s" "out/s" "leak/s" "lost/s"
printf '%4s %7s %9s %5s %9s %9s %9s %9s\n' "" "" "act/slp" "" "" "" "" ""
span=$((seconds * 2 / 5))
ups=0
downs=0
prev=""
for ((t = 1; t <= seconds; t++)); do
	while ((ups < 4 && t >= (ups + 1) * span / 4)); do
		blq_call up >/dev/null
		ups=$((ups + 1))
	done
	while ((downs < ups && t >= seconds / 2 + (downs + 1) * span / 4)); do
		blq_call down >/dev/null
		downs=$((downs + 1))
	done
	sleep 1
	# Counters now, as "size active asleep producers in out leaked lost".
	cur=$(blq_call status | jq -r '.message | fromjson |
		[.queue.size, .queue.workers.active, .queue.workers.asleep, .producers_active,
		 .queue.in, .queue.processed + .queue.failed + .queue.expired, .queue.leaked,
		 .queue.lost] | @tsv')
	read -r size act slp prod in out leak lost <<<"$cur"
	if [ -n "$prev" ]; then
		read -r _ _ _ _ pin pout pleak plost <<<"$prev"
		printf '%3ss %7s %9s %5s %9s %9s %9s %9s\n' "$t" "$size" "$act/$slp" "$prod" \
			$((in - pin)) $((out - pout)) $((leak - pleak)) $((lost - plost))
	fi
	prev=$cur
done

echo "== graceful stop: producers stop, the queue drains; final accounting"
blq_call stop | jq -r '.final |
	"in \(.in) = processed \(.processed) + failed \(.failed) + leaked \(.leaked) + expired \(.expired) + lost \(.lost): \(if .balanced then "balanced" else "NOT BALANCED" end)"'
kill -TERM "$pid"
rc=0
wait "$pid" || rc=$?
echo "== blq-demo exited $rc: $(tail -n 1 "$work/daemon.log")"
exit "$rc"
