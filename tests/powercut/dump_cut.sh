#!/usr/bin/env bash
# dump_cut.sh LAZYFS LAZYFS_TEST DUMP_CUT [N] [FIRST_SEED]: the power-cut
# runs of a queue leaking into an fs dump. For each seed (N of them, 50 by
# default, or BLQ_POWERCUT_RUNS; from FIRST_SEED, 1 by default, or
# BLQ_POWERCUT_SEED): mount lazyfs on a fresh directory, start
# `dump_cut produce`, SIGKILL it after a seeded 20-300 ms, cut the power,
# then `dump_cut check` restores the dump and checks it against the ids
# acknowledged before the cut (its LOG, outside the mount). A failing seed
# is printed with the command that repeats it. Exit 77 (skip) without
# FUSE; never leaves a mount behind (lib.sh).
set -u
LAZYFS=$1 TEST=$2 CUT=$3
N=${4:-${BLQ_POWERCUT_RUNS:-50}}
PC_FIRST=${5:-${BLQ_POWERCUT_SEED:-1}}
. "$(dirname "$0")/lib.sh"
pc_init dump_cut $((30 + 4 * N))

fails=0 acked_total=0
for seed in $(seq "$PC_FIRST" $((PC_FIRST + N - 1))); do
	L=$T/log.$seed
	: >"$L"
	pc_mount "$seed" || { fails=$((fails + 1)); continue; }
	pc_mkdir "$M/dump" || echo "FAIL seed $seed: cannot make the dump directory"
	ms=$(pc_kill_ms "$seed" 20 300)
	"$CUT" produce "$M/dump" "$L" "$seed" 2>"$T/produce.err" &
	pid=$!
	sleep "$(printf '0.%03d' "$ms")"
	pc_kill
	pc_cut
	if out=$(timeout 60 "$CUT" check "$M/dump" "$L" 2>&1); then
		echo "ok seed $seed (killed at ${ms} ms): $out"
		acked_total=$((acked_total + $(grep -c '^ack' "$L")))
	else
		echo "FAIL seed $seed (killed at ${ms} ms): $(printf '%s\n' "$out" | tail -n 8)"
		echo "  produce's stderr: $(head -c 500 "$T/produce.err")"
		echo "  repeat: bash $0 $LAZYFS $TEST $CUT 1 $seed"
		fails=$((fails + 1))
	fi
	pc_umount
	rm -f "$L"
done
echo "dump_cut: $N cuts from seed $PC_FIRST, $acked_total syncs acknowledged in all, $fails failed"
[ "$fails" -eq 0 ]
