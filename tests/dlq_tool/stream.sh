#!/bin/bash
# blq-dlq on Redis streams (BLQ_TEST_REDIS): every subcommand, values
# checked; purge --dry-run compared by XRANGE.
. "$(dirname "$0")/lib.sh"
redis_setup
S="$R/$K" DEADK="$K-dead"
"$NODE" produce "$S" 10 0 mix >/dev/null || fail "produce stream"
"$NODE" produce "$R/$DEADK" 6 100 mix >/dev/null || fail "produce dead stream"
SRC=("$S" --dead "$R/$DEADK")

check_rc "list" 0 "$DLQ" list "${SRC[@]}" --json
check "list: dump records" "$(grep '"area":"dump"' "$T/out" | json_field records)" 10
check "list: dead records" "$(grep '"area":"dead"' "$T/out" | json_field records)" 6
check "list: group missing" "$(grep '"area":"dump"' "$T/out" | json_field group_exists)" false
# a consumer holding entries: read 3 through the group (as a restorer would)
redis_cli XGROUP CREATE "$K" blq 0 >/dev/null
redis_cli XREADGROUP GROUP blq alice COUNT 3 STREAMS "$K" '>' >/dev/null
check_rc "list pending" 0 "$DLQ" list "${SRC[@]}"
has "list: consumer alice" "$T/out" "consumer alice"
has "list: 3 pending" "$T/out" "group ok, 3 pending"
check_rc "show pending" 0 "$DLQ" show "$S" --json --limit 1
check "show: pending consumer" "$(json_field consumer <"$T/out")" '"alice"'
check "show: deliveries" "$(json_field deliveries <"$T/out")" 1

check_rc "show failed" 0 "$DLQ" show "${SRC[@]}" --reason failed --json
check "show failed: count" "$(wc -l <"$T/out")" 8
check_rc "show dead overflow" 0 "$DLQ" show "${SRC[@]}" --part dead --reason overflow-rear
check "show dead overflow: count" "$(grep -c 'overflow rear (attempts 0, rc 0, queue ingest)' "$T/out")" 3
has "show: entry location" "$T/out" "dead:"
check_rc "verify" 0 "$DLQ" verify "${SRC[@]}"
has "verify: totals" "$T/out" "16 records"

# export / import round trip into another stream
check_rc "export" 0 "$DLQ" export "${SRC[@]}" --part dead -o "$T/dead.jsonl"
check_rc "import" 0 "$DLQ" import "$R/$K-copy" "$T/dead.jsonl"
"$DLQ" export "$R/$K-copy" >"$T/again.jsonl" 2>/dev/null
strip() { sed 's/"loc":"[^"]*",//' "$1"; }
check "stream export-import-export identical" "$(strip "$T/dead.jsonl" | md5sum)" "$(strip "$T/again.jsonl" | md5sum)"

# purge: dry run leaves XRANGE as it was; no --yes refuses
before=$(redis_cli XRANGE "$DEADK" - + | md5sum)
check_rc "purge --dry-run" 0 "$DLQ" purge "${SRC[@]}" --dry-run
has "purge --dry-run: count" "$T/out" "would delete 6 records"
check "purge --dry-run: XRANGE same" "$(redis_cli XRANGE "$DEADK" - + | md5sum)" "$before"
check_rc "purge no --yes" 2 "$DLQ" purge "${SRC[@]}" </dev/null
check "purge refused: XRANGE same" "$(redis_cli XRANGE "$DEADK" - + | md5sum)" "$before"

# redrive dead -> the stream's dump; then purge the pending dump entries
check_rc "redrive" 0 "$DLQ" redrive "${SRC[@]}" --reason failed --json
check "redrive: moved" "$(json_field moved <"$T/out")" 3
check "dead left" "$(redis_cli XLEN "$DEADK")" 3
check "dump grew" "$(redis_cli XLEN "$K")" 13
check_rc "purge pending entries" 0 "$DLQ" purge "$S" --part dump --limit 3 --yes
has "purge pending: 3" "$T/out" "deleted 3 records"
check "pending acked" "$(redis_cli XPENDING "$K" blq | head -1)" 0
check_rc "purge dead" 0 "$DLQ" purge "${SRC[@]}" --yes
check "dead empty" "$(redis_cli XLEN "$DEADK")" 0
finish
