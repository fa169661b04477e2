#!/bin/bash
# blq-dlq beside a running restorer (another process) consuming the same
# dump: list, show and verify while it works, and a redrive into it;
# nothing lost, nothing taken twice (ids counted in the restorer's log).
. "$(dirname "$0")/lib.sh"
D=$T/dump DEAD=$T/dead
mkdir -p "$D" "$DEAD"
"$NODE" produce "$DEAD" 150 1000 mix >/dev/null || fail "produce dead"
# a slow restorer (2 ms an item), so the tool meets it mid-work
start_bg "$NODE" restore "$D" "$T/log" 2000
wait_for 10 test -e "$T/log" || fail "restorer did not start"
for round in 1 2 3; do
	"$NODE" produce "$D" 100 $((round * 100 - 100)) mix >/dev/null || fail "produce $round"
done
"$DLQ" redrive "$D" --dead "$DEAD" --rate 300 --json >"$T/redrive" 2>"$T/redrive.err" &
RD=$!
bad=0
for i in $(seq 1 20); do
	"$DLQ" list "$D" --dead "$DEAD" >/dev/null 2>>"$T/errs" || bad=$((bad + 1))
	"$DLQ" show "$D" --limit 5 >/dev/null 2>>"$T/errs"
	rc=$?; [ $rc -le 1 ] || bad=$((bad + 1)) # 1: nothing left to show
	"$DLQ" verify "$D" >"$T/v" 2>>"$T/errs" || { bad=$((bad + 1)); cat "$T/v"; }
	sleep 0.05
done
wait $RD
check "redrive beside the restorer: exit" $? 0
check "redrive: moved" "$(json_field moved <"$T/redrive")" 150
check "list/show/verify beside the restorer: failures" "$bad" 0
check "no errors printed" "$(grep -v "show: no record matched" "$T/errs")" ""
wait_for 60 sh -c "[ \$(wc -l <'$T/log') -ge 450 ]" || fail "restorer: $(wc -l <"$T/log") of 450"
sleep 0.5
check "every id, once" "$(sort -n "$T/log" | md5sum)" "$( (seq 0 299; seq 1000 1149) | sort -n | md5sum)"
check_rc "dump empty" 0 "$DLQ" verify "$D" --dead "$DEAD"
has "dump empty: 0 records" "$T/out" "0 records"
finish
