# shellcheck shell=bash
# shellcheck disable=SC2034 # E2E_ARGS, E2E_REQ, ...: for the scripts that source this
# Shared part of the blq-demo end-to-end tests (api_e2e.sh, scenarios_e2e.sh,
# prometheus_e2e.sh). A test script sets -uo pipefail, sources this file with
# the daemon's path and the source directory as its first two arguments
# (what tests/CMakeLists.txt passes), and calls demo_start.
#
# Every test runs its own blq-demo on free loopback ports with its own
# temporary dump directory; the EXIT trap stops it (SIGTERM, then SIGKILL)
# and removes the directory (kept when E2E_KEEP=1, for a look after a
# failure). Assertions print "ok: ..." and stop the test at the first
# failure with "FAIL: ..." and the tail of the daemon's stderr.

E2E_DEMO=${1:?usage: $0 BLQ_DEMO_BINARY SOURCE_DIR [ARGS]}
E2E_SRC=${2:?usage: $0 BLQ_DEMO_BINARY SOURCE_DIR [ARGS]}
shift 2
E2E_ARGS=("$@")
E2E_NAME=$(basename "$0" .sh)
E2E_REQ=$E2E_SRC/demo/requests
[ -x "$E2E_DEMO" ] || { echo "$E2E_NAME: no daemon at $E2E_DEMO" >&2; exit 1; }
for tool in curl jq python3; do
	command -v "$tool" >/dev/null || { echo "$E2E_NAME: $tool is needed" >&2; exit 1; }
done

E2E_TMP=$(mktemp -d "/tmp/blq-$E2E_NAME.XXXXXX")
E2E_DUMP=$E2E_TMP/dump
DAEMON_PID=""
DAEMON_ERR=""
E2E_STARTS=0 # daemons started, for their stderr files' names
E2E_CLEANUPS=() # extra commands for the EXIT trap (other servers)
E2E_T0=$(date +%s%3N)

e2e_cleanup() {
	local rc=$? c p
	# Background curls of the concurrency checks, if a failure left any
	# (the daemon is stopped below, with one signal).
	for p in $(jobs -pr); do
		[ "$p" = "$DAEMON_PID" ] || kill "$p" 2>/dev/null
	done
	for c in "${E2E_CLEANUPS[@]}"; do
		eval "$c" || true
	done
	if [ -n "$DAEMON_PID" ] && kill -0 "$DAEMON_PID" 2>/dev/null; then
		kill -TERM "$DAEMON_PID" 2>/dev/null
		for _ in $(seq 100); do
			kill -0 "$DAEMON_PID" 2>/dev/null || break
			sleep 0.1
		done
		kill -KILL "$DAEMON_PID" 2>/dev/null
		wait "$DAEMON_PID" 2>/dev/null
	fi
	if [ "${E2E_KEEP:-0}" = 1 ]; then
		echo "$E2E_NAME: kept $E2E_TMP"
	else
		rm -rf "$E2E_TMP"
	fi
	exit "$rc"
}
trap e2e_cleanup EXIT
trap 'exit 130' INT TERM

now_ms() { date +%s%3N; }
elapsed() { echo "$(( $(now_ms) - E2E_T0 ))ms"; }

ok() { echo "ok: $* [$(elapsed)]"; }

fail() {
	echo "FAIL: $* [$(elapsed)]" >&2
	if [ -n "$DAEMON_ERR" ] && [ -s "$DAEMON_ERR" ]; then
		echo "--- daemon stderr (last 30 lines) ---" >&2
		tail -n 30 "$DAEMON_ERR" >&2
	fi
	exit 1
}

skip() {
	echo "SKIP: $*"
	exit 77
}

# A free TCP port on the loopback (as scripts/test.sh picks Redis's).
free_port() {
	python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# demo_launch WHAT ARGS...: starts blq-demo with ARGS, where the words @API@
# and @MET@ become two free ports (also set as API_PORT, METRICS_PORT, API,
# METRICS), and waits for ping on the API port; sets DAEMON_PID and
# DAEMON_ERR (its stderr). WHAT names the start in the messages. Retried
# when a port was taken between the pick and the bind.
demo_launch() {
	local what=$1 try a args
	shift
	mkdir -p "$E2E_DUMP"
	for try in 1 2 3; do
		API_PORT=$(free_port)
		METRICS_PORT=$(free_port)
		[ "$API_PORT" = "$METRICS_PORT" ] && continue
		API=http://127.0.0.1:$API_PORT
		METRICS=http://127.0.0.1:$METRICS_PORT
		args=()
		for a in "$@"; do
			a=${a//@API@/$API_PORT}
			args+=("${a//@MET@/$METRICS_PORT}")
		done
		E2E_STARTS=$((E2E_STARTS + 1))
		DAEMON_ERR=$E2E_TMP/daemon.$E2E_STARTS.err
		"$E2E_DEMO" "${args[@]}" 2>"$DAEMON_ERR" &
		DAEMON_PID=$!
		for _ in $(seq 150); do
			if curl -s --max-time 1 "$API/api/v1/ping" 2>/dev/null | grep -q pong; then
				ok "$what: blq-demo pid $DAEMON_PID, API on port $API_PORT, metrics on $METRICS_PORT"
				return 0
			fi
			kill -0 "$DAEMON_PID" 2>/dev/null || break
			sleep 0.1
		done
		if kill -0 "$DAEMON_PID" 2>/dev/null; then
			fail "$what: blq-demo ${args[*]}: no ping on port $API_PORT within 15 s"
		fi
		wait "$DAEMON_PID"
		echo "blq-demo ${args[*]} exited with $? at start (try $try):" >&2
		cat "$DAEMON_ERR" >&2
		DAEMON_PID=""
	done
	fail "$what: blq-demo would not start"
}

# demo_start [daemon options]: a fresh daemon on free ports (demo_launch
# with --listen, --metrics-listen and the test's dump directory).
demo_start() {
	demo_launch "blq-demo" --listen 127.0.0.1:@API@ --metrics-listen 127.0.0.1:@MET@ \
		--dump-dir "$E2E_DUMP" "$@"
}

# demo_term [SECONDS]: SIGTERM and wait; sets DAEMON_RC (124: still running
# after SECONDS, then killed).
demo_term() {
	local limit=${1:-20} i
	kill -TERM "$DAEMON_PID"
	for ((i = 0; i < limit * 10; i++)); do
		kill -0 "$DAEMON_PID" 2>/dev/null || break
		sleep 0.1
	done
	if kill -0 "$DAEMON_PID" 2>/dev/null; then
		kill -KILL "$DAEMON_PID"
		wait "$DAEMON_PID" 2>/dev/null
		DAEMON_RC=124
	else
		wait "$DAEMON_PID"
		DAEMON_RC=$?
	fi
	DAEMON_PID=""
}

# The daemon's stderr must hold no error line and no sanitizer report.
# Extra allowed patterns (grep -E) may be given.
check_stderr() {
	local bad
	bad=$(grep -E 'ERROR|AddressSanitizer|LeakSanitizer|ThreadSanitizer|runtime error' "$DAEMON_ERR" |
		{ if [ $# -gt 0 ]; then grep -vE "$1"; else cat; fi })
	[ -z "$bad" ] || fail "daemon stderr has errors: $(head -n 5 <<<"$bad")"
}

# demo_finish: the daemon still answers, then exits 0 on SIGTERM (every
# queue drained and balanced; under ASan the leak check runs at that exit)
# with a clean stderr.
demo_finish() {
	call GET /api/v1/ping
	expect 200 '.message == "pong"' "daemon alive at the end"
	demo_term 30
	[ "$DAEMON_RC" = 0 ] || fail "blq-demo exited $DAEMON_RC on SIGTERM (want 0)"
	grep -q 'balanced for every queue' "$DAEMON_ERR" || fail "no 'balanced for every queue' at exit"
	check_stderr "$@"
	ok "SIGTERM: exit 0, balanced, stderr clean"
}

# call METHOD PATH [curl args]: one request to the API; sets CODE and BODY.
call() {
	local method=$1 path=$2
	shift 2
	CODE=$(curl -sS --path-as-is --max-time "${CALL_TIMEOUT:-30}" -X "$method" -o "$E2E_TMP/body" \
		-w '%{http_code}' "$@" "$API$path" 2>"$E2E_TMP/curl.err") || true
	BODY=$(cat "$E2E_TMP/body" 2>/dev/null)
	rm -f "$E2E_TMP/body"
}

# expect CODE [JQ] [WHAT]: the last reply had HTTP CODE, its JSON "status"
# equals CODE, and the jq expression (on the reply) is true.
expect() {
	local want=$1 expr=${2:-true} what=${3:-}
	[ "$CODE" = "$want" ] ||
		fail "${what:+$what: }HTTP $CODE, want $want; body: $BODY $(cat "$E2E_TMP/curl.err" 2>/dev/null)"
	jqtrue "$BODY" ".status == $want" || fail "${what:+$what: }JSON status is not $want: $BODY"
	jqtrue "$BODY" "$expr" ||
		fail "${what:+$what: }reply fails '$expr': $BODY"
	[ -n "$what" ] && ok "$what -> $want"
	return 0
}

# init KEY BODY_FILE|- [curl args]: POST an init body.
init() {
	local key=$1 file=$2
	shift 2
	call POST "/api/v1/init?key=$key" -H 'Content-Type: application/json' --data-binary "@$file" "$@"
}

# status KEY: the key's status object (the reply's message, decoded) on
# stdout; empty when the key is not running.
status() {
	curl -sS --max-time 10 "$API/api/v1/status?key=$1" | jq -c '.message | fromjson? // empty'
}

# stats_holds KEY JQ: the dashboard's numbers of KEY (/api/v1/stats) pass JQ.
stats_holds() {
	local s
	s=$(curl -sS --max-time 10 "$API/api/v1/stats?key=$1")
	jqtrue "$s" "$2" || fail "$1: stats fail '$2': $s"
	ok "$1: stats: $2"
}

# st KEY JQ: one value of the key's status.
st() {
	status "$1" | jq -r "$2"
}

# wait_for SECONDS WHAT COMMAND...: polls COMMAND every 0.1 s until it
# succeeds; fails the test after SECONDS.
wait_for() {
	local limit=$1 what=$2 start
	shift 2
	start=$(now_ms)
	LAST_STATUS=""
	while ! "$@"; do
		(( $(now_ms) - start < limit * 1000 )) ||
			fail "$what: not within $limit s${LAST_STATUS:+ (last status: $LAST_STATUS)}"
		sleep 0.1
	done
	ok "$what (after $(( $(now_ms) - start )) ms)"
}

# wait_status SECONDS WHAT KEY JQ: polls KEY's status until JQ holds on it.
wait_status() {
	local limit=$1 what=$2 key=$3 expr=$4
	wait_for "$limit" "$what" status_holds "$key" "$expr"
}
status_holds() {
	LAST_STATUS=$(status "$1")
	[ -n "$LAST_STATUS" ] && jq -e "$2" <<<"$LAST_STATUS" >/dev/null 2>&1
}

# wait_pids PID...: waits for these background jobs only (a bare wait, or
# wait with no PID, would wait for the daemon too).
wait_pids() {
	[ $# -eq 0 ] || wait "$@"
}

# jqtrue JSON EXPR: whether EXPR holds on JSON.
# (jq -e on no input at all exits 0: an empty JSON is false here.)
jqtrue() {
	[ -n "$1" ] && jq -e "$2" <<<"$1" >/dev/null 2>&1
}

# dlq KEY JQ: one value of queue KEY's DLQ summary (GET /api/v1/dlq),
# strings raw, objects on one line.
dlq() {
	curl -sS --max-time 10 "$API/api/v1/dlq?key=$1" | jq -rc "$2"
}
# dlq_holds KEY JQ: whether JQ holds on queue KEY's DLQ summary (the reply
# is kept in LAST_STATUS, for a wait_for's message).
dlq_holds() {
	LAST_STATUS=$(curl -sS --max-time 10 "$API/api/v1/dlq?key=$1")
	jqtrue "$LAST_STATUS" "$2"
}
# dlq_post WHAT KEY JSON [curl args]: POST JSON to /api/v1/dlq/WHAT for
# queue KEY (the reply as call leaves it, for expect).
dlq_post() {
	local what=$1 key=$2 json=$3
	shift 3
	call POST "/api/v1/dlq/$what?key=$key" -H 'Content-Type: application/json' --data-binary "$json" "$@"
}

# check_final WHAT: the last reply is a stop's 200 with a balanced final
# accounting: in == processed + failed + leaked + expired + lost, size 0.
check_final() {
	expect 200 '.message == "success" and (.final | type == "object")' "$1"
	jqtrue "$BODY" '.final | .in == .processed + .failed + .leaked + .expired + .lost + .cancelled and .size == 0' ||
		fail "$1: final does not add up: $BODY"
	jqtrue "$BODY" '.final.balanced == true' || fail "$1: final not balanced: $BODY"
	ok "$1: final balanced ($(jq -c '.final | {in, processed, failed, leaked, expired, lost}' <<<"$BODY"))"
}

# metrics_text FILE: the /metrics exposition into FILE.
metrics_text() {
	curl -sS --max-time 10 -o "$1" -w '%{http_code}' "$METRICS/metrics" | grep -q '^200$' ||
		fail "/metrics did not answer 200"
}
