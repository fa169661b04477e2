#!/usr/bin/env bash
# blq-demo's quarantine, on a file its own dump wrote: a key's dump file is
# damaged in the middle while the key is stopped; started again, its
# restorer restores every intact record (before and after the damage) and
# quarantines the file; a redrive of the quarantine from the dashboard's
# API, three times, delivers none of those records again (they were
# restored: the quarantine keeps their done marks) and empties the
# quarantine. The queue's processed count is the file's intact records,
# once each.
#
# Usage: dlq_quarantine_e2e.sh BLQ_DEMO SOURCE_DIR BLQ_DLQ
set -uo pipefail
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
DLQ=${E2E_ARGS[0]:?usage: $0 BLQ_DEMO SOURCE_DIR BLQ_DLQ}
KEY=qr
demo_start

# body FAIL_RATE PRODUCERS RESTORE
body() {
	cat >"$E2E_TMP/init.json" <<EOF
{"capacity":100,"workers_min":1,"workers_max":1,"worker_delay":1000000,
 "producers_min":$2,"producers_max":1,"producer_delay":5000000,"fail_rate":$1,
 "allow_leak":true,"fail_to_dlq":true,"dump":{"capacity":2048,"flush":50000000}$3}
EOF
	echo "$E2E_TMP/init.json"
}

# A dump with no restorer: every item fails into it and stays.
init "$KEY" "$(body 1 1 '')"
expect 200 '.message == "success"' "init $KEY: failing, no restorer"
wait_for 20 "60 records dumped" dlq_holds "$KEY" '.areas.dump.records >= 60'
call GET "/api/v1/stop?key=$KEY"
expect 200 'true' "stop"
M=("$E2E_DUMP" --match "$KEY.*.bin")
"$DLQ" verify "${M[@]}" >"$E2E_TMP/v" || fail "verify before the damage: $(cat "$E2E_TMP/v")"
R=$(sed -n 's/^\([0-9]*\) records .*/\1/p' "$E2E_TMP/v")
# The largest file, one byte flipped in a record in its middle.
F=$(ls -S "$E2E_DUMP"/"$KEY".*.bin | head -1)
SIZE=$(stat -c %s "$F")
python3 - "$F" <<'EOF'
import sys
p = sys.argv[1]
b = bytearray(open(p, 'rb').read())
b[len(b) // 2] ^= 0x40
open(p, 'wb').write(bytes(b))
EOF
"$DLQ" verify "${M[@]}" --json >"$E2E_TMP/v"
I=$(jq -s '.[-1].records' "$E2E_TMP/v")
(( I >= R - 2 && I < R )) || fail "after one flipped byte in $F ($SIZE B): $I of $R records intact: $(cat "$E2E_TMP/v")"
ok "one byte flipped in the middle of $(basename "$F"): $I of $R records intact"

# Started again with a restorer and a worker that succeeds.
init "$KEY" "$(body 0 0 ',"restore":{"check":50000000}')"
expect 200 '.message == "success"' "init $KEY: restorer, worker fixed"
wait_for 20 "the dump restored, the damaged file quarantined" dlq_holds "$KEY" \
	'.areas.dump.records == 0 and .areas.dump.parts == 0 and .areas.quarantine.parts == 1'
stats_holds "$KEY" ".counters.processed == $I"
for run in 1 2 3; do
	dlq_post redrive "$KEY" '{"area":"quarantine","all":true,"rate":10000}'
	expect 200 '.message == "started"' "redrive the quarantine, run $run"
	wait_for 10 "run $run done" dlq_holds "$KEY" '.redrive.state == "done"'
	sleep 0.5 # the restorer's check interval, ten times over
	stats_holds "$KEY" ".counters.processed == $I"
done
dlq_holds "$KEY" '.areas.quarantine.parts == 0 and .areas.dump.records == 0' ||
	fail "after the redrives: $LAST_STATUS"
ok "the quarantine is empty; $I records processed once each, none again"
call GET "/api/v1/stop?key=$KEY"
expect 200 ".final.processed == $I and .final.in == $I" "final: $I in, $I processed"
demo_finish
