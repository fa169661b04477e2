#!/bin/bash
# The worked session of docs/operating-a-dlq.md, run for real on what
# blq-demo writes: a key's consumer fails (fail_rate 1), its failures go
# to its dump (fail_to_dlq), its restorer gives each one more try and then
# moves it to the key's dead store (max_restores 1). The operator lists
# and inspects with blq-dlq (no option but --dead), fixes the consumer
# (the key started again with fail_rate 0), redrives at a rate, and checks
# that the DLQ is empty and the queue processed every record. Prints the
# transcript ("$ command" then its output). The test dlq_tool_session runs
# it and checks its key lines, so the guide's transcript cannot rot.
#
# Usage: scripts/dlq_session.sh [BLQ_DLQ [BLQ_DEMO]]
#   (defaults: build/dev/tools/blq-dlq/blq-dlq, build/dev/demo/blq-demo)
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
DLQ=$(realpath "${1:-$root/build/dev/tools/blq-dlq/blq-dlq}")
DEMO=$(realpath "${2:-$root/build/dev/demo/blq-demo}")
work=$(mktemp -d /tmp/blq-dlq-session-XXXXXX)
demo=
trap '[ -n "$demo" ] && kill $demo 2>/dev/null; wait 2>/dev/null; rm -rf "$work"' EXIT
cd "$work"
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
API=http://127.0.0.1:$(port)
"$DEMO" --listen "${API#http://}" --metrics-listen "127.0.0.1:$(port)" --dump-dir dump 2>demo.log &
demo=$!
for _ in $(seq 100); do curl -s "$API/api/v1/ping" | grep -q pong && break; sleep 0.1; done
# Shown as "blq-dlq"; runs the build's binary.
run() {
	echo "\$ blq-dlq $*"
	"$DLQ" "$@" || echo "(exit $?)"
	echo
}
say() { echo "# $*"; }
api() { curl -sS "$API/api/v1/$1" "${@:2}"; }
# init FAIL_RATE PRODUCERS: the key "orders" as blq-demo runs it.
init() {
	api "init?key=orders" -X POST --data-binary @- >/dev/null <<EOF
{"capacity":100,"workers_min":1,"workers_max":1,"worker_delay":1000000,
 "producers_min":$2,"producers_max":1,"producer_delay":20000000,"fail_rate":$1,
 "allow_leak":true,"fail_to_dlq":true,"dump":{"capacity":4096,"flush":100000000},
 "restore":{"check":100000000,"max_restores":1}}
EOF
}
dead() { api "dlq?key=orders" | jq '.areas.dead.records'; }
settled() { [ "$(api "dlq?key=orders" | jq '.areas.dump.records')" = 0 ]; }

# The incident: every order fails; each is tried, restored once, tried
# again, and dead-lettered into dump/orders.dead.
init 1 1
for _ in $(seq 200); do [ "$(dead)" -ge 12 ] && break; sleep 0.1; done
api "stop?key=orders" >/dev/null
init 1 0 # no producers: the restorer settles what the dump still holds
for _ in $(seq 200); do settled && break; sleep 0.1; done
api "stop?key=orders" >/dev/null

say "The on-call page: orders are failing. What is in the DLQ?"
run list dump --dead dump/orders.dead
say "Why were they dead-lettered?"
run show dump --dead dump/orders.dead --part dead --reason failed --limit 3
run verify dump --dead dump/orders.dead
say "The consumer is fixed (the key runs again, fail_rate 0) and its restorer"
say "reads dump/. Redrive, gently:"
init 0 0
run redrive dump --dead dump/orders.dead --rate 50
for _ in $(seq 200); do settled && break; sleep 0.1; done
say "Is the DLQ empty?"
run verify dump --dead dump/orders.dead
run list dump --dead dump/orders.dead
final=$(api "stop?key=orders")
say "The queue processed $(jq '.final.processed' <<<"$final") orders; its restorer restored" \
	"$(jq '.final.restore.restored' <<<"$final"), sent $(jq '.final.restore.dead' <<<"$final") to the dead store."
