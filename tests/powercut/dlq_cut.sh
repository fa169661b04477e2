#!/usr/bin/env bash
# dlq_cut.sh LAZYFS LAZYFS_TEST RESTORE_CUT DLQ_COUNT BLQ_DLQ [N] [FIRST_SEED]:
# the power-cut runs of blq-dlq (the real binary) moving records on
# lazyfs. Seed by seed, by turns (seed % 3):
#   0 redrive: a dead store of 64 records made by a real restorer
#     (restore_cut make with every record past max_restores, then
#     restore_cut drain) redriven into the dump in 4 batches of 16;
#   1 import: 160 records as JSON lines exported (blq-dlq export) from a dump the library
#     wrote, imported into a new directory;
#   2 salvage: two files of 40 records of another version, quarantined unread by a real
#     restorer (a cut after it: the quarantine must hold them, the dump
#     no more), the
#     first salvaged --into a directory salvage makes.
# blq-dlq is SIGKILLed after a seeded 10-250 ms (redrive) or 2-60 ms
# (import, salvage), the power cut; then
# dlq_count counts every id in the source and the target: each in one of
# them (none lost), every file whole, nothing foreign; and when blq-dlq
# had exited 0 before the kill, what it reported done survived the cut
# (redrive: the target holds every id and the dead store none; import and
# salvage: the target holds every id). A failing seed is printed with the
# command that repeats it. Exit 77 (skip) without FUSE; never leaves a
# mount behind (lib.sh).
set -u
LAZYFS=$1 TEST=$2 CUT=$3 COUNT=$4 DLQ=$5
N=${6:-${BLQ_POWERCUT_RUNS:-50}}
PC_FIRST=${7:-${BLQ_POWERCUT_SEED:-1}}
. "$(dirname "$0")/lib.sh"
pc_init dlq_cut $((30 + 5 * N)) tmpfs

# The operation of a seed, its setup (durable before the operation
# starts) and the dlq_count arguments after the cut.
setup() {
	case $1 in
	redrive)
		pc_mkdir "$M/dump" "$M/dead" &&
			"$CUT" make "$M/dump" 4 16 1 && "$CUT" drain "$M/dump" "$T/l" "$M/dead" "$T/dl" ;;
	import)
		pc_mkdir "$M/src" "$M/imp" && "$CUT" make "$M/src" 4 40 &&
			"$DLQ" export "$M/src" >"$T/in.jsonl" ;;
	salvage)
		pc_mkdir "$M/dump" && "$CUT" make "$M/dump" 2 40 0 2 &&
			"$CUT" drain "$M/dump" "$T/l" && pc_cut &&
			"$COUNT" 80 --all "$M/dump/quarantine" --none "$M/dump" >"$T/setup.out" 2>&1 ||
			{ cat "$T/setup.out"; false; } ;;
	esac
}

# The command itself in the background (not a subshell around it), so
# that the SIGKILL reaches blq-dlq.
start() {
	local cmd
	case $1 in
	redrive) cmd=("$DLQ" redrive "$M/dump" --dead "$M/dead" --batch 16) ;;
	import) cmd=("$DLQ" import "$M/imp" "$T/in.jsonl") ;;
	salvage) cmd=("$DLQ" salvage "$M/dump"
		"quarantine/$(cd "$M/dump/quarantine" && ls -- *.bin | head -1)" --into "$M/salv") ;;
	esac
	"${cmd[@]}" >"$T/op.out" 2>&1 &
	pid=$!
}

verify() {
	local done=$2
	case $1 in
	redrive) [ "$done" = 0 ] && set -- --none "$M/dead" --all "$M/dump" || set -- "$M/dead" "$M/dump"
		"$COUNT" 64 "$@" ;;
	import) [ "$done" = 0 ] && set -- --all "$M/imp" || set -- "$M/src" "$M/imp"
		"$COUNT" 160 "$@" ;;
	salvage) "$COUNT" 80 --all "$M/dump/quarantine" &&
		if [ "$done" = 0 ]; then "$COUNT" 40 --all "$M/salv"; else "$COUNT" 80 "$M/dump/quarantine" "$M/salv"; fi ;;
	esac
}

ops=(redrive import salvage)
fails=0
for seed in $(seq "$PC_FIRST" $((PC_FIRST + N - 1))); do
	op=${ops[$((seed % 3))]}
	pc_mount "$seed" || { fails=$((fails + 1)); continue; }
	if ! out=$(setup "$op" 2>&1); then
		echo "FAIL seed $seed ($op): setup: $(printf '%s\n' "$out" | tail -n 5)"
		echo "  repeat: bash $0 $LAZYFS $TEST $CUT $COUNT $DLQ 1 $seed"
		fails=$((fails + 1))
		pc_umount
		continue
	fi
	# import and salvage write one file: most of their run is startup,
	# so their kill lands early or it would always come after the end
	ms=$(if [ "$op" = redrive ]; then pc_kill_ms "$seed" 10 250; else pc_kill_ms "$seed" 2 60; fi)
	start "$op"
	sleep "$(printf '0.%03d' "$ms")"
	pc_kill
	pc_cut
	what="killed at ${ms} ms" && [ "$PC_RC" = 0 ] && what="done before the kill at ${ms} ms"
	if out=$(verify "$op" "$PC_RC" 2>&1); then
		echo "ok seed $seed ($op, $what): $(printf '%s\n' "$out" | tr '\n' ' ')"
	else
		echo "FAIL seed $seed ($op, $what): $(printf '%s\n' "$out" | tail -n 8)"
		echo "  blq-dlq said: $(head -c 500 "$T/op.out")"
		echo "  repeat: bash $0 $LAZYFS $TEST $CUT $COUNT $DLQ 1 $seed"
		fails=$((fails + 1))
	fi
	pc_umount
	rm -f "$T/l" "$T/dl" "$T/in.jsonl"
done
echo "dlq_cut: $N cuts from seed $PC_FIRST (redrive, import, salvage by turns), $fails failed"
[ "$fails" -eq 0 ]
