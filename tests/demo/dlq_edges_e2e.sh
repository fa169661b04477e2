#!/usr/bin/env bash
# blq-demo's dead letters at their edges, end to end on a file dump: the
# bounds of a redrive's rate and of restore.max_restores, and what a stop
# does to a running redrive. Records are put in place with blq-dlq import
# (the tool built beside the daemon), so no run has to fill the dead store.
#
# Usage: dlq_edges_e2e.sh BLQ_DEMO SOURCE_DIR
set -uo pipefail
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
DLQ_TOOL=$(dirname "$E2E_DEMO")/../tools/blq-dlq/blq-dlq
[ -x "$DLQ_TOOL" ] || fail "no blq-dlq at $DLQ_TOOL"
demo_start
DUMP='{"capacity":64,"flush":100000000}'

# lines N RESTORES FIRST: N JSON lines of demo items (the 12 bytes of the
# original: 4, 0, 0, 0, then the sequence number, little-endian), numbered
# from FIRST, each with RESTORES.
lines() {
	python3 - "$@" <<'EOF'
import base64, json, struct, sys
n, restores, first = (int(a) for a in sys.argv[1:4])
for i in range(n):
    p = bytes([4, 0, 0, 0]) + struct.pack('<Q', first + i)
    print(json.dumps({"v": 1, "loc": "dump/x.bin#%d@0" % i, "version": 1,
                      "restores": restores, "deliveries": 0, "time_ns": 1,
                      "why": None, "payload": base64.b64encode(p).decode()}))
EOF
}

# place DIR KEY N RESTORES FIRST: N records into DIR as one file named as
# KEY's files are (KEY.*.bin), written whole before it gets that name.
place() {
	local dir=$1 key=$2 stage f
	stage=$(mktemp -d "$E2E_TMP/stage.XXXXXX")
	lines "$3" "$4" "$5" >"$stage/in.jsonl"
	"$DLQ_TOOL" import --dump-version 1 "$stage" "$stage/in.jsonl" >/dev/null || fail "blq-dlq import into $stage"
	mkdir -p "$dir"
	for f in "$stage"/*.bin; do
		mv "$f" "$dir/$key.$(basename "$f")"
	done
	rm -rf "$stage"
}


# --- a tiny rate: due times past 2^64 ns ------------------------------------------
# At 1e-11 records a second the second record is due in 3,000 years: one
# record moves at the start, the rest wait until the stop cancels them.
KEY=tiny
place "$E2E_DUMP/$KEY.dead" "$KEY" 5 1 1000
cat >"$E2E_TMP/tiny.json" <<EOF
{"capacity":100,"workers_min":1,"workers_max":1,"worker_delay":1000000,
 "producers_min":0,"producers_max":1,"allow_leak":true,"dump":$DUMP,
 "restore":{"check":100000000,"max_restores":3}}
EOF
init "$KEY" "$E2E_TMP/tiny.json"
expect 200 '.message == "success"' "init $KEY"
[ "$(dlq "$KEY" '.areas.dead.records')" = 5 ] || fail "$KEY: the dead store holds $(dlq "$KEY" '.areas.dead')"
dlq_post redrive "$KEY" '{"all":true,"rate":1e-11}'
expect 200 '.redrive.total == 5' "redrive 5 at 1e-11/s"
sleep 1
R=$(dlq "$KEY" '.redrive')
jqtrue "$R" '.state == "running" and .moved == 1' ||
	fail "a redrive at 1e-11/s moved more than its first record within 1 s: $R"
ok "redrive at 1e-11/s: 1 moved, the rest waits ($R)"
call GET "/api/v1/stop?key=$KEY"
check_final "stop $KEY during the redrive"
ok "the stop cancelled the waiting redrive"

# --- a file name that is not UTF-8 ----------------------------------------------------
# Names in a dump are bytes: a record whose location is not UTF-8 is shown
# with '?' for those bytes, and the rest of the page with it.
KEY=names
place "$E2E_DUMP/$KEY.dead" "$KEY" 2 1 2000
f=$(ls "$E2E_DUMP/$KEY.dead"/*.bin | head -1)
mv "$f" "$E2E_DUMP/$KEY.dead/$KEY."$'\xff'"x.bin"
init "$KEY" "$E2E_TMP/tiny.json" # the same queue as "tiny"
expect 200 '.message == "success"' "init $KEY"
call GET "/api/v1/dlq/records?key=$KEY&area=dead"
jqtrue "$BODY" '(.records | length) == 2 and all(.records[]; .loc | test("^dead/names[.][?]x[.]bin#"))' ||
	fail "$KEY: records of a file whose name is not UTF-8: $BODY"
ok "$KEY: a name that is not UTF-8 is shown with '?', the page with it"
call GET "/api/v1/stop?key=$KEY"
check_final "stop $KEY"

# --- restore.max_restores: the count rides in the payload's top byte ----------------
# A restored item carries its restore count in 8 bits: at most 255. A limit
# above that would never be reached (the count stops at 255), so items would
# cycle between the queue and the dump for ever: refused.
KEY=cap
cap_body() {
	cat >"$E2E_TMP/cap.json" <<EOF
{"capacity":100,"workers_min":1,"workers_max":1,"worker_delay":1000000,
 "producers_min":0,"producers_max":1,"fail_rate":1,"allow_leak":true,"fail_to_dlq":true,
 "dump":$DUMP,"restore":{"check":100000000,"max_restores":$1}}
EOF
	echo "$E2E_TMP/cap.json"
}
init "$KEY" "$(cap_body 256)"
expect 400 '.error | test("max_restores")' "init $KEY with max_restores 256"
# 255 works to the last restore: records restored 254 times come back once
# more, fail (fail_rate 1) into the dump with 255, and go to the dead store.
place "$E2E_DUMP" "$KEY" 3 254 5000
init "$KEY" "$(cap_body 255)"
expect 200 '.message == "success"' "init $KEY with max_restores 255 and 3 records restored 254 times"
wait_for 20 "$KEY: the 3 records in the dead store" dlq_holds "$KEY" '.areas.dead.records == 3 and .areas.dump.records == 0'
call GET "/api/v1/dlq/records?key=$KEY&area=dead"
jqtrue "$BODY" '(.records | length) == 3 and all(.records[]; .restores == 255 and .reason == "failed")' ||
	fail "$KEY: dead records: $BODY"
ok "$KEY: restored a 255th time, failed, dead with restores 255"
call GET "/api/v1/stop?key=$KEY"
check_final "stop $KEY"

demo_finish
