#!/usr/bin/env bash
# dump_cut.sh LAZYFS LAZYFS_TEST DUMP_CUT [N] [FIRST_SEED]: the power-cut
# runs of a queue leaking into an fs dump. For each seed (N of them, 50 by
# default, or BLQ_POWERCUT_RUNS; from FIRST_SEED, 1 by default, or
# BLQ_POWERCUT_SEED): mount lazyfs on a fresh directory, start
# `dump_cut produce`, SIGKILL it after a seeded 20-300 ms, cut the power,
# then `dump_cut check` restores the dump and checks it against the ids
# acknowledged before the cut (its LOG, outside the mount). A failing seed
# is printed with the command that repeats it. Exit 77 (skip) without
# FUSE; never leaves a mount behind.
set -u
LAZYFS=$1 TEST=$2 CUT=$3
N=${4:-${BLQ_POWERCUT_RUNS:-50}}
FIRST=${5:-${BLQ_POWERCUT_SEED:-1}}

if [ ! -c /dev/fuse ] || ! command -v fusermount3 >/dev/null; then
	echo "dump_cut: no /dev/fuse or fusermount3: skipped"
	exit 77
fi
T=$(mktemp -d /tmp/dump_cut.XXXXXX)
M=$T/mnt
mkdir -p "$M"
pid=
cleanup() {
	[ -n "$watchdog" ] && kill "$watchdog" 2>/dev/null
	[ -n "$pid" ] && kill -9 "$pid" 2>/dev/null
	if mountpoint -q "$M"; then
		fusermount3 -u "$M" 2>/dev/null || umount -l "$M"
	fi
	rm -rf "$T"
}
trap cleanup EXIT
trap 'echo "$0: stopped (timeout or signal)" >&2; exit 1' INT TERM HUP
# A watchdog inside ctest's TIMEOUT, so that the trap unmounts even then.
watchdog=
( trap 'kill $s 2>/dev/null; exit' TERM; sleep $((30 + 4 * N)) & s=$!; wait $s; kill -TERM $$ ) \
	>/dev/null 2>&1 </dev/null &
watchdog=$!

fails=0 acked_total=0
for seed in $(seq "$FIRST" $((FIRST + N - 1))); do
	B=$T/backing.$seed L=$T/log.$seed
	rm -rf "$B" && mkdir -p "$B" && : >"$L"
	if ! "$LAZYFS" "$B" "$M" 2>"$T/mount.err"; then
		[ "$seed" = "$FIRST" ] && { echo "dump_cut: cannot mount: $(cat "$T/mount.err"): skipped"; exit 77; }
		echo "FAIL seed $seed: cannot mount: $(cat "$T/mount.err")"; fails=$((fails + 1)); continue
	fi
	mkdir "$M/dump" && "$TEST" "$M" syncdir "$M" && "$TEST" "$M" syncdir "$M/dump" ||
		echo "FAIL seed $seed: cannot make the dump directory"
	# the kill's moment, 20-300 ms, from the seed (an integer hash: spread)
	h=$(((seed * 2654435761) & 0xffffffff))
	h=$((((h ^ (h >> 15)) * 2246822519) & 0xffffffff))
	ms=$((20 + (h ^ (h >> 13)) % 281))
	"$CUT" produce "$M/dump" "$L" "$seed" 2>"$T/produce.err" &
	pid=$!
	sleep "$(printf '0.%03d' "$ms")"
	kill -9 "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
	pid=
	echo cut >"$M/.lazyfs-ctl"
	if out=$(timeout 60 "$CUT" check "$M/dump" "$L" 2>&1); then
		echo "ok seed $seed (killed at ${ms} ms): $out"
		acked_total=$((acked_total + $(grep -c '^ack' "$L")))
	else
		echo "FAIL seed $seed (killed at ${ms} ms): $(printf '%s\n' "$out" | tail -n 8)"
		echo "  produce's stderr: $(head -c 500 "$T/produce.err")"
		echo "  repeat: bash $0 $LAZYFS $TEST $CUT 1 $seed"
		fails=$((fails + 1))
	fi
	fusermount3 -u "$M" 2>/dev/null || umount -l "$M"
	rm -rf "$B" "$L"
done
echo "dump_cut: $N cuts from seed $FIRST, $acked_total syncs acknowledged in all, $fails failed"
[ "$fails" -eq 0 ]
