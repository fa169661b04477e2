#!/bin/bash
# scripts/dlq_session.sh, the worked session of docs/operating-a-dlq.md:
# run for real and its key lines checked, so the guide cannot rot.
. "$(dirname "$0")/lib.sh"
bash "$ROOT/scripts/dlq_session.sh" "$DLQ" "$NODE" >"$T/session" 2>&1 || fail "the session failed: $(cat "$T/session")"
has "list: the dead store's 12" "$T/session" "          12      534 B      0      0  "
has "show: why, failed" "$T/session" "failed (attempts 1, rc -42, queue orders)"
has "show: why, overflow" "$T/session" "overflow rear (attempts 0, rc 0, queue ingest)"
has "show: text" "$T/session" '    "order 11"'
has "verify before" "$T/session" "12 records (518 B) good, 0 damaged, 0 gone"
has "redrive" "$T/session" "redrove 12 records from dead to dump in"
has "verify after: empty" "$T/session" "0 records (0 B) good, 0 damaged, 0 gone"
has "the consumer processed all" "$T/session" "The consumer processed 12 distinct orders."
# and the guide shows the same lines
G=$ROOT/docs/operating-a-dlq.md
for line in "redrove 12 records from dead to dump in" "0 records (0 B) good, 0 damaged, 0 gone" \
	"failed (attempts 1, rc -42, queue orders)" "The consumer processed 12 distinct orders."; do
	has "guide has: $line" "$G" "$line"
done
finish
