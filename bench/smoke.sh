#!/bin/sh
# ctest smoke for blq-bench: every system runs W1 and W3 and prints a
# well-formed BENCH line, and W1-QOS too. Timings are not asserted here.
set -u
bench=$1
out=$("$bench" --compare --rounds 1 --items 4000 W1 W3) || { echo "blq-bench failed"; exit 1; }
echo "$out"
for s in blq glib mutex ckring pairs; do
	echo "$out" | grep -Eq "^BENCH W1 $s ns_per_item=[0-9.]+ items_per_s=[0-9]+ allocs_per_item=[0-9.e-]+" ||
		{ echo "no W1 line for $s"; exit 1; }
	echo "$out" | grep -Eq "^BENCH W3 $s .* p50_us=[0-9.]+ p90_us=[0-9.]+ p99_us=[0-9.]+ p999_us=[0-9.]+" ||
		{ echo "no W3 line for $s"; exit 1; }
done
echo "$out" | grep -Eq "^BENCH W1 blq .*allocs_per_item=0 " || { echo "blq allocated per item"; exit 1; }
qos=$("$bench" --rounds 1 --items 4000 W1-QOS) || { echo "blq-bench W1-QOS failed"; exit 1; }
echo "$qos"
echo "$qos" | grep -Eq "^BENCH W1-QOS blq ns_per_item=[0-9.]+ items_per_s=[0-9]+ allocs_per_item=0 .*w1_ratio=[0-9.]+" ||
	{ echo "no W1-QOS line (or it allocated per item)"; exit 1; }
# Each side alone (SIDES): both lines, on one CPU and on two.
sides=$("$bench" --rounds 1 SIDES) || { echo "blq-bench SIDES failed"; exit 1; }
echo "$sides"
for cpus in one two; do
	echo "$sides" | grep -Eq "^BENCH SIDES blq enqueue_ns=[0-9.]+ drain_ns=[0-9.]+ cpus=$cpus capacity=4096 cycles=500 rounds=1" ||
		{ echo "no SIDES line for cpus=$cpus"; exit 1; }
done
# The busy host on demand: every system, and the floor, under the noise
# threads.
noisy=$("$bench" --compare --rounds 1 --items 4000 W1-NOISY) || { echo "blq-bench W1-NOISY failed"; exit 1; }
echo "$noisy"
echo "$noisy" | grep -Eq "^BENCH W1-NOISY blq ns_per_item=[0-9.]+ .* noise_threads=[1-9][0-9]* rounds=1" ||
	{ echo "no W1-NOISY line for blq"; exit 1; }
for s in glib mutex ckring pairs floor; do
	echo "$noisy" | grep -Eq "^BENCH W1-NOISY $s ns_per_item=[0-9.]+ .*blq_ratio=[0-9.]+" ||
		{ echo "no W1-NOISY line for $s"; exit 1; }
done
# 64 producers (W1-MANY): every system of W1 and the floor; blq's line
# carries its paired W1 ratio. And --only: some systems, or one alone.
# The ck ring runs in a process of its own under a timeout: with 64
# producers on a busy 2-CPU host its spinning MPMC push can stall for
# minutes (docs/benchmarks.md), which says nothing about blq-bench.
many=$("$bench" --compare --only blq,glib,mutex,pairs,floor --rounds 1 --items 4000 W1-MANY) || { echo "blq-bench W1-MANY failed"; exit 1; }
echo "$many"
echo "$many" | grep -Eq "^BENCH W1-MANY blq ns_per_item=[0-9.]+ items_per_s=[0-9]+ allocs_per_item=0 producers=64 w1_ns_per_item=[0-9.]+ w1_ratio=[0-9.]+ w1_best_ratio=[0-9.]+ rounds=1" ||
	{ echo "no W1-MANY line for blq (or it allocated per item)"; exit 1; }
for s in glib mutex pairs floor; do
	echo "$many" | grep -Eq "^BENCH W1-MANY $s ns_per_item=[0-9.]+ .*blq_ratio=[0-9.]+" ||
		{ echo "no W1-MANY line for $s"; exit 1; }
done
if ck=$(timeout 30 "$bench" --only ckring --rounds 1 --items 4000 W1-MANY); then
	echo "$ck"
	echo "$ck" | grep -Eq "^BENCH W1-MANY ckring ns_per_item=[0-9.]+ " || { echo "no W1-MANY line for ckring"; exit 1; }
else
	echo "W1-MANY ckring: no end within 30 s (the ck ring's convoy), not checked"
fi
one=$("$bench" --only glib --rounds 1 --items 4000 W1 W1-SELF) || { echo "blq-bench --only failed"; exit 1; }
echo "$one"
[ "$(echo "$one" | grep -c '^BENCH ')" = 1 ] && echo "$one" | grep -Eq "^BENCH W1 glib ns_per_item=[0-9.]+ " ||
	{ echo "--only glib ran other systems"; exit 1; }
# Batches beside the floor (the task bodies alone over the cores).
bat=$("$bench" --rounds 1 --items 4000 W1-BATCH) || { echo "blq-bench W1-BATCH failed"; exit 1; }
echo "$bat"
echo "$bat" | grep -Eq "^BENCH W1 floor ns_per_item=[0-9.]+ items_per_s=[0-9]+ threads=[1-9][0-9]* rounds=1" ||
	{ echo "no W1 floor line"; exit 1; }
echo "$bat" | grep -Eq "^BENCH W1-BATCH blq ns_per_item=[0-9.]+ .*allocs_per_item=0 batch=32 floor_ratio=[0-9.]+ rounds=1" ||
	{ echo "no W1-BATCH line (or it allocated per item)"; exit 1; }
echo "$bat" | grep -q "^BENCH W1-BATCH pairs" && { echo "W1-BATCH ran pairs without --compare"; exit 1; }
bat=$("$bench" --compare --rounds 1 --items 4000 W1-BATCH) || { echo "blq-bench --compare W1-BATCH failed"; exit 1; }
echo "$bat"
echo "$bat" | grep -Eq "^BENCH W1-BATCH pairs ns_per_item=[0-9.]+ items_per_s=[0-9]+ allocs_per_item=[0-9.e-]+ batch=32 floor_ratio=[0-9.]+ blq_ratio=[0-9.]+ rounds=1" ||
	{ echo "no W1-BATCH line for pairs"; exit 1; }
# The paired controls: W1 with itself, and RETRY.
ctl=$("$bench" --rounds 1 --items 4000 W1-SELF RETRY) || { echo "blq-bench W1-SELF RETRY failed"; exit 1; }
echo "$ctl"
for w in W1-SELF RETRY; do
	echo "$ctl" | grep -Eq "^BENCH $w blq ns_per_item=[0-9.]+ .*w1_ratio=[0-9.]+ w1_best_ratio=[0-9.]+" || { echo "no $w line"; exit 1; }
done
# The dump workloads (Redis when scripts/test.sh provides a server).
redis=${BLQ_TEST_REDIS:+--redis $BLQ_TEST_REDIS}
out=$("$bench" --rounds 1 --items 2000 $redis DUMP-FS DUMP-REDIS) || { echo "blq-bench DUMP failed"; exit 1; }
echo "$out"
for sz in 64 1024; do
	echo "$out" | grep -Eq "^BENCH DUMP-FS blq ns_per_item=[0-9.]+ items_per_s=[0-9]+ allocs_per_item=[0-9.e-]+ item_bytes=$sz mb_per_s=[0-9.]+" ||
		{ echo "no DUMP-FS line for $sz bytes"; exit 1; }
	if [ -n "$redis" ]; then
		for s in blq redis-benchmark; do
			echo "$out" | grep -Eq "^BENCH DUMP-REDIS $s ns_per_item=[0-9.]+ items_per_s=[0-9]+ .*item_bytes=$sz mb_per_s=" ||
				{ echo "no DUMP-REDIS line for $s, $sz bytes"; exit 1; }
		done
	fi
done
