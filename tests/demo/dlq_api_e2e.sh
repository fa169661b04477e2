#!/usr/bin/env bash
# The DLQ endpoints of blq-demo (/api/v1/dlq...), end to end, on a file dump
# (MODE fs) or a Redis stream (MODE redis, needs BLQ_TEST_REDIS; else 77).
#
# Usage: dlq_api_e2e.sh BLQ_DEMO SOURCE_DIR fs|redis
#
# A key whose worker fails every item, with fail_to_dlq and a restorer
# with max_restores 1: each item fails into the dump, is restored once,
# fails again and goes to the dead store. The key is then started again
# with a worker that never fails, so what is redriven ends processed.
# Checked: counts against the restorer's own dead counter (and XLEN, or
# the files), pages of records with their reasons, bad input refused with
# nothing changed, cross-site changes refused, a redrive of two records,
# a redrive at a rate measured within 20% that ends processed with the
# accounting balanced, purge (dry run, one record, all), and the download
# as JSON lines.
set -uo pipefail
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
MODE=${E2E_ARGS[0]:-fs}
KEY=dl
RATE=40

if [ "$MODE" = redis ]; then
	[ -n "${BLQ_TEST_REDIS:-}" ] || skip "BLQ_TEST_REDIS is not set (scripts/test.sh starts a redis-server)"
	command -v redis-cli >/dev/null || fail "redis-cli is needed with BLQ_TEST_REDIS"
	REDIS_HOST=${BLQ_TEST_REDIS%:*}
	REDIS_PORT=${BLQ_TEST_REDIS##*:}
	REDIS_KEY="blq-e2e:dlq:$$:$RANDOM"
	E2E_CLEANUPS+=("redis-cli -h '$REDIS_HOST' -p '$REDIS_PORT' DEL '$REDIS_KEY' '$REDIS_KEY:dead' '$REDIS_KEY:quarantine' >/dev/null 2>&1")
	demo_start --redis "$BLQ_TEST_REDIS"
	DUMP='{"capacity":64,"flush":100000000,"writer":"redis","redis_key":"'$REDIS_KEY'"}'
elif [ "$MODE" = fs ]; then
	demo_start
	DUMP='{"capacity":64,"flush":100000000}'
else
	fail "MODE: fs or redis, not $MODE"
fi

# body FAIL_RATE PRODUCERS: the key's init body.
body() {
	cat >"$E2E_TMP/init.json" <<EOF
{"capacity":100,"workers_min":1,"workers_max":1,"worker_delay":1000000,
 "producers_min":$2,"producers_max":1,"producer_delay":20000000,"fail_rate":$1,
 "allow_leak":true,"fail_to_dlq":true,"dump":$DUMP,
 "restore":{"check":100000000,"max_restores":1}}
EOF
	echo "$E2E_TMP/init.json"
}

# dead_direct: the dead store seen without the daemon: the stream's XLEN,
# or the number of dead files.
dead_direct() {
	if [ "$MODE" = redis ]; then
		redis-cli -h "$REDIS_HOST" -p "$REDIS_PORT" XLEN "$REDIS_KEY:dead"
	else
		find "$E2E_DUMP/$KEY.dead" -name "$KEY.*.bin" | wc -l # files (parts)
	fi
}

# --- fill: every item fails twice and ends in the dead store -----------------
init "$KEY" "$(body 1 1)"
expect 200 '.message == "success"' "init $KEY (fail_rate 1, fail_to_dlq, max_restores 1)"
wait_for 20 "$MODE: 100 records in the dead store" dlq_holds "$KEY" '.areas.dead.records >= 100'
# Its leaks are failures (fail_to_dlq): /api/v1/stats splits them by
# reason, and /metrics shows the same split in queue_leak_reason_total
# while queue_leak_total{dir="rear"} counts them as rear
# (docs/reference-metrics.md). (Overflow is possible here too: the dump's
# 64-byte batches make it wait for each write, and the worker with it.)
stats_holds "$KEY" '.counters.leaked_failed > 0 and .counters.leaked_deadline == 0
	and .counters.leaked == .counters.leaked_rear + .counters.leaked_front
		+ .counters.leaked_failed + .counters.leaked_closed
	and (.dlq_waiting | type) == "number"'
# The queue still leaks while /metrics renders: the rear count (the
# writer's, counted by the queue's leak hook just after blq_stats counts
# the reason) is read before the reasons (blq_stats, at render time), so
# one scrape can show a leak or two more by reason than by side (a TSan
# run saw failed 235, rear 234). Every leak counted by reason in the
# first scrape is counted by side in the second.
metrics_text "$E2E_TMP/leaks.txt"
metrics_text "$E2E_TMP/leaks2.txt"
lf=$(awk -v k="$KEY" '$1 == "queue_leak_reason_total{queue=\"" k "\",reason=\"failed\"}" { print $2 }' "$E2E_TMP/leaks.txt")
dr=$(awk -v k="$KEY" '$1 == "queue_leak_total{queue=\"" k "\",dir=\"rear\"}" { print $2 }' "$E2E_TMP/leaks2.txt")
{ [ -n "$lf" ] && [ "$lf" -gt 0 ] && [ -n "$dr" ] && [ "$dr" -ge "$lf" ]; } ||
	fail "$MODE: /metrics: leak reason failed '$lf', queue_leak_total{dir=rear} '$dr'"
ok "$MODE: /metrics: $lf leaks by reason failed; queue_leak_total{dir=\"rear\"} $dr counts them too"
call GET "/api/v1/stop?key=$KEY"
check_final "$MODE: stop after the fill"
DEAD1=$(jq '.final.restore.dead' <<<"$BODY")

# Started again, a worker that never fails, no producers: the restorer
# settles what the dump still holds (once restored: processed; twice: dead).
init "$KEY" "$(body 0 0)"
expect 200 '.message == "success"' "init $KEY again (fail_rate 0, no producers)"
wait_for 20 "$MODE: the dump settled" dlq_holds "$KEY" '.areas.dump.records == 0 and (.kind == "redis" or .areas.dump.parts == 0)'
DEAD2=$(curl -sS "$API/api/v1/stats?key=$KEY" | jq '.restore.dead')
PROC0=$(curl -sS "$API/api/v1/stats?key=$KEY" | jq '.restore.processed')
D=$(dlq "$KEY" '.areas.dead.records')
[ "$D" = $((DEAD1 + DEAD2)) ] || fail "dead store holds $D, the restorers sent $DEAD1 + $DEAD2"
ok "$MODE: the dead store's $D records = the restorers' dead counters ($DEAD1 + $DEAD2)"
if [ "$MODE" = redis ]; then
	[ "$(dead_direct)" = "$D" ] || fail "XLEN of $REDIS_KEY:dead is $(dead_direct), the API says $D"
	ok "redis: XLEN $REDIS_KEY:dead = $D"
	dlq_holds "$KEY" '.kind == "redis" and .stream.group_exists == true and .stream.pending == 0' ||
		fail "redis: stream summary: $LAST_STATUS"
else
	[ "$(dead_direct)" = "$(dlq "$KEY" '.areas.dead.parts')" ] || fail "fs: $(dead_direct) files, parts $(dlq "$KEY" '.areas.dead.parts')"
	ok "fs: $(dead_direct) dead files = the API's parts"
fi
dlq_holds "$KEY" '.areas.dead.oldest_age_s > .areas.dead.newest_age_s and .areas.dead.newest_age_s > 0 and .redrive == null' ||
	fail "ages: $LAST_STATUS"

# --- records ------------------------------------------------------------------
call GET "/api/v1/dlq/records?key=$KEY&area=dead&page=1&per_page=10&order=oldest"
[ "$CODE" = 200 ] || fail "records: HTTP $CODE $BODY"
# Failed twice; or failed, restored, and still queued at the first stop's
# close (reason closed): both went to the dead store after one restore.
WHY_OK='((.reason == "failed" and .attempts == 1 and .rc == 1) or (.reason == "closed" and .rc == 0))'
# Restored once before it was dead-lettered (restores 1); or 0: a record
# of a file the restorer was working through when the stop closed the
# queue, which refused what it was handed, so the file was released with
# its claim counted: every record of it not yet done comes again with
# deliveries 1, and the next restorer's max_restores 1 (restores +
# deliveries) dead-letters it with the count it read (dlq/restorer.c).
# The fsync of each claim makes a restorer slower, so a stop finds a file
# half done more often.
RESTORES_OK='(.restores == 1 or .restores == 0)'
jqtrue "$BODY" "(.records | length) == 10 and all(.records[]; .state == \"ok\" and $WHY_OK
	and .queue == \"dl\" and $RESTORES_OK and .len == 12
	and .preview.kind == \"hex\" and (.preview.value | startswith(\"04000000\")))" ||
	fail "records page 1: $BODY"
P1=$(jq -c '[.records[].loc]' <<<"$BODY")
# Items are told apart by payload (sequence numbers of the first run):
# locations of a file's later records change when it is rewritten.
V1=$(jq -c '[.records[].preview.value]' <<<"$BODY")
ok "records: page 1 of 10, each failed (rc 1) or closed in queue dl, restored once"
call GET "/api/v1/dlq/records?key=$KEY&area=dead&page=2&per_page=10&order=oldest"
jqtrue "$BODY" '(.records | length) == 10' || fail "records page 2: $BODY"
jq -e --argjson p1 "$P1" '[.records[].loc] - $p1 | length == 10' <<<"$BODY" >/dev/null ||
	fail "page 2 repeats page 1: $BODY"
call GET "/api/v1/dlq/records?key=$KEY&area=dead&per_page=1&order=newest"
jq -e --argjson p1 "$P1" '.records[0].loc != $p1[0] and .order == "newest"' <<<"$BODY" >/dev/null ||
	fail "newest first: $BODY"
call GET "/api/v1/dlq/records?key=$KEY&area=dead&reason=overflow_rear,deadline"
jqtrue "$BODY" '.records == []' || fail "reason filter: $BODY"
call GET "/api/v1/dlq/records?key=$KEY&area=dead&reason=failed&per_page=500"
jqtrue "$BODY" 'all(.records[]; .reason == "failed")' || fail "reason=failed: $BODY"
NF=$(jq '.records | length' <<<"$BODY")
call GET "/api/v1/dlq/records?key=$KEY&area=dead&reason=closed&per_page=500"
jqtrue "$BODY" "all(.records[]; .reason == \"closed\") and (.records | length) + $NF == $D" ||
	fail "reason=closed: $(jq '.records | length' <<<"$BODY") + failed $NF != $D"
(( NF * 2 > D )) || fail "reason=failed: only $NF of $D"
ok "records: pages differ, newest first, reason filters"

# --- bad input: refused, nothing changed ----------------------------------------
call GET "/api/v1/dlq/records?key=$KEY&area=bogus"; expect 400 '.error | test("area")' "records area=bogus"
call GET "/api/v1/dlq/records?key=$KEY&page=0"; expect 400 '.error | test("page")' "records page=0"
call GET "/api/v1/dlq/records?key=$KEY&per_page=501"; expect 400 '.error | test("per_page")' "records per_page=501"
call GET "/api/v1/dlq/records?key=$KEY&order=up"; expect 400 '.error | test("order")' "records order=up"
call GET "/api/v1/dlq/records?key=$KEY&reason=bogus"; expect 400 '.error | test("reason")' "records reason=bogus"
call GET "/api/v1/dlq?key=nokey"; expect 404 '.error | test("nokey")' "dlq of an unknown key"
call GET "/api/v1/dlq?key="; expect 400 '.error | test("key")' "dlq without a key"
dlq_post redrive "$KEY" '{"all":true,"rate":0}'; expect 400 '.error | test("rate")' "redrive rate 0"
dlq_post redrive "$KEY" '{"all":true,"rate":1000000}'; expect 400 '.error | test("rate")' "redrive rate 1e6"
dlq_post redrive "$KEY" '{"all":true,"rate":"fast"}'; expect 400 '.error | test("rate")' "redrive rate a string"
dlq_post redrive "$KEY" '{"all":true,"area":"dump"}'; expect 400 '.error | test("area")' "redrive from the dump"
dlq_post redrive "$KEY" '{"locs":["nowhere/x"]}'; expect 400 '.error | test("locs")' "redrive a bad location"
dlq_post redrive "$KEY" '{"locs":["dump/x.bin#0@16"]}'; expect 400 '.error | test("not a record of that area")' "redrive a location of another area"
dlq_post redrive "$KEY" '{"locs":[]}'; expect 400 '.error | test("locs")' "redrive no locations"
dlq_post redrive "$KEY" '{"all":true,"locs":["dead/x.bin#0@16"]}'; expect 400 '.error | test("either")' "redrive all and locs"
dlq_post redrive "$KEY" '{"all":true,"speed":3}'; expect 400 '.error | test("speed")' "redrive an unknown field"
dlq_post redrive "$KEY" 'not json'; expect 400 '.error | test("body")' "redrive a body that is not JSON"
dlq_post purge "$KEY" '{"area":"quarantine","all":true}'; expect 400 '.error | test("only the dead store")' "purge the quarantine"
dlq_post purge "$KEY" '{"all":true,"dry_run":"yes"}'; expect 400 '.error | test("dry_run")' "purge dry_run a string"
call GET "/api/v1/dlq/redrive?key=$KEY"; expect 405 '.error | test("POST")' "GET redrive"
call GET "/api/v1/dlq/download?key=$KEY&area=nope"; expect 400 '.error | test("area")' "download area=nope"
dlq_post redrive "$KEY" '{"all":true}' -H 'Origin: http://evil.example'; expect 403 '.error | test("Origin")' "cross-origin redrive"
dlq_post purge "$KEY" '{"all":true}' -H 'Sec-Fetch-Site: cross-site'; expect 403 '.error | test("Sec-Fetch-Site")' "cross-site purge"
[ "$(dlq "$KEY" '.areas.dead.records')" = "$D" ] || fail "bad requests changed the dead store: $(dlq "$KEY" '.areas.dead.records') != $D"
dlq_holds "$KEY" '.redrive == null' || fail "a bad request started a redrive: $LAST_STATUS"
ok "bad input and cross-site changes refused; the dead store still holds $D"

# --- download ------------------------------------------------------------------
curl -sS --max-time 20 -D "$E2E_TMP/dl.h" -o "$E2E_TMP/dead.jsonl" "$API/api/v1/dlq/download?key=$KEY&area=dead" ||
	fail "download failed"
grep -qi '^content-type: application/x-ndjson' "$E2E_TMP/dl.h" || fail "download type: $(cat "$E2E_TMP/dl.h")"
grep -qi "^content-disposition: attachment; filename=\"$KEY.dead.jsonl\"" "$E2E_TMP/dl.h" || fail "download name: $(cat "$E2E_TMP/dl.h")"
[ "$(wc -l <"$E2E_TMP/dead.jsonl")" = "$D" ] || fail "download: $(wc -l <"$E2E_TMP/dead.jsonl") lines, want $D"
jq -e -s 'all(.[]; (keys_unsorted == ["v","loc","version","restores","deliveries","time_ns","why","payload"])
	and .v == 1 and (.loc | startswith("dead")) and '"$RESTORES_OK"' and (.why | '"$WHY_OK"')
	and .why.queue == "dl"
	and (.payload | @base64d | length) == 12)' "$E2E_TMP/dead.jsonl" >/dev/null ||
	fail "download: a line is not as the format says: $(head -n 2 "$E2E_TMP/dead.jsonl")"
[ "$(jq -r .loc "$E2E_TMP/dead.jsonl" | sort -u | wc -l)" = "$D" ] || fail "download: locations repeat"
ok "download: $D JSON lines, the format's fields in order, payloads of 12 bytes"

# --- redrive two ---------------------------------------------------------------
TWO=$(jq -c '.[0:2]' <<<"$P1")
dlq_post redrive "$KEY" "{\"locs\":$TWO,\"rate\":100}"
expect 200 '.redrive.total == 2 and .redrive.all == false' "redrive 2 selected records"
wait_for 10 "$MODE: the 2 redriven" dlq_holds "$KEY" '.redrive.state == "done" and .redrive.moved == 2'
wait_for 10 "$MODE: the 2 processed" eval '[ "$(curl -sS "$API/api/v1/stats?key=$KEY" | jq ".restore.processed")" = $((PROC0 + 2)) ]'
[ "$(dlq "$KEY" '.areas.dead.records')" = $((D - 2)) ] || fail "after redriving 2: $(dlq "$KEY" '.areas.dead.records'), want $((D - 2))"
call GET "/api/v1/dlq/records?key=$KEY&area=dead&per_page=500"
jq -e --argjson v "$V1" '[.records[].preview.value] as $l | all($v[0:2][]; . as $x | $l | index($x) | not)
	and ($l | index($v[2]))' <<<"$BODY" >/dev/null ||
	fail "the redriven records are still in the dead store"
ok "redrive 2: gone from the dead store, processed by the queue"
D=$((D - 2))

# --- purge -----------------------------------------------------------------------
dlq_post purge "$KEY" '{"all":true,"dry_run":true}'
expect 200 ".dry_run == true and .records == $D" "purge all, dry run"
[ "$(dlq "$KEY" '.areas.dead.records')" = "$D" ] || fail "the dry run deleted: $(dlq "$KEY" '.areas.dead.records') != $D"
call GET "/api/v1/dlq/records?key=$KEY&area=dead&per_page=1&order=oldest" # fresh: a rewrite moves locations
ONE=$(jq -c '[.records[].loc]' <<<"$BODY")
dlq_post purge "$KEY" "{\"area\":\"dead\",\"locs\":$ONE}"
expect 200 '.dry_run == false and .records == 1' "purge one record"
D=$((D - 1))
[ "$(dlq "$KEY" '.areas.dead.records')" = "$D" ] || fail "after purging 1: $(dlq "$KEY" '.areas.dead.records') != $D"
ok "purge: the dry run changed nothing, one record purged"

# --- redrive at a rate -------------------------------------------------------------
# fs: every record; redis: the oldest 80 (then the rest is purged).
if [ "$MODE" = fs ]; then
	N=$D
	dlq_post redrive "$KEY" "{\"area\":\"dead\",\"all\":true,\"rate\":$RATE}"
else
	call GET "/api/v1/dlq/records?key=$KEY&area=dead&per_page=80&order=oldest"
	N=80
	dlq_post redrive "$KEY" "{\"locs\":$(jq -c '[.records[].loc]' <<<"$BODY"),\"rate\":$RATE}"
fi
expect 200 ".redrive.total == $N and .redrive.state == \"running\"" "redrive $N at $RATE/s"
dlq_post redrive "$KEY" '{"all":true}'; expect 409 '.error | test("runs already")' "a second redrive meanwhile"
dlq_post purge "$KEY" '{"all":true}'; expect 409 '.error | test("redrive runs")' "a purge meanwhile"
sleep 1.5
R1=$(dlq "$KEY" '.redrive')
wait_for $((N / RATE + 15)) "$MODE: the redrive done" dlq_holds "$KEY" '.redrive.state == "done"'
R2=$(jq -c .redrive <<<"$LAST_STATUS")
for r in "$R1" "$R2"; do
	jq -e --argjson rate "$RATE" '(.moved / .elapsed_s) as $m | $m >= $rate * 0.8 and $m <= $rate * 1.2' <<<"$r" >/dev/null ||
		fail "redrive rate off by more than 20%: $r"
done
jqtrue "$R2" ".moved == $N and .skipped == 0" || fail "redrive: $R2"
ok "redrive: $N at $(jq -n --argjson a "$R1" '$a.moved / $a.elapsed_s * 10 | round / 10')/s after $(jq .elapsed_s <<<"$R1" | cut -c1-4) s, $(jq -n --argjson a "$R2" '$a.moved / $a.elapsed_s * 10 | round / 10')/s overall (asked $RATE)"
wait_for 20 "$MODE: every redriven record processed" eval \
	'[ "$(curl -sS "$API/api/v1/stats?key=$KEY" | jq ".restore.processed")" = $((PROC0 + 2 + N)) ]'
[ "$(dlq "$KEY" '.areas.dead.records')" = $((D - N)) ] || fail "after the redrive: $(dlq "$KEY" '.areas.dead.records') != $((D - N))"
D=$((D - N))
if [ "$MODE" = redis ]; then
	dlq_post purge "$KEY" '{"area":"dead","all":true}'
	expect 200 ".records == $D" "purge all"
	[ "$(dead_direct)" = 0 ] || fail "XLEN after purge: $(dead_direct)"
	D=0
fi
[ "$(dlq "$KEY" '.areas.dead.records')" = 0 ] || fail "the dead store is not empty: $(dlq "$KEY" '.areas.dead')"
ok "$MODE: the dead store is empty"

call GET "/api/v1/stop?key=$KEY"
check_final "$MODE: stop after the redrive"
jqtrue "$BODY" ".final.processed == $((PROC0 + 2 + N)) and .final.failed == 0" ||
	fail "final: not every redriven item processed: $BODY"
ok "$MODE: the queue processed all $((2 + N)) redriven items"

# A key without a dump.
printf '%s' '{"capacity":10,"workers_min":1,"workers_max":1,"producers_min":0,"producers_max":1}' >"$E2E_TMP/plain.json"
init plain "$E2E_TMP/plain.json"
expect 200 '.message == "success"' "init plain (no dump)"
call GET "/api/v1/dlq?key=plain"; expect 409 '.error | test("no dump")' "dlq of a key without a dump"
call GET "/api/v1/stop?key=plain"
demo_finish
