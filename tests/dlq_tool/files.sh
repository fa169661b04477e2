#!/bin/bash
# blq-dlq on dump directories: every subcommand, values checked.
. "$(dirname "$0")/lib.sh"
D=$T/dump DEAD=$T/dead
mkdir -p "$D" "$DEAD"
"$NODE" produce "$D" 10 0 mix >/dev/null || fail "produce dump"
"$NODE" produce "$DEAD" 6 100 mix >/dev/null || fail "produce dead"

# help on the tool and every subcommand
check_rc "--help" 0 "$DLQ" --help
for s in list show verify salvage redrive export import purge; do
	check_rc "$s --help" 0 "$DLQ" $s --help
	has "$s --help usage" "$T/out" "usage: blq-dlq $s"
done

# list
check_rc "list" 0 "$DLQ" list "$D" --dead "$DEAD" --json
check "list: dump records" "$(grep '"area":"dump"' "$T/out" | json_field records)" 10
check "list: dead records" "$(grep '"area":"dead"' "$T/out" | json_field records)" 6
check_rc "list (terminal)" 0 "$DLQ" list "$D" --dead "$DEAD"
has "list header" "$T/out" "LOCATION"
has "list size" "$T/out" "446 B"

# show: reasons, offsets, JSON fields
check_rc "show failed" 0 "$DLQ" show "$D" --dead "$DEAD" --reason failed --json
check "show failed: count" "$(wc -l <"$T/out")" 8
check "show failed: rc" "$(grep -c '"rc":-42,"queue":"orders"' "$T/out")" 8
check_rc "show overflow dead" 0 "$DLQ" show "$D" --dead "$DEAD" --part dead --reason overflow-rear --json
check "show overflow dead: count" "$(wc -l <"$T/out")" 3
check "show overflow dead: first text" "$(head -1 "$T/out" | json_field text)" '"\"order 103\""'
check_rc "show first" 0 "$DLQ" show "$D" --limit 2
has "show: location with offset" "$T/out" "#0@16  7 B  restores 0  deliveries 0"
has "show: reason" "$T/out" "failed (attempts 1, rc -42, queue orders)"
has "show: text" "$T/out" '"order 0"'
has "show: second record's offset" "$T/out" "#1@59"
check_rc "show --newest" 0 "$DLQ" show "$D" --newest --limit 1 --json
check "show --newest: last id" "$(json_field text <"$T/out")" '"\"order 9\""'
LOC=$(head -1 "$T/out" | sed 's/{"loc":"\([^"]*\)".*/\1/')
check_rc "show --loc" 0 "$DLQ" show "$D" --loc "$LOC" --json
check "show --loc: one record" "$(wc -l <"$T/out")" 1
check_rc "show --since future" 1 "$DLQ" show "$D" --since @4000000000
check_rc "show --until past" 1 "$DLQ" show "$D" --until 2001-01-01
check_rc "show --since 1h" 0 "$DLQ" show "$D" --since 1h --json
check "show --since 1h: count" "$(wc -l <"$T/out")" 10
# binary payloads: hex; --full
B=$T/bin
mkdir -p "$B"
"$NODE" produce "$B" 2 7 failed binary >/dev/null
check_rc "show binary" 0 "$DLQ" show "$B" --limit 1
has "show binary: hex" "$T/out" "hex 07000000 00000000 00ff7f"
# a long payload is cut unless --full (a 100-byte text via import)
printf '{"v":1,"payload":"%s"}\n' "$(head -c 100 /dev/zero | tr '\0' 'x' | base64 -w0)" >"$T/long.jsonl"
L=$T/long
mkdir -p "$L"
check_rc "import long" 0 "$DLQ" import "$L" "$T/long.jsonl"
check_rc "show long" 0 "$DLQ" show "$L"
has "show long: cut" "$T/out" "... 36 more bytes (--full)"
check_rc "show long --full" 0 "$DLQ" show "$L" --full
check "show long --full: whole" "$(grep -o 'x*' "$T/out" | awk '{ if (length($0) > m) m = length($0) } END { print m }')" 100

# decoder
check_rc "show --decoder" 0 "$DLQ" show "$D" --decoder 'tr a-z A-Z' --limit 3
check "decoder: text" "$(grep -c '"ORDER [0-9]"' "$T/out")" 3
check_rc "show --decoder failing" 3 "$DLQ" show "$D" --decoder 'exit 4' --limit 1
has "decoder failing: named" "$T/err" "decoder 'exit 4': exit status 4"

# verify
check_rc "verify" 0 "$DLQ" verify "$D" --dead "$DEAD"
has "verify: totals" "$T/out" "16 records (700 B) good, 0 damaged, 0 gone"

# export / import round trip: export again and compare, loc aside
check_rc "export dead" 0 "$DLQ" export "$D" --dead "$DEAD" --part dead -o "$T/dead.jsonl"
check "export: lines" "$(wc -l <"$T/dead.jsonl")" 6
has "export: a why" "$T/dead.jsonl" '"why":{"reason":"failed","attempts":1,"rc":-42,"queue":"orders"'
E=$T/imported
mkdir -p "$E"
check_rc "import" 0 "$DLQ" import "$E" "$T/dead.jsonl"
has "import: count" "$T/out" "imported 6 records"
"$DLQ" export "$E" >"$T/again.jsonl" 2>/dev/null
strip() { sed 's/"loc":"[^"]*",//' "$1"; }
check "export-import-export: identical (loc aside)" "$(strip "$T/dead.jsonl" | md5sum)" "$(strip "$T/again.jsonl" | md5sum)"
check_rc "import from stdin" 0 sh -c "\"$DLQ\" import \"$E\" - <\"$T/dead.jsonl\""
check_rc "list imported" 0 "$DLQ" list "$E" --json
check "imported twice: records" "$(json_field records <"$T/out" | awk '{s += $1} END {if (NR) print s}')" 12

# purge: --dry-run changes nothing; no --yes on a non-tty refuses; --yes deletes
before=$(tree_sum "$D")$(tree_sum "$DEAD")
check_rc "purge --dry-run" 0 "$DLQ" purge "$D" --dead "$DEAD" --dry-run
has "purge --dry-run: what" "$T/out" "would delete 6 records"
check "purge --dry-run: nothing changed" "$(tree_sum "$D")$(tree_sum "$DEAD")" "$before"
check_rc "purge without --yes" 2 "$DLQ" purge "$D" --dead "$DEAD" </dev/null
has "purge refused: message" "$T/err" "stdin is not a terminal to confirm: pass --yes"
check "purge refused: nothing changed" "$(tree_sum "$D")$(tree_sum "$DEAD")" "$before"
check_rc "purge --reason overflow --yes" 0 "$DLQ" purge "$D" --dead "$DEAD" --reason overflow-rear --yes
has "purge some: rewritten" "$T/out" "deleted 3 records (0 files removed, 1 rewritten"
check_rc "show dead after" 0 "$DLQ" show "$D" --dead "$DEAD" --part dead --json
check "dead after: only failed" "$(grep -c '"reason":"failed"' "$T/out")/$(wc -l <"$T/out")" "3/3"
check_rc "purge --yes" 0 "$DLQ" purge "$D" --dead "$DEAD" --yes --json
check "purge --yes: records" "$(tail -1 "$T/out" | json_field records)" 3
check_rc "purge again: nothing" 1 "$DLQ" purge "$D" --dead "$DEAD" --yes
check "dead dir empty" "$(ls "$DEAD" | wc -l)" 0
check_rc "dump untouched" 0 "$DLQ" verify "$D"
has "dump untouched: 10" "$T/out" "10 records"
finish
