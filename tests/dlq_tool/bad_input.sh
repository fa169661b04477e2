#!/bin/bash
# Bad input: a message naming what is wrong, a non-zero exit, and nothing
# modified (files compared by digest, the stream by XRANGE).
. "$(dirname "$0")/lib.sh"
D=$T/dump
mkdir -p "$D" "$T/notdump" "$T/empty"
"$NODE" produce "$D" 4 0 mix >/dev/null || fail "produce"
echo "hello" >"$T/notdump/x.bin"
echo "hello" >"$D/quarantine-me.txt"
mkdir -p "$D/quarantine"
echo "not a dump" >"$D/quarantine/junk.bin"
before=$(tree_sum "$T/notdump")$(tree_sum "$D")

check_rc "not a dump directory" 3 "$DLQ" list "$T/notdump"
has "not a dump directory: message" "$T/err" "not a dump directory"
has "not a dump directory: names it" "$T/err" "$T/notdump"
check_rc "no such directory" 3 "$DLQ" show "$T/nope"
has "no such directory: names it" "$T/err" "$T/nope"
check_rc "a file, not a directory" 3 "$DLQ" verify "$T/notdump/x.bin"
check_rc "salvage: not a dump file" 2 "$DLQ" salvage "$D" quarantine/junk.bin
has "not a dump file: message" "$T/err" "not a dump file"
check_rc "bad location" 2 "$DLQ" show "$D" --loc bogus/x
has "bad location: message" "$T/err" 'location "bogus/x"'
check_rc "bad location in purge" 2 "$DLQ" purge "$D" --loc 'dead:x' --yes
check_rc "unknown decoder" 3 "$DLQ" show "$D" --decoder no-such-decoder-cmd
has "unknown decoder: named" "$T/err" "decoder 'no-such-decoder-cmd': exit status 127"
check_rc "bad reason" 2 "$DLQ" show "$D" --reason bored
has "bad reason: message" "$T/err" '--reason: bad value "bored"'
check_rc "bad time" 2 "$DLQ" show "$D" --since yesterday
check_rc "option not taken" 2 "$DLQ" list "$D" --yes
has "option not taken: message" "$T/err" "list: does not take --yes"
check_rc "unknown option" 2 "$DLQ" show "$D" --bogus
check_rc "unknown subcommand" 2 "$DLQ" frobnicate "$D"
check_rc "missing source" 2 "$DLQ" show
check_rc "bad import line" 2 sh -c "printf '{\"v\":1,\"payload\":\"AA==\"}\n{\"v\":1}\n' | \"$DLQ\" import \"$D\""
has "bad import line: line and field" "$T/err" 'stdin:2: column 8: "payload" is missing (nothing imported)'
check_rc "redrive dump into itself" 2 "$DLQ" redrive "$D" --from dump
# Option values that used to slip through: an empty --reason selected no
# reason, so purge fell back to deleting the whole area; times and numbers
# past 64 bits wrapped (2600-01-01 read as 2015, --dump-version as 2^64-1).
check_rc "purge --reason empty" 2 "$DLQ" purge "$D" --part dump --reason "" --yes
has "purge --reason empty: message" "$T/err" '--reason: bad value ""'
check_rc "purge --reason comma" 2 "$DLQ" purge "$D" --part dump --reason , --yes
check_rc "since past 64-bit ns" 2 "$DLQ" purge "$D" --part dump --since 2600-01-01 --yes
check_rc "since @ past 64-bit ns" 2 "$DLQ" purge "$D" --part dump --since @99999999999 --yes
check_rc "dump-version out of range" 2 "$DLQ" show "$D" --dump-version 99999999999999999999
check_rc "limit out of range" 2 "$DLQ" show "$D" --limit 99999999999999999999
check_rc "rate too small" 2 "$DLQ" redrive "$D" --rate 1e-300
has "rate too small: message" "$T/err" '--rate: bad value "1e-300"'
# N{s,m,h,d} ago past the epoch means since the epoch, also when N * unit
# overflows 64 bits (213504d wrapped to about 25 minutes ago).
printf '{"v":1,"why":{"reason":"failed","time_ns":%s},"payload":"AA=="}\n' \
	"$(( ($(date +%s) - 3600) * 1000000000 ))" >"$T/old.jsonl"
mkdir -p "$T/olddead"
"$DLQ" import "$T/olddead" "$T/old.jsonl" >/dev/null || fail "import an hour-old record"
check_rc "until 213504d ago: nothing" 1 "$DLQ" purge "$T/olddead" --part dump --until 213504d --dry-run
check_rc "until 1d ago: nothing" 1 "$DLQ" purge "$T/olddead" --part dump --until 1d --dry-run
check_rc "until 30m ago: the record" 0 "$DLQ" purge "$T/olddead" --part dump --until 30m --dry-run
check "nothing modified (files)" "$(tree_sum "$T/notdump")$(tree_sum "$D")" "$before"

if [ -n "${BLQ_TEST_REDIS:-}" ]; then
	redis_setup
	redis_cli SET "$K-str" hello >/dev/null
	redis_cli XADD "$K" '*' v 0 r junk >/dev/null
	rbefore=$(redis_cli GET "$K-str")$(redis_cli XRANGE "$K" - + | md5sum)
	check_rc "key of the wrong type" 3 "$DLQ" list "$R/$K-str"
	has "wrong type: names the key" "$T/err" "$K-str"
	check_rc "Redis down" 3 "$DLQ" list "redis://127.0.0.1:1/$K"
	has "Redis down: names the server" "$T/err" "127.0.0.1:1"
	check_rc "bad redis URL" 2 "$DLQ" list "redis://127.0.0.1:99999/x"
	check_rc "purge a bad stream loc" 2 "$DLQ" purge "$R/$K" --loc "dump:nope" --yes
	check_rc "verify: a bad entry" 1 "$DLQ" verify "$R/$K"
	check "nothing modified (Redis)" "$(redis_cli GET "$K-str")$(redis_cli XRANGE "$K" - + | md5sum)" "$rbefore"
fi
finish
