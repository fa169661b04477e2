#!/usr/bin/env bash
# Model-checks the wait/wake protocol (models/ec.pml: the event count of
# util/ec.h around a ring that fills and empties) and the lanes
# (models/lanes.pml: a ring per producer behind the admission counter
# `held` and the lanes' credit, stealing workers, the sleep on a full
# queue and the close) with
# SPIN: the model as the code is must pass an exhaustive search in each
# size below, each broken variant (a barrier, an acknowledgement, a wake,
# the counter's order, the spill guard, the credit's thief, the borrow's
# order, the credit in the wake-up, the wait for a refill in transit or
# the transit count's order taken out) must give an error trail; and
# the reserved push into several shared rings (models/shared_rings.pml:
# the look again when a look missed the room, and its abort); and a
# worker's hand inside the capacity (models/hands.pml: the places of
# the items it took ahead stay in held, a producer claims those of the
# items started, the worker releases the rest at the hand's end, and
# wakes the producers: the claim, the second look, the RELEASING bit and
# the release's wake each taken out must fail). One line per check, then
# "model check: N passed, N failed";
# the exit status is non-zero when any check went wrong. Builds in a
# temporary directory (MODEL_CHECK_KEEP=1 keeps it, with the trails).
# docs/model-check.md says what is modelled and what each variant shows.
#
# Environment: MODEL_CHECK_TIMEOUT, seconds per search (default 300);
# MODEL_CHECK_MEMLIM, megabytes per search (default 2048);
# MODEL_CHECK_JOBS, searches at once (default: the CPUs; each is one
# single-threaded pan, so the lines come out in the order below);
# MODEL_CHECK_FULL=1, more sizes of lanes.pml and hands.pml (below).
set -uo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
timeout_s=${MODEL_CHECK_TIMEOUT:-300}
memlim=${MODEL_CHECK_MEMLIM:-2048}

declare -A package=([spin]=spin [gcc]=gcc [timeout]=coreutils)
for tool in spin gcc timeout; do
	if ! command -v "$tool" >/dev/null 2>&1; then
		echo "model_check.sh: '$tool' not found: install it (Debian: apt-get install ${package[$tool]})" >&2
		exit 2
	fi
done

# Where a failed search's trail is ("spin -t -p <flags> <model>" there
# replays it): <n> is the search's number.
work=$(mktemp -d /tmp/blq-model-check.XXXXXX) || exit 2
if [ "${MODEL_CHECK_KEEP:-0}" = 1 ]; then
	echo "model check: working directory $work (kept)"
	where="the trail is in $work/<n>"
else
	trap 'rm -rf "$work"' EXIT
	where='MODEL_CHECK_KEEP=1 keeps the trail'
fi

passed=0
failed=0

# models/ec.pml, sizes of the correct model's runs (each a full search of
# a few seconds):
#   1 producer, 2 workers, 2 items, ring of 1, with the balancer's stop
#   2 producers, 2 workers, 1 item each, ring of 1 (no stop: too large)
#   1 producer, 2 workers, 3 items, ring of 2 (the half-drain wake), stop
#   1 producer, 3 workers, 1 item, ring of 1 (wake-one among 2 sleepers)
sizes=("-DNP=1 -DNW=2 -DK=2 -DCAP=1"
	"-DNP=2 -DNW=2 -DK=1 -DCAP=1 -DNOSTOP"
	"-DNP=1 -DNW=2 -DK=3 -DCAP=2"
	"-DNP=1 -DNW=3 -DK=1 -DCAP=1 -DNOSTOP")
# The broken variants, checked in the first size.
broken=(NO_TAKE_BARRIER NO_HANDOFF_FENCE NO_ACK ACK_BEFORE_SNAP)
# With a QoS egress thread waiting for room beside the producers (MOVER:
# it leaves without pushing, passing its wake-up on): 1 producer and 2
# workers, 2 items; 2 producers and 1 worker, 1 item each; ring of 1.
# NO_MOVER_PASS (no pass-on: the lost wake-up retry_stress found) must
# fail in the first.
mover_sizes=("-DMOVER -DNP=1 -DNW=2 -DK=2 -DCAP=1 -DNOSTOP"
	"-DMOVER -DNP=2 -DNW=1 -DK=1 -DCAP=1 -DNOSTOP")

# models/lanes.pml (lanes of 1 slot, a shared ring of CAP; K items per
# producer; CR places of credit, BLQ__LANE_CREDIT, 2 unless given),
# sizes of the correct model's runs:
#   2 producers, 1 worker, 2 items each, capacity 2: two lanes, spills,
#     credit spent and taken by the other producer, producers asleep on a
#     full queue, the worker steals
#   1 producer, 2 workers, 2 items, capacity 1: a lane as large as the
#     capacity (no spill, no credit), the producer asleep, two workers
#   CLOSE_ANY, the close at any moment (producers refused, a place of
#     credit given back): 1 producer, 1 worker, 2 items, capacity 2
#   2 producers, 1 worker, 1 item each, capacity 3, credit 3: a credit
#     more than half the capacity (the wake-up must not count it); and
#     the same with NO_TRANSIT_WAIT, the wait for a refill in transit
#     given up at once, as the code's gives up after 10 ms
#   TRY, try-enqueue: 2 producers, 1 worker, 1 item each, capacity 2:
#     a full queue refuses only when no lane's credit sat idle, and
#     (ROOM_CHECK ROOM_STRICT) only when it was full, with no refill in
#     transit, at some moment of the call (the transit count and the
#     wait for it; ROOM_CHECK alone, transit counted as full, is implied);
#     and the same with producer 1 without a lane (LANELESS: it steals
#     credit and waits for a transit too)
# and with MODEL_CHECK_FULL=1 also (about 4 minutes more of pan, most of
# it the 25 million states and 1.2 GB of the second, and a compile each):
#   1 producer, 2 workers, 2 items, capacity 2: two workers on one lane
#     and the shared ring, spills, the producer asleep
#   2 producers, 2 workers, 1 item each, capacity 2: stealing both ways
#     (25 million states)
#   CLOSE_ANY: 2 producers, 1 worker, 1 item each, capacity 2
#   2 producers, 1 worker, 2 items each, capacity 3: a credit smaller
#     than the capacity, spills
#   TRY ROOM_CHECK: 2 producers, 1 worker, 2 items each, capacity 2,
#     and the same with ROOM_STRICT (12 million states: the size where
#     NO_GEN, the look at transit alone, fails)
lanes_sizes=("-DNP=2 -DNW=1 -DK=2 -DCAP=2"
	"-DNP=1 -DNW=2 -DK=2 -DCAP=1"
	"-DNP=1 -DNW=1 -DK=2 -DCAP=2 -DCLOSE_ANY"
	"-DNP=2 -DNW=1 -DK=1 -DCAP=3 -DCR=3"
	"-DNP=2 -DNW=1 -DK=1 -DCAP=3 -DCR=3 -DNO_TRANSIT_WAIT"
	"-DNP=2 -DNW=1 -DK=1 -DCAP=2 -DTRY -DROOM_CHECK -DROOM_STRICT"
	"-DNP=2 -DNW=1 -DK=1 -DCAP=2 -DTRY -DROOM_CHECK -DROOM_STRICT -DLANELESS")
if [ "${MODEL_CHECK_FULL:-0}" = 1 ]; then
	lanes_sizes+=("-DNP=1 -DNW=2 -DK=2 -DCAP=2"
		"-DNP=2 -DNW=2 -DK=1 -DCAP=2"
		"-DNP=2 -DNW=1 -DK=1 -DCAP=2 -DCLOSE_ANY"
		"-DNP=2 -DNW=1 -DK=2 -DCAP=3"
		"-DNP=2 -DNW=1 -DK=2 -DCAP=2 -DTRY -DROOM_CHECK"
		"-DNP=2 -DNW=1 -DK=2 -DCAP=2 -DTRY -DROOM_CHECK -DROOM_STRICT")
fi
# The sizes above whose search takes a few seconds at -O0: compiled at
# -O0, as the broken variants are (gcc -O2 on pan.c takes about 10 s).
lanes_small=("-DNP=1 -DNW=2 -DK=2 -DCAP=1"
	"-DNP=1 -DNW=1 -DK=2 -DCAP=2 -DCLOSE_ANY"
	"-DNP=2 -DNW=1 -DK=1 -DCAP=3 -DCR=3"
	"-DNP=2 -DNW=1 -DK=1 -DCAP=3 -DCR=3 -DNO_TRANSIT_WAIT"
	"-DNP=2 -DNW=1 -DK=1 -DCAP=2 -DTRY -DROOM_CHECK -DROOM_STRICT"
	"-DNP=2 -DNW=1 -DK=1 -DCAP=2 -DTRY -DROOM_CHECK -DROOM_STRICT -DLANELESS")
# Broken variants, each with the size it fails in (NO_RELEASE_BARRIER
# needs every item of a full queue in a take whose release is late;
# WAKE_HELD a credit more than half the capacity, and the wait for a
# refill in transit given up (the transit wait hides its trail, but the
# code's wait gives up after 10 ms); NO_TRANSIT_WAIT try-enqueue and the
# strict room check; NO_GEN the same with 2 items each, a refill landing
# between a thief's two looks (16 s at -O0): docs/model-check.md).
lanes_broken=("-DRELEASE_EARLY -DNP=2 -DNW=1 -DK=2 -DCAP=2"
	"-DNO_SPACE_WAKE -DNP=2 -DNW=1 -DK=2 -DCAP=2"
	"-DNO_RELEASE_BARRIER -DNP=1 -DNW=2 -DK=2 -DCAP=1"
	"-DCLOSED_FIRST -DCLOSE_ANY -DNP=1 -DNW=1 -DK=2 -DCAP=2"
	"-DNO_SPILL_GUARD -DNP=2 -DNW=1 -DK=2 -DCAP=2"
	"-DNO_THIEF -DTRY -DNP=2 -DNW=1 -DK=1 -DCAP=2"
	"-DUNDO_LATE -DCLOSE_ANY -DNP=1 -DNW=1 -DK=2 -DCAP=2"
	"-DWAKE_HELD -DNO_TRANSIT_WAIT -DNP=2 -DNW=1 -DK=1 -DCAP=3 -DCR=3"
	"-DNO_TRANSIT_WAIT -DTRY -DROOM_CHECK -DROOM_STRICT -DNP=2 -DNW=1 -DK=1 -DCAP=2"
	"-DTRANSIT_EARLY -DNP=2 -DNW=1 -DK=1 -DCAP=2"
	"-DNO_GEN -DTRY -DROOM_CHECK -DROOM_STRICT -DNP=2 -DNW=1 -DK=2 -DCAP=2")

# models/shared_rings.pml (NR shared rings of RC slots, the capacity;
# K items for producer 0, K1 for the others), sizes of the correct
# model's runs (each a few seconds at most):
#   2 rings of 1, 2 producers, 1 worker, 2 and 1 items: the smallest
#     miss (SCAN_ONCE's trail)
#   2 rings of 2, 2 producers, 2 workers, 3 items each
#   3 rings of 1, 3 producers, 1 worker, 2 items each (LOOK_TWICE's
#     trail: a second look can miss too)
shared_sizes=("-DNR=2 -DRC=1 -DNP=2 -DNW=1 -DK=2 -DK1=1"
	"-DNR=2 -DRC=2 -DNP=2 -DNW=2 -DK=3 -DK1=3"
	"-DNR=3 -DRC=1 -DNP=3 -DNW=1 -DK=2 -DK1=2")
# Broken variants: one look then the abort (the code before 42d1f82);
# two looks then the abort; held released before the take moves the
# head, caught by the monitor and, without it, by the push's abort.
shared_broken=("-DSCAN_ONCE ${shared_sizes[0]}"
	"-DLOOK_TWICE ${shared_sizes[2]}"
	"-DRELEASE_EARLY ${shared_sizes[0]}"
	"-DRELEASE_EARLY -DNO_MONITOR ${shared_sizes[0]}")

# models/hands.pml (one ring, capacity CAP, NP producers of K items
# each, NW workers taking a hand of 2 or one item; the workers' stores
# of started and freed through an x86 store buffer), sizes of the
# correct model's runs (each a few seconds at most at -O0):
#   1 producer, 1 worker, 3 items, capacity 2: a producer asleep on a
#     full queue whose room is in the hand
#   2 producers, 1 worker, 2 items each, capacity 2: two claimers
#   1 producer, 2 workers, 3 items, capacity 2: two hands' counters
#   TRY, try-enqueue: 2 producers, 1 worker, 3 items each, capacity 2;
#     and 2 producers, 2 workers, 2 items each: a refusal only when
#     the queue was full (ring + hands' unstarted items + reserved
#     places = capacity) at some moment of the attempt; the same with
#     capacity 3
#   HANDBACK, worker 0 given up inside an item's callback, its hand's
#     unstarted items taken back and admitted again by the thief: 1
#     producer, 1 worker, 3 items, capacity 2, blocking and TRY; 1
#     producer, 2 workers
# and with MODEL_CHECK_FULL=1 also (-O2; about two minutes of pan, most
# of it the 22 million states and 1.1 GB of the first):
#   2 producers, 2 workers, 2 items each, capacities 2 and 3
#   HANDBACK: 2 producers, 1 worker, 2 items each, capacity 2; and TRY,
#     2 producers, 2 workers, 2 items each, capacity 2
hands_sizes=("-DNP=1 -DNW=1 -DK=3 -DCAP=2"
	"-DNP=2 -DNW=1 -DK=2 -DCAP=2"
	"-DNP=1 -DNW=2 -DK=3 -DCAP=2"
	"-DTRY -DNP=2 -DNW=1 -DK=3 -DCAP=2"
	"-DTRY -DNP=2 -DNW=2 -DK=2 -DCAP=2"
	"-DTRY -DNP=2 -DNW=2 -DK=2 -DCAP=3"
	"-DHANDBACK -DNP=1 -DNW=1 -DK=3 -DCAP=2"
	"-DHANDBACK -DTRY -DNP=1 -DNW=1 -DK=3 -DCAP=2"
	"-DHANDBACK -DNP=1 -DNW=2 -DK=3 -DCAP=2")
hands_full=()
if [ "${MODEL_CHECK_FULL:-0}" = 1 ]; then
	hands_full=("-DNP=2 -DNW=2 -DK=2 -DCAP=2"
		"-DNP=2 -DNW=2 -DK=2 -DCAP=3"
		"-DHANDBACK -DNP=2 -DNW=1 -DK=2 -DCAP=2"
		"-DHANDBACK -DTRY -DNP=2 -DNW=2 -DK=2 -DCAP=2")
fi
# Broken variants, each with the size it fails in: no claim of a
# started place (a refusal while it[0]'s place was free); full without
# the second scan (a start after the first scan, whose CAS lost to
# another claimer, passed that worker); no RELEASING bit (a refusal
# while the worker's places were between its exchange and its sub); no
# wake after the release (a producer that looked before the take's
# started store left the buffer sleeps for good).
hands_broken=("-DNO_CLAIM -DTRY -DNP=1 -DNW=1 -DK=3 -DCAP=2"
	"-DNO_SECOND_LOOK -DTRY -DNP=2 -DNW=1 -DK=3 -DCAP=2"
	"-DNO_RELEASING_BIT -DTRY -DNP=1 -DNW=1 -DK=3 -DCAP=2"
	"-DNO_RELEASE_WAKE -DNP=1 -DNW=1 -DK=3 -DCAP=2")

# Runs one search: spin -a, gcc (-O2; -O0 for the broken variants, whose
# searches are tiny: compiling pan.c at -O2 takes longer than they do),
# pan. Sets `out` (pan's output) and `secs`; non-zero when it could not run.
n=0
search() {
	local name=$1 defs=$2 opt=$3 dir
	n=$((n + 1))
	dir=$work/$n
	mkdir -p "$dir" && cp "$root/models/$name" "$dir/$name" || return 1
	# shellcheck disable=SC2086 # $defs is a list of -D flags
	if ! (cd "$dir" && spin -a $defs "$name" >spin.log 2>&1); then
		out="spin -a failed: $(tail -n 3 "$dir/spin.log" | tr '\n' ' ')"
		return 1
	fi
	if ! (cd "$dir" && gcc -w "$opt" -DSAFETY -DCOLLAPSE -DMEMLIM="$memlim" -o pan pan.c) >"$dir/gcc.log" 2>&1; then
		out="gcc failed: $(tail -n 3 "$dir/gcc.log" | tr '\n' ' ')"
		return 1
	fi
	local t0 t1
	t0=$(date +%s.%N)
	out=$(cd "$dir" && timeout "$timeout_s" ./pan -m100000 2>&1)
	local rc=$?
	t1=$(date +%s.%N)
	secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')
	printf '%s\n' "$out" | grep -v '^Depth=' >"$dir/pan.out"
	if [ "$rc" -eq 124 ]; then
		out="pan timed out after $timeout_s s"
		return 1
	fi
	return 0
}

# The search was complete: not cut by -m, MEMLIM or a crash.
complete() {
	! grep -q 'error: max search depth too small' <<<"$out" &&
		! grep -q 'Search not completed' <<<"$out" &&
		grep -q 'states, stored' <<<"$out"
}

field() { # the number before "$1" on pan's summary lines
	sed -n "s/^ *\([0-9][0-9.e+]*\) $1.*/\1/p" <<<"$out" | head -n 1
}

# The model as the code is, in one size: must pass a complete search.
# $4: gcc's optimization, -O2 unless given.
check_correct() {
	local name=$1 s=$2 label=$3 opt=${4:--O2}
	if ! search "$name" "$s" "$opt"; then
		failed=$((failed + 1))
		echo "model check: $label: FAILED ($out)"
		return
	fi
	errors=$(sed -n 's/.*errors: \([0-9]*\).*/\1/p' <<<"$out" | tail -n 1)
	depth=$(sed -n 's/.*depth reached \([0-9]*\).*/\1/p' <<<"$out" | tail -n 1)
	if [ "$errors" = 0 ] && complete; then
		passed=$((passed + 1))
		echo "model check: $label: ok ($(field 'states, stored') states, depth $depth, complete, errors: 0, $secs s)"
	else
		failed=$((failed + 1))
		why=$(grep -m 1 -E '^pan:[0-9]|error: max search depth|Search not completed|MEMLIM' <<<"$out")
		echo "model check: $label: FAILED (errors: ${errors:-?}; ${why:-no summary}; ${where/<n>/$n})"
	fi
}

# A broken variant: must give an error trail. $4: what it means when
# none is found.
check_fails() {
	local name=$1 s=$2 label=$3 lost=$4
	if ! search "$name" "$s" -O0; then
		failed=$((failed + 1))
		echo "model check: $label: FAILED ($out)"
		return
	fi
	errors=$(sed -n 's/.*errors: \([0-9]*\).*/\1/p' <<<"$out" | tail -n 1)
	if [ -n "$errors" ] && [ "$errors" -gt 0 ]; then
		passed=$((passed + 1))
		what=$(grep -m 1 -E '^pan:[0-9]+:' <<<"$out")
		echo "model check: $label: fails as it must ($what; $(field 'states, stored') states, $secs s)"
	else
		failed=$((failed + 1))
		echo "model check: $label: FAILED (no error found: $lost)"
	fi
}

# Runs a check (check_correct or check_fails and its arguments) in the
# background, at most `jobs_max` at once: its line and its counts go to
# files named by its number, printed and summed in order at the end.
jobs_max=${MODEL_CHECK_JOBS:-$(nproc 2>/dev/null || echo 1)}
checks=0
run() {
	checks=$((checks + 1))
	local k=$checks
	while [ "$(jobs -rp | wc -l)" -ge "$jobs_max" ]; do
		wait -n
	done
	(
		passed=0 failed=0 n=$((k - 1)) # search() numbers its directory k
		"$@" >"$work/line.$k"
		echo "$passed $failed" >"$work/count.$k"
	) &
}

for s in "${sizes[@]}"; do
	run check_correct ec.pml "$s" "correct ${s//-D/}"
done
for v in "${broken[@]}"; do
	run check_fails ec.pml "${sizes[0]} -D$v" "broken -D$v ${sizes[0]//-D/}" \
		"the model no longer tells this variant apart"
done
for s in "${mover_sizes[@]}"; do
	run check_correct ec.pml "$s" "correct ${s//-D/}"
done
run check_fails ec.pml "${mover_sizes[0]} -DNO_MOVER_PASS" \
	"broken -DNO_MOVER_PASS ${mover_sizes[0]//-D/}" "the model no longer tells this variant apart"
for s in "${lanes_sizes[@]}"; do
	opt=-O2
	for small in "${lanes_small[@]}"; do
		[ "$s" = "$small" ] && opt=-O0
	done
	run check_correct lanes.pml "$s" "lanes correct ${s//-D/}" "$opt"
done
for s in "${lanes_broken[@]}"; do
	run check_fails lanes.pml "$s" "lanes broken ${s/-D/-D}" \
		"the model no longer tells this variant apart"
done
for s in "${shared_sizes[@]}"; do
	run check_correct shared_rings.pml "$s" "shared rings correct ${s//-D/}" -O0
done
for s in "${shared_broken[@]}"; do
	run check_fails shared_rings.pml "$s" "shared rings broken ${s/-D/-D}" \
		"the model no longer tells this variant apart"
done
for s in "${hands_sizes[@]}"; do
	run check_correct hands.pml "$s" "hands correct ${s//-D/}" -O0
done
for s in ${hands_full[@]+"${hands_full[@]}"}; do
	run check_correct hands.pml "$s" "hands correct ${s//-D/}"
done
for s in "${hands_broken[@]}"; do
	run check_fails hands.pml "$s" "hands broken ${s/-D/-D}" \
		"the model no longer tells this variant apart"
done
wait
for k in $(seq "$checks"); do
	if [ -f "$work/count.$k" ]; then
		cat "$work/line.$k"
		read -r p f <"$work/count.$k"
		passed=$((passed + p))
		failed=$((failed + f))
	else
		failed=$((failed + 1))
		echo "model check: check $k: FAILED (it printed no result)"
	fi
done
echo "model check: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
