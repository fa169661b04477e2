#!/usr/bin/env bash
# blq-demo's HTTP API end to end: every endpoint and every error code
# against a running daemon, each reply's JSON checked (its "status" equals
# the HTTP code, "error" names the problem), then concurrent init/stop of
# one key and a slow client. Ends with SIGTERM: exit 0, stderr clean.
#
# usage: api_e2e.sh BLQ_DEMO SOURCE_DIR   (ctest passes both)
# shellcheck disable=SC2119 # demo_start/demo_finish: their own arguments, not the script's
set -uo pipefail
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

demo_start

# A small, quick queue: 1..3 producers at 100/s each, fast workers.
small=$E2E_TMP/small.json
cat >"$small" <<'EOF'
{"capacity": 1000, "workers_min": 1, "workers_max": 4, "worker_delay": 100000,
 "heartbeat": 100000000, "producers_min": 1, "producers_max": 3,
 "producer_delay": 10000000, "allow_leak": true}
EOF

# --- ping, list, routing ----------------------------------------------------
call GET /api/v1/ping
expect 200 '.message == "pong" and (has("error") | not)' "ping"

# The history sampler (demo/history.h) is one named thread that sleeps for
# good while no key is live: no wakeup in 1.5 s.
sampler_switches() {
	local t
	for t in /proc/"$DAEMON_PID"/task/*; do
		[ "$(cat "$t/comm" 2>/dev/null)" = blq-demo-hist ] || continue
		awk '/^voluntary_ctxt_switches/ { print $2 }' "$t/status"
		return
	done
}
sw0=$(sampler_switches)
[ -n "$sw0" ] || fail "no blq-demo-hist thread in /proc/$DAEMON_PID/task"
sleep 1.5
sw1=$(sampler_switches)
[ "$sw1" = "$sw0" ] || fail "the idle sampler woke up: $sw0 -> $sw1 context switches in 1.5 s"
ok "the history sampler sleeps while no key is live ($sw1 switches, unchanged)"
call POST /api/v1/ping
expect 200 '.message == "pong"' "ping by POST"
call GET /api/v1/list
expect 200 '(.message | fromjson) == []' "list, no queue"

call GET /api/v1/nope
expect 404 '.error | test("unknown path /api/v1/nope")' "unknown path under /api/v1"
call GET /nope
expect 404 '.error | test("unknown path /nope")' "unknown path /nope"

# --- the dashboard page and its files (embedded) ----------------------------
page() { # page PATH WANT_CODE WANT_TYPE
	local code type
	code=$(curl -sS --max-time 10 -D "$E2E_TMP/headers" -o "$E2E_TMP/page" -w '%{http_code}' "$API$1")
	type=$(sed -n 's/^Content-Type: \([^;\r]*\).*/\1/Ip' "$E2E_TMP/headers")
	[ "$code" = "$2" ] || fail "GET $1: HTTP $code, want $2"
	[ "$type" = "$3" ] || fail "GET $1: Content-Type '$type', want $3"
}
page / 200 text/html
grep -q '<script src="/dashboard.js"' "$E2E_TMP/page" || fail "GET /: not the dashboard page"
grep -qi "^Content-Security-Policy: default-src 'self'" "$E2E_TMP/headers" ||
	fail "GET /: no Content-Security-Policy keeping it to its own origin"
! grep -Eq 'https?://' "$E2E_TMP/page" || fail "GET /: the page names an outside address"
ok "GET / -> 200, the dashboard page, nothing from outside"
page /dashboard.js 200 text/javascript
page /charts.js 200 text/javascript
page /dashboard.css 200 text/css
! grep -Eq 'https?://' "$E2E_TMP/page" || fail "dashboard.css names an outside address"
page /presets.json 200 application/json
presets=$(for f in "$E2E_REQ"/*.json; do basename "$f" .json; done | jq -R . | jq -sc sort)
jq -e --argjson want "$presets" 'keys == $want and .demoQoS.qos.algo == "WRR"' "$E2E_TMP/page" >/dev/null ||
	fail "/presets.json is not demo/requests ($presets): $(head -c 300 "$E2E_TMP/page")"
ok "the page's files and the presets of demo/requests"
call POST / -D "$E2E_TMP/headers"
expect 405 '.error | test("use GET")' "POST /"
grep -qi '^Allow: GET, HEAD' "$E2E_TMP/headers" || fail "POST /: no Allow header"
call GET /api/v1/ping/extra
expect 404 '.error | test("unknown path")' "path with a ping prefix"
call DELETE /api/v1/ping
expect 405 '.error | test("DELETE") and test("not allowed")' "DELETE ping"
call DELETE "/api/v1/stop?key=k1"
expect 405 '.error | test("DELETE")' "DELETE stop"
call GET "/api/v1/init?key=k1"
expect 405 '.error | test("POST")' "init by GET"

# --- keys ---------------------------------------------------------------------
for ep in status stats history producer-up producer-down stop force-stop init; do
	call POST "/api/v1/$ep"
	expect 400 '.error | test("^key: missing")' "$ep without key"
	call POST "/api/v1/$ep?key="
	expect 400 '.error | test("^key: missing")' "$ep with an empty key"
done
long=$(printf 'k%.0s' $(seq 64))
for bad in '../etc' '..%2Fetc' "$long" 'a%20b' 'a.b' 'a%00b' '%00' '%C3%A9'; do
	call GET "/api/v1/status?key=$bad"
	expect 400 '.error | test("^key: must be 1 to 63 characters")' "status with key '$bad'"
done
init "../etc" "$small"
expect 400 '.error | test("^key:")' "init with key ../etc"
[ -z "$(ls -A "$E2E_DUMP")" ] || fail "the dump dir is not empty after bad keys"
call GET "/api/v1/status?key=${long:1}"
expect 404 '.error | test("not found")' "status with a 63-character key (valid, unknown)"
for ep in status history producer-up producer-down stop force-stop; do
	call GET "/api/v1/$ep?key=nosuch"
	expect 404 '.error | test("queue \"nosuch\" not found")' "$ep of an unknown key"
done

# --- init bodies ----------------------------------------------------------------
bad_body() { # WHAT CODE JQ BODY
	printf '%s' "$4" >"$E2E_TMP/bad.json"
	init bad "$E2E_TMP/bad.json"
	expect "$2" "$3" "init: $1"
}
bad_body "malformed JSON" 400 '.error | test("malformed JSON at line 2 column [0-9]+")' \
	$'{"capacity": 10,\n "workers_max": }'
bad_body "truncated JSON" 400 '.error | test("line 1 column [0-9]+")' '{"capacity": 10,'
bad_body "not an object" 400 '.error | test("^body: expected a JSON object, got array")' '[1,2]'
bad_body "capacity \"x\"" 400 '.error | test("^capacity: expected a non-negative integer, got string")' \
	'{"capacity": "x", "workers_max": 1}'
bad_body "capacity -1" 400 '.error | test("^capacity: must not be negative")' '{"capacity": -1}'
bad_body "capacity 1.5" 400 '.error | test("^capacity: expected a non-negative integer")' '{"capacity": 1.5}'
bad_body "capacity above the bound" 400 '.error | test("^capacity: at most 10000000")' '{"capacity": 10000001}'
bad_body "fail_rate 2" 400 '.error | test("^fail_rate: must be in \\[0, 1\\] \\(got 2\\)")' \
	'{"capacity": 10, "workers_max": 1, "fail_rate": 2}'
bad_body "workers_max 5000" 400 '.error | test("^workers_max: at most 1024 \\(got 5000\\)")' \
	'{"capacity": 10, "workers_max": 5000}'
bad_body "allow_leak \"yes\"" 400 '.error | test("^allow_leak: expected true or false")' \
	'{"capacity": 10, "workers_max": 1, "allow_leak": "yes"}'
bad_body "unknown qos algo" 400 '.error | test("^qos.algo: unknown algorithm \"FIFO\"")' \
	'{"capacity": 10, "workers_max": 1, "qos": {"algo": "FIFO", "queues": [{"capacity": 5}, {"capacity": 5}]}}'
bad_body "unknown field" 400 '.error | test("^worker_max: unknown field")' \
	'{"capacity": 10, "worker_max": 1}'
bad_body "unknown nested field" 400 '.error | test("^dump.flsh: unknown field")' \
	'{"capacity": 10, "workers_max": 1, "allow_leak": true, "dump": {"capacity": 100, "flsh": 1}}'
bad_body "duplicate field" 400 '.error | test("malformed JSON.*duplicate")' \
	'{"capacity": 10, "capacity": 20}'
bad_body "dump without allow_leak" 400 '.error | test("^dump: needs \"allow_leak\"")' \
	'{"capacity": 10, "workers_max": 1, "dump": {"capacity": 100}}'
bad_body "dump.buffer below the fs writer's smallest write" 400 '.error | test("^dump.buffer: must be 0 or 512\\.\\.")' \
	'{"capacity": 10, "workers_max": 1, "allow_leak": true, "dump": {"capacity": 1000, "buffer": 100}}'
bad_body "producers_min > producers_max" 400 '.error | test("^producers_min: must be <= producers_max")' \
	'{"capacity": 10, "workers_max": 1, "producers_min": 3, "producers_max": 2}'
# Refused by the library (blq_new), not by the body's parser: its message.
bad_body "workers_min > workers_max (library)" 400 \
	'.error == "workers_max: must be >= workers_min (8), got 4"' \
	'{"capacity": 10, "workers_min": 8, "workers_max": 4}'
bad_body "no capacity (library)" 400 '.error == "capacity: must be > 0"' '{"workers_max": 1}'
call POST "/api/v1/init?key=bad"
expect 400 '.error | test("^body: empty")' "init: empty body"

# Bodies above 1 MiB: 413, announced by Content-Length or sent chunked.
head -c $((1024 * 1024 + 1)) /dev/zero | tr '\0' ' ' >"$E2E_TMP/big.json"
init bad "$E2E_TMP/big.json"
expect 413 '.error | test("larger than 1 MiB")' "init: 1 MiB + 1 with Content-Length"
init bad "$E2E_TMP/big.json" -H 'Transfer-Encoding: chunked'
expect 413 '.error | test("larger than 1 MiB")' "init: 1 MiB + 1 chunked"
head -c $((8 * 1024 * 1024)) /dev/zero | tr '\0' ' ' >"$E2E_TMP/huge.json"
init bad "$E2E_TMP/huge.json" -H 'Transfer-Encoding: chunked'
expect 413 '.error | test("larger than 1 MiB")' "init: 8 MiB chunked"
rm -f "$E2E_TMP/huge.json"
# Exactly 1 MiB is allowed: a valid body padded with spaces is parsed.
json='{"capacity": 10, "workers_max": 1, "fail_rate": 7}'
{
	printf '%s' "$json"
	head -c $((1024 * 1024 - ${#json})) /dev/zero | tr '\0' ' '
} >"$E2E_TMP/exact.json"
[ "$(stat -c %s "$E2E_TMP/exact.json")" = 1048576 ] || fail "exact.json is not 1 MiB"
init bad "$E2E_TMP/exact.json"
expect 400 '.error | test("^fail_rate:")' "init: exactly 1 MiB is read and parsed"
init bad "$E2E_TMP/exact.json" -H 'Transfer-Encoding: chunked'
expect 400 '.error | test("^fail_rate:")' "init: exactly 1 MiB chunked is read and parsed"

# Redis dumps: no address at all, a malformed one (400), a server that is
# not there (503).
bad_body "redis dump without an address" 400 '.error | test("^dump.redis_addr: no Redis address")' \
	'{"capacity": 10, "workers_max": 1, "allow_leak": true, "dump": {"capacity": 1000, "writer": "redis"}}'
bad_body "redis_addr without a port" 400 '.error | test("^dump.redis_addr: expected host:port")' \
	'{"capacity": 10, "workers_max": 1, "allow_leak": true, "dump": {"capacity": 1000, "writer": "redis", "redis_addr": "nohost"}}'
bad_body "redis server not answering" 503 '.error | test("^dump: redis 127.0.0.1:1: cannot connect")' \
	'{"capacity": 10, "workers_max": 1, "allow_leak": true, "dump": {"capacity": 1000, "writer": "redis", "redis_addr": "127.0.0.1:1"}}'

call GET "/api/v1/status?key=bad"
expect 404 '' "no queue was left behind by the refused inits"

# --- a queue's life ---------------------------------------------------------------
k1_t0=$(now_ms)
init k1 "$small"
expect 200 '.message == "success"' "init k1"
init k1 "$small"
expect 406 '.error | test("queue \"k1\" already exists")' "init k1 again"
call GET /api/v1/list
expect 200 '(.message | fromjson | map(.key)) == ["k1"]' "list has k1"
call GET "/api/v1/status?key=k1"
expect 200 '.message | fromjson | .key == "k1" and .producers_active == 1 and .producers_min == 1
	and .producers_max == 3 and .producers_idle == 2 and .queue.capacity == 1000
	and .queue.leaky == true and (has("dump") | not)' "status k1"

# The dashboard's numbers: the object itself, typed, not a string in an envelope.
stats=$(curl -sS --max-time 10 "$API/api/v1/stats?key=k1")
jqtrue "$stats" '.key == "k1" and .stopping == false and (.t | type) == "number"
	and .capacity == 1000 and (.size | type) == "number" and (.rate >= 0 and .rate <= 1)
	and .wakeup_factor > 0 and .sleep_factor >= 0 and .schedule_range == -1
	and .workers.min == 1 and .workers.max == 4 and .workers.active >= 1
	and (.workers.active + .workers.asleep + .workers.idle) == 4
	and .producers == {"active": 1, "min": 1, "max": 3}
	and (.counters | keys) == ["cancelled","delayed","expired","failed","in","leaked","leaked_closed",
		"leaked_deadline","leaked_failed","leaked_front","leaked_rear","lost","processed","retried",
		"timed_out"]
	and .counters.leaked == .counters.leaked_rear + .counters.leaked_front + .counters.leaked_failed
		+ .counters.leaked_deadline + .counters.leaked_closed
	and (.dlq_waiting | type) == "number"
	and (.workers.busy | type) == "number" and .workers.overrunning == 0 and .workers.stuck == 0
	and (.producers_blocked | type) == "number"
	and .qos == null and (has("dump") | not)' || fail "stats k1: $stats"
t1=$(jq .t <<<"$stats")
in1=$(jq .counters.in <<<"$stats")
sleep 0.3
stats=$(curl -sS --max-time 10 "$API/api/v1/stats?key=k1")
jqtrue "$stats" ".t > $t1 and .counters.in > $in1" || fail "stats k1 does not move: $stats"
ok "stats k1: the numbers, and its clock and counters move"
call GET "/api/v1/stats?key=nope"
expect 404 '.error | test("not found")' "stats of an unknown key"

# The history (demo/history.h): 5 s after its init, k1 has a sample a
# second from the init on, numbered from 1, the counters never going back,
# each sample in the shape of stats and none ahead of a stats read after it.
sleep "$(awk -v ms=$(( k1_t0 + 5200 - $(now_ms) )) 'BEGIN { print (ms > 0 ? ms : 0) / 1000 }')"
hist=$(curl -sS --max-time 10 "$API/api/v1/history?key=k1")
stats=$(curl -sS --max-time 10 "$API/api/v1/stats?key=k1")
jqtrue "$hist" '.key == "k1" and .period_s == 1 and .capacity == 300 and (.samples | type) == "array"' ||
	fail "history k1: $hist"
jq -e --argjson s "$stats" '.instance == $s.instance' <<<"$hist" >/dev/null ||
	fail "history k1: not the instance of stats ($(jq .instance <<<"$stats")): $(jq .instance <<<"$hist")"
n=$(jq '.samples | length' <<<"$hist")
(( n >= 4 && n <= 7 )) || fail "history k1 5 s after init: $n samples, want 4..7: $hist"
jqtrue "$hist" '[.samples[].seq] == [range(1; (.samples | length) + 1)]' ||
	fail "history k1: not numbered 1..$n: $(jq -c '[.samples[].seq]' <<<"$hist")"
jqtrue "$hist" '[.samples[].t] as $t | [range(1; $t | length) | $t[.] - $t[. - 1]] as $d
	| all($d[]; . > 0.5 and . < 1.5)
	and (($t[-1] - $t[0]) / ($d | length) | . > 0.95 and . < 1.05)' ||
	fail "history k1: not a sample a second: t $(jq -c '[.samples[].t]' <<<"$hist")"
jqtrue "$hist" '.samples as $x | all(range(1; $x | length);
	. as $i | $x[$i].counters | to_entries | all(.value >= $x[$i - 1].counters[.key]))' ||
	fail "history k1: a counter went back: $(jq -c '[.samples[].counters]' <<<"$hist")"
jq -e --argjson s "$stats" '.samples[-1] | .t < $s.t
	and (.counters | to_entries | all(.value <= $s.counters[.key]))
	and .counters.in > 0 and .capacity == $s.capacity and .producers == {"active": 1, "max": 3}
	and .workers.max == $s.workers.max' <<<"$hist" >/dev/null ||
	fail "history k1: the last sample does not fit stats $stats: $(jq -c '.samples[-1]' <<<"$hist")"
jq -e --argjson s "$stats" '.samples[-1] | [paths(scalars) as $p | select($p != ["seq"])
	| select(($s | getpath($p) | type) != (getpath($p) | type))] == []' <<<"$hist" >/dev/null ||
	fail "history k1: a sample member is not in stats: $(jq -c '.samples[-1]' <<<"$hist") / $stats"
ok "history k1: $n samples a second apart from the init, in the shape of stats"
call GET "/api/v1/history?key=k1&after=$((n - 2))"
[ "$CODE" = 200 ] || fail "history after=$((n - 2)): HTTP $CODE: $BODY"
jqtrue "$BODY" "[.samples[].seq] | .[0] == $((n - 1)) and all(. > $((n - 2)))" ||
	fail "history after=$((n - 2)): $(jq -c '[.samples[].seq]' <<<"$BODY")"
call GET "/api/v1/history?key=k1&after=1000000"
[ "$CODE" = 200 ] && jqtrue "$BODY" '.samples == []' || fail "history after=1000000: HTTP $CODE: $BODY"
ok "history after=N: only the samples after N"
for a in -1 x 1.5 '%20' '1%00x' 99999999999999999999; do
	call GET "/api/v1/history?key=k1&after=$a"
	expect 400 '.error | test("^after: expected a sample number")' "history after '$a'"
done
call GET "/api/v1/history?key=k1" -H 'Origin: https://evil.example' -H 'Sec-Fetch-Site: cross-site'
[ "$CODE" = 200 ] || fail "history from another site: HTTP $CODE (reads stay open)"

# Browsers: a page from another site may read but not change a queue, and a
# DNS-rebinding Host is not answered on loopback (demo/origin.h).
call GET "/api/v1/producer-up?key=k1" -H 'Sec-Fetch-Site: cross-site'
expect 403 '.error | test("Sec-Fetch-Site \"cross-site\" refused")' "producer-up from another site"
call POST "/api/v1/force-stop?key=k1" -H 'Origin: https://evil.example'
expect 403 '.error | test("Origin \"https://evil.example\" refused")' "force-stop from another origin"
call GET "/api/v1/status?key=k1" -H 'Origin: https://evil.example' -H 'Sec-Fetch-Site: cross-site'
expect 200 '' "status from another site (reads stay open)"
call POST "/api/v1/producer-up?key=k1" -H "Origin: $API" -H 'Sec-Fetch-Site: same-origin'
expect 200 '' "producer-up from the daemon's own page"
call POST "/api/v1/producer-down?key=k1" -H "Origin: $API" -H 'Sec-Fetch-Site: same-origin'
expect 200 '' "producer-down from the daemon's own page"
call GET "/api/v1/status?key=k1" -H 'Host: evil.example:8080'
expect 403 '.error | test("Host \"evil.example:8080\" refused") and test("DNS rebinding")' "a rebinding Host"
call GET "/" -H 'Host: evil.example'
expect 403 '' "the page under a rebinding Host"
[ "$(st k1 .producers_active)" = 1 ] || fail "a refused request changed the producers"

call GET "/api/v1/producer-up?key=k1&delta=2"
expect 200 '.message == "success"' "producer-up 2 (1 -> 3)"
[ "$(st k1 .producers_active)" = 3 ] || fail "producers_active is not 3 after up 2"
call GET "/api/v1/producer-up?key=k1&delta=1"
expect 409 '.error | test("maximum producers count reached")' "producer-up beyond producers_max"
[ "$(st k1 '[.producers_active, .producers_idle] | join(",")')" = 3,0 ] ||
	fail "the refused producer-up changed the producers"
call GET "/api/v1/producer-down?key=k1&delta=3"
expect 409 '.error | test("minimum producers count reached")' "producer-down below producers_min"
[ "$(st k1 .producers_active)" = 3 ] || fail "the refused producer-down changed the producers"
call GET "/api/v1/producer-down?key=k1&delta=2"
expect 200 '.message == "success"' "producer-down 2 (3 -> 1)"
[ "$(st k1 .producers_active)" = 1 ] || fail "producers_active is not 1 after down 2"
call GET "/api/v1/producer-up?key=k1"
expect 200 '' "producer-up without delta (counts 1)"
call GET "/api/v1/producer-down?key=k1&delta=0"
expect 200 '' "producer-down delta 0 (counts 1, as the original)"
[ "$(st k1 .producers_active)" = 1 ] || fail "producers_active is not 1 after up 1 / down 0"
for d in -1 x 1x 1.5 99999 '%20' '1%00x'; do
	call GET "/api/v1/producer-up?key=k1&delta=$d"
	expect 400 '.error | test("^delta: expected an integer")' "producer-up delta '$d'"
done
[ "$(st k1 .producers_active)" = 1 ] || fail "a bad delta changed the producers"

# CORS preflight.
curl -sS --max-time 10 -X OPTIONS -D "$E2E_TMP/headers" -o /dev/null "$API/api/v1/init?key=k1" ||
	fail "OPTIONS: curl failed"
grep -q '^HTTP/1.1 204' "$E2E_TMP/headers" || fail "OPTIONS: $(head -1 "$E2E_TMP/headers"), want 204"
grep -qi '^Access-Control-Allow-Origin: \*' "$E2E_TMP/headers" || fail "OPTIONS: no Access-Control-Allow-Origin"
grep -qi '^Access-Control-Allow-Methods: .*POST' "$E2E_TMP/headers" || fail "OPTIONS: no Allow-Methods"
ok "OPTIONS -> 204 with Access-Control-Allow-Origin"
curl -sS --max-time 10 -D "$E2E_TMP/headers" -o /dev/null "$API/api/v1/ping"
grep -qi '^Access-Control-Allow-Origin: \*' "$E2E_TMP/headers" || fail "ping: no Access-Control-Allow-Origin"
grep -qi '^Content-Type: application/json' "$E2E_TMP/headers" || fail "ping: not application/json"
ok "replies carry CORS and application/json"

# /metrics on its own port.
metrics_text "$E2E_TMP/metrics.txt"
grep -q '^queue_in_total{queue="k1"} [1-9]' "$E2E_TMP/metrics.txt" || fail "/metrics: no queue_in_total of k1"
grep -q '^queue_producers_active{queue="k1"} 1$' "$E2E_TMP/metrics.txt" || fail "/metrics: producers gauge"
ok "/metrics has k1"
[ "$(curl -s -o /dev/null -w '%{http_code}' "$METRICS/nope")" = 404 ] || fail "/nope on metrics: not 404"
[ "$(curl -s -o /dev/null -w '%{http_code}' -X POST "$METRICS/metrics")" = 405 ] || fail "POST /metrics: not 405"
[ "$(curl -s -o /dev/null -w '%{http_code}' "$METRICS/api/v1/ping")" = 404 ] || fail "the API on the metrics port"
ok "metrics port: 404 elsewhere, 405 for POST"

call GET "/api/v1/stop?key=k1"
check_final "stop k1"
call GET "/api/v1/stop?key=k1"
expect 404 '.error | test("not found")' "stop k1 again"
call GET "/api/v1/force-stop?key=k1"
expect 404 '' "force-stop of the stopped k1"
call GET "/api/v1/status?key=k1"
expect 404 '' "status of the stopped k1"
call GET "/api/v1/history?key=k1"
expect 404 '.error | test("queue \"k1\" not found")' "history of the stopped k1 (freed with it)"
call GET /api/v1/list
expect 200 '(.message | fromjson) == []' "list empty again"
init k1 "$small"
expect 200 '' "init k1 again after its stop"
hist2=$(curl -sS --max-time 10 "$API/api/v1/history?key=k1")
jq -e --argjson h "$hist" '.instance != $h.instance and (.samples | length) <= 2
	and .samples[0].seq == 1' <<<"$hist2" >/dev/null ||
	fail "history of the new k1 is not a new one: $hist2"
ok "the new k1 starts a new history"

# Full queues without leak: stuck drains in 5 s (200 items, 2 workers x
# 50 ms), slow in 20 s (200 ms workers).
cat >"$E2E_TMP/stuck.json" <<'EOF'
{"capacity": 200, "workers_min": 1, "workers_max": 2, "worker_delay": 50000000,
 "heartbeat": 100000000, "producers_min": 4, "producers_max": 4, "producer_delay": 1000000}
EOF
jq '.worker_delay = 200000000' "$E2E_TMP/stuck.json" >"$E2E_TMP/slow.json"

# force-stop of a loaded queue does not drain it.
init k2 "$E2E_TMP/slow.json"
expect 200 '' "init k2 (slow workers, no leak)"
wait_status 10 "k2 full" k2 '.queue.size >= 190'
t0=$(now_ms)
call GET "/api/v1/force-stop?key=k2"
check_final "force-stop k2"
(( $(now_ms) - t0 < 10000 )) || fail "force-stop k2 took $(( $(now_ms) - t0 )) ms (a drain would take 20 s)"
jqtrue "$BODY" '.final.processed < .final.in' || fail "force-stop k2 drained everything: $BODY"
ok "force-stop k2 in $(( $(now_ms) - t0 )) ms, not a drain"

# --- concurrency ---------------------------------------------------------------------
pids=()
# 20 inits of one key at once: one wins, the others are refused with 406.
for i in $(seq 20); do
	curl -sS --max-time 30 -o "$E2E_TMP/ci.$i" -w '%{http_code}' -X POST \
		--data-binary "@$E2E_TMP/stuck.json" "$API/api/v1/init?key=race" >"$E2E_TMP/cc.$i" 2>&1 &
	pids+=($!)
done
wait_pids "${pids[@]}"
codes=$(cat "$E2E_TMP"/cc.* | sort | uniq -c | tr -s ' ' | tr '\n' ';')
[ "$(grep -lx 200 "$E2E_TMP"/cc.* | wc -l)" = 1 ] || fail "20 concurrent inits: want one 200, got $codes"
[ "$(grep -lx 406 "$E2E_TMP"/cc.* | wc -l)" = 19 ] || fail "20 concurrent inits: want 19 x 406, got $codes"
for f in "$E2E_TMP"/ci.*; do
	jq -e '(.status == 200 and .message == "success") or (.status == 406 and (.error | test("race")))' \
		"$f" >/dev/null || fail "concurrent init reply: $(cat "$f")"
done
ok "20 concurrent inits of one key: one 200, 19 x 406"
rm -f "$E2E_TMP"/c[ic].*
wait_status 10 "race fills up" race '.queue.size >= 100' 

# stop, force-stop and status of that key at once: never 5xx; every stop
# or force-stop that answers 200 returns the same final accounting (the one
# stop that ran), and it balances.
n=0 pids=()
for ep in stop status force-stop stop status force-stop status stop status force-stop status status; do
	n=$((n + 1))
	curl -sS --max-time 30 -o "$E2E_TMP/ci.$n" -w '%{http_code}' \
		"$API/api/v1/$ep?key=race" >"$E2E_TMP/cc.$n" 2>&1 &
	pids+=($!)
	echo "$ep" >"$E2E_TMP/ce.$n"
done
wait_pids "${pids[@]}"
finals=0
for i in $(seq "$n"); do
	ep=$(cat "$E2E_TMP/ce.$i") code=$(cat "$E2E_TMP/cc.$i") body=$(cat "$E2E_TMP/ci.$i")
	case $code in
	200 | 404 | 409) ;;
	*) fail "concurrent $ep: HTTP $code: $body" ;;
	esac
	jqtrue "$body" ".status == $code" || fail "concurrent $ep: JSON status != $code: $body"
	if jqtrue "$body" 'has("final")'; then
		finals=$((finals + 1))
		[ "$ep" != status ] || fail "status returned a final: $body"
		BODY=$body CODE=$code
		check_final "concurrent $ep"
	fi
	case $ep/$code in
	stop/200 | force-stop/200)
		jqtrue "$body" 'has("final")' || fail "$ep: 200 without a final: $body"
		final=$(jq -c .final <<<"$body")
		[ -z "${first_final:-}" ] && first_final=$final
		[ "$final" = "$first_final" ] || fail "concurrent stops disagree: $first_final / $final"
		;;
	stop/409 | stop/404 | force-stop/404 | status/200 | status/404) ;;
	*) fail "concurrent $ep: unexpected HTTP $code: $body" ;;
	esac
done
[ "$finals" -ge 1 ] || fail "concurrent stops: no reply carries a final"
ok "concurrent stop/force-stop/status: no 5xx, one final ($(for i in $(seq "$n"); do printf '%s=%s ' "$(cat "$E2E_TMP/ce.$i")" "$(cat "$E2E_TMP/cc.$i")"; done))"
rm -f "$E2E_TMP"/c[ice].*
call GET "/api/v1/status?key=race"
expect 404 '' "race is gone"

# The same calls while a graceful stop is draining (slow: ~20 s): a second
# stop 409, producer-up 409, init 406, status 200, force-stop 200 (it
# escalates the drain, waits for it and returns the same final as the
# draining stop, which ends well before the drain would have).
init race "$E2E_TMP/slow.json"
expect 200 '' "init race again"
wait_status 10 "race full" race '.queue.size >= 190'
curl -sS --max-time 30 -o "$E2E_TMP/stop.body" -w '%{http_code} %{time_total}' \
	"$API/api/v1/stop?key=race" >"$E2E_TMP/stop.code" 2>&1 &
stop_pid=$!
sleep 0.5
call GET "/api/v1/status?key=race"
expect 200 '.message | fromjson | .key == "race"' "status while stopping"
call GET "/api/v1/stop?key=race"
expect 409 '.error | test("already stopping")' "stop while stopping"
call GET "/api/v1/producer-up?key=race"
expect 409 '.error | test("is stopping")' "producer-up while stopping"
init race "$E2E_TMP/slow.json"
expect 406 '.error | test("still stopping")' "init while stopping"
kill -0 "$stop_pid" 2>/dev/null || fail "the graceful stop ended before the force-stop: $(cat "$E2E_TMP/stop.code")"
call GET "/api/v1/force-stop?key=race"
expect 200 '.message == "success" and .final.balanced' "force-stop escalates the stop in progress"
escalated=$BODY
wait "$stop_pid"
read -r code secs <"$E2E_TMP/stop.code"
BODY=$(cat "$E2E_TMP/stop.body") CODE=$code
check_final "the escalated stop"
awk -v s="$secs" 'BEGIN { exit !(s < 10) }' || fail "the escalated stop took $secs s (the drain: ~20 s)"
jqtrue "$BODY" '.final.lost > 0' || fail "the escalated stop lost nothing: $BODY"
[ "$(jq -c .final <<<"$BODY")" = "$(jq -c .final <<<"$escalated")" ] ||
	fail "force-stop and stop report different finals: $escalated / $BODY"
ok "the escalated stop returned in $secs s"

call GET /api/v1/ping
expect 200 '.message == "pong"' "ping after the races"

# At most 64 queues live (DEMO_STAGES_MAX): k1 and 63 more are accepted,
# the next is refused with 503 until one stops.
printf '{"capacity": 1, "workers_max": 1}' >"$E2E_TMP/tiny.json"
pids=()
for i in $(seq 63); do
	curl -sS --max-time 30 -o /dev/null -w '%{http_code}\n' -X POST --data-binary "@$E2E_TMP/tiny.json" \
		"$API/api/v1/init?key=q$i" >"$E2E_TMP/cc.$i" 2>&1 &
	pids+=($!)
	(( i % 16 )) || { wait_pids "${pids[@]}"; pids=(); }
done
wait_pids "${pids[@]}"
[ "$(grep -lx 200 "$E2E_TMP"/cc.* | wc -l)" = 63 ] || fail "63 inits: $(cat "$E2E_TMP"/cc.* | sort | uniq -c | tr '\n' ' ')"
rm -f "$E2E_TMP"/cc.*
call GET /api/v1/list
expect 200 '(.message | fromjson | length) == 64' "64 queues live"
init q64 "$E2E_TMP/tiny.json"
expect 503 '.error | test("already 64 queues running")' "init of a 65th queue"
call GET "/api/v1/stop?key=q1"
check_final "stop q1"
init q64 "$E2E_TMP/tiny.json"
expect 200 '' "init once one stopped"
pids=()
for i in $(seq 2 64); do
	curl -sS --max-time 30 -o /dev/null -w '%{http_code}\n' "$API/api/v1/stop?key=q$i" >"$E2E_TMP/cc.$i" 2>&1 &
	pids+=($!)
	(( i % 16 )) || { wait_pids "${pids[@]}"; pids=(); }
done
wait_pids "${pids[@]}"
[ "$(grep -lx 200 "$E2E_TMP"/cc.* | wc -l)" = 63 ] || fail "63 stops: $(cat "$E2E_TMP"/cc.* | sort | uniq -c | tr '\n' ' ')"
rm -f "$E2E_TMP"/cc.*
call GET /api/v1/list
expect 200 '(.message | fromjson | map(.key)) == ["k1"]' "the 63 stopped, k1 left"

# A slow client holding half a request line does not block the others.
exec 3<>"/dev/tcp/127.0.0.1/$API_PORT" || fail "cannot connect to the API"
printf 'GET /api/v1/pi' >&3
exec 4<>"/dev/tcp/127.0.0.1/$API_PORT" || fail "cannot connect to the API"
printf 'POST /api/v1/init?key=slow HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{"capa' >&4
sleep 0.3
# Blocked, every ping would time out; one answer within 1 s proves it is not
# (a few tries: a busy machine may stall one).
answered=""
for i in 1 2 3 4 5; do
	t0=$(now_ms)
	out=$(curl -sS --max-time 1 "$API/api/v1/ping" 2>&1) && [ "$(jq -r .message <<<"$out")" = pong ] &&
		{ answered="in $(( $(now_ms) - t0 )) ms (try $i)"; break; }
done
[ -n "$answered" ] || fail "ping did not answer within 1 s while slow clients hold connections: $out"
ok "ping answers $answered while two slow clients hold connections"
call GET "/api/v1/status?key=k1"
expect 200 '' "status while slow clients hold"
exec 3>&- 4>&-
call GET "/api/v1/status?key=slow"
expect 404 '' "the half-sent init created nothing"

# Many clients at once (below the per-address limit): all answered.
pids=()
for i in $(seq 24); do
	curl -sS --max-time 10 -o /dev/null -w '%{http_code}' "$API/api/v1/list" >"$E2E_TMP/cc.$i" 2>&1 &
	pids+=($!)
done
wait_pids "${pids[@]}"
[ "$(grep -lx 200 "$E2E_TMP"/cc.* | wc -l)" = 24 ] || fail "24 parallel lists: $(cat "$E2E_TMP"/cc.* | tr '\n' ' ')"
ok "24 parallel lists all 200"
rm -f "$E2E_TMP"/cc.*

call GET "/api/v1/stop?key=k1"
check_final "stop k1 (second life)"
demo_finish
echo "api_e2e: passed in $(elapsed)"
