#!/usr/bin/env bash
# lazyfs_test.sh LAZYFS LAZYFS_TEST BLQ_DLQ: lazyfs's own tests on a real
# mount. lazyfs_test's cases (unsynced data and names dropped at a cut,
# synced ones whole, RENAME_NOREPLACE, flock, stale handles), then blq's
# fs writer (blq-dlq import) writing a dump onto the mount that must
# survive a cut whole and verify. Exit 77 (skip) when FUSE is unavailable;
# never leaves a mount behind (trap; every step under a timeout).
set -u
LAZYFS=$1 TEST=$2 DLQ=$3

if [ ! -c /dev/fuse ] || ! command -v fusermount3 >/dev/null; then
	echo "lazyfs_test: no /dev/fuse or fusermount3: skipped"
	exit 77
fi
T=$(mktemp -d /tmp/lazyfs_test.XXXXXX)
M=$T/mnt B=$T/backing
mkdir -p "$M" "$B"
cleanup() {
	[ -n "$watchdog" ] && kill "$watchdog" 2>/dev/null
	if mountpoint -q "$M"; then
		fusermount3 -u "$M" 2>/dev/null || umount -l "$M"
	fi
	rm -rf "$T"
}
trap cleanup EXIT
trap 'echo "$0: stopped (timeout or signal)" >&2; exit 1' INT TERM HUP
# A watchdog inside ctest's TIMEOUT, so that the trap unmounts even then.
watchdog=
( trap 'kill $s 2>/dev/null; exit' TERM; sleep 100 & s=$!; wait $s; kill -TERM $$ ) \
	>/dev/null 2>&1 </dev/null &
watchdog=$!
if ! "$LAZYFS" "$B" "$M" 2>"$T/mount.err"; then
	echo "lazyfs_test: cannot mount: $(cat "$T/mount.err"): skipped"
	exit 77
fi

fails=0
ok() { echo "ok: $*"; }
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
cut() { echo cut >"$M/.lazyfs-ctl" || fail "cut"; }

timeout 60 "$TEST" "$M" || fail "lazyfs_test's cases (above)"

# blq's fs writer onto the mount: import writes each file to a temp name,
# fsyncs it, renames it into place and fsyncs the directory.
D=$M/dump
mkdir "$D" && timeout 10 "$TEST" "$M" syncdir "$M" && timeout 10 "$TEST" "$M" syncdir "$D" ||
	fail "make the dump directory"
for i in $(seq 1 50); do
	printf '{"v":1,"payload":"%s"}\n' "$(printf 'item %04d %s' "$i" "$(head -c $((i * 3)) /dev/zero | tr '\0' x)" | base64 -w0)"
done >"$T/in.jsonl"
timeout 30 "$DLQ" import "$D" "$T/in.jsonl" --dump-version 1 >"$T/import.out" 2>&1 ||
	fail "import: $(cat "$T/import.out")"
ls -la "$D" >"$T/before.ls"
timeout 30 "$DLQ" export "$D" --dump-version 1 >"$T/before.jsonl" 2>"$T/export.err" ||
	fail "export before the cut: $(cat "$T/export.err")"
cut
if timeout 30 "$DLQ" verify "$D" --dump-version 1 >"$T/verify.out" 2>&1; then
	ok "blq-dlq verify after the cut: $(tail -1 "$T/verify.out")"
else
	fail "blq-dlq verify after the cut: $(cat "$T/verify.out")"
fi
grep -q "^50 records" "$T/verify.out" && ok "the dump holds its 50 records" ||
	fail "the dump does not hold 50 records: $(cat "$T/verify.out"); before: $(cat "$T/before.ls")"
timeout 30 "$DLQ" export "$D" --dump-version 1 >"$T/after.jsonl" 2>"$T/export.err" ||
	fail "export after the cut: $(cat "$T/export.err")"
if [ -s "$T/after.jsonl" ] && cmp -s "$T/before.jsonl" "$T/after.jsonl"; then
	ok "the dump file written by the fs writer survives a cut whole (export byte for byte)"
else
	fail "the dump changed at the cut: $(diff "$T/before.jsonl" "$T/after.jsonl" | head -5)"
fi
# and what import wrote without the directory's fsync would not have: the
# same records through a plain copy (data fsync'd by nothing) are gone.
cp "$D"/*.bin "$M/copy.bin" 2>/dev/null
cut
[ ! -e "$M/copy.bin" ] && ok "an unsynced copy of the dump is gone after the cut" ||
	fail "an unsynced copy survived the cut"

echo "lazyfs_test: $fails failed"
[ "$fails" -eq 0 ]
