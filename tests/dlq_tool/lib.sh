# Shared by the blq-dlq tests: sourced with "$@" = BLQ_DLQ DLQ_NODE ROOT.
# Gives: $DLQ (the tool), $NODE (dlq_node), $ROOT, $T (a scratch
# directory, removed on exit with every process started by start_bg),
# check/fail helpers, and the Redis address of BLQ_TEST_REDIS.
set -u
DLQ=$1
NODE=$2
ROOT=$3
T=$(mktemp -d /tmp/blq-dlqtool-XXXXXX)
BG=()
cleanup() {
	for p in "${BG[@]}"; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
	rm -rf "$T"
}
trap cleanup EXIT
FAILED=0

fail() { echo "FAIL: $*" >&2; FAILED=1; }
ok() { echo "ok: $*"; }
# check WHAT GOT WANT
check() { if [ "$2" = "$3" ]; then ok "$1 = $3"; else fail "$1: got '$2', want '$3'"; fi; }
# check_rc WHAT WANT CMD...: runs CMD (stdout to $T/out, stderr to $T/err).
check_rc() {
	local what=$1 want=$2
	shift 2
	"$@" >"$T/out" 2>"$T/err"
	local rc=$?
	check "$what: exit" "$rc" "$want"
}
# has WHAT FILE TEXT: FILE contains TEXT (fixed string).
has() { if grep -qF -- "$3" "$2"; then ok "$1"; else fail "$1: '$3' not in $2: $(head -c 600 "$2")"; fi; }
# A digest of a directory tree: names, sizes and contents.
tree_sum() { (cd "$1" && find . -type f -printf '%p %s\n' | sort && find . -type f -print0 | sort -z | xargs -0 -r md5sum) | md5sum; }
start_bg() { "$@" & BG+=($!); }
# wait_for SECONDS CMD...: until CMD succeeds.
wait_for() {
	local end=$((SECONDS + $1))
	shift
	until "$@"; do
		[ $SECONDS -ge $end ] && return 1
		sleep 0.1
	done
}
json_field() { sed -n "s/.*\"$1\":\([^,}]*\).*/\1/p"; }
finish() { if [ $FAILED -ne 0 ]; then echo "FAILED" >&2; exit 1; fi; echo "PASSED"; exit 0; }

redis_setup() {
	if [ -z "${BLQ_TEST_REDIS:-}" ]; then
		echo "BLQ_TEST_REDIS not set: skipped"
		exit 77
	fi
	RHOST=${BLQ_TEST_REDIS%:*}
	RPORT=${BLQ_TEST_REDIS##*:}
	R="redis://$RHOST:$RPORT"
	# Keys unique to this run, removed at exit.
	K="blqdlqtool-$$"
	redis-cli -h "$RHOST" -p "$RPORT" ping >/dev/null 2>&1 || { echo "FAIL: no Redis at $BLQ_TEST_REDIS" >&2; exit 1; }
	trap 'redis_cli --scan --pattern "$K*" | xargs -r redis-cli -h "$RHOST" -p "$RPORT" del >/dev/null; cleanup' EXIT
}
redis_cli() { redis-cli -h "$RHOST" -p "$RPORT" "$@"; }
