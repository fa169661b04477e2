#!/bin/sh
# ctest smoke for blq-bench: every system runs W1 and W3 and prints a
# well-formed BENCH line, and W1-QOS too. Timings are not asserted here.
set -u
bench=$1
out=$("$bench" --compare --rounds 1 --items 4000 W1 W3) || { echo "blq-bench failed"; exit 1; }
echo "$out"
for s in blq glib mutex ckring; do
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
