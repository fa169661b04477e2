#!/usr/bin/env bash
# Soak of blq-demo: for SECONDS (default 20; run it for minutes by hand,
# e.g. `tests/demo/soak.sh build/dev/demo/blq-demo . 300`), producers of a
# loaded queue go up and down at random while a second key is created and
# stopped over and over. Checks that the daemon's memory stays flat (RSS
# of the last quarter within 8 MiB of the second quarter's) and that every
# stop's accounting balances (in == processed + failed + leaked + expired
# + lost). Usage: soak.sh BLQ_DEMO SOURCE_DIR [SECONDS]
set -uo pipefail
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
seconds=${E2E_ARGS[0]:-20}

demo_start --log-level warn
# A queue its workers cannot keep up with at full load: leaks, retries and
# failures all happen.
cat >"$E2E_TMP/load.json" <<'JSON'
{"capacity":20000,"workers_min":1,"workers_max":8,"worker_delay":200000,
 "heartbeat":100000000,"wakeup_factor":0.05,"sleep_factor":0.01,"producers_min":0,
 "producers_max":16,"producer_delay":200000,"allow_leak":true,"fail_rate":0.05,
 "max_retries":1,"retry_interval_ns":1000000,"backoff":"exponential"}
JSON
cat >"$E2E_TMP/cycle.json" <<'JSON'
{"capacity":1000,"workers_min":1,"workers_max":2,"producers_min":2,"producers_max":4,
 "producer_delay":100000,"worker_delay":100000,"allow_leak":true}
JSON
init soak "$E2E_TMP/load.json"
expect 200 '' "init soak"

rss() { awk '/^VmRSS/ {print $2}' "/proc/$DAEMON_PID/status"; }
samples=()
cycles=0
end=$((SECONDS + seconds))
# At least 8 samples (the memory check's quarters), however slowly a busy
# host runs the cycles, but never past three times the length asked for.
cap=$((SECONDS + 3 * seconds))
while [ $SECONDS -lt $end ] || { [ ${#samples[@]} -lt 8 ] && [ $SECONDS -lt $cap ]; }; do
	active=$(st soak .producers_active)
	target=$((RANDOM % 17))
	if [ "$target" -gt "$active" ]; then
		call GET "/api/v1/producer-up?key=soak&delta=$((target - active))"
		expect 200 '' ""
	elif [ "$target" -lt "$active" ]; then
		call GET "/api/v1/producer-down?key=soak&delta=$((active - target))"
		expect 200 '' ""
	fi
	init cycle "$E2E_TMP/cycle.json"
	expect 200 '' ""
	sleep 0.5
	call GET "/api/v1/stop?key=cycle"
	check_final "stop of cycle $cycles" >/dev/null
	cycles=$((cycles + 1))
	samples+=("$(rss)")
	sleep 0.5
done
call GET "/api/v1/stop?key=soak"
check_final "stop of soak"
n=${#samples[@]}
[ "$n" -ge 8 ] || fail "only $n samples; run longer"
q=$((n / 4))
max_of() { printf '%s\n' "$@" | sort -n | tail -1; }
second=$(max_of "${samples[@]:q:q}")
last=$(max_of "${samples[@]:$((n - q))}")
[ $((last - second)) -le 8192 ] || fail "RSS grew by $((last - second)) KiB"
ok "soak: ${seconds} s, $cycles init/stop cycles, every stop balanced, RSS max second quarter ${second} KiB, last quarter ${last} KiB"
demo_finish
