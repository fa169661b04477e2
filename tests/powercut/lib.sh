# lib.sh: what every power-cut script shares, sourced (bash) after it set
# LAZYFS and TEST (lazyfs and lazyfs_test) and N (its number of cuts).
#
# Why one file: each script mounts lazyfs on a fresh backing directory per
# seed, kills its processes, cuts the power and unmounts, and each must
# never leave a mount behind, also when ctest's TIMEOUT stops it. Written
# once, a fix to the unmount or the watchdog reaches every scenario.
#
#   pc_init NAME SECONDS [tmpfs]
#                          skip (77) without FUSE; a scratch directory $T
#                          (with tmpfs: on /dev/shm, if any) with the mount
#                          point $M; a trap that kills $pid
#                          and unmounts; a watchdog that stops the script
#                          through that trap after SECONDS (keep it inside
#                          ctest's TIMEOUT)
#   pc_mount SEED          a fresh backing directory $B, lazyfs on $M;
#                          the first seed's failure to mount skips (77)
#   pc_umount              unmount $M and drop $B
#   pc_mkdir DIR...        mkdir on the mount, durably (parent and the
#                          directory itself fsync'd): a scenario's setup
#                          must survive every cut
#   pc_kill_ms SEED LO HI  a kill moment in ms, LO..HI, spread by an
#                          integer hash of the seed (consecutive seeds land
#                          far apart)
#   pc_kill                SIGKILL $pid (the process under test) and reap
#                          it; $PC_RC is its exit status (137: killed,
#                          else it had ended on its own before)
#   pc_cut                 the power cut: lazyfs drops what was not synced
set -u

pc_init() {
	PC_NAME=$1
	if [ ! -c /dev/fuse ] || ! command -v fusermount3 >/dev/null; then
		echo "$PC_NAME: no /dev/fuse or fusermount3: skipped"
		exit 77
	fi
	# With "tmpfs", on /dev/shm when there is one: lazyfs's backing
	# directory (its durable state, written with fsync at every fsync on
	# the mount) and the scenario's logs (fdatasync'd per line) then cost
	# no disk flush. The power cut is lazyfs's, not the host's, so nothing
	# the tests check needs the host's disk; on a busy host those flushes
	# took most of a run (2.4 ms each, 180 per cut in powercut_restore).
	# powercut_dump stays on /tmp: its producer runs for a fixed time, and
	# faster flushes only give its check more to restore.
	local base=/tmp
	[ "${3:-}" = tmpfs ] && [ -d /dev/shm ] && [ -w /dev/shm ] && base=/dev/shm
	T=$(mktemp -d "$base/$PC_NAME.XXXXXX")
	M=$T/mnt B=
	mkdir -p "$M"
	pid= watchdog=
	trap pc_cleanup EXIT
	trap 'echo "$0: stopped (timeout or signal)" >&2; exit 1' INT TERM HUP
	# A watchdog inside ctest's TIMEOUT, so that the trap unmounts even then.
	( trap 'kill $s 2>/dev/null; exit' TERM; sleep "$2" & s=$!; wait $s; kill -TERM $$ ) \
		>/dev/null 2>&1 </dev/null &
	watchdog=$!
}

pc_cleanup() {
	[ -n "$watchdog" ] && kill "$watchdog" 2>/dev/null
	[ -n "$pid" ] && kill -9 "$pid" 2>/dev/null
	if mountpoint -q "$M"; then
		fusermount3 -u "$M" 2>/dev/null || umount -l "$M"
	fi
	rm -rf "$T"
}

pc_mount() {
	B=$T/backing.$1
	rm -rf "$B" && mkdir -p "$B"
	if ! "$LAZYFS" "$B" "$M" 2>"$T/mount.err"; then
		if [ "$1" = "$PC_FIRST" ]; then
			echo "$PC_NAME: cannot mount: $(cat "$T/mount.err"): skipped"
			exit 77
		fi
		echo "FAIL seed $1: cannot mount: $(cat "$T/mount.err")"
		return 1
	fi
}

pc_umount() {
	fusermount3 -u "$M" 2>/dev/null || umount -l "$M"
	rm -rf "$B"
}

pc_mkdir() {
	local d sync=()
	for d in "$@"; do
		sync+=("${d%/*}" "$d")
	done
	mkdir -p "$@" && "$TEST" "$M" syncdir "${sync[@]}"
}

pc_kill_ms() {
	local h=$((($1 * 2654435761) & 0xffffffff))
	h=$((((h ^ (h >> 15)) * 2246822519) & 0xffffffff))
	echo $(($2 + (h ^ (h >> 13)) % ($3 - $2 + 1)))
}

pc_kill() {
	kill -9 "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
	PC_RC=$?
	pid=
}

pc_cut() {
	echo cut >"$M/.lazyfs-ctl"
}
