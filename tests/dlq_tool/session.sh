#!/bin/bash
# scripts/dlq_session.sh, the worked session of docs/operating-a-dlq.md, on
# what blq-demo really writes: run for real and its key lines checked, so
# the guide cannot rot. Called with BLQ_DLQ BLQ_DEMO ROOT (the demo in
# dlq_node's place).
. "$(dirname "$0")/lib.sh"
bash "$ROOT/scripts/dlq_session.sh" "$DLQ" "$NODE" >"$T/session" 2>&1 || fail "the session failed: $(cat "$T/session")"
S=$T/session
# re LINE_REGEX WHAT: a line of the session matches (grep -E).
re() { if grep -qE -- "$1" "$S"; then ok "$2"; else fail "$2: /$1/ not in: $(head -c 1500 "$S")"; fi; }
re '^dead/orders\.[0-9-]+--[0-9]{6}\.bin +[0-9]+ +[0-9.]+ [KMi]*B +0 +0  ' "list: the dead store's files, no damage"
# A list line with a DAMAGE count, a DAMAGED report, a failed command.
grep -qE '^(dump|dead|quarantine)/[^ ]+ +[0-9]+ +[^ ]+ [^ ]+ +[0-9]+ +[1-9]|DAMAGED|^\(exit' "$S" &&
	fail "the demo's dump is called damaged, or a command failed: $(cat "$S")"
re 'restores 1  deliveries 0  .*  failed \(attempts 1, rc 1, queue orders\)$' "show: why, failed, restored once"
re '^[1-9][0-9]* records \(.*\) good, 0 damaged, 0 gone$' "verify before: good, no damage"
D=$(sed -n 's/^\([0-9]*\) records (.*) good, 0 damaged, 0 gone$/\1/p' "$S" | head -1)
re "^redrove $D records from dead to dump in .*version 1, restore counts reset to 0\)$" "redrive: all $D, version 1, restores reset"
re '^0 records \(0 B\) good, 0 damaged, 0 gone$' "verify after: empty"
re "^# The queue processed $D orders; its restorer restored $D, sent 0 to the dead store\.$" "the queue processed all $D"
# and the guide shows the same lines
G=$ROOT/docs/operating-a-dlq.md
for line in "records from dead to dump in" "version 1, restore counts reset to 0)" \
	"0 records (0 B) good, 0 damaged, 0 gone" "failed (attempts 1, rc 1, queue orders)" \
	"sent 0 to the dead store." "blq-dlq list dump --dead dump/orders.dead"; do
	has "guide has: $line" "$G" "$line"
done
finish
