#!/bin/bash
# redrive at a rate into a dump a real restorer consumes: 300 records at
# 100/s take 3 s within 20 percent (the tool's elapsed time, and the
# restorer's own log sampled each half second), and every id comes out
# once.
. "$(dirname "$0")/lib.sh"
D=$T/dump DEAD=$T/dead
mkdir -p "$D" "$DEAD"
"$NODE" produce "$DEAD" 300 0 mix >/dev/null || fail "produce"
start_bg "$NODE" restore "$D" "$T/log"
wait_for 10 test -e "$T/log" || fail "restorer did not start"
# sample the restorer's count every 0.5 s while the redrive runs
( while :; do echo "$(date +%s.%N) $(wc -l <"$T/log")"; sleep 0.5; done ) >"$T/samples" &
BG+=($!)
check_rc "redrive --rate 100" 0 "$DLQ" redrive "$D" --dead "$DEAD" --rate 100 --json
cat "$T/out"
secs=$(json_field seconds <"$T/out")
check "redrive: moved" "$(json_field moved <"$T/out")" 300
check "redrive: 300 at 100/s within 20% of 3 s ($secs s)" "$(awk -v s="$secs" 'BEGIN {print (s >= 2.4 && s <= 3.6)}')" 1
wait_for 30 sh -c "[ \$(wc -l <'$T/log') -ge 300 ]" || fail "restorer: $(wc -l <"$T/log") of 300"
kill "${BG[1]}"
# the restorer's rate over the middle of the run, from the samples
awk 'NR == 1 { t0 = $1; n0 = $2 } $2 > 0 && !s { ts = $1; ns = $2; s = 1 } $2 < 300 { te = $1; ne = $2 }
     END { if (te > ts) printf "%.0f\n", (ne - ns) / (te - ts); else print 0 }' "$T/samples" >"$T/rate"
r=$(cat "$T/rate")
check "restorer's measured rate $r/s within 20% of 100" "$( [ "$r" -ge 80 ] && [ "$r" -le 120 ] && echo yes)" yes
check "every id once" "$(sort -n "$T/log" | md5sum)" "$(seq 0 299 | md5sum)"
check "dead store empty" "$("$DLQ" list "$D" --dead "$DEAD" --json | grep '"area":"dead"' | json_field records | awk '{s += $1} END {if (NR) print s}')" ""
check_rc "nothing left to redrive" 1 "$DLQ" redrive "$D" --dead "$DEAD"

# Records a restorer marked done (restored, the file not removed yet) are not
# redriven: another restorer would restore them again.
S=$T/src O=$T/other
mkdir -p "$S" "$O"
"$NODE" produce "$S" 6 500 failed >/dev/null || fail "produce src"
"$NODE" done "$S" 4 || fail "mark 4 done"
check "src: 4 done" "$("$DLQ" list "$S" --json | grep '"area":"dump"' | json_field done)" 4
check_rc "export leaves out the done records" 0 "$DLQ" export "$S"
check "export: 2 lines" "$(wc -l <"$T/out")" 2
check_rc "redrive --from dump --to other" 0 "$DLQ" redrive "$S" --from dump --to "$O" --json
check "redrive: moved the 2 not done" "$(json_field moved <"$T/out")" 2
check_rc "other: what it got" 0 "$DLQ" show "$O" --json
check "other: ids 504, 505" "$(grep -o 'order [0-9]*' "$T/out" | tr '\n' ' ')" "order 504 order 505 "
check "src: the file went (done records with it)" "$(ls "$S" | grep -c '\.bin$')" 0
finish
