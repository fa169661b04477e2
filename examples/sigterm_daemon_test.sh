#!/bin/bash
# example_sigterm_daemon: runs examples/sigterm_daemon as a real process,
# waits until it reports it is running, lets it work, sends SIGTERM, and
# checks that it exits 0 and that its final accounting has every accepted
# item processed.
# Usage: sigterm_daemon_test.sh <path to sigterm_daemon>
set -u
bin=$1
out=$(mktemp /tmp/blq-sigterm-daemon.XXXXXX)
trap 'rm -f "$out"' EXIT

fail() {
	echo "FAIL: $*"
	echo "--- its output:"
	cat "$out"
	kill -KILL "$pid" 2>/dev/null
	exit 1
}

"$bin" >"$out" 2>&1 &
pid=$!

# Up to 10 s for the "running" line (the sanitizer builds start slowly).
n=0
until grep -q '^running' "$out"; do
	kill -0 "$pid" 2>/dev/null || fail "it exited before it said it was running"
	n=$((n + 1))
	[ "$n" -le 200 ] || fail "no 'running' line after 10 s"
	sleep 0.05
done
sleep 0.5
kill -TERM "$pid"

# Up to 20 s to drain and exit; then it is killed and the test fails.
n=0
while kill -0 "$pid" 2>/dev/null; do
	n=$((n + 1))
	[ "$n" -le 400 ] || fail "still running 20 s after SIGTERM"
	sleep 0.05
done
wait "$pid"
status=$?
[ "$status" -eq 0 ] || fail "exit status $status, want 0"

# final: in N processed N failed 0 leaked 0 expired 0 lost 0 cancelled 0
grep '^final:' "$out" | awk '
	{ found = 1 }
	$3 > 0 && $3 == $5 && $7 + $9 + $11 + $13 + $15 == 0 { ok = 1 }
	END { exit !(found && ok) }' || fail "the final accounting is not 'in == processed > 0'"
cat "$out"
echo "PASS: exit 0 after SIGTERM, every accepted item processed"
