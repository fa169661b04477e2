#!/bin/bash
# The worked session of docs/operating-a-dlq.md, run for real: a queue's
# consumer fails and a burst overflows it, so items are dead-lettered into
# a dead store; the operator lists, inspects, fixes the consumer (starts
# its restorer), redrives at a rate, and checks that the DLQ is empty.
# Prints the transcript ("$ command" then its output). The test
# dlq_tool_session runs it and checks its key lines, so the guide's
# transcript cannot rot silently.
#
# Usage: scripts/dlq_session.sh [BLQ_DLQ [DLQ_NODE]]
#   (defaults: build/dev/tools/blq-dlq/blq-dlq, build/dev/tests/dlq_node)
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
DLQ=$(realpath "${1:-$root/build/dev/tools/blq-dlq/blq-dlq}")
NODE=$(realpath "${2:-$root/build/dev/tests/dlq_node}")
work=$(mktemp -d /tmp/blq-dlq-session-XXXXXX)
restorer=
trap '[ -n "$restorer" ] && kill $restorer 2>/dev/null; wait 2>/dev/null; rm -rf "$work"' EXIT
cd "$work"
mkdir dlq dead
# Shown as "blq-dlq"; runs the build's binary.
run() {
	echo "\$ blq-dlq $*"
	"$DLQ" "$@" || echo "(exit $?)"
	echo
}
say() { echo "# $*"; }

# The incident: 6 orders fail in the consumer (rc -42) and 6 more overflow
# "ingest"; the restorer's dead store (dead/) holds them all.
"$NODE" produce dead 12 0 mix >/dev/null
say "The on-call page: orders are failing. What is in the DLQ?"
run list dlq --dead dead
say "Why were they dead-lettered?"
run show dlq --dead dead --part dead --reason failed --limit 3
run show dlq --dead dead --part dead --reason overflow-rear --limit 2 --newest
run verify dlq --dead dead
say "The consumer is fixed and its restorer runs again on dlq/. Redrive, gently:"
"$NODE" restore dlq "$work/processed.log" >/dev/null 2>&1 &
restorer=$!
run redrive dlq --dead dead --rate 20
# wait for the restorer to feed all 12 to the fixed consumer
for _ in $(seq 1 100); do
	[ "$(wc -l <processed.log 2>/dev/null || echo 0)" -ge 12 ] && break
	sleep 0.1
done
say "Is the DLQ empty?"
run verify dlq --dead dead
run list dlq --dead dead
say "The consumer processed $(sort -u processed.log | wc -l) distinct orders."
