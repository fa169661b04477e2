#!/bin/bash
# verify on damaged files (truncated, a flipped bit, a bad length) names
# the file, the offset and the bytes skipped and exits 1; salvage then a
# real restorer gives back every intact record, those after the damage
# too (the readers resync on the next intact record: before that, a
# flipped bit in record 5 lost records 5..19); salvage --into makes a
# directory that does not exist.
. "$(dirname "$0")/lib.sh"
SRC=$T/src D=$T/dump Q=$T/dump/quarantine
mkdir -p "$SRC" "$Q"
"$NODE" produce "$SRC" 20 0 mix >/dev/null || fail "produce"
F=$(ls "$SRC")
"$DLQ" show "$SRC" --json >"$T/recs"
off() { sed -n "$(($1 + 1))p" "$T/recs" | json_field offset; }
cp "$SRC/$F" "$Q/trunc.bin"
truncate -s -5 "$Q/trunc.bin"
cp "$SRC/$F" "$Q/flip.bin"
o5=$(off 5)
# a bit of record 5's data (its last byte: 12-byte header + metadata + data)
o6=$(off 6)
printf "\\x$(printf %02x $(( $(od -An -tu1 -j $((o6 - 1)) -N1 "$Q/flip.bin") ^ 1 )))" |
	dd of="$Q/flip.bin" bs=1 seek=$((o6 - 1)) conv=notrunc status=none
cp "$SRC/$F" "$Q/badlen.bin"
o7=$(off 7)
printf '\xff\xff\xff\x7f' | dd of="$Q/badlen.bin" bs=1 seek="$o7" conv=notrunc status=none
o8=$(off 8)
o19=$(off 19)
size=$(stat -c %s "$SRC/$F")

check_rc "verify damaged" 1 "$DLQ" verify "$D"
has "truncated: file and offset" "$T/out" "quarantine/trunc.bin: DAMAGED at offset $o19:"
has "flipped bit: file and offset" "$T/out" "quarantine/flip.bin: DAMAGED at offset $o5:"
has "bad length: file and offset" "$T/out" "quarantine/badlen.bin: DAMAGED at offset $o7:"
has "truncated: bytes skipped" "$T/out" "(1 damaged span, $((size - 5 - o19)) bytes skipped)"
has "flipped bit: bytes skipped (record 5 only)" "$T/out" "(1 damaged span, $((o6 - o5)) bytes skipped)"
has "bad length: bytes skipped (record 7 only)" "$T/out" "(1 damaged span, $((o8 - o7)) bytes skipped)"
# 19 intact records in each (20 written; one damaged or cut)
has "verify totals" "$T/out" "57 records"
has "verify damaged count" "$T/out" "3 damaged ($((size - 5 - o19 + o6 - o5 + o8 - o7)) bytes skipped)"
check_rc "verify --json" 1 "$DLQ" verify "$D" --json
check "verify --json: damage lines" "$(grep -c '"state":"damaged"' "$T/out")" 3
has "verify --json: skipped" "$T/out" "\"offset\":$o5,\"damage\":\"bad checksum\",\"skipped\":$((o6 - o5)),\"spans\":1}"
# records after the damage are there, at their own locations
"$DLQ" show "$D" --part quarantine/flip.bin --json >"$T/flip"
check "show: flip.bin's records" "$(grep -c '"state":"ok"' "$T/flip")" 19
has "show: a record after the damage" "$T/flip" "\"loc\":\"quarantine/flip.bin#5@$o6\""
check_rc "verify a good file" 0 "$DLQ" verify "$SRC"

# redrive cannot delete some records of a damaged file (refused): with a
# filter picking them it must not write them either, or each run leaves
# another copy in the dump. (With no filter it salvages the file whole:
# tests/demo/dlq_journey_e2e.sh.)
check_rc "redrive from a damaged file" 3 "$DLQ" redrive "$D" --from quarantine/trunc.bin --limit 1
has "redrive from a damaged file: says so" "$T/err" "1 refused"
has "redrive from a damaged file: nothing written" "$T/err" "nothing of it was written"
check "redrive from a damaged file: dump untouched" "$(ls "$D" | grep -c '\.bin$')" 0

# salvage each into the dump itself, then a real restorer takes them
for f in trunc:19 flip:19 badlen:19; do
	check_rc "salvage ${f%:*}" 0 "$DLQ" salvage "$D" "quarantine/${f%:*}.bin" --json
	check "salvage ${f%:*}: written" "$(json_field written <"$T/out")" "${f#*:}"
done
check_rc "verify dump area" 0 "$DLQ" verify "$D" --part dump
has "dump area: 57 good" "$T/out" "57 records"
start_bg "$NODE" restore "$D" "$T/log"
wait_for 30 sh -c "[ \$(wc -l <'$T/log' 2>/dev/null || echo 0) -ge 57 ]" || fail "restorer: $(wc -l <"$T/log") of 57"
sleep 0.3
want=$( (seq 0 18; seq 0 19 | grep -vx 5; seq 0 19 | grep -vx 7) | sort -n | md5sum)
check "restored: every good record" "$(sort -n "$T/log" | md5sum)" "$want"
check "damaged files left in quarantine" "$(ls "$Q" | wc -l)" 3

# salvage --into a directory that does not exist yet (nor its parent)
NEW=$T/new/salvaged
check_rc "salvage --into NEWDIR" 0 "$DLQ" salvage "$D" quarantine/flip.bin --into "$NEW" --json
check "salvage --into NEWDIR: written" "$(json_field written <"$T/out")" 19
check "salvage --into NEWDIR: made, 0700" "$(stat -c %a "$NEW" 2>/dev/null)" 700
check "salvage --into NEWDIR: one dump file" "$(ls "$NEW" | grep -c '\.bin$')" 1
check_rc "verify NEWDIR" 0 "$DLQ" verify "$NEW"
has "NEWDIR: 19 good" "$T/out" "19 records"
finish
