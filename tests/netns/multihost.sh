#!/usr/bin/env bash
# multihost.sh RESTORE_NODE SCENARIO: one Redis stream carries work between
# hosts, each a network namespace (tests/netns/lib.sh) running real
# processes (restore_node):
#   h1  redis-server (AOF, fsync always)
#   h2  host A: a queue whose transit worker hands N items to a Redis dump
#   h3  host B, h4 host C: restorers feeding their own queues from the stream
# While the items flow, SCENARIO strikes:
#   link-back      B's link goes down for 3 s, then comes back
#   link-gone      B's link goes down and never comes back (B is killed at
#                  the end)
#   host-killed    B is killed with SIGKILL
#   redis-restart  redis-server is killed with SIGKILL and restarted
# Then: every item processed (a line in B's or C's log), duplicates within
# max_in_flight (32) per restorer struck, each duplicate marked as a
# redelivery, C took over B's stranded entries, the stream empty with
# nothing pending, and written == processed + left in the stream.
# Exit 77 when namespaces cannot be made here.
set -uo pipefail
node=${1:?restore_node}
scenario=${2:?scenario}
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"

nn_available || { echo "SKIP: no network namespaces here"; exit 77; }
command -v redis-server >/dev/null || { echo "SKIP: no redis-server"; exit 77; }

P="blqmh$$"
tmp=$(mktemp -d /tmp/blq-multihost.XXXXXX)
cleanup() { nn_teardown "$P"; rm -rf "$tmp"; }
trap cleanup EXIT
fail() { echo "FAIL: $scenario: $*"; exit 1; }
ok() { echo "ok: $scenario: $*"; }

N=4000
PORT=6390
KEY="mh:$scenario"
MAXF=32
nn_setup "$P" 4 || fail "namespaces"
R=$(nn_addr "$P" 1)
mkdir -p "$tmp/redis"
redis_pid=$(nn_redis_start "$P" 1 "$PORT" "$tmp/redis") || fail "redis-server"
rcli() { nn_exec "$P" 1 redis-cli -h "$R" -p "$PORT" "$@"; }

# Started here, not in a $(...) subshell: this shell waits for them.
start_restorer() { # host name
	nn_spawn "$P" "$1" "$node" restore "$R" "$PORT" "$KEY" "$2" "$tmp/$2.log" 2000 \
		>"$tmp/$2.out" 2>"$tmp/$2.err"
}
touch "$tmp/b.log" "$tmp/c.log"
start_restorer 3 b
b=$!
start_restorer 4 c
c=$!
nn_spawn "$P" 2 "$node" produce "$R" "$PORT" "$KEY" "$N" >"$tmp/a.out" 2>&1
a=$!

sleep 0.8
struck=1
case $scenario in
link-back)
	nn_link_down "$P" 3
	sleep 3
	nn_link_up "$P" 3 ;;
link-gone)
	nn_link_down "$P" 3 ;;
host-killed)
	kill -9 "$b"; wait "$b" 2>/dev/null; b="" ;;
redis-restart)
	kill -9 "$redis_pid"; wait "$redis_pid" 2>/dev/null
	sleep 0.5
	redis_pid=$(nn_redis_start "$P" 1 "$PORT" "$tmp/redis") || fail "redis-server restart"
	struck=2 ;;
*) fail "unknown scenario" ;;
esac

wait "$a" || fail "host A did not hand over all $N items: $(cat "$tmp/a.out")"
ok "host A: $(cat "$tmp/a.out")"

distinct() { cat "$tmp/b.log" "$tmp/c.log" | awk '{print $1}' | sort -un | wc -l; }
done_=0
for _ in $(seq 300); do
	if [ "$(distinct)" -ge "$N" ] && [ "$(rcli XLEN "$KEY")" = 0 ] &&
		[ "$(rcli XPENDING "$KEY" mh | head -1)" = 0 ]; then
		done_=1
		break
	fi
	sleep 0.2
done
left=$(rcli XLEN "$KEY")
pending=$(rcli XPENDING "$KEY" mh | head -1)
# Stop: B only if it can still reach Redis; a cut-off B is killed, as a
# host that never comes back would be.
if [ "$scenario" = link-gone ]; then
	kill -9 "$b"; wait "$b" 2>/dev/null; b=""
fi
for pid in $b $c; do kill -TERM "$pid"; done
for pid in $b $c; do wait "$pid"; st=$?; [ "$st" = 0 ] || fail "a restorer did not stop cleanly (exit $st; $(tail -n 3 "$tmp"/*.err))"; done
[ "$done_" = 1 ] || fail "not finished: $(distinct) of $N processed, $left left, $pending pending"

processed=$(cat "$tmp/b.log" "$tmp/c.log" | wc -l)
d=$(distinct)
dups=$((processed - d))
bound=$((struck * MAXF))
[ "$d" -eq "$N" ] || fail "$((N - d)) items never processed"
[ "$dups" -le "$bound" ] || fail "$dups duplicates, above the bound $bound"
# Each id processed k times has at least k - 1 lines marked redelivered.
unmarked=$(cat "$tmp/b.log" "$tmp/c.log" |
	awk '{n[$1]++; if ($2 > 0) r[$1]++} END {u = 0; for (i in n) if (n[i] > 1 && r[i] < n[i] - 1) u++; print u}')
[ "$unmarked" -eq 0 ] || fail "$unmarked ids processed twice without a redelivery mark"
case $scenario in
link-back | link-gone | host-killed)
	taken=$(awk '$2 > 0' "$tmp/c.log" | wc -l)
	[ "$taken" -gt 0 ] || fail "C took over none of B's entries"
	ok "C took over $taken of B's stranded entries" ;;
esac
[ "$left" -eq 0 ] && [ "$pending" -eq 0 ] || fail "stream: $left left, $pending pending"
[ $((d + left)) -eq "$N" ] || fail "accounting: written $N != processed $d + left $left"
ok "written $N = processed $d + left $left; B $(wc -l <"$tmp/b.log"), C $(wc -l <"$tmp/c.log"); duplicates $dups (bound $bound)"
