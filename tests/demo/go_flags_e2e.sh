#!/usr/bin/env bash
# blq-demo accepts the original koykov/demo daemon's command-line flags
# (queue/main.go: -hport, -pport; Go's flag package spellings -x v, -x=v,
# --x v, --x=v) as aliases of the port of --listen and --metrics-listen:
# started with them on free ports, the API answers ping on the -hport port
# and /metrics answers on the -pport port; given with --listen, -hport
# replaces its port whatever the order. The original's -pfport (pprof, no
# equivalent here), a bad port, a missing value and an unknown Go-style flag
# exit 64 with the flag named, and without starting the daemon.
#
# usage: go_flags_e2e.sh BLQ_DEMO SOURCE_DIR   (ctest passes both)
set -uo pipefail
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# go_start WHAT ARGS...: blq-demo with ARGS (@API@ and @MET@: two free
# ports) and the test's dump directory (lib.sh's demo_launch).
go_start() {
	local what=$1
	shift
	demo_launch "$what" --dump-dir "$E2E_DUMP" "$@"
}

# check_ports WHAT: /metrics answers on the metrics port, the startup line
# names both ports, and SIGTERM stops the daemon with exit 0.
check_ports() {
	local what=$1 code
	code=$(curl -sS --max-time 10 -o "$E2E_TMP/metrics.txt" -w '%{http_code}' "$METRICS/metrics")
	[ "$code" = 200 ] || fail "$what: /metrics on port $METRICS_PORT: HTTP $code, want 200"
	grep -q '^# TYPE queue_in_total counter' "$E2E_TMP/metrics.txt" ||
		fail "$what: /metrics on port $METRICS_PORT is not the exposition: $(head -c 200 "$E2E_TMP/metrics.txt")"
	ok "$what: /metrics answers on port $METRICS_PORT"
	grep -q "api on http://127.0.0.1:$API_PORT/api/v1/, metrics on http://127.0.0.1:$METRICS_PORT/metrics" \
		"$DAEMON_ERR" || fail "$what: the startup line does not name ports $API_PORT and $METRICS_PORT"
	demo_term 20
	[ "$DAEMON_RC" = 0 ] || fail "$what: exited $DAEMON_RC on SIGTERM (want 0)"
	check_stderr
	ok "$what: SIGTERM: exit 0, stderr clean"
}

# The Go spellings, each form at least once.
go_start "-x v" -hport @API@ -pport @MET@
check_ports "-x v"
go_start "-x=v" -hport=@API@ -pport=@MET@
check_ports "-x=v"
go_start "--x v, --x=v" --hport @API@ --pport=@MET@
check_ports "--x v, --x=v"
# Beside today's options: -hport replaces --listen's port (before or after
# it), the metrics address stays as given; short options still parse.
go_start "with -l and -m" -hport @API@ -l 127.0.0.1:1 -m 127.0.0.1:@MET@ -L warn
check_ports "with -l and -m"
go_start "with --metrics-listen=" --metrics-listen=127.0.0.1:1 -t 5 -pport=@MET@ --listen 127.0.0.1:@API@
check_ports "with --metrics-listen="

# Refused: exit 64, the flag named, nothing started.
refused() { # refused WHAT WANT_REGEX ARGS...
	local what=$1 want=$2 rc
	shift 2
	timeout 10 "$E2E_DEMO" --dump-dir "$E2E_DUMP" "$@" >"$E2E_TMP/out" 2>"$E2E_TMP/err"
	rc=$?
	[ "$rc" = 64 ] || fail "$what: blq-demo $*: exit $rc, want 64; stderr: $(head -n 3 "$E2E_TMP/err")"
	head -n 1 "$E2E_TMP/err" | grep -Eq -- "$want" ||
		fail "$what: blq-demo $*: first stderr line does not match '$want': $(head -n 1 "$E2E_TMP/err")"
	ok "$what: exit 64: $(head -n 1 "$E2E_TMP/err")"
}
refused "pprof flag" '^blq-demo: -pfport: .*no equivalent' -pfport 8082
refused "pprof flag, = form" '^blq-demo: -pfport: ' --pfport=8082
refused "bad port" '^blq-demo: -hport: expected a port number 0\.\.65535, got "http"' -hport http
refused "port above 65535" '^blq-demo: -pport: expected a port number 0\.\.65535, got "65536"' -pport=65536
refused "negative port" '^blq-demo: -hport: expected a port number .*got "-1"' -hport -1
refused "no value" '^blq-demo: -pport: needs a port number' -l 127.0.0.1:0 -pport
refused "mistyped Go flag (not read as -h)" '^blq-demo: unknown option "-hprot"' -hprot 8080
refused "unknown single-dash flag" '^blq-demo: unknown option "-x"' -x
refused "unknown long flag" "unrecognized option '--hports" --hports=1
# A flag's value is not taken for a flag: "-hport" as -d's argument is a
# directory name, so the bad -t is what is reported.
refused "-hport as a value" '^blq-demo: --request-time: ' -d -hport -t 0
# "--" ends the options: what follows is an operand.
refused "after --" '^blq-demo: unexpected argument "-hport"' -- -hport 1
