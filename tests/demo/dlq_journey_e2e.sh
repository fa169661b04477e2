#!/usr/bin/env bash
# An operator's journey across the parts, on what they really write: a
# blq-demo key fills its dead store (a worker that fails, fail_to_dlq, a
# restorer with max_restores 1); blq-dlq, with no extra flag, lists and
# verifies that dump (no damage: blq-demo writes version 1 and names its
# files KEY.*.bin) and redrives the dead store; the key, started again
# with its worker fixed, has its restorer feed every redriven record to
# the queue: the dead store and the dump end empty and the accounting
# balances. On a file dump (MODE fs) or a Redis stream (MODE redis, needs
# BLQ_TEST_REDIS; else 77).
#
# Usage: dlq_journey_e2e.sh BLQ_DEMO SOURCE_DIR fs|redis BLQ_DLQ
set -uo pipefail
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
MODE=${E2E_ARGS[0]:-fs}
DLQ=${E2E_ARGS[1]:?usage: $0 BLQ_DEMO SOURCE_DIR fs|redis BLQ_DLQ}
KEY=jr

if [ "$MODE" = redis ]; then
	[ -n "${BLQ_TEST_REDIS:-}" ] || skip "BLQ_TEST_REDIS is not set (scripts/test.sh starts a redis-server)"
	REDIS_KEY="blq-e2e:journey:$$:$RANDOM"
	R="redis://$BLQ_TEST_REDIS"
	E2E_CLEANUPS+=("redis-cli -h '${BLQ_TEST_REDIS%:*}' -p '${BLQ_TEST_REDIS##*:}' DEL '$REDIS_KEY' '$REDIS_KEY:dead' '$REDIS_KEY:quarantine' >/dev/null 2>&1")
	demo_start --redis "$BLQ_TEST_REDIS"
	DUMP='{"capacity":64,"flush":100000000,"writer":"redis","redis_key":"'$REDIS_KEY'"}'
	SRC=("$R/$REDIS_KEY" --dead "$R/$REDIS_KEY:dead")
else
	demo_start
	DUMP='{"capacity":64,"flush":100000000}'
	SRC=("$E2E_DUMP" --dead "$E2E_DUMP/$KEY.dead")
fi

# body FAIL_RATE PRODUCERS
body() {
	cat >"$E2E_TMP/init.json" <<EOF
{"capacity":100,"workers_min":1,"workers_max":1,"worker_delay":1000000,
 "producers_min":$2,"producers_max":1,"producer_delay":10000000,"fail_rate":$1,
 "allow_leak":true,"fail_to_dlq":true,"dump":$DUMP,
 "restore":{"check":100000000,"max_restores":1}}
EOF
	echo "$E2E_TMP/init.json"
}

# run_dlq WHAT WANT_RC ARGS...: blq-dlq ARGS, its exit code checked; its
# output in OUT and ERR.
run_dlq() {
	local what=$1 want=$2 rc
	shift 2
	"$DLQ" "$@" >"$E2E_TMP/out" 2>"$E2E_TMP/err"
	rc=$?
	OUT=$(cat "$E2E_TMP/out")
	ERR=$(cat "$E2E_TMP/err")
	[ "$rc" = "$want" ] || fail "$what: blq-dlq $*: exit $rc, want $want; out: $OUT; err: $ERR"
	ok "$what: exit $rc"
}

# --- the demo fills its dead store ------------------------------------------
init "$KEY" "$(body 1 1)"
expect 200 '.message == "success"' "init $KEY (fail_rate 1, fail_to_dlq, max_restores 1)"
wait_for 30 "$MODE: 60 records in the dead store" dlq_holds "$KEY" '.areas.dead.records >= 60'
call GET "/api/v1/stop?key=$KEY"
expect 200 '.final.in == .final.processed + .final.failed + .final.leaked + .final.expired + .final.lost' "stop after the fill: balanced"
# Its worker still failing, no producer: the restorer settles what the dump
# still holds (each record fails once more and goes to the dead store).
init "$KEY" "$(body 1 0)"
expect 200 '.message == "success"' "init $KEY again, no producers"
wait_for 30 "$MODE: the dump settled" dlq_holds "$KEY" '.areas.dump.records == 0 and (.kind == "redis" or .areas.dump.parts == 0)'
D=$(dlq "$KEY" '.areas.dead.records')
call GET "/api/v1/stop?key=$KEY"
expect 200 'true' "stop"
(( D >= 60 )) || fail "dead store: $D records"
ok "$MODE: the demo's dead store holds $D records (restored once, then dead)"

# --- blq-dlq reads it with no extra flag ------------------------------------
run_dlq "list the demo's dump" 0 list "${SRC[@]}"
grep -q damaged <<<"$OUT" && fail "list calls the demo's dump damaged: $OUT"
run_dlq "list --json" 0 list "${SRC[@]}" --json
N=$(jq -s '[.[] | select(.area == "dead") | .records] | add' <<<"$OUT")
[ "$N" = "$D" ] || fail "list: dead store $N records, the demo says $D"
jq -se 'all(.[]; .damaged == 0 and (.stream or .version == 1 or .records == 0))' <<<"$OUT" >/dev/null ||
	fail "list --json: damage or another version: $OUT"
ok "list: $N dead records, version 1, no damage"
run_dlq "verify the demo's dump" 0 verify "${SRC[@]}"
grep -q "^$D records (.*) good, 0 damaged, 0 gone$" <<<"$OUT" || fail "verify: $OUT"
ok "verify: $OUT"
# --dump-version is a note now, never damage: 0 says the files are another.
if [ "$MODE" = fs ]; then
	run_dlq "list --dump-version 0" 0 list "${SRC[@]}" --dump-version 0
	grep -q "version 1, not 0" <<<"$OUT" || fail "list --dump-version 0: no note: $OUT"
	grep -q damaged <<<"$OUT" && fail "list --dump-version 0: damage: $OUT"
	ok "list --dump-version 0: a note, no damage"
fi

# --- redrive, no extra flag ---------------------------------------------------
run_dlq "redrive the dead store" 0 redrive "${SRC[@]}"
grep -q "^redrove $D records from dead to dump in .*version 1, restore counts reset to 0" <<<"$OUT" ||
	fail "redrive: $OUT"
ok "redrive: $OUT"
if [ "$MODE" = fs ]; then
	F=$(find "$E2E_DUMP" -maxdepth 1 -name '*.bin' | wc -l)
	K=$(find "$E2E_DUMP" -maxdepth 1 -name "$KEY.*.bin" | wc -l)
	[ "$F" -gt 0 ] && [ "$F" = "$K" ] || fail "redriven files: $F, named $KEY.*.bin: $K"
	ok "fs: the redriven files are named $KEY.*.bin ($K), as the key's restorer reads"
fi
run_dlq "list after the redrive" 0 list "${SRC[@]}" --json
jq -se "([.[] | select(.area == \"dump\") | .records] | add) == $D and
	([.[] | select(.area == \"dead\") | .records] | add // 0) == 0" <<<"$OUT" >/dev/null ||
	fail "after the redrive: $OUT"
run_dlq "show: restore counts reset" 0 show "${SRC[@]}" --part dump --json
jq -se 'all(.[]; .restores == 0 and .version == 1)' <<<"$OUT" >/dev/null || fail "show: $OUT"
ok "the dump holds the $D records, restores 0, version 1; the dead store is empty"

# --- the key's restorer feeds every one to the fixed worker -------------------
init "$KEY" "$(body 0 0)"
expect 200 '.message == "success"' "init $KEY with its worker fixed (fail_rate 0)"
wait_for 30 "$MODE: every redriven record restored" dlq_holds "$KEY" '.areas.dump.records == 0 and (.kind == "redis" or .areas.dump.parts == 0)'
call GET "/api/v1/stop?key=$KEY"
expect 200 ".final.restore.restored == $D and .final.restore.dead == 0 and .final.restore.processed == $D
	and .final.processed == $D and .final.in == $D and .final.leaked == 0 and .final.lost == 0" \
	"the restorer fed all $D to the queue, each processed, none dead again"
run_dlq "list at the end" 0 list "${SRC[@]}" --json
jq -se '([.[].records] | add // 0) == 0' <<<"$OUT" >/dev/null || fail "at the end: $OUT"
ok "$MODE: dead store, dump and quarantine empty"
run_dlq "nothing left to redrive" 1 redrive "${SRC[@]}"

demo_finish
