#!/usr/bin/env bash
# Soak of blq-demo: for SECONDS (default 20; run it for minutes by hand,
# e.g. `tests/demo/soak.sh build/dev/demo/blq-demo 300`), producers of a
# loaded queue go up and down at random while a second key is created and
# stopped over and over. Checks that the daemon's memory stays flat (RSS
# of the last quarter within 8 MiB of the second quarter's) and that every
# stop's accounting balances (in == processed + failed + leaked + expired
# + lost). Exit 0 when both hold.
set -euo pipefail
demo=${1:?usage: soak.sh BLQ_DEMO [SECONDS]}
seconds=${2:-20}
work=$(mktemp -d /tmp/blq-soak.XXXXXX)
pid=""
cleanup() {
	[ -n "$pid" ] && kill -9 "$pid" 2>/dev/null
	rm -rf "$work"
}
trap cleanup EXIT
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
api=$(port)
met=$(port)
"$demo" --listen "127.0.0.1:$api" --metrics-listen "127.0.0.1:$met" --dump-dir "$work/dump" \
	--log-level warn 2>"$work/daemon.log" &
pid=$!
url=http://127.0.0.1:$api/api/v1
for _ in $(seq 50); do curl -sf "$url/ping" >/dev/null 2>&1 && break; sleep 0.1; done
curl -sf "$url/ping" >/dev/null || { echo "soak: daemon did not start"; cat "$work/daemon.log"; exit 1; }

fail() { echo "soak: FAILED: $*"; tail -n 20 "$work/daemon.log"; exit 1; }
balanced() { # stop reply -> checks its final accounting
	jq -e '.final as $f | $f.balanced and ($f.in == $f.processed + $f.failed + $f.leaked + $f.expired + $f.lost)' \
		<<<"$1" >/dev/null || fail "unbalanced stop: $1"
}

# A queue its workers cannot keep up with at full load: leaks, retries and
# failures all happen.
load='{"capacity":20000,"workers_min":1,"workers_max":8,"worker_delay":200000,
  "heartbeat":100000000,"wakeup_factor":0.05,"sleep_factor":0.01,"producers_min":0,
  "producers_max":16,"producer_delay":200000,"allow_leak":true,"fail_rate":0.05,
  "max_retries":1,"retry_interval_ns":1000000,"backoff":"exponential"}'
curl -sf -XPOST -d "$load" "$url/init?key=soak" >/dev/null || fail "init soak"
cycle='{"capacity":1000,"workers_min":1,"workers_max":2,"producers_min":2,"producers_max":4,
  "producer_delay":100000,"worker_delay":100000,"allow_leak":true}'

rss() { awk '/^VmRSS/ {print $2}' "/proc/$pid/status"; }
samples=()
cycles=0
end=$((SECONDS + seconds))
while [ $SECONDS -lt $end ]; do
	active=$(curl -sf "$url/status?key=soak" | jq -r '.message | fromjson | .producers_active')
	target=$((RANDOM % 17))
	if [ "$target" -gt "$active" ]; then
		curl -sf "$url/producer-up?key=soak&delta=$((target - active))" >/dev/null || fail "up"
	elif [ "$target" -lt "$active" ]; then
		curl -sf "$url/producer-down?key=soak&delta=$((active - target))" >/dev/null || fail "down"
	fi
	curl -sf -XPOST -d "$cycle" "$url/init?key=cycle" >/dev/null || fail "init cycle"
	sleep 0.5
	balanced "$(curl -sf "$url/stop?key=cycle")"
	cycles=$((cycles + 1))
	samples+=("$(rss)")
	sleep 0.5
done
balanced "$(curl -sf "$url/stop?key=soak")"
n=${#samples[@]}
[ "$n" -ge 8 ] || fail "only $n samples; run longer"
q=$((n / 4))
max_of() { printf '%s\n' "$@" | sort -n | tail -1; }
second=$(max_of "${samples[@]:q:q}")
last=$(max_of "${samples[@]:$((n - q))}")
echo "soak: ${seconds} s, $cycles init/stop cycles, RSS max second quarter ${second} KiB, last quarter ${last} KiB"
[ $((last - second)) -le 8192 ] || fail "RSS grew by $((last - second)) KiB"
kill -TERM "$pid"
wait "$pid" || fail "daemon exit code $? after SIGTERM"
pid=""
grep -q "balanced for every queue" "$work/daemon.log" || fail "no balanced line at exit"
echo "soak: ok"
