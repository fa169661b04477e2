#!/usr/bin/env bash
# blq-demo's /metrics as a real Prometheus sees it: Debian's prometheus,
# with a temporary config scraping the daemon every second, answers
# rate(queue_in_total{queue="demo100k"}[5s]) > 0 while demo100k runs with
# its producers raised; `promtool check metrics` finds nothing to say about
# the exposition; and every metric the Grafana dashboard
# (demo/deploy/grafana/dashboards/blq-demo.json) queries is in it while a
# QoS queue and a dump queue run.
#
# usage: prometheus_e2e.sh BLQ_DEMO SOURCE_DIR   (ctest passes both)
# Skipped (77) only when no prometheus binary is found (scripts/test.sh
# installs Debian's).
# shellcheck disable=SC2119 # demo_start/demo_finish: their own arguments, not the script's
set -uo pipefail
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

PROMETHEUS=${PROMETHEUS:-$(command -v prometheus)}
[ -n "$PROMETHEUS" ] || skip "prometheus not found (apt-get install prometheus)"
PROMTOOL=${PROMTOOL:-$(command -v promtool || echo "$(dirname "$PROMETHEUS")/promtool")}
[ -x "$PROMTOOL" ] || fail "promtool not found next to $PROMETHEUS"

demo_start

# Prometheus on a free port, its TSDB in the test's directory. Started
# first: it scrapes a new target only some 5 s after its start (its
# discovery updates are throttled), time the queues below use to warm up.
PROM_PORT=$(free_port)
PROM=http://127.0.0.1:$PROM_PORT
mkdir -p "$E2E_TMP/prom"
cat >"$E2E_TMP/prometheus.yml" <<EOF
global:
  scrape_interval: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: blq-demo
    metrics_path: /metrics
    static_configs:
      - targets: ["127.0.0.1:$METRICS_PORT"]
EOF
"$PROMTOOL" check config "$E2E_TMP/prometheus.yml" >/dev/null || fail "promtool check config"
"$PROMETHEUS" --config.file="$E2E_TMP/prometheus.yml" --storage.tsdb.path="$E2E_TMP/prom" \
	--web.listen-address="127.0.0.1:$PROM_PORT" >"$E2E_TMP/prometheus.log" 2>&1 &
PROM_PID=$!
E2E_CLEANUPS+=("kill $PROM_PID 2>/dev/null; wait $PROM_PID 2>/dev/null")

# Load: demo100k with 8 producers; a QoS queue and a fs dump queue so every
# family the dashboard reads has samples. The dump queue is demo100k_dump
# with its 30 s flush shortened to 1 s (so the flush counters move) and one
# worker for 2,000 items (so its 4 producers overload it and it leaks into
# the dump without the CPU that 60 producers would take from the rest).
init demo100k "$E2E_REQ/demo100k.json"
expect 200 '' "init demo100k"
call GET "/api/v1/producer-up?key=demo100k&delta=4"
expect 200 '' "demo100k: producer-up 4"
init demoQoS "$E2E_REQ/demoQoS.json"
expect 200 '' "init demoQoS"
call GET "/api/v1/producer-up?key=demoQoS&delta=4"
expect 200 '' "demoQoS: producer-up 4"
jq '.dump.flush = 1000000000 | .capacity = 2000 | .workers_min = 1 | .workers_max = 1' \
	"$E2E_REQ/demo100k_dump.json" >"$E2E_TMP/dump.json"
init demo100k_dump "$E2E_TMP/dump.json"
expect 200 '' "init demo100k_dump (flush 1 s, capacity 2,000, 1 worker)"

prom_ready() {
	kill -0 "$PROM_PID" 2>/dev/null || fail "prometheus exited: $(tail -n 5 "$E2E_TMP/prometheus.log")"
	curl -sf --max-time 2 "$PROM/-/ready" >/dev/null
}
wait_for 20 "prometheus ready on $PROM" prom_ready

# query PROMQL: the first result's value (empty when no result).
query() {
	curl -sS --max-time 5 -G "$PROM/api/v1/query" --data-urlencode "query=$1" |
		jq -r 'select(.status == "success") | .data.result[0].value[1] // empty'
}
target_up() {
	local t
	t=$(curl -sS --max-time 5 "$PROM/api/v1/targets" |
		jq -c '.data.activeTargets[] | select(.labels.job == "blq-demo")')
	jqtrue "$t" '.health == "up" and .lastError == ""'
}
wait_for 10 "prometheus scrapes blq-demo (target up, no error)" target_up

# The 5 s window full of 1 s scrapes (the queues have run ~8 s by then),
# then the rate: 8 producers at 200/s each.
full_window() {
	local n
	n=$(query 'count_over_time(queue_in_total{queue="demo100k"}[5s])')
	[ -n "$n" ] && (( n >= 5 ))
}
wait_for 15 "prometheus holds 5 scrapes of demo100k in the last 5 s" full_window
RATE=""
rate_positive() {
	RATE=$(query 'rate(queue_in_total{queue="demo100k"}[5s])')
	[ -n "$RATE" ] && awk -v r="$RATE" 'BEGIN { exit !(r > 0) }'
}
wait_for 5 "rate(queue_in_total{queue=\"demo100k\"}[5s]) > 0" rate_positive
# (The lower bound leaves room for a machine busy with other work.)
awk -v r="$RATE" 'BEGIN { exit !(r > 600 && r < 2400) }' ||
	fail "rate(queue_in_total{queue=\"demo100k\"}[5s]) = $RATE, want about 1,600 (8 producers x 200/s)"
ok "rate(queue_in_total{queue=\"demo100k\"}[5s]) = $RATE (8 producers x 200/s)"
v=$(query 'queue_producers_active{queue="demo100k"}')
[ "$v" = 8 ] || fail "queue_producers_active{queue=\"demo100k\"} = '$v', want 8"
v=$(query 'sum(queue_subq_in_total{queue="demoQoS"})')
{ [ -n "$v" ] && awk -v r="$v" 'BEGIN { exit !(r > 0) }'; } || fail "sum(queue_subq_in_total{queue=\"demoQoS\"}) = '$v'"
v=$(query 'dlqdump_size_in_total{queue="demo100k_dump"}')
{ [ -n "$v" ] && awk -v r="$v" 'BEGIN { exit !(r > 0) }'; } || fail "dlqdump_size_in_total{queue=\"demo100k_dump\"} = '$v'"
ok "prometheus has the producers, QoS and dump series"

# The exposition itself: promtool has nothing to say, and every metric the
# dashboard queries is in it.
metrics_text "$E2E_TMP/metrics.txt"
out=$("$PROMTOOL" check metrics <"$E2E_TMP/metrics.txt" 2>&1)
rc=$?
{ [ "$rc" = 0 ] && [ -z "$out" ]; } || fail "promtool check metrics (rc $rc): $(head -n 10 <<<"$out")"
ok "promtool check metrics: clean ($(grep -vc '^#' "$E2E_TMP/metrics.txt") samples)"
for m in queue_subq_size queue_subq_in_total dlqdump_size_in_total queue_producers_active; do
	grep -q "^$m{" "$E2E_TMP/metrics.txt" || fail "/metrics has no $m sample"
done
out=$(python3 "$E2E_SRC/tests/demo/dashboard_check.py" \
	"$E2E_SRC/demo/deploy/grafana/dashboards/blq-demo.json" "$E2E_TMP/metrics.txt" 2>&1) ||
	fail "dashboard_check.py: $out"
ok "dashboard_check.py: every dashboard metric is exposed${out:+ ($(tail -n 1 <<<"$out"))}"

for k in demo100k demoQoS demo100k_dump; do
	call GET "/api/v1/stop?key=$k"
	check_final "stop $k"
done
kill -0 "$PROM_PID" 2>/dev/null || fail "prometheus died: $(tail -n 5 "$E2E_TMP/prometheus.log")"
demo_finish
echo "prometheus_e2e: passed in $(elapsed)"
