#!/usr/bin/env bash
# scripts/ab_bench.sh on two stand-in builds: each BUILD/bench/blq-bench
# is a script printing fixed BENCH lines, beside a BUILD/CMakeCache.txt.
# Checks the table (medians, the per-run ratios B/A, the latency rows),
# the warning when the two builds are configured differently (and none
# when alike), and the usage error. Usage: ab_bench_test.sh ROOT
set -euo pipefail
root=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fails=0
check() { # name, condition's status
	if [ "$2" -eq 0 ]; then echo "ok: $1"; else echo "FAILED: $1"; fails=$((fails + 1)); fi
}

# build NAME NS P50 REDIS: a stand-in build whose W1 takes NS ns/item
# and whose W3 has a p50 of P50 µs, configured with BLQ_WITH_REDIS=REDIS.
build() {
	mkdir -p "$dir/$1/bench"
	printf 'CMAKE_BUILD_TYPE:STRING=Release\nBLQ_WITH_REDIS:BOOL=%s\n' "$4" >"$dir/$1/CMakeCache.txt"
	cat >"$dir/$1/bench/blq-bench" <<EOF
#!/bin/sh
echo "# a comment line, ignored"
echo "BENCH W1 blq ns_per_item=$2 items_per_s=1 rounds=1"
echo "BENCH W1 floor ns_per_item=10.0 items_per_s=1 rounds=1"
echo "BENCH W3 blq ns_per_item=5000.0 p50_us=$3 p90_us=1.0 p99_us=2.0 rounds=1"
EOF
	chmod +x "$dir/$1/bench/blq-bench"
}
build a 100.0 0.5 OFF
build b 80.0 0.4 OFF
build c 80.0 0.4 ON

out=$("$root/scripts/ab_bench.sh" "$dir/a/bench/blq-bench" "$dir/b/bench/blq-bench" 3 W1 W3 \
	-- --only blq 2>"$dir/err")
r=0; grep -Eq '^W1 +100\.0 +80\.0 +0\.800 +3  0\.80 0\.80 0\.80$' <<<"$out" || r=1
check "W1's medians and per-run ratios" $r
r=0; grep -Eq '^W3 p50_us +0\.5 +0\.4 +0\.800 +3 ' <<<"$out" || r=1
check "W3's p50 row" $r
if grep -q 'floor' <<<"$out"; then r=1; else r=0; fi
check "only blq's lines are compared" $r
if grep -q 'configured differently' "$dir/err"; then r=1; else r=0; fi
check "no warning for builds configured alike" $r

"$root/scripts/ab_bench.sh" "$dir/a/bench/blq-bench" "$dir/c/bench/blq-bench" 1 W1 \
	>/dev/null 2>"$dir/err"
r=0; { grep -q 'configured differently' "$dir/err" && grep -q 'BLQ_WITH_REDIS:BOOL=ON' "$dir/err"; } || r=1
check "a warning naming the setting that differs" $r

set +e
"$root/scripts/ab_bench.sh" "$dir/a/bench/blq-bench" 2>"$dir/err"
rc=$?
set -e
r=0; { [ $rc -eq 2 ] && grep -q usage "$dir/err"; } || r=1
check "too few arguments: usage, exit 2" $r

echo "ab_bench_test: $fails failed"
[ $fails -eq 0 ]
