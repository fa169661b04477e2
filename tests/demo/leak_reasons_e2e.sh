#!/usr/bin/env bash
# Leaks by reason in blq-demo (issue 32): a key whose every item fails,
# with fail_to_dlq and a DLQ that never waits (no dump: discarded). Its
# leaks are failures, not overflow: /api/v1/stats counts them under
# counters.leaked_failed (none under leaked_rear or leaked_front, and the
# reasons add up to leaked), and so does /metrics' queue_leak_reason_total;
# queue_leak_total{dir="rear"} counts them too (it says the side, not the
# reason), and queue_failed_total counts the failed attempts while the
# failed outcome stays 0 (each attempt leaked): the differences
# docs/reference-metrics.md states. The history's samples carry the same
# split, and the dashboard's numbers say how many threads wait on the DLQ.
#
# usage: leak_reasons_e2e.sh BLQ_DEMO SOURCE_DIR   (ctest passes both)
# shellcheck disable=SC2119 # demo_start/demo_finish: their own arguments, not the script's
set -uo pipefail
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# holds JQ: the key's /api/v1/stats pass JQ (quietly: for wait_for).
holds() {
	jqtrue "$(curl -sS --max-time 10 "$API/api/v1/stats?key=fails")" "$1"
}

demo_start
cat >"$E2E_TMP/fails.json" <<'JSON'
{"capacity":1000,"workers_min":1,"workers_max":1,"worker_delay":100000,
 "producers_min":0,"producers_max":1,"producer_delay":5000000,
 "fail_rate":1,"fail_to_dlq":true,"allow_leak":true}
JSON
init fails "$E2E_TMP/fails.json"
expect 200 '.message == "success"' "init fails (fail_rate 1, fail_to_dlq, no dump)"
call GET "/api/v1/producer-up?key=fails&delta=1"
expect 200 '' "fails: producer-up"
wait_for 20 "50 failed leaks" holds '.counters.leaked_failed >= 50'
stats_holds fails '.counters.leaked_rear == 0 and .counters.leaked_front == 0
	and .counters.leaked_deadline == 0 and .counters.leaked_closed == 0
	and .counters.leaked == .counters.leaked_failed and .counters.failed == 0
	and .dlq_waiting == 0'
# Stopped producers, drained: the numbers hold still for the comparison.
call GET "/api/v1/producer-down?key=fails&delta=1"
expect 200 '' "fails: producer-down"
wait_for 10 "fails drained" holds '.producers.active == 0 and .size == 0
	and .workers.busy == 0 and .counters.in == .counters.leaked'
sleep 0.2
S=$(curl -sS --max-time 10 "$API/api/v1/stats?key=fails")
L=$(jq .counters.leaked_failed <<<"$S")
metrics_text "$E2E_TMP/metrics.txt"
m() { awk -v s="$1" '$1 == s { print $2 }' "$E2E_TMP/metrics.txt"; }
reason=$(m 'queue_leak_reason_total{queue="fails",reason="failed"}')
over=$(m 'queue_leak_reason_total{queue="fails",reason="overflow_rear"}')
rear=$(m 'queue_leak_total{queue="fails",dir="rear"}')
attempts=$(m 'queue_failed_total{queue="fails"}')
waiting=$(m 'queue_dlq_waiting{queue="fails"}')
[ "$reason" = "$L" ] && [ "$over" = 0 ] ||
	fail "queue_leak_reason_total: failed '$reason' (stats $L), overflow_rear '$over'"
ok "queue_leak_reason_total{reason=\"failed\"} $reason = stats' leaked_failed, overflow_rear 0"
[ "$rear" = "$L" ] || fail "queue_leak_total{dir=\"rear\"} '$rear', want $L (fail_to_dlq counts as rear)"
ok "queue_leak_total{dir=\"rear\"} $rear: the failed leaks, by side (stats' leaked_rear is 0)"
[ "$attempts" = "$L" ] || fail "queue_failed_total '$attempts', want $L failed attempts"
ok "queue_failed_total $attempts counts failed attempts; stats' failed (outcomes) is 0"
[ "$waiting" = 0 ] || fail "queue_dlq_waiting '$waiting', want 0"
ok "queue_dlq_waiting 0"
# The sampler takes a sample a second from the key's start (demo/history.h):
# wait for one taken after the drain (its count in is the final one), not
# only the one taken at the start (an ASan run on a busy host got here
# 1.3 s after the start with that one alone).
IN=$(jq .counters.in <<<"$S")
sampled_after_drain() {
	hist=$(curl -sS --max-time 10 "$API/api/v1/history?key=fails")
	LAST_STATUS=$(jq -c '.samples[-1]' <<<"$hist" 2>/dev/null)
	jqtrue "$hist" ".samples[-1].counters.in == $IN"
}
wait_for 10 "a history sample after the drain" sampled_after_drain
jqtrue "$hist" '.samples[-1].counters | .leaked_failed > 0 and .leaked_rear == 0
	and .leaked == .leaked_rear + .leaked_front + .leaked_failed + .leaked_deadline + .leaked_closed' ||
	fail "history: no split: $(jq -c '.samples[-1]' <<<"$hist")"
jqtrue "$hist" '.samples[-1].dlq_waiting == 0' || fail "history: no dlq_waiting"
ok "history: the samples carry the split and dlq_waiting"
call GET "/api/v1/stop?key=fails"
check_final "stop fails"
demo_finish
echo "leak_reasons_e2e: passed in $(elapsed)"
