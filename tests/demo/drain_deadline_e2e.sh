#!/usr/bin/env bash
# blq-demo --drain-timeout: the SIGTERM drain's deadline (issue 34, item 10).
#
# - Bad values ("abc", "5" without a unit, "25h" over the bound, "") exit 64
#   with --drain-timeout named, without starting the daemon; "0" is
#   accepted (no deadline) and --help lists the flag.
# - The deploy files agree with each other: the drain deadline given in
#   docker-compose.yml, the Dockerfile and the systemd unit is shorter than
#   their stop grace period (stop_grace_period, TimeoutStopSec).
# - A drain that cannot finish (full queues of 200 ms tasks, 50 s drains;
#   two of them in one daemon: the deadline bounds the whole drain)
#   with --drain-timeout 2s: SIGTERM, the daemon exits 3 within the
#   deadline plus a margin (not before it), and the accounting balances:
#   without a DLQ what was left is counted lost (the Hard close's rule);
#   with a dump as the DLQ it is leaked into the dump, which writes it.
# - A drain that ends before the deadline exits 0 as without the flag.
# Without the flag, demo_scenario_sigterm (scenarios_e2e.sh sigterm) checks
# that the drain waits for every item (exit 0) and a second signal forces
# (exit 2).
#
# usage: drain_deadline_e2e.sh BLQ_DEMO SOURCE_DIR   (ctest passes both)
set -uo pipefail
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# --- bad values ------------------------------------------------------------
for bad in abc 5 25h "" -1s 1s2h; do
	"$E2E_DEMO" --listen 127.0.0.1:0 --metrics-listen 127.0.0.1:0 --dump-dir "$E2E_DUMP" \
		--drain-timeout "$bad" >"$E2E_TMP/out" 2>"$E2E_TMP/err"
	rc=$?
	[ "$rc" = 64 ] || fail "--drain-timeout \"$bad\": exit $rc, want 64"
	grep -q -- '--drain-timeout: expected a duration' "$E2E_TMP/err" ||
		fail "--drain-timeout \"$bad\": no message naming the flag: $(cat "$E2E_TMP/err")"
	grep -q 'dashboard on' "$E2E_TMP/err" && fail "--drain-timeout \"$bad\": the daemon started"
done
ok "bad --drain-timeout values exit 64 naming the flag"
"$E2E_DEMO" --drain-timeout 0 --help >"$E2E_TMP/out" 2>&1 || fail "--drain-timeout 0 --help: exit $?"
grep -q -- '--drain-timeout DURATION' "$E2E_TMP/out" || fail "--help does not list --drain-timeout"
grep -q 'exit 3' "$E2E_TMP/out" || fail "--help does not give the deadline's exit status"
ok "--drain-timeout 0 accepted; --help lists the flag and exit 3"

# --- the deploy files -----------------------------------------------------------
# secs DURATION: "25s", "1m30s", "30" (systemd: seconds) in whole seconds.
secs() {
	python3 -c '
import re, sys
t = sys.argv[1]
if t.isdigit():
    print(t); sys.exit()
n = 0
for v, u in re.findall(r"(\d+)(ms|h|m|s)", t):
    n += int(v) * {"h": 3600, "m": 60, "s": 1, "ms": 0.001}[u]
print(int(n))' "$1"
}
D=$E2E_SRC/demo/deploy
grace=$(sed -n 's/^ *stop_grace_period: *//p' "$D/docker-compose.yml")
drain=$(grep -o '"--drain-timeout", *"[^"]*"' "$D/docker-compose.yml" | sed 's/.*"\([^"]*\)"$/\1/')
{ [ -n "$grace" ] && [ -n "$drain" ]; } || fail "docker-compose.yml: no stop_grace_period or --drain-timeout"
(( $(secs "$drain") > 0 && $(secs "$drain") < $(secs "$grace") )) ||
	fail "docker-compose.yml: --drain-timeout $drain is not shorter than stop_grace_period $grace"
ddrain=$(tr -d '\\\n' <"$D/Dockerfile" | grep -o '"--drain-timeout", *"[^"]*"' | sed 's/.*"\([^"]*\)"$/\1/')
[ "$ddrain" = "$drain" ] || fail "Dockerfile's --drain-timeout ($ddrain) differs from compose's ($drain)"
sgrace=$(sed -n 's/^TimeoutStopSec=//p' "$D/blq-demo.service")
sdrain=$(grep -v '^#' "$D/blq-demo.service" | grep -o -- '--drain-timeout [^ ]*' | cut -d' ' -f2)
(( $(secs "$sdrain") > 0 && $(secs "$sdrain") < $(secs "$sgrace") )) ||
	fail "blq-demo.service: --drain-timeout $sdrain is not shorter than TimeoutStopSec $sgrace"
grep -q '^SuccessExitStatus=.*\b3\b' "$D/blq-demo.service" || fail "blq-demo.service: exit 3 is not a success"
ok "deploy: drain $drain < compose grace $grace; Dockerfile $ddrain; systemd $sdrain < $sgrace"

# --- a drain past its deadline --------------------------------------------------
# term_timed WANT_RC MIN_MS MAX_MS WHAT: SIGTERM, the exit status and how
# long the exit took.
term_timed() {
	local want=$1 lo=$2 hi=$3 what=$4 t0 t
	t0=$(now_ms)
	demo_term 30
	t=$(( $(now_ms) - t0 ))
	[ "$DAEMON_RC" = "$want" ] || fail "$what: exit $DAEMON_RC after $t ms (want $want)"
	(( t >= lo && t <= hi )) || fail "$what: exit after $t ms, want $lo..$hi ms"
	ok "$what: exit $want after $t ms (want $lo..$hi)"
}

# final KEY: the key's final accounting as the daemon logged it.
final() {
	sed -n "s/.*queue $1: stopped[^:]*: //p" "$DAEMON_ERR"
}

# start_key KEY FILE WHAT READY [daemon options]: a daemon with the options,
# KEY made from the init body FILE, until its status passes READY (jq).
start_key() {
	local key=$1 file=$2 what=$3 ready=$4
	shift 4
	demo_start "$@"
	init "$key" "$file"
	expect 200 '' "init $key ($what)"
	wait_status 10 "$key: $ready" "$key" "$ready"
}

# balanced LINE: a final accounting that adds up, nothing left queued.
balanced() {
	jqtrue "$1" '.balanced and .in == .processed + .failed + .leaked + .expired + .lost + .cancelled and .size == 0'
}

# 200 ms tasks, 2 workers, a full queue of 500: a 50 s drain. The margin
# (2 s deadline, exit by 6 s) covers a sanitizer build's slower exit.
cat >"$E2E_TMP/slow.json" <<'EOF'
{"capacity": 500, "workers_min": 2, "workers_max": 2, "worker_delay": 200000000,
 "heartbeat": 100000000, "producers_min": 4, "producers_max": 4, "producer_delay": 1000000}
EOF
start_key slow "$E2E_TMP/slow.json" "no DLQ; a 50 s drain" '.queue.size >= 490' --drain-timeout 2s
# A second such key: the deadline is for the whole drain, not per queue
# (the queues stop one after another).
init slow2 "$E2E_TMP/slow.json"
expect 200 '' "init slow2 (another 50 s drain)"
wait_status 10 "slow2 is full" slow2 '.queue.size >= 490'
term_timed 3 1900 6000 "no DLQ, two keys: SIGTERM with --drain-timeout 2s"
grep -q 'draining every queue for at most 2.000 s' "$DAEMON_ERR" || fail "no 'for at most 2.000 s' line"
grep -q 'stopped (drain deadline passed: forced); accounting balanced for every queue' "$DAEMON_ERR" ||
	fail "no 'drain deadline passed ... balanced' line at exit"
line=$(final slow)
grep -q 'queue slow: stopped (drain deadline passed, forced)' "$DAEMON_ERR" ||
	fail "slow's stop line does not say the deadline forced it"
balanced "$line" || fail "slow: accounting does not add up: $line"
jqtrue "$line" '.lost >= 400 and .leaked == 0 and .processed >= 1' ||
	fail "slow: the queued items are not counted lost (Hard close without a DLQ): $line"
ok "no DLQ: balanced, $(jq -c '{in, processed, lost, cancelled}' <<<"$line")"
line=$(final slow2)
balanced "$line" || fail "slow2: accounting does not add up: $line"
jqtrue "$line" '.lost >= 400 and .leaked == 0' || fail "slow2: the queued items are not counted lost: $line"
ok "no DLQ: slow2 (stopped after the deadline) balanced, $(jq -c '{in, processed, lost}' <<<"$line")"
check_stderr

# The same with a dump as the DLQ: the Hard close leaks what is queued into
# it, and the dump writes it before the daemon exits.
rm -rf "$E2E_DUMP"
jq '. + {"allow_leak": true, "dump": {"capacity": 1048576, "flush": 30000000000}}' \
	"$E2E_TMP/slow.json" >"$E2E_TMP/slowdump.json"
start_key slowdump "$E2E_TMP/slowdump.json" "a dump as the DLQ" '.queue.size >= 490 and .dump.in > 0' \
	--drain-timeout 2s
term_timed 3 1900 6000 "dump DLQ: SIGTERM with --drain-timeout 2s"
line=$(final slowdump)
balanced "$line" || fail "slowdump: accounting does not add up: $line"
jqtrue "$line" '.lost == 0 and .leaked >= 490 and .dump.in == .leaked and .dump.written == .dump.in and .dump.dropped == 0' ||
	fail "slowdump: the queued items did not leak into the dump and get written: $line"
compgen -G "$E2E_DUMP/slowdump.*.bin" >/dev/null || fail "slowdump: no dump file after exit"
ok "dump DLQ: balanced, the rest leaked and written: $(jq -c '{in, processed, leaked, lost, dump: .dump.written}' <<<"$line")"
check_stderr

# --- a drain within its deadline: exit 0 as before ------------------------------
cat >"$E2E_TMP/fast.json" <<'EOF'
{"capacity": 1000, "workers_min": 2, "workers_max": 2, "worker_delay": 1000000,
 "heartbeat": 100000000, "producers_min": 2, "producers_max": 2, "producer_delay": 1000000}
EOF
start_key fast "$E2E_TMP/fast.json" "a short drain" '.queue.in > 100' --drain-timeout 20s
term_timed 0 0 15000 "a drain within --drain-timeout 20s"
grep -q 'stopped; accounting balanced for every queue' "$DAEMON_ERR" || fail "fast: no 'stopped; ... balanced'"
jqtrue "$(final fast)" '.balanced and .lost == 0 and .in == .processed' ||
	fail "fast: not drained whole: $(final fast)"
ok "within the deadline: drained whole, exit 0"
check_stderr
echo "drain_deadline_e2e: passed in $(elapsed)"
