#!/usr/bin/env bash
# Every public header compiles on its own, with nothing before it, as C11
# (gcc, clang) and as C++17 (g++, clang++), with -Wall -Wextra -Wpedantic
# -Werror: a C or C++ program that includes one with those flags builds.
#
#   scripts/check_headers.sh INCLUDE_DIR [CFLAGS...]
#
# INCLUDE_DIR holds blq/*.h; the CFLAGS come first on each compile line
# (scripts/check_install.sh passes `pkg-config --cflags blq` against the
# installed headers; ctest's public_headers passes -I include/). A compiler
# that is not installed fails the check: scripts/test.sh installs all four.
# Prints each failure with the compiler's first errors; exits 1 if any.
set -uo pipefail
dir=${1:?usage: check_headers.sh INCLUDE_DIR [CFLAGS...]}
shift
warn=(-Wall -Wextra -Wpedantic -Werror)
langs=("gcc -x c -std=c11" "clang -x c -std=c11" "g++ -x c++ -std=c++17" "clang++ -x c++ -std=c++17")
fail=0
n=0
for cc in "${langs[@]}"; do
	command -v "${cc%% *}" >/dev/null || { echo "FAIL: ${cc%% *} not found"; fail=1; continue; }
done
shopt -s nullglob
headers=("$dir"/blq/*.h)
[ ${#headers[@]} -gt 0 ] || { echo "FAIL: no headers in $dir/blq"; exit 1; }
for h in "${headers[@]}"; do
	name=blq/$(basename "$h")
	for cc in "${langs[@]}"; do
		command -v "${cc%% *}" >/dev/null || continue
		n=$((n + 1))
		# The typedef: export.h and version.h declare nothing, and an
		# empty translation unit is itself a -Wpedantic error.
		# shellcheck disable=SC2086 # $cc is a command with its options
		if ! out=$(printf '#include <%s>\ntypedef int blq_header_check_tu;\n' "$name" |
			$cc "$@" -I"$dir" "${warn[@]}" -fsyntax-only - 2>&1); then
			echo "FAIL: $name [$cc]"
			printf '%s\n' "$out" | grep -m 3 'error' | sed 's/^/  /'
			fail=1
		fi
	done
done
if [ $fail -ne 0 ]; then
	echo "public headers: FAILED"
	exit 1
fi
echo "public headers: ${#headers[@]} headers, $n compiles clean (C11 gcc/clang, C++17 g++/clang++)"
