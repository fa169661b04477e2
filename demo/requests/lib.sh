# shellcheck shell=bash
# Shared body of the scenario scripts. A scenario script sets
#   BLQ_KEY        queue key, also the name of the init body <key>.json here
#   BLQ_STEP       producers added/removed by one up/down (the original's delta)
#   BLQ_RUN_STEPS  how many up steps `run` makes (0: the config drives the load)
# then sources this file and calls blq_main "$@".
# Only curl and jq are used, so the scripts run on a bare Debian host.

BLQ_DEMO_URL=${BLQ_DEMO_URL:-http://127.0.0.1:8080}
BLQ_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
BLQ_BODY=${BLQ_BODY:-$BLQ_DIR/$BLQ_KEY.json}
BLQ_RUN_STEPS=${BLQ_RUN_STEPS:-0}
BLQ_PROG=$(basename "$0")

blq_usage() {
	cat <<EOF
usage: $BLQ_PROG init|up [N]|down [N]|status|stop|force-stop|run [SECONDS]
  queue key $BLQ_KEY, init body $BLQ_BODY
  up/down N defaults to $BLQ_STEP; run lasts SECONDS (default 30)
  daemon: BLQ_DEMO_URL=$BLQ_DEMO_URL
EOF
}

blq_die() {
	echo "$BLQ_PROG: $*" >&2
	exit 1
}

# blq_request ACTION PATH [curl args]: sets BLQ_REPLY to the reply body and
# returns 0 only on HTTP 200, saying on stderr which action got which code.
blq_request() {
	local action=$1 path=$2 out code
	shift 2
	# The code comes after the body on its own line, so one curl call gives
	# both without a temporary file; curl errors (no daemon) still give 000.
	out=$(curl -sS --max-time 10 -w '\n%{http_code}' "$@" "$BLQ_DEMO_URL$path") || true
	code=${out##*$'\n'}
	BLQ_REPLY=${out%$'\n'*}
	[ "$out" = "$code" ] && BLQ_REPLY=
	if [ "$code" != 200 ]; then
		echo "$BLQ_PROG: $action: HTTP $code from $BLQ_DEMO_URL$path" >&2
		return 1
	fi
}

blq_key_q() {
	jq -rn --arg k "$BLQ_KEY" '$k | @uri'
}


# blq_call ACTION [N]: one API request; its reply body goes to stdout.
blq_call() {
	local action=$1 key rc=0
	key=$(blq_key_q)
	case $action in
	init)
		# Refuse a broken body here: the daemon's complaint would be vaguer.
		jq -e . "$BLQ_BODY" >/dev/null || blq_die "init: $BLQ_BODY is not valid JSON"
		blq_request init "/api/v1/init?key=$key" -X POST \
			-H 'Content-Type: application/json' --data-binary "@$BLQ_BODY" || rc=$?
		;;
	up | down)
		local n=${2:-$BLQ_STEP}
		[[ $n =~ ^[1-9][0-9]*$ ]] || blq_die "$action: N must be a positive integer, not '$n'"
		blq_request "$action" "/api/v1/producer-$action?key=$key&delta=$n" || rc=$?
		;;
	status | stop | force-stop)
		blq_request "$action" "/api/v1/$action?key=$key" || rc=$?
		;;
	*) blq_die "unknown action '$action'" ;;
	esac
	[ -n "$BLQ_REPLY" ] && printf '%s\n' "$BLQ_REPLY"
	return "$rc"
}

# status's message is a JSON object carried as a string: show it decoded and
# on one line, falling back to the raw body when it is not.
blq_status_line() {
	jq -c '(.message | fromjson?) // .' 2>/dev/null <<<"$BLQ_REPLY" || printf '%s\n' "$BLQ_REPLY"
}

# blq_run SECONDS: init, ramp the producers up by BLQ_RUN_STEPS steps over
# the first 40% of the run and back down over 50%..90% (so the graphs show
# both edges and the tail drains), print status once a second, then stop.
blq_run() {
	local dur=${1:-30} t ups=0 raised=0 downs=0 steps=$BLQ_RUN_STEPS fail=0 span
	[[ $dur =~ ^[1-9][0-9]*$ ]] || blq_die "run: SECONDS must be a positive integer, not '$dur'"
	blq_request init "/api/v1/init?key=$(blq_key_q)" -X POST \
		-H 'Content-Type: application/json' --data-binary "@$BLQ_BODY" ||
		{ printf '%s\n' "$BLQ_REPLY"; exit 1; }
	echo "t=0s init $BLQ_REPLY"
	# Leave no queue running behind an interrupted run.
	trap 'echo "$BLQ_PROG: interrupted, stopping $BLQ_KEY" >&2; blq_call stop || true; exit 130' INT TERM
	span=$((dur * 2 / 5))
	for ((t = 0; t < dur; t++)); do
		while ((ups < steps && t >= (ups + 1) * span / steps)); do
			# Only steps that took are undone later, so the down phase never
			# asks for fewer producers than producers_min.
			if blq_request up "/api/v1/producer-up?key=$(blq_key_q)&delta=$BLQ_STEP"; then
				raised=$((raised + 1))
			else
				fail=1
			fi
			echo "t=${t}s up $BLQ_STEP $BLQ_REPLY"
			ups=$((ups + 1))
		done
		while ((downs < raised && t >= dur / 2 + (downs + 1) * span / steps)); do
			blq_request down "/api/v1/producer-down?key=$(blq_key_q)&delta=$BLQ_STEP" || fail=1
			echo "t=${t}s down $BLQ_STEP $BLQ_REPLY"
			downs=$((downs + 1))
		done
		blq_request status "/api/v1/status?key=$(blq_key_q)" || fail=1
		echo "t=${t}s status $(blq_status_line)"
		sleep 1 # approximate: request time adds a little to every second
	done
	trap - INT TERM
	blq_request stop "/api/v1/stop?key=$(blq_key_q)" || fail=1
	echo "t=${dur}s stop $BLQ_REPLY"
	return "$fail"
}

blq_main() {
	command -v curl >/dev/null || blq_die "curl is needed (apt-get install curl)"
	command -v jq >/dev/null || blq_die "jq is needed (apt-get install jq)"
	case ${1:-} in
	init | status | stop | force-stop)
		[ $# -eq 1 ] || { blq_usage >&2; exit 2; }
		blq_call "$1"
		;;
	up | down)
		[ $# -le 2 ] || { blq_usage >&2; exit 2; }
		blq_call "$@"
		;;
	run)
		[ $# -le 2 ] || { blq_usage >&2; exit 2; }
		blq_run "${2:-30}"
		;;
	-h | --help | help)
		blq_usage
		;;
	*)
		blq_usage >&2
		exit 2
		;;
	esac
}
