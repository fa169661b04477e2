#!/usr/bin/env bash
# restore_cut.sh LAZYFS LAZYFS_TEST RESTORE_CUT MODE [N] [FIRST_SEED]: the
# power-cut runs of a restorer working through dump files (MODE restore),
# or of one sending every third record to its dead store (MODE dead). For
# each seed (N of them, 50 by default, or BLQ_POWERCUT_RUNS; from
# FIRST_SEED, 1 by default, or BLQ_POWERCUT_SEED): mount lazyfs on a fresh
# directory, write 4 dump files of 40 records with the library
# (`restore_cut make`, durable: the cut never takes them), start
# `restore_cut run`, SIGKILL it after a seeded 10-250 ms, cut the power,
# then `restore_cut check` restarts a restorer on the mount and checks
# every id against the logs outside the mount (restore_cut.c says what it
# asserts). A failing seed is printed with the command that repeats it.
# Exit 77 (skip) without FUSE; never leaves a mount behind (lib.sh).
set -u
LAZYFS=$1 TEST=$2 CUT=$3 MODE=$4
N=${5:-${BLQ_POWERCUT_RUNS:-50}}
PC_FIRST=${6:-${BLQ_POWERCUT_SEED:-1}}
. "$(dirname "$0")/lib.sh"
pc_init "restore_cut_$MODE" $((30 + 4 * N)) tmpfs
FILES=4 PER=40 DEAD_EVERY=3

fails=0
for seed in $(seq "$PC_FIRST" $((PC_FIRST + N - 1))); do
	L=$T/log.$seed DL=$T/dead.$seed
	: >"$L" && : >"$DL"
	pc_mount "$seed" || { fails=$((fails + 1)); continue; }
	if [ "$MODE" = dead ]; then
		dead=("$M/dead" "$DL") make_dead=$DEAD_EVERY check_dead=("$M/dead" "$DL" "$DEAD_EVERY")
		pc_mkdir "$M/dump" "$M/dead"
	else
		dead=() make_dead= check_dead=()
		pc_mkdir "$M/dump"
	fi || echo "FAIL seed $seed: cannot make the directories"
	timeout 30 "$CUT" make "$M/dump" $FILES $PER $make_dead ||
		echo "FAIL seed $seed: cannot write the dump"
	ms=$(pc_kill_ms "$seed" 10 250)
	"$CUT" run "$M/dump" "$L" "${dead[@]}" 2>"$T/run.err" &
	pid=$!
	sleep "$(printf '0.%03d' "$ms")"
	pc_kill
	pc_cut
	if out=$(timeout 60 "$CUT" check "$M/dump" "$L" $((FILES * PER)) "${check_dead[@]}" 2>&1); then
		echo "ok seed $seed (killed at ${ms} ms): $out"
	else
		echo "FAIL seed $seed (killed at ${ms} ms): $(printf '%s\n' "$out" | tail -n 8)"
		echo "  run's stderr: $(head -c 500 "$T/run.err")"
		echo "  repeat: bash $0 $LAZYFS $TEST $CUT $MODE 1 $seed"
		fails=$((fails + 1))
	fi
	pc_umount
	rm -f "$L" "$DL"
done
echo "restore_cut $MODE: $N cuts from seed $PC_FIRST, $fails failed"
[ "$fails" -eq 0 ]
